package lifecycle_test

import (
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/retry"
)

// A healthy Running machine in sync writes nothing: over 24 simulated
// hours of passes at its requeues, whose node's conditions keep their type
// and status (their reasons and messages may change), no decision changes
// its status, and the provider is asked at most once per Long period plus
// its jitter. A million such machines would otherwise write their status
// some 1,500 times a second.
func TestPropertyHealthyRunningMachineIsQuiet(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	rapid.Check(t, func(t *rapid.T) {
		in := runningInput()
		in.Object.Metadata = map[string]string{"team": "a"}
		in.Status.Metadata = map[string]string{"team": "a"}
		in.Object.UID = "uid-" + strconv.Itoa(rapid.IntRange(0, 1<<20).Draw(t, "uid"))
		in.Status.OwnerUID = in.Object.UID
		start := in.Now
		lookups := 0
		for in.Now.Sub(start) < 24*time.Hour {
			// The kubelet rewrites its messages; types and statuses stay.
			node := healthyNode()
			node.Conditions = append([]lifecycle.Condition(nil), node.Conditions...)
			for i := range node.Conditions {
				node.Conditions[i].Message = rapid.SampledFrom([]string{"", "kubelet is posting ready status",
					"kubelet is posting ready status. AppArmor enabled"}).Draw(t, "message")
			}
			in.Node = node
			r, _ := inputPass{
				answer: func(c driverapi.Call) driverapi.Result {
					if c.Method == driverapi.MethodGetStatus {
						lookups++
					}
					return driverapi.Result{ProviderID: providerID, NodeName: nodeName, OwnerUID: in.Object.UID,
						Metadata: map[string]string{"team": "a", "provider-tag": "x"}}
				},
				decided: func(seen *lifecycle.Input, d *lifecycle.Decision) bool {
					if d.Changed {
						t.Fatalf("status written at +%v (rule %s)\n%s", seen.Now.Sub(start), d.Rule, d.String())
					}
					return false
				},
			}.run(t, cfg, &in)
			in.Now = in.Now.Add(r.Requeue)
		}
		if most := int(24*time.Hour/retry.Long) + 1; lookups > most {
			t.Fatalf("%d lookups in 24 hours, more than one per Long period (%d)", lookups, most)
		}
	})
}

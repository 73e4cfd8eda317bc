package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/purelifecycle/machine/controller/fakecloud"
	"github.com/purelifecycle/machine/lifecycle"
)

// With the limiter's protection per failure domain on, the machines of a
// zone whose nodes all turn NotReady stay Unknown past their health
// timeout, held for the zone's outage, while the machine of another zone
// is marked Failed. The zone comes from the nodes'
// topology.kubernetes.io/zone label, which the fleet pass reads. Their
// node objects deleted during the outage, they are still held: the
// machine's status records the zone its node showed, and the fleet pass
// reads it there, also once the controller has restarted.
func TestZoneOutageHoldsTheZone(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	p := newProvider("zone-outage")
	cfg := lifecycle.DefaultConfig()
	cfg.Replacements = lifecycle.ReplacementLimit{Count: 4}
	cfg.ZoneOutage = lifecycle.ZoneOutage{Count: 3, Percent: 50, Hold: time.Hour}
	tm := startManager(t, "zone", p, func(o *options) { o.config = &cfg })
	const health = 3 * time.Second
	zoneOf := map[string]string{"m-z-1": "zone-a", "m-z-2": "zone-a", "m-z-3": "zone-a", "m-z-4": "zone-b"}
	for name := range zoneOf {
		newGroupMachine(t, "zone", ns, name, health)
	}
	for name, zone := range zoneOf {
		waitPhase(t, ns, name, "Pending", 30*time.Second)
		inst, ok := p.InstanceOf(name)
		require.True(t, ok, "no instance for %s", name)
		require.NoError(t, fakecloud.RegisterNode(ctx, k8s, inst))
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n := &corev1.Node{}
			if err := k8s.Get(ctx, client.ObjectKey{Name: inst.NodeName}, n); err != nil {
				return err
			}
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[lifecycle.ZoneLabel] = zone
			return k8s.Update(ctx, n)
		}))
	}
	for name := range zoneOf {
		waitPhase(t, ns, name, "Running", 30*time.Second)
	}
	for name := range zoneOf {
		inst, _ := p.InstanceOf(name)
		require.NoError(t, fakecloud.SetReady(ctx, k8s, inst.NodeName, corev1.ConditionFalse))
	}
	waitPhase(t, ns, "m-z-4", "Failed", 30*time.Second)
	// Well past their health timeout, zone-a's machines are still Unknown.
	time.Sleep(5 * time.Second)
	for _, name := range []string{"m-z-1", "m-z-2", "m-z-3"} {
		m := getMachine(t, ns, name)
		require.Equal(t, "Unknown", string(m.Status.CurrentStatus.Phase), fmt.Sprintf("%s of the zone in an outage", name))
	}
	for _, name := range []string{"m-z-1", "m-z-2", "m-z-3"} {
		inst, _ := p.InstanceOf(name)
		require.NoError(t, k8s.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: inst.NodeName}}))
	}
	time.Sleep(5 * time.Second)
	for _, name := range []string{"m-z-1", "m-z-2", "m-z-3"} {
		m := getMachine(t, ns, name)
		require.Equal(t, "Unknown", string(m.Status.CurrentStatus.Phase),
			fmt.Sprintf("%s of the zone in an outage, its node object deleted", name))
		require.Equal(t, "zone-a", m.Status.Zone, "the status records the zone its node showed")
	}
	// A controller started anew knows the zones from the machines'
	// statuses: they are still held.
	require.NoError(t, tm.stop(t, time.Minute))
	startManager(t, "zone", p, func(o *options) { o.config = &cfg })
	time.Sleep(8 * time.Second)
	for _, name := range []string{"m-z-1", "m-z-2", "m-z-3"} {
		m := getMachine(t, ns, name)
		require.Equal(t, "Unknown", string(m.Status.CurrentStatus.Phase),
			fmt.Sprintf("%s of the zone in an outage, its node object deleted, after a restart", name))
	}
}

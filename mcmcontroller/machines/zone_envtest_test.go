package machines_test

import (
	"testing"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/mcmcontroller/machines"
)

// With the limiter's protection per failure domain on, the machines of a
// zone whose nodes all turn NotReady stay Unknown past their health
// timeout, held for the zone's outage, while the machine of another zone
// that turns NotReady too is marked Failed. The zone comes from the
// nodes' topology.kubernetes.io/zone label, which the fleet pass reads.
func TestZoneOutageHoldsTheZone(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	cfg.VerifyOwner = false
	cfg.HealthTimeout = 3 * time.Second
	cfg.Replacements = lifecycle.ReplacementLimit{Count: 4}
	cfg.ZoneOutage = lifecycle.ZoneOutage{Count: 3, Percent: 50, Hold: time.Hour}
	w := newWorld(t, func(o *machines.Options) { o.Config = &cfg })
	w.class(t, "small")
	zoneOf := map[string]string{"worker-z-1": "zone-a", "worker-z-2": "zone-a", "worker-z-3": "zone-a", "worker-z-4": "zone-b"}
	for name := range zoneOf {
		w.machine(t, name, "small", nil)
	}
	eventually(t, "the machines Running", func() bool {
		for name := range zoneOf {
			if m := w.get(t, name); m == nil || m.Status.CurrentStatus.Phase != v1alpha1.MachineRunning {
				return false
			}
		}
		return true
	})
	for _, inst := range w.cloud.Instances() {
		must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n := &corev1.Node{}
			if err := w.c.Get(w.ctx, client.ObjectKey{Name: inst.NodeName}, n); err != nil {
				return err
			}
			n.Labels[lifecycle.ZoneLabel] = zoneOf[inst.MachineName]
			return w.c.Update(w.ctx, n)
		}))
	}
	for _, inst := range w.cloud.Instances() {
		w.updateNodeStatus(t, inst.NodeName, func(n *corev1.Node) {
			n.Status.Conditions[0].Status, n.Status.Conditions[0].Reason = corev1.ConditionFalse, "KubeletNotReady"
			n.Status.Conditions[0].LastTransitionTime = metav1.Now()
		})
	}
	eventually(t, "the machine of zone-b Failed", func() bool {
		return w.get(t, "worker-z-4").Status.CurrentStatus.Phase == v1alpha1.MachineFailed
	})
	// Well past their health timeout, zone-a's machines are still Unknown.
	time.Sleep(5 * time.Second)
	for _, name := range []string{"worker-z-1", "worker-z-2", "worker-z-3"} {
		if p := w.get(t, name).Status.CurrentStatus.Phase; p != v1alpha1.MachineUnknown {
			t.Errorf("%s of the zone in an outage is %s", name, p)
		}
	}
}

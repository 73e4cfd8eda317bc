package machines_test

import (
	"testing"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/mcmcontroller/internal/mcmworld"
	"github.com/purelifecycle/machine/mcmcontroller/machines"
	"github.com/purelifecycle/machine/mcmcontroller/mcmfake"
)

// MCM's own MachineSet auto-preserves a Failed machine of a deployment that
// allows one (autoPreserveFailedMachineMax), with the drop-in controller in
// MCM's machine controller's place: the machine that fails is annotated
// auto-preserved, the drop-in preserves it (its expiry, its node kept from
// the cluster autoscaler and marked Preserved by MCM), and the MachineSet
// keeps it, as one of its replicas, instead of replacing it.
func TestAutoPreservationWithMCMsMachineSet(t *testing.T) {
	w := mcmworld.Start(t)
	cloud := mcmfake.New()
	cfg := lifecycle.DefaultConfig()
	cfg.VerifyOwner = false
	cfg.HealthTimeout = 3 * time.Second
	startDropIn(t, w.ControllerConfig("drop-in"), w.Namespace, cloud, func(o *machines.Options) { o.Config = &cfg })
	kubelet := w.StartKubelet(cloud)
	w.CreateClass("class-a")
	w.CreateDeployment("pool", "class-a", 1, func(d *v1alpha1.MachineDeployment) { d.Spec.AutoPreserveFailedMachineMax = 1 })
	w.WaitFor("the machine Running", func() bool { return running(w) == 1 })
	sick := w.MachineList()[0]
	kubelet.SetReady(sick.Labels["node"], false)
	mcmworld.WaitForWithin(t, 2*time.Minute, "the machine Failed, auto-preserved, its node Preserved by MCM", func() bool {
		for _, m := range w.MachineList() {
			if m.Name != sick.Name {
				continue
			}
			if m.Status.CurrentStatus.Phase != v1alpha1.MachineFailed || m.Status.CurrentStatus.PreserveExpiryTime == nil ||
				m.Annotations[lifecycle.PreserveAnnotation] != "auto-preserved" {
				return false
			}
			for _, n := range w.NodeList() {
				if n.Name != m.Labels["node"] {
					continue
				}
				for _, c := range n.Status.Conditions {
					if string(c.Type) == lifecycle.ConditionPreserved {
						return c.Status == corev1.ConditionTrue && c.Reason == lifecycle.ReasonPreservedByMCM &&
							n.Annotations[lifecycle.ScaleDownDisabledAnnotation] == "true"
					}
				}
			}
		}
		return false
	})
	// MCM's MachineSet keeps the preserved machine, and counts it: no
	// replacement, until its preservation expires.
	time.Sleep(5 * time.Second)
	ms := w.MachineList()
	if len(ms) != 1 || ms[0].Name != sick.Name || ms[0].Status.CurrentStatus.Phase != v1alpha1.MachineFailed {
		t.Fatalf("the preserved machine was not kept: %+v", ms)
	}
}

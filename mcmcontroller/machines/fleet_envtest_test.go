package machines_test

import (
	"testing"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"

	"github.com/purelifecycle/machine/mcmcontroller/internal/mcmworld"
	"github.com/purelifecycle/machine/mcmcontroller/mcmfake"
)

// running counts the world's Running machines.
func running(w *mcmworld.World) int { return len(mcmworld.Running(w.MachineList())) }

// MCM's own MachineSet and MachineDeployment controllers work with the
// drop-in controller in MCM's machine controller's place: a deployment of
// two becomes available, and a change of its class rolls both machines
// over to new ones, the old instances deleted.
func TestDeploymentRollsOverWithTheDropIn(t *testing.T) {
	w := mcmworld.Start(t)
	cloud := mcmfake.New()
	startDropIn(t, w.ControllerConfig("drop-in"), w.Namespace, cloud)
	w.StartKubelet(cloud)
	w.CreateClass("class-a")
	w.CreateClass("class-b")
	w.CreateDeployment("pool", "class-a", 2)
	w.WaitFor("the deployment available with 2 Running machines", func() bool {
		return mcmworld.DeploymentAvailable(w.Deployment("pool")) && running(w) == 2
	})
	old := map[string]bool{}
	for _, m := range w.MachineList() {
		old[m.Name] = true
	}
	w.SetClass("pool", "class-b")
	mcmworld.WaitForWithin(t, 3*time.Minute, "the rollout done: 2 new Running machines, the old ones gone", func() bool {
		ms := w.MachineList()
		if len(ms) != 2 || !mcmworld.DeploymentAvailable(w.Deployment("pool")) {
			return false
		}
		for _, m := range ms {
			if old[m.Name] || m.Status.CurrentStatus.Phase != v1alpha1.MachineRunning || m.Spec.Class.Name != "class-b" {
				return false
			}
		}
		return true
	})
	if insts := cloud.Instances(); len(insts) != 2 {
		t.Fatalf("%d instances after the rollout", len(insts))
	}
}

// A machine MCM's own controller made Running is taken over as it stands
// (no instance made, Running kept) and deleted by the drop-in controller.
func TestHandoverFromMCM(t *testing.T) {
	w := mcmworld.Start(t)
	cloud := mcmfake.New()
	stopMCM := w.StartMCMMachineController(cloud)
	w.StartKubelet(cloud)
	w.CreateClass("class-a")
	w.CreateDeployment("pool", "class-a", 1)
	w.WaitFor("MCM's machine Running", func() bool { return running(w) == 1 })
	stopMCM()
	before := w.MachineList()[0]
	startDropIn(t, w.ControllerConfig("drop-in"), w.Namespace, cloud)
	takenAsItStands(t, w, cloud, &before, "the drop-in")
}

// A machine the drop-in controller made Running is taken back by MCM's
// own controller as it stands, and deleted by it.
func TestHandoverToMCM(t *testing.T) {
	w := mcmworld.Start(t)
	cloud := mcmfake.New()
	stopOurs := startDropIn(t, w.ControllerConfig("drop-in"), w.Namespace, cloud)
	w.StartKubelet(cloud)
	w.CreateClass("class-a")
	w.CreateDeployment("pool", "class-a", 1)
	w.WaitFor("the machine Running", func() bool { return running(w) == 1 })
	stopOurs()
	before := w.MachineList()[0]
	w.StartMCMMachineController(cloud)
	takenAsItStands(t, w, cloud, &before, "MCM")
}

// takenAsItStands checks a handover of the pool's one machine, before,
// to the controller named who: a while after it, the machine is still
// Running on its instance, made by the one CreateMachine of the test, and
// scaling the pool to zero deletes it and its instance.
func takenAsItStands(t *testing.T, w *mcmworld.World, cloud *mcmfake.Driver, before *v1alpha1.Machine, who string) {
	t.Helper()
	time.Sleep(3 * time.Second)
	ms := w.MachineList()
	if len(ms) != 1 || ms[0].Status.CurrentStatus.Phase != v1alpha1.MachineRunning || ms[0].Spec.ProviderID != before.Spec.ProviderID {
		t.Fatalf("after the handover to %s: %+v (was %s on %s)", who, ms, before.Name, before.Spec.ProviderID)
	}
	if n := cloud.Count(mcmfake.MethodCreate, ""); n != 1 {
		t.Fatalf("%d CreateMachine calls", n)
	}
	w.Scale("pool", 0)
	w.WaitFor("the machine gone under "+who, func() bool { return len(w.MachineList()) == 0 })
	if n := len(cloud.Instances()); n != 0 {
		t.Fatalf("%d instances left", n)
	}
}

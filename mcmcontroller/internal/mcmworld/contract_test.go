package mcmworld_test

import (
	"testing"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/purelifecycle/machine/mcmcontroller/internal/mcmworld"
)

// What MCM's MachineSet and MachineDeployment controllers read from a
// machine's status, with the test in the machine controller's place: a
// failed operation is reported up to the deployment, Running machines make
// it available, a machine deleted by someone else is replaced only once
// its phase is Terminating, and a Failed machine is deleted and replaced.
func TestTheFleetControllersReadTheMachineControllersStatus(t *testing.T) {
	w := mcmworld.Start(t)
	w.CreateClass("class-a")
	w.CreateDeployment("pool-a", "class-a", 2)
	w.WaitFor("2 machines", func() bool { return len(w.MachineList()) == 2 })

	// A failed operation (LastOperation.State Failed), in any phase, is
	// listed in the MachineSet's and the deployment's failedMachines.
	first := w.MachineList()[0].Name
	w.UpdateMachineStatus(first, func(m *v1alpha1.Machine) {
		m.Status.CurrentStatus = v1alpha1.CurrentStatus{Phase: v1alpha1.MachinePending, LastUpdateTime: metav1.Now()}
		m.Status.LastOperation = v1alpha1.LastOperation{Type: v1alpha1.MachineOperationCreate,
			State: v1alpha1.MachineStateFailed, Description: "Cloud provider message - quota exceeded", LastUpdateTime: metav1.Now()}
	})
	w.WaitFor("the failed creation in the deployment's failedMachines", func() bool {
		fm := w.Deployment("pool-a").Status.FailedMachines
		return len(fm) == 1 && fm[0].Name == first && fm[0].LastOperation.Description == "Cloud provider message - quota exceeded"
	})

	// Running machines are ready and available.
	for _, m := range w.MachineList() {
		w.UpdateMachineStatus(m.Name, running)
	}
	w.WaitFor("the deployment available, its failedMachines empty", func() bool {
		d := w.Deployment("pool-a")
		return mcmworld.DeploymentAvailable(d) && d.Status.ReadyReplicas == 2 && len(d.Status.FailedMachines) == 0
	})

	// A machine deleted by someone else counts until its phase is
	// Terminating: only then does the MachineSet controller replace it.
	held := w.MachineList()[0].Name
	w.UpdateMachine(held, func(m *v1alpha1.Machine) { m.Finalizers = append(m.Finalizers, "mcmworld.test/hold") })
	if err := w.Machines.MachineV1alpha1().Machines(w.Namespace).Delete(w.Ctx, held, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if ms := w.MachineList(); len(ms) != 2 {
		t.Fatalf("%d machines: the deleted machine, Running, was replaced before it was Terminating", len(ms))
	}
	w.UpdateMachineStatus(held, func(m *v1alpha1.Machine) {
		m.Status.CurrentStatus = v1alpha1.CurrentStatus{Phase: v1alpha1.MachineTerminating, LastUpdateTime: metav1.Now()}
	})
	w.WaitFor("a replacement of the Terminating machine", func() bool {
		return len(mcmworld.Live(w.MachineList())) == 2
	})
	w.UpdateMachine(held, func(m *v1alpha1.Machine) { m.Finalizers = nil })

	// A Failed machine is deleted by the MachineSet controller, which
	// makes a replacement.
	failed := mcmworld.Running(w.MachineList())[0].Name
	w.UpdateMachineStatus(failed, func(m *v1alpha1.Machine) {
		m.Status.CurrentStatus = v1alpha1.CurrentStatus{Phase: v1alpha1.MachineFailed, LastUpdateTime: metav1.Now()}
		m.Status.LastOperation = v1alpha1.LastOperation{Type: v1alpha1.MachineOperationHealthCheck,
			State: v1alpha1.MachineStateFailed, Description: "Machine " + failed + " is not healthy since 10m0s minutes. Changing status to failed. Node Conditions: []", LastUpdateTime: metav1.Now()}
	})
	w.WaitFor("the Failed machine deleted and replaced", func() bool {
		ms := w.MachineList()
		for _, m := range ms {
			if m.Name == failed {
				return false
			}
		}
		return len(ms) == 2
	})
}

// On a scale-down, MCM's MachineSet controller deletes first the machines
// annotated machinepriority.machine.sapcloud.io=1, then by phase
// (Terminating, Failed, CrashLoopBackOff, Unknown, Pending, Available,
// Running; no phase counts as Terminating), then the oldest.
func TestTheMachineSetDeletesByPriorityThenPhase(t *testing.T) {
	w := mcmworld.Start(t)
	w.CreateClass("class-a")
	w.CreateDeployment("pool-a", "class-a", 4)
	w.WaitFor("4 machines", func() bool { return len(w.MachineList()) == 4 })
	ms := w.MachineList()
	prioritized, unknown := ms[0].Name, ms[1].Name
	phase := func(p v1alpha1.MachinePhase) func(*v1alpha1.Machine) {
		return func(m *v1alpha1.Machine) {
			m.Status.CurrentStatus = v1alpha1.CurrentStatus{Phase: p, LastUpdateTime: metav1.Now()}
		}
	}
	w.UpdateMachine(prioritized, func(m *v1alpha1.Machine) {
		m.Annotations = map[string]string{"machinepriority.machine.sapcloud.io": "1"}
	})
	w.UpdateMachineStatus(ms[0].Name, running)
	w.UpdateMachineStatus(ms[1].Name, phase(v1alpha1.MachineUnknown))
	w.UpdateMachineStatus(ms[2].Name, phase(v1alpha1.MachinePending))
	w.UpdateMachineStatus(ms[3].Name, running)
	// The MachineSet controller sees the machines in the order written:
	// once its status counts the last Running, it has seen them all.
	w.WaitFor("the MachineSet's status counting 2 Running", func() bool {
		return w.MachineSetList()[0].Status.ReadyReplicas == 2
	})

	w.Scale("pool-a", 2)
	w.WaitFor("2 machines left", func() bool { return len(w.MachineList()) == 2 })
	for _, m := range w.MachineList() {
		if m.Name == prioritized || m.Name == unknown {
			t.Errorf("machine %s (phase %s, annotations %v) kept", m.Name, m.Status.CurrentStatus.Phase, m.Annotations)
		}
	}
}

// running makes the machine Running, as MCM's machine controller does when
// its node joins.
func running(m *v1alpha1.Machine) {
	m.Status.CurrentStatus = v1alpha1.CurrentStatus{Phase: v1alpha1.MachineRunning, LastUpdateTime: metav1.Now()}
	m.Status.LastOperation = v1alpha1.LastOperation{Type: v1alpha1.MachineOperationCreate, State: v1alpha1.MachineStateSuccessful,
		Description: "Machine " + m.Name + " successfully joined the cluster", LastUpdateTime: metav1.Now()}
}

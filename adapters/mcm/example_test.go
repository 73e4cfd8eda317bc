package mcm_test

import (
	"fmt"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/purelifecycle/machine/adapters/mcm"
	"github.com/purelifecycle/machine/lifecycle"
)

// A machine MCM was deleting: it had deleted the VM and was about to
// delete the node when the library took over.
func midDeletion() (*v1alpha1.Machine, *corev1.Node) {
	deleted := metav1.NewTime(time.Date(2026, 8, 19, 9, 55, 0, 0, time.UTC))
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{
			Name: "worker-abc-x1", UID: "uid-1", DeletionTimestamp: &deleted,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)),
			Finalizers:        []string{lifecycle.Finalizer},
			Labels:            map[string]string{lifecycle.NodeLabel: "ip-10-0-0-1"},
		},
		Spec: v1alpha1.MachineSpec{ProviderID: "aws:///eu-west-1/i-1"},
		Status: v1alpha1.MachineStatus{
			CurrentStatus: v1alpha1.CurrentStatus{Phase: v1alpha1.MachineTerminating, LastUpdateTime: deleted},
			LastOperation: v1alpha1.LastOperation{
				Description: "VM deletion was successful. Initiate node object deletion",
				State:       v1alpha1.MachineStateProcessing,
				Type:        v1alpha1.MachineOperationDelete,
			},
		},
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-1", Finalizers: []string{lifecycle.NodeFinalizer}}}
	return m, n
}

// StatusFrom adopts a machine MCM was in the middle of deleting, and the
// lifecycle goes on where MCM stopped: with the node.
func ExampleStatusFrom() {
	m, node := midDeletion()
	st, err := mcm.StatusFrom(m)
	if err != nil {
		panic(err)
	}
	fmt.Println(st.Phase, st.LastOp.Desc)

	d := lifecycle.Step(lifecycle.DefaultConfig(), lifecycle.Input{
		Now:    time.Date(2026, 8, 19, 10, 0, 0, 0, time.UTC),
		Object: mcm.ObjectFrom(m),
		Status: st,
		Node:   mcm.NodeFrom(node),
	})
	for _, line := range d.Lines() {
		fmt.Println(line)
	}
	// Output:
	// Terminating s4a-vm-deleted
	// remove-node-finalizer ip-10-0-0-1 node.machine.sapcloud.io/machine-controller
	// delete-node ip-10-0-0-1
}

// ApplyStatus persists a decision's status the way MCM keeps it; what MCM
// has no field for goes into one annotation, and StatusFrom reads it all
// back.
func ExampleApplyStatus() {
	m, node := midDeletion()
	now := time.Date(2026, 8, 19, 10, 0, 0, 0, time.UTC)
	st, _ := mcm.StatusFrom(m)
	in := lifecycle.Input{Now: now, Object: mcm.ObjectFrom(m), Status: st, Node: mcm.NodeFrom(node)}
	d := lifecycle.Step(lifecycle.DefaultConfig(), in)

	// The node's finalizer is removed and the node deleted; the lifecycle
	// learns it from the outcome.
	in.Status, in.Outcome = d.Status, &lifecycle.Outcome{OpID: d.OpID, Ran: d.Effects.Len()}
	in.Node = lifecycle.Node{}
	d = lifecycle.Step(lifecycle.DefaultConfig(), in)

	mcm.ApplyStatus(d.Status, m, now)
	fmt.Println(m.Status.CurrentStatus.Phase)
	fmt.Println(m.Status.LastOperation.Description)
	fmt.Println(m.Annotations[mcm.StateAnnotation])

	back, _ := mcm.StatusFrom(m)
	fmt.Println(back.Stage, back.Seq == d.Status.Seq)
	// Output:
	// Terminating
	// Deletion of Node Object "ip-10-0-0-1" is successful. Initiate machine object finalizer removal
	// {"stage":"remove-finalizer","stageSince":"2026-08-19T10:00:00Z","phaseSince":"2026-08-19T09:55:00Z","flags":72,"seq":2,"providerID":"aws:///eu-west-1/i-1","node":"ip-10-0-0-1","check":"9103af31"}
	// remove-finalizer true
}

// ObjectFrom reads what the lifecycle needs of the machine object,
// including its per-machine overrides.
func ExampleObjectFrom() {
	m, _ := midDeletion()
	m.Annotations = map[string]string{lifecycle.CreationTimeoutAnnotation: "30m"}
	m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{
		MachineDrainTimeout: &metav1.Duration{Duration: time.Hour},
	}
	o := mcm.ObjectFrom(m)
	fmt.Println(o.Name, o.Finalizer, o.NodeLabel, o.Overrides.DrainTimeout, o.Overrides.CreationTimeout)
	// Output:
	// worker-abc-x1 true ip-10-0-0-1 1h0m0s 30m0s
}

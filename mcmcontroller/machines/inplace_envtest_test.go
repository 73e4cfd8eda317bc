package machines_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/mcmcontroller/machines"
)

// The tests here play the two other parties of MCM's in-place update with
// the drop-in controller: the MachineDeployment controller, which labels
// a node candidate and then selected, and afterwards removes its labels
// and uncordons it; and the node agent, which waits for the condition
// ReadyForUpdate and labels its verdict.

// changeNode applies change to the named node's object (labels,
// annotations, spec), again on a conflict with the controller's writes.
func (w *world) changeNode(t *testing.T, name string, change func(*corev1.Node)) {
	t.Helper()
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := w.c.Get(w.ctx, client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		change(n)
		return w.c.Update(w.ctx, n)
	}))
}

// inPlaceReason returns the reason of the named node's InPlaceUpdate
// condition, "" without one.
func (w *world) inPlaceReason(t *testing.T, name string) string {
	t.Helper()
	n := &corev1.Node{}
	must(t, w.c.Get(w.ctx, client.ObjectKey{Name: name}, n))
	for _, c := range n.Status.Conditions {
		if c.Type == lifecycle.ConditionInPlaceUpdate {
			return c.Reason
		}
	}
	return ""
}

// runningWithPod starts the named machine, waits for it to be Running, puts
// a pod on its node, and returns the node's name.
func (w *world) runningWithPod(t *testing.T, name string) string {
	t.Helper()
	w.class(t, "small")
	w.machine(t, name, "small", nil)
	eventually(t, "the machine Running", func() bool {
		m := w.get(t, name)
		return m != nil && m.Status.CurrentStatus.Phase == v1alpha1.MachineRunning
	})
	node := w.cloud.Instances()[0].NodeName
	must(t, w.c.Create(w.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "app-" + name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "x"}}}}))
	return node
}

// holdPod puts a finalizer on the named pod, or takes it off: held, an
// evicted pod stays terminating on its node.
func (w *world) holdPod(t *testing.T, name string, hold bool) {
	t.Helper()
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := &corev1.Pod{}
		if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: name}, p); err != nil {
			return err
		}
		p.Finalizers = nil
		if hold {
			p.Finalizers = []string{"test.purelifecycle.dev/hold"}
		}
		return w.c.Update(w.ctx, p)
	}))
}

// selectForUpdate plays the MachineDeployment controller choosing the
// node: candidate first, then, once the condition says so, selected.
func (w *world) selectForUpdate(t *testing.T, node string) {
	t.Helper()
	w.changeNode(t, node, func(n *corev1.Node) { n.Labels[lifecycle.CandidateForUpdateLabel] = "true" })
	eventually(t, "the condition CandidateForUpdate", func() bool {
		return w.inPlaceReason(t, node) == lifecycle.ReasonCandidateForUpdate
	})
	w.changeNode(t, node, func(n *corev1.Node) { n.Labels[lifecycle.SelectedForUpdateLabel] = "true" })
}

// A node selected for an in-place update is cordoned and drained, and only
// then told ReadyForUpdate while its machine is InPlaceUpdating; the
// agent's success makes the machine InPlaceUpdateSuccessful and, its node
// healthy, Running again; the MachineDeployment controller then takes its
// labels off and the machine stays Running.
func TestInPlaceUpdateAsUnderMCM(t *testing.T) {
	w := newWorld(t)
	node := w.runningWithPod(t, "worker-ip-1")
	w.holdPod(t, "app-worker-ip-1", true)
	w.selectForUpdate(t, node)
	eventually(t, "the pod evicted", func() bool {
		p := &corev1.Pod{}
		must(t, w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: "app-worker-ip-1"}, p))
		return p.DeletionTimestamp != nil
	})
	time.Sleep(2 * time.Second)
	if r := w.inPlaceReason(t, node); r != lifecycle.ReasonSelectedForUpdate {
		t.Fatalf("the condition says %s with a pod still on the node", r)
	}
	w.holdPod(t, "app-worker-ip-1", false)
	eventually(t, "the condition ReadyForUpdate", func() bool {
		return w.inPlaceReason(t, node) == lifecycle.ReasonReadyForUpdate
	})
	n := &corev1.Node{}
	must(t, w.c.Get(w.ctx, client.ObjectKey{Name: node}, n))
	if !n.Spec.Unschedulable {
		t.Fatal("ReadyForUpdate on a node that is not cordoned")
	}
	if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: "app-worker-ip-1"}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Fatalf("ReadyForUpdate with the pod still on the node (%v)", err)
	}
	m := w.get(t, "worker-ip-1")
	if m.Status.CurrentStatus.Phase != v1alpha1.MachineInPlaceUpdating ||
		m.Status.LastOperation.Description != "Machine worker-ip-1 is undergoing an in-place update" {
		t.Fatalf("phase %s, last operation %+v", m.Status.CurrentStatus.Phase, m.Status.LastOperation)
	}

	// The agent updates the node and reports success.
	w.changeNode(t, node, func(n *corev1.Node) { n.Labels[lifecycle.UpdateResultLabel] = lifecycle.UpdateResultSuccessful })
	eventually(t, "the condition UpdateSuccessful and the machine Running", func() bool {
		return w.inPlaceReason(t, node) == lifecycle.ReasonUpdateSuccessful &&
			w.get(t, "worker-ip-1").Status.CurrentStatus.Phase == v1alpha1.MachineRunning
	})
	if lo := w.get(t, "worker-ip-1").Status.LastOperation; lo.Description != "Machine worker-ip-1 successfully re-joined the cluster" {
		t.Fatalf("last operation %+v", lo)
	}

	// The MachineDeployment controller finishes: labels off, uncordoned.
	w.changeNode(t, node, func(n *corev1.Node) {
		delete(n.Labels, lifecycle.CandidateForUpdateLabel)
		delete(n.Labels, lifecycle.SelectedForUpdateLabel)
		delete(n.Labels, lifecycle.UpdateResultLabel)
		n.Spec.Unschedulable = false
	})
	time.Sleep(2 * time.Second)
	if p := w.get(t, "worker-ip-1").Status.CurrentStatus.Phase; p != v1alpha1.MachineRunning {
		t.Fatalf("after the update the machine is %s", p)
	}
	must(t, w.c.Get(w.ctx, client.ObjectKey{Name: node}, n))
	if n.Spec.Unschedulable {
		t.Fatal("the controller cordoned the node again")
	}
}

// An update the agent reports failed makes the machine InPlaceUpdateFailed
// with the agent's reason, and past its health timeout the fleet limiter
// lets it be marked Failed.
func TestInPlaceUpdateFailedEndsFailed(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	cfg.VerifyOwner = false
	cfg.HealthTimeout = 3 * time.Second
	w := newWorld(t, func(o *machines.Options) { o.Config = &cfg })
	node := w.runningWithPod(t, "worker-ip-2")
	w.selectForUpdate(t, node)
	eventually(t, "the condition ReadyForUpdate", func() bool {
		return w.inPlaceReason(t, node) == lifecycle.ReasonReadyForUpdate
	})
	w.changeNode(t, node, func(n *corev1.Node) {
		n.Labels[lifecycle.UpdateResultLabel] = lifecycle.UpdateResultFailed
		n.Annotations[lifecycle.UpdateFailedReasonAnnotation] = "the new kubelet did not start"
	})
	eventually(t, "the machine InPlaceUpdateFailed, the condition UpdateFailed", func() bool {
		return w.get(t, "worker-ip-2").Status.CurrentStatus.Phase == v1alpha1.MachineInPlaceUpdateFailed &&
			w.inPlaceReason(t, node) == lifecycle.ReasonUpdateFailed
	})
	var m *v1alpha1.Machine
	eventually(t, "the machine Failed", func() bool {
		m = w.get(t, "worker-ip-2")
		return m.Status.CurrentStatus.Phase == v1alpha1.MachineFailed
	})
	if lo := m.Status.LastOperation; !strings.Contains(lo.Description, "health checks failing since last") {
		t.Fatalf("last operation %+v", lo)
	}
}

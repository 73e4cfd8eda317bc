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

// preservedCondition returns the status and reason of the named node's
// Preserved condition, "" without one.
func (w *world) preservedCondition(t *testing.T, name string) (corev1.ConditionStatus, string) {
	t.Helper()
	n := &corev1.Node{}
	must(t, w.c.Get(w.ctx, client.ObjectKey{Name: name}, n))
	for _, c := range n.Status.Conditions {
		if string(c.Type) == lifecycle.ConditionPreserved {
			return c.Status, c.Reason
		}
	}
	return "", ""
}

// A machine annotated to be preserved when it fails is Failed with its
// preservation's expiry in the same status write (MCM's MachineSet, which
// replaces Failed machines without one, never sees it without), its node
// drained (and so cordoned), kept from the cluster autoscaler and marked
// Preserved; when the annotation is removed the preservation stops: the
// expiry cleared, the node's condition False and its autoscaler
// annotations gone.
func TestPreservedWhenFailedAsUnderMCM(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	cfg.VerifyOwner = false
	cfg.HealthTimeout = 3 * time.Second
	w := newWorld(t, func(o *machines.Options) { o.Config = &cfg })
	node := w.runningWithPod(t, "worker-p-1")
	// The pod holds on to a finalizer: evicted, it stays terminating on
	// the node until the test lets it go.
	w.holdPod(t, "app-worker-p-1", true)
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		m := w.get(t, "worker-p-1")
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[lifecycle.PreserveAnnotation] = "when-failed"
		return w.c.Update(w.ctx, m)
	}))
	w.updateNodeStatus(t, node, func(n *corev1.Node) {
		n.Status.Conditions[0].Status, n.Status.Conditions[0].Reason = corev1.ConditionFalse, "KubeletNotReady"
		n.Status.Conditions[0].LastTransitionTime = metav1.Now()
	})
	eventually(t, "the machine Failed", func() bool {
		m := w.get(t, "worker-p-1")
		if m.Status.CurrentStatus.Phase != v1alpha1.MachineFailed {
			return false
		}
		if m.Status.CurrentStatus.PreserveExpiryTime == nil {
			t.Fatal("Failed without its preservation's expiry")
		}
		return true
	})
	eventually(t, "the pod evicted", func() bool {
		p := &corev1.Pod{}
		must(t, w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: "app-worker-p-1"}, p))
		return p.DeletionTimestamp != nil
	})
	time.Sleep(2 * time.Second)
	if s, _ := w.preservedCondition(t, node); s == corev1.ConditionTrue {
		t.Fatal("the preserved node is marked drained with a pod still on it")
	}
	w.holdPod(t, "app-worker-p-1", false)
	eventually(t, "the node drained, kept and Preserved", func() bool {
		n := &corev1.Node{}
		must(t, w.c.Get(w.ctx, client.ObjectKey{Name: node}, n))
		s, reason := w.preservedCondition(t, node)
		return n.Spec.Unschedulable && n.Annotations[lifecycle.ScaleDownDisabledAnnotation] == "true" &&
			s == corev1.ConditionTrue && reason == lifecycle.ReasonPreservedByUser
	})
	if p := w.get(t, "worker-p-1").Status.CurrentStatus.Phase; p != v1alpha1.MachineFailed {
		t.Fatalf("a preserved machine is %s", p)
	}

	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		m := w.get(t, "worker-p-1")
		delete(m.Annotations, lifecycle.PreserveAnnotation)
		return w.c.Update(w.ctx, m)
	}))
	eventually(t, "the preservation stopped", func() bool {
		n := &corev1.Node{}
		must(t, w.c.Get(w.ctx, client.ObjectKey{Name: node}, n))
		s, _ := w.preservedCondition(t, node)
		_, kept := n.Annotations[lifecycle.ScaleDownDisabledAnnotation]
		return w.get(t, "worker-p-1").Status.CurrentStatus.PreserveExpiryTime == nil && s == corev1.ConditionFalse && !kept
	})
}

package kubeshell

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/purelifecycle/machine/lifecycle"
)

// Nodes writes a cluster's nodes: Reader reads them afresh (a client that
// goes to the API server, not to a cache), Writer writes them.
type Nodes struct {
	Reader client.Reader
	Writer client.Client
}

// IsNodeEffect reports whether Apply carries out effects of kind k.
func IsNodeEffect(k lifecycle.Kind) bool {
	switch k {
	case lifecycle.KindLabelNode, lifecycle.KindRemoveNodeLabel, lifecycle.KindAnnotateNode, lifecycle.KindRemoveNodeAnnotation,
		lifecycle.KindRemoveTaint, lifecycle.KindSetNodeCondition,
		lifecycle.KindCordon, lifecycle.KindUncordon, lifecycle.KindRemoveNodeFinalizer, lifecycle.KindDeleteNode:
		return true
	}
	return false
}

// Apply carries out a node effect (IsNodeEffect), as its Kind's doc says,
// at now (the time a condition it sets records), and reports how the write
// went. A node that is gone counts as done for the effects that remove
// something from it; a label is not done on a node that is gone, and the
// deletion of a node that is gone reports WriteNotFound.
func (ns Nodes) Apply(ctx context.Context, e *lifecycle.Effect, now time.Time) (lifecycle.Write, error) {
	switch e.Kind {
	case lifecycle.KindLabelNode:
		return ns.Update(ctx, e.Node, false, false, func(n *corev1.Node) bool { return SetKey(&n.Labels, e.Key, e.Value) })
	case lifecycle.KindAnnotateNode:
		return ns.Update(ctx, e.Node, false, false, func(n *corev1.Node) bool { return SetKey(&n.Annotations, e.Key, e.Value) })
	case lifecycle.KindRemoveNodeAnnotation:
		return ns.Update(ctx, e.Node, true, false, func(n *corev1.Node) bool {
			_, had := n.Annotations[e.Key]
			delete(n.Annotations, e.Key)
			return had
		})
	case lifecycle.KindRemoveNodeLabel:
		return ns.Update(ctx, e.Node, true, false, func(n *corev1.Node) bool {
			_, had := n.Labels[e.Key]
			delete(n.Labels, e.Key)
			return had
		})
	case lifecycle.KindRemoveTaint:
		return ns.Update(ctx, e.Node, true, false, func(n *corev1.Node) bool {
			before := len(n.Spec.Taints)
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == e.Key })
			return len(n.Spec.Taints) != before
		})
	case lifecycle.KindSetNodeCondition:
		w, err := ns.Update(ctx, e.Node, true, true, func(n *corev1.Node) bool {
			return SetCondition(n, corev1.NodeConditionType(e.Key), conditionStatus(e.Status), e.Value, e.Message, now)
		})
		if err != nil {
			// MCM's words for it, which the drain's failure quotes.
			err = fmt.Errorf("failed to create/update conditions on node %q: %w", e.Node, err)
		}
		return w, err
	case lifecycle.KindCordon:
		return ns.Update(ctx, e.Node, true, false, func(n *corev1.Node) bool {
			made := !n.Spec.Unschedulable
			n.Spec.Unschedulable = true
			if e.Key == "" {
				return made
			}
			// The mark, in the same write: set when this write makes the
			// cordon, removed when somebody else's was there already.
			if made {
				SetKey(&n.Annotations, e.Key, e.Value)
				return true
			}
			_, had := n.Annotations[e.Key]
			delete(n.Annotations, e.Key)
			return had
		})
	case lifecycle.KindUncordon:
		return ns.Update(ctx, e.Node, true, false, func(n *corev1.Node) bool {
			changed := n.Spec.Unschedulable
			n.Spec.Unschedulable = false
			if _, had := n.Annotations[e.Key]; had && e.Key != "" {
				delete(n.Annotations, e.Key)
				changed = true
			}
			return changed
		})
	case lifecycle.KindRemoveNodeFinalizer:
		return ns.Update(ctx, e.Node, true, false, func(n *corev1.Node) bool {
			return controllerutil.RemoveFinalizer(n, e.Key)
		})
	case lifecycle.KindDeleteNode:
		err := ns.Writer.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: e.Node}})
		return WriteOf(err), err
	}
	return lifecycle.WriteFailed, errNotNodeEffect(e.Kind)
}

// errNotNodeEffect is the error of Apply given an effect of another kind.
type errNotNodeEffect lifecycle.Kind

func (e errNotNodeEffect) Error() string {
	return "not a node effect: " + lifecycle.Kind(e).String()
}

// Update reads the node from the API server, changes it with mutate and
// writes it (its status when status is set) when mutate reports a change.
// A missing node counts as done when missingOK.
func (ns Nodes) Update(ctx context.Context, name string, missingOK, status bool, mutate func(*corev1.Node) bool) (lifecycle.Write, error) {
	n := &corev1.Node{}
	err := ns.Reader.Get(ctx, client.ObjectKey{Name: name}, n)
	if err == nil {
		if !mutate(n) {
			return lifecycle.WriteOK, nil
		}
		if status {
			err = ns.Writer.Status().Update(ctx, n)
		} else {
			err = ns.Writer.Update(ctx, n)
		}
	}
	if missingOK && apierrors.IsNotFound(err) {
		return lifecycle.WriteOK, nil
	}
	return WriteOf(err), err
}

// WriteOf classifies an API server's answer to a write.
func WriteOf(err error) lifecycle.Write {
	switch {
	case err == nil:
		return lifecycle.WriteOK
	case apierrors.IsConflict(err):
		return lifecycle.WriteConflict
	case apierrors.IsNotFound(err):
		return lifecycle.WriteNotFound
	}
	return lifecycle.WriteFailed
}

// SetKey sets (*m)[k] = v and reports whether that changed anything.
func SetKey(m *map[string]string, k, v string) bool {
	if old, ok := (*m)[k]; ok && old == v {
		return false
	}
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[k] = v
	return true
}

// SetCondition sets condition typ of the node to status with reason and
// message at now, and reports whether that changed anything. The
// condition's transition time moves only when its status changes.
func SetCondition(n *corev1.Node, typ corev1.NodeConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) bool {
	t := metav1.NewTime(now)
	for i := range n.Status.Conditions {
		c := &n.Status.Conditions[i]
		if c.Type != typ {
			continue
		}
		if c.Status == status && c.Reason == reason && c.Message == message {
			return false
		}
		if c.Status != status {
			c.LastTransitionTime = t
		}
		c.Status, c.Reason, c.Message, c.LastHeartbeatTime = status, reason, message, t
		return true
	}
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: typ, Status: status,
		Reason: reason, Message: message, LastHeartbeatTime: t, LastTransitionTime: t})
	return true
}

// conditionStatus is the Kubernetes text of s.
func conditionStatus(s lifecycle.ConditionStatus) corev1.ConditionStatus {
	return corev1.ConditionStatus(s.String())
}

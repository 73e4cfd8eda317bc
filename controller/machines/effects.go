package machines

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/lifecycle"
)

// apply carries out one effect that is neither a driver call nor a drain,
// as its Kind's doc says, and reports how the write went.
func (r *Reconciler) apply(ctx context.Context, p *pass, e lifecycle.Effect) (lifecycle.Write, error) {
	switch e.Kind {
	case lifecycle.KindEnsureFinalizer:
		return r.updateMachine(ctx, p, func(m *v1alpha1.Machine) bool { return controllerutil.AddFinalizer(m, lifecycle.Finalizer) })
	case lifecycle.KindRemoveFinalizer:
		return r.updateMachine(ctx, p, func(m *v1alpha1.Machine) bool {
			return controllerutil.RemoveFinalizer(m, lifecycle.Finalizer)
		})
	case lifecycle.KindEnsureNodeLabel:
		return r.updateMachine(ctx, p, func(m *v1alpha1.Machine) bool { return setKey(&m.Labels, lifecycle.NodeLabel, e.Value) })
	case lifecycle.KindEnsurePriority:
		return r.updateMachine(ctx, p, func(m *v1alpha1.Machine) bool {
			return setKey(&m.Annotations, lifecycle.PriorityAnnotation, e.Value)
		})
	case lifecycle.KindEnsureProviderID:
		return r.updateMachine(ctx, p, func(m *v1alpha1.Machine) bool {
			changed := m.Spec.ProviderID != e.Value
			m.Spec.ProviderID = e.Value
			return changed
		})

	case lifecycle.KindLabelNode:
		return r.updateNode(ctx, e.Node, false, false, func(n *corev1.Node) bool { return setKey(&n.Labels, e.Key, e.Value) })
	case lifecycle.KindRemoveTaint:
		return r.updateNode(ctx, e.Node, true, false, func(n *corev1.Node) bool {
			before := len(n.Spec.Taints)
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == e.Key })
			return len(n.Spec.Taints) != before
		})
	case lifecycle.KindSetNodeCondition:
		return r.updateNode(ctx, e.Node, true, true, func(n *corev1.Node) bool {
			return setCondition(n, corev1.NodeConditionType(e.Key), e.Value, lifecycle.ConditionMessage(e.Value), r.now())
		})
	case lifecycle.KindCordon:
		return r.updateNode(ctx, e.Node, true, false, func(n *corev1.Node) bool {
			changed := !n.Spec.Unschedulable
			n.Spec.Unschedulable = true
			return changed
		})
	case lifecycle.KindDrain:
		return r.drain(ctx, p, e)
	case lifecycle.KindDeleteVolumeAttachments:
		var vas storagev1.VolumeAttachmentList
		if err := r.client.List(ctx, &vas, client.MatchingFields{vaNodeIndex: e.Node}); err != nil {
			return lifecycle.WriteFailed, err
		}
		for i := range vas.Items {
			// Single failures count as done: the next pass looks again.
			if err := r.client.Delete(ctx, &vas.Items[i]); err != nil && !apierrors.IsNotFound(err) {
				p.log.Info("deleting a volume attachment failed", "name", vas.Items[i].Name, "error", err.Error())
			}
		}
		return lifecycle.WriteOK, nil
	case lifecycle.KindRemoveNodeFinalizer:
		return r.updateNode(ctx, e.Node, true, false, func(n *corev1.Node) bool {
			return controllerutil.RemoveFinalizer(n, e.Key)
		})
	case lifecycle.KindDeleteNode:
		err := r.client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: e.Node}})
		return writeOf(err), err

	case lifecycle.KindEnsureBootstrapToken:
		return r.ensureToken(ctx, p, e.Value, e.Expiry.Time())
	case lifecycle.KindDeleteBootstrapToken:
		return r.deleteToken(ctx, p, e.Value)

	case lifecycle.KindEvent:
		r.event(p, &p.decision.Status, e)
		return lifecycle.WriteOK, nil
	}
	return lifecycle.WriteFailed, fmt.Errorf("unknown effect %s", e.Kind)
}

// updateMachine changes the machine with mutate and writes it, with
// optimistic concurrency; the pass goes on with the object the write
// returned. A write that finds the object already as asked succeeds.
func (r *Reconciler) updateMachine(ctx context.Context, p *pass, mutate func(*v1alpha1.Machine) bool) (lifecycle.Write, error) {
	if p.gone {
		return lifecycle.WriteNotFound, errGone
	}
	mm := p.m.DeepCopy()
	if !mutate(mm) {
		return lifecycle.WriteOK, nil
	}
	return r.writeMachine(ctx, p, mm, false)
}

// updateNode reads the node from the API server, changes it with mutate
// and writes it (its status when status is set). A missing node counts as
// done when missingOK.
func (r *Reconciler) updateNode(ctx context.Context, name string, missingOK, status bool, mutate func(*corev1.Node) bool) (lifecycle.Write, error) {
	n := &corev1.Node{}
	err := r.reader.Get(ctx, client.ObjectKey{Name: name}, n)
	if err == nil {
		if !mutate(n) {
			return lifecycle.WriteOK, nil
		}
		if status {
			err = r.client.Status().Update(ctx, n)
		} else {
			err = r.client.Update(ctx, n)
		}
	}
	if missingOK && apierrors.IsNotFound(err) {
		return lifecycle.WriteOK, nil
	}
	return writeOf(err), err
}

// setKey sets (*m)[k] = v and reports whether that changed anything.
func setKey(m *map[string]string, k, v string) bool {
	if old, ok := (*m)[k]; ok && old == v {
		return false
	}
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[k] = v
	return true
}

// setCondition sets condition typ of the node to True with reason and
// message.
func setCondition(n *corev1.Node, typ corev1.NodeConditionType, reason, message string, now time.Time) bool {
	t := metav1.NewTime(now)
	for i := range n.Status.Conditions {
		c := &n.Status.Conditions[i]
		if c.Type != typ {
			continue
		}
		if c.Status == corev1.ConditionTrue && c.Reason == reason && c.Message == message {
			return false
		}
		if c.Status != corev1.ConditionTrue {
			c.LastTransitionTime = t
		}
		c.Status, c.Reason, c.Message, c.LastHeartbeatTime = corev1.ConditionTrue, reason, message, t
		return true
	}
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: typ, Status: corev1.ConditionTrue,
		Reason: reason, Message: message, LastHeartbeatTime: t, LastTransitionTime: t})
	return true
}

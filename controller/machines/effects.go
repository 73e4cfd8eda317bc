package machines

import (
	"context"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/kubeshell"
	"github.com/purelifecycle/machine/lifecycle"
)

// apply carries out one effect that is not a driver call, as its Kind's
// doc says, and reports how the write went. The node effects are
// kubeshell's.
func (r *Reconciler) apply(ctx context.Context, p *pass, e lifecycle.Effect) (lifecycle.Write, error) {
	if kubeshell.IsNodeEffect(e.Kind) {
		p.nodeWritten = true
		return r.nodes.Apply(ctx, &e, r.now())
	}
	switch e.Kind {
	case lifecycle.KindEnsureFinalizer:
		return r.updateMachine(ctx, p, func(m *v1alpha1.Machine) bool { return controllerutil.AddFinalizer(m, lifecycle.Finalizer) })
	case lifecycle.KindRemoveFinalizer:
		return r.updateMachine(ctx, p, func(m *v1alpha1.Machine) bool {
			return controllerutil.RemoveFinalizer(m, lifecycle.Finalizer)
		})
	case lifecycle.KindEnsureNodeLabel:
		return r.updateMachine(ctx, p, func(m *v1alpha1.Machine) bool { return kubeshell.SetKey(&m.Labels, lifecycle.NodeLabel, e.Value) })
	case lifecycle.KindEnsurePriority:
		return r.updateMachine(ctx, p, func(m *v1alpha1.Machine) bool {
			return kubeshell.SetKey(&m.Annotations, lifecycle.PriorityAnnotation, e.Value)
		})
	case lifecycle.KindEnsureProviderID:
		return r.updateMachine(ctx, p, func(m *v1alpha1.Machine) bool {
			changed := m.Spec.ProviderID != e.Value
			m.Spec.ProviderID = e.Value
			return changed
		})
	case lifecycle.KindRemoveAnnotation:
		return r.updateMachine(ctx, p, func(m *v1alpha1.Machine) bool {
			_, had := m.Annotations[e.Key]
			delete(m.Annotations, e.Key)
			if e.Key == lifecycle.PreserveAnnotation && m.Spec.Preserve != "" {
				// The spec's request for preservation is the annotation's.
				m.Spec.Preserve, had = "", true
			}
			return had
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

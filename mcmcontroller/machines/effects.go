package machines

import (
	"context"
	"fmt"
	"slices"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/purelifecycle/machine/kubeshell"
	"github.com/purelifecycle/machine/lifecycle"
)

// apply carries out one effect that is not a provider call, as its Kind's
// doc says, and reports how the write went. The node effects are
// kubeshell's; without a target cluster they and the bootstrap token's
// have nothing to act on and succeed.
func (p *pass) apply(ctx context.Context, e *lifecycle.Effect) (lifecycle.Write, error) {
	if p.r.noTarget && (kubeshell.IsNodeEffect(e.Kind) || targetEffect(e.Kind)) {
		return lifecycle.WriteOK, nil
	}
	if kubeshell.IsNodeEffect(e.Kind) {
		p.nodeWritten = true
		return p.r.nodes.Apply(ctx, e, p.r.opts.Now())
	}
	switch e.Kind {
	case lifecycle.KindEnsureFinalizer:
		return p.updateMachine(ctx, func(m *v1alpha1.Machine) bool {
			if slices.Contains(m.Finalizers, lifecycle.Finalizer) {
				return false
			}
			m.Finalizers = append(m.Finalizers, lifecycle.Finalizer)
			return true
		})
	case lifecycle.KindRemoveFinalizer:
		return p.updateMachine(ctx, func(m *v1alpha1.Machine) bool {
			n := len(m.Finalizers)
			m.Finalizers = slices.DeleteFunc(m.Finalizers, func(f string) bool { return f == lifecycle.Finalizer })
			return len(m.Finalizers) != n
		})
	case lifecycle.KindEnsureNodeLabel:
		return p.updateMachine(ctx, func(m *v1alpha1.Machine) bool { return kubeshell.SetKey(&m.Labels, lifecycle.NodeLabel, e.Value) })
	case lifecycle.KindEnsurePriority:
		return p.updateMachine(ctx, func(m *v1alpha1.Machine) bool {
			return kubeshell.SetKey(&m.Annotations, lifecycle.PriorityAnnotation, e.Value)
		})
	case lifecycle.KindEnsureProviderID:
		return p.updateMachine(ctx, func(m *v1alpha1.Machine) bool {
			changed := m.Spec.ProviderID != e.Value
			m.Spec.ProviderID = e.Value
			return changed
		})
	case lifecycle.KindRemoveAnnotation:
		return p.updateMachine(ctx, func(m *v1alpha1.Machine) bool {
			_, had := m.Annotations[e.Key]
			delete(m.Annotations, e.Key)
			return had
		})
	case lifecycle.KindDrain:
		blocked, err := p.r.nodes.Drain(ctx, e.Node, e.Force)
		p.evictionBlocked(e.Node, blocked)
		if err != nil {
			return lifecycle.WriteFailed, err
		}
		return lifecycle.WriteOK, nil
	case lifecycle.KindDeleteVolumeAttachments:
		if err := p.deleteVolumeAttachments(ctx, e.Node); err != nil {
			return lifecycle.WriteFailed, err
		}
		return lifecycle.WriteOK, nil
	case lifecycle.KindEnsureBootstrapToken:
		return p.ensureToken(ctx, e.Expiry.Time())
	case lifecycle.KindDeleteBootstrapToken:
		return p.deleteTokens(ctx)
	case lifecycle.KindEvent:
		p.event(e)
		return lifecycle.WriteOK, nil
	}
	return lifecycle.WriteFailed, fmt.Errorf("unknown effect %s", e.Kind)
}

// targetEffect reports whether effects of kind k act on the target cluster
// without being node effects.
func targetEffect(k lifecycle.Kind) bool {
	switch k {
	case lifecycle.KindDrain, lifecycle.KindDeleteVolumeAttachments,
		lifecycle.KindEnsureBootstrapToken, lifecycle.KindDeleteBootstrapToken:
		return true
	}
	return false
}

// updateMachine changes the machine with mutate and writes it, with
// optimistic concurrency; the pass goes on with the object the write
// returned. A write that finds the object already as asked succeeds.
func (p *pass) updateMachine(ctx context.Context, mutate func(*v1alpha1.Machine) bool) (lifecycle.Write, error) {
	if p.gone {
		return lifecycle.WriteNotFound, errGone
	}
	mm := p.m.DeepCopy()
	if !mutate(mm) {
		return lifecycle.WriteOK, nil
	}
	if err := p.r.c.Control.Update(ctx, mm); err != nil {
		w := kubeshell.WriteOf(err)
		if w == lifecycle.WriteNotFound {
			p.gone = true
		}
		return w, err
	}
	p.m = mm
	if mm.DeletionTimestamp != nil && len(mm.Finalizers) == 0 {
		p.gone = true // the last finalizer went: the API server deleted it
	}
	return lifecycle.WriteOK, nil
}

// event records the event an effect asks for on the machine: the rule's
// event reason, its text and the machine's last operation.
func (p *pass) event(e *lifecycle.Effect) {
	reason := e.Rule.Event()
	if reason == "" || p.gone || p.decision == nil {
		return
	}
	typ := corev1.EventTypeNormal
	if e.Warning {
		typ = corev1.EventTypeWarning
	}
	lo := lifecycle.LastOperation(&p.decision.Status, p.m.Name, p.now)
	p.r.c.Recorder.Eventf(p.m, typ, reason, "%s", kubeshell.CutNote(kubeshell.Sentence(e.Rule.Text())+" "+lo.Description))
}

// evictionBlocked records that the evictions of blocked were refused, in
// a Warning event kubeshell.ReasonEvictionBlocked.
func (p *pass) evictionBlocked(node string, blocked []string) {
	if len(blocked) == 0 || p.gone {
		return
	}
	p.log.Info("evictions refused for now; the drain goes on", "node", node, "pods", blocked)
	p.r.c.Recorder.Eventf(p.m, corev1.EventTypeWarning, kubeshell.ReasonEvictionBlocked, "%s", kubeshell.EvictionBlockedNote(node, blocked))
}

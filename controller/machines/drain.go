package machines

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/purelifecycle/machine/kubeshell"
	"github.com/purelifecycle/machine/lifecycle"
)

// drain carries out one round of the drain of the effect's node
// (kubeshell.Nodes.Drain). The pods whose eviction a disruption budget
// refuses are told in a Warning event ReasonEvictionBlocked on the
// machine, at most once per machine per repeatInterval: the lifecycle's
// wait says only that the node's pods have not gone.
func (r *Reconciler) drain(ctx context.Context, p *pass, e lifecycle.Effect) (lifecycle.Write, error) {
	blocked, err := r.nodes.Drain(ctx, e.Node, e.Force)
	r.evictionBlocked(p, e.Node, blocked)
	if err != nil {
		return lifecycle.WriteFailed, err
	}
	return lifecycle.WriteOK, nil
}

// ReasonEvictionBlocked is the reason of the Warning event recorded on a
// machine whose node's drain a disruption budget holds up: the pods whose
// eviction was refused, and why.
const ReasonEvictionBlocked = kubeshell.ReasonEvictionBlocked

// evictionBlocked records, at most once per machine per repeatInterval,
// that the evictions of blocked (at least one) were refused.
func (r *Reconciler) evictionBlocked(p *pass, node string, blocked []string) {
	if len(blocked) == 0 || p == nil || p.m == nil || !r.repeats.allow(string(p.m.UID)+"/eviction-blocked", r.now()) {
		return
	}
	p.log.Info("evictions refused for now; the drain goes on", "node", node, "pods", blocked)
	r.recorder.Eventf(p.m, nil, corev1.EventTypeWarning, ReasonEvictionBlocked, "Drain", "%s", kubeshell.EvictionBlockedNote(node, blocked))
}

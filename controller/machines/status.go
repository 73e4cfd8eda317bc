package machines

import (
	"cmp"
	"context"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/lifecycle"
)

// refreshStatus writes the machine's status once more at the end of a pass
// that ended done (lifecycle/pass.EndDone; d is its last decision), when
// the status a person reads (the observed generation, the wait, the
// conditions) is not what the machine shows: a decision that leaves the
// lifecycle's status unchanged is not saved, yet what the machine waits
// for may have changed (a class that went missing, a limiter's grant) and
// so may its generation. The lifecycle's status written is d's, which is
// the one the machine holds, so the next pass reads what this one did; the
// recorded bootstrap token ID is kept. A failed write is left to the next
// pass.
func (p *pass) refreshStatus(ctx context.Context, d *lifecycle.Decision) {
	if p.gone || p.m == nil || !d.Done() {
		return
	}
	view := v1alpha1.StatusOf(p.m, &d.Status, v1alpha1.Decided{Rule: d.Rule, Wait: d.Wait, Detail: problemDetail(p, d.Rule)}, p.now)
	p.keepControllerFields(&view)
	if v1alpha1.SameView(&view, &p.m.Status) {
		return
	}
	ctx, cancel := p.io(ctx)
	defer cancel()
	mm := p.m.DeepCopy()
	mm.Status = view
	if _, err := p.r.writeMachine(ctx, p, mm, true); err != nil {
		p.log.V(1).Info("refreshing the status failed", "error", err.Error())
	}
}

// keepControllerFields fills in the fields of status s that the lifecycle's
// status does not carry: the recorded bootstrap token ID, kept, and the
// zone of the machine's node, as this pass read it or else as recorded.
func (p *pass) keepControllerFields(s *v1alpha1.MachineStatus) {
	s.BootstrapTokenID = p.m.Status.BootstrapTokenID
	s.Zone = cmp.Or(p.zone, p.m.Status.Zone)
}

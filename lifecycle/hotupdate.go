package lifecycle

import (
	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/retry"
)

// Hot update (Stage-B of MCM's initialization proposal, which MCM never
// shipped:
// https://github.com/gardener/machine-controller-manager/blob/master/docs/proposals/initialize-machine.md):
// the part of a machine's spec a provider can apply to a running instance
// (tags, say: MCM issue 750,
// https://github.com/gardener/machine-controller-manager/issues/750) has a
// generation. A Running machine whose instance is at another generation gets
// Driver.UpdateMachine once health has run; new instances are created at the
// desired generation. A provider that cannot apply the change in place makes
// the machine "need replacement": it keeps running at its applied generation
// and is never replaced silently. A failed hot update never fails the machine.

// upkeep runs the sub-flows of a healthy Running machine whose node is in
// line, after health: hot update first, then metadata. At most one of them
// asks the driver.
func (x *decider) upkeep() {
	if x.hotUpdate() {
		return
	}
	x.metadata()
}

// hotUpdate asks UpdateMachine when the desired generation differs from the
// applied one, and reports whether it decided a call or a wait.
func (x *decider) hotUpdate() bool {
	o, st := &x.in.Object, x.st
	desired := o.UpdateGeneration
	if st.Flags.Has(FlagNeedsReplacement) && desired != st.RejectedGeneration {
		// The desired generation moved: the machine may be updatable again.
		set(x, &st.Flags, st.Flags&^FlagNeedsReplacement)
		set(x, &st.RejectedGeneration, 0)
	}
	if desired == st.AppliedGeneration || st.Flags.Has(FlagNeedsReplacement) {
		return false
	}
	if at := st.RetryAfter; at > x.now && at.Sub(x.now) <= x.maxBackoff() {
		// A failed update waits for its retry time; metadata may go on.
		x.requeue(at.Sub(x.now))
		return false
	}
	x.act(RuleUpdate)
	x.call(driverapi.Call{Method: driverapi.MethodUpdate, Machine: x.ref(), Generation: desired})
	x.requeue(retry.Short)
	return true
}

// onUpdate decides on UpdateMachine's answer. Deletion abandons an update in
// flight (absorb).
func (x *decider) onUpdate(res *driverapi.Result) next {
	st, o := x.st, &x.in.Object
	code, class := x.classify(res)
	switch {
	case code == driverapi.OK:
		applied := res.Generation
		if applied == 0 {
			applied = o.UpdateGeneration
		}
		x.pin(RuleUpdateApplied)
		set(x, &st.AppliedGeneration, applied)
		set(x, &st.Failures.Update, 0)
		set(x, &st.RetryAfter, 0)
		x.setOp(lastop.Operation{Type: lastop.TypeUpdate, State: lastop.StateSuccessful, Desc: lastop.DescHotUpdateApplied})
		x.event(RuleUpdateApplied, false)
		x.resync()
		return then(nextMetadata, RuleUpdateApplied)
	case code == driverapi.Unimplemented, code == driverapi.FailedPrecondition:
		x.pin(RuleUpdateNeedsReplacement)
		set(x, &st.Flags, st.Flags|FlagNeedsReplacement)
		set(x, &st.RejectedGeneration, o.UpdateGeneration)
		set(x, &st.Failures.Update, 0)
		set(x, &st.RetryAfter, 0)
		x.setOp(lastop.Operation{Type: lastop.TypeUpdate, State: lastop.StateFailed, Desc: lastop.DescNeedsReplacement,
			ErrorCode: code.String(), Detail: boundDetail(res.ErrorText())})
		x.event(RuleUpdateNeedsReplacement, true)
		x.resync()
		return then(nextMetadata, RuleUpdateNeedsReplacement)
	default:
		period := x.cfg.Retry.Period(class)
		if class == retry.ClassUndecodable {
			period = retry.Medium
		}
		x.pin(RuleUpdateFailed)
		set(x, &st.Failures.Update, bump(st.Failures.Update))
		x.setOp(lastop.Operation{Type: lastop.TypeUpdate, State: lastop.StateFailed, Desc: lastop.DescHotUpdateFailed,
			ErrorCode: code.String(), Detail: boundDetail(res.ErrorText())})
		x.retryLater(x.backoff(period, st.Failures.Update))
	}
	return done
}

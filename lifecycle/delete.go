package lifecycle

import (
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// delete runs a pass of the deletion flow (MCM table b.6).
func (x *decider) delete() {
	if !x.in.Object.Finalizer {
		// X2: without the finalizer nothing holds the object for us.
		x.rule(RuleDeleteNoFinalizer)
		x.requeue(retry.Long)
		x.wait(WaitFinalizer, StampOf(x.in.Object.DeletionTime), 0)
		return
	}
	if x.st.Phase != phase.Terminating {
		// X3: deletion begins.
		x.rule(RuleDeleteBegins)
		x.setStage(StageNone)
		x.setPhase(phase.Terminating)
		x.setOp(lastop.Operation{Type: lastop.TypeDelete, State: lastop.StateProcessing, Desc: lastop.DescTerminating})
		x.event(RuleDeleteBegins, false)
		x.requeue(retry.Short)
		return
	}
	x.rule(RuleIdle)
	x.requeue(retry.Short)
}

package lifecycle

import (
	"time"

	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/retry"
)

// The drain stage of the deletion flow (MCM's rows S2a-S2h,
// doc/mcm-rows.md): how a drain is carried out (forced or not, its timeout
// and evictions), the op that sets the node's Terminating condition, cordons
// and drains it, and what its outcome leads to. The rest of the flow:
// delete.go.

// drainMode is how a drain is carried out.
type drainMode struct {
	// force deletes pods instead of evicting them, and lets deletion go on
	// when the drain fails.
	force bool
	// timeout and retries bound the drain.
	timeout time.Duration
	retries int32
}

// drainMode decides MCM's forceDeletePods/forceDeleteMachine: forced by
// the force-deletion label or the drain timeout counted from the deletion
// time (which also shrink the drain to ForcedDrainTimeout and
// ForcedEvictRetries), or by a node NotReady or ReadonlyFilesystem for
// longer than ForceDrainAfter.
func (x *decider) drainMode() drainMode {
	o := &x.in.Object
	m := drainMode{timeout: x.cfg.drainTimeout(o), retries: x.cfg.maxEvictRetries(o)}
	spent := x.elapsed(x.deleted)
	if o.ForceDeletion || spent >= m.timeout {
		return drainMode{force: true, timeout: x.cfg.ForcedDrainTimeout, retries: x.cfg.ForcedEvictRetries}
	}
	if left := m.timeout - spent; x.st.Failures.Delete > 0 && left < m.timeout {
		// A retried drain gets the time left before the drain timeout
		// forces it (at least a forced drain's), not the whole timeout
		// again; the first gets MCM's whole timeout.
		m.timeout = max(left, x.cfg.ForcedDrainTimeout)
	}
	for i := range x.st.Conditions {
		// A condition without a transition time has been so forever, as
		// MCM's time.Since of the zero time says.
		if c := &x.st.Conditions[i]; forcesDrain(c) && (c.Since == 0 || x.elapsed(c.Since) >= x.cfg.ForceDrainAfter) {
			m.force = true
		}
	}
	return m
}

// forcesDrain reports whether condition c, held for ForceDrainAfter,
// forces the drain: a node NotReady, or with a read-only filesystem.
func forcesDrain(c *Condition) bool {
	return c.Type == ConditionReady && c.Status != ConditionTrue ||
		c.Type == "ReadonlyFilesystem" && c.Status != ConditionFalse
}

// drain is S2: set the node's Terminating condition, cordon it and drain
// it, as one op whose outcome says which part failed.
func (x *decider) drain() {
	if x.in.NodeReadFailed {
		// Nothing is done to a node that could not be read: a recorded
		// name alone does not prove that the node of that name is this
		// instance's (the name of a stale node object, a name reused).
		x.rule(RuleDeleteNodeUnreadable)
		x.requeue(retry.Short)
		return
	}
	node := x.deletionNode()
	if node == "" {
		// S2a: nothing to drain; volume attachments are skipped too.
		x.advance(RuleDeleteDrainSkipped, deleteOp(lastop.StateProcessing, lastop.DescDrainSkipped, ""),
			StageDeleteVM, FlagDrainSkipped)
		return
	}
	m := x.drainMode()
	if x.node() == nil {
		// The node was read and is not there: as MCM's drain of a node
		// not found, there is nothing to drain (S2e, S2f), and nothing is
		// written to a node of that name the observation does not show.
		x.drained(m.force)
		x.deleteStage()
		return
	}
	if m.force {
		x.act(RuleDeleteDrainForce)
	} else {
		x.act(RuleDeleteDrain)
	}
	reason := ReasonScaleDown
	if x.st.Flags.Has(FlagWasFailed) {
		reason = ReasonUnhealthy
	}
	x.nodeEffect(KindSetNodeCondition, node, ConditionTerminating, reason)
	x.nodeEffect(KindCordon, node, "", "")
	x.drainEffect(node, m.force, m.timeout, m.retries)
	x.requeue(retry.Short)
}

// onDrain decides on the outcome of a drain op (S2b-S2h). A forced drain goes
// on whatever failed; an unforced one retries with backoff from Short towards
// Medium (MCM issue 703,
// https://github.com/gardener/machine-controller-manager/issues/703), until
// the drain timeout forces it.
func (x *decider) onDrain(o *Outcome) next {
	forced := o.OpID.Rule() == RuleDeleteDrainForce
	n := o.OpID.Effects()
	if o.Ran >= n {
		x.drained(forced)
		return fresh
	}
	if forced && o.Ran < n-1 {
		// A write before the drain failed: the condition update (which MCM
		// only logs when forced) or the cordon (after which MCM goes on
		// without draining). The forced drain is attempted all the same,
		// with what followed the failed write, so no pods are left on a
		// node whose instance is deleted without a drain having tried.
		// A node that cannot be read now is drained on the next pass.
		if x.in.NodeReadFailed {
			x.rule(RuleDeleteNodeUnreadable)
			x.requeue(retry.Short)
			return done
		}
		if x.deletionNode() != "" && x.node() != nil {
			x.pin(RuleDeleteDrainForce)
			return then(nextForcedDrain, RuleDeleteDrainForce)
		}
	}
	if forced {
		// S2c, S2g: a forced drain goes on when the cordon or the drain
		// failed.
		return x.entered(RuleDeleteDrainForcedOn, deleteOp(lastop.StateProcessing, lastop.DescForceDrainFailed, o.Error),
			StageVolumes, FlagDrainForced)
	}
	desc := lastop.DescDrainFailed // S2d, S2h
	if n == 3 && failedAt(o, 3) == 0 {
		desc = lastop.DescDrainConditionFailed // S2b
	}
	return x.deleteFailed(RuleDeleteDrainFailed, deleteOp(lastop.StateFailed, desc, o.Error), retry.Short, retry.Medium)
}

// forcedDrainRest carries on a forced drain whose op o stopped at a write
// before the drain: what followed the failed write.
func (x *decider) forcedDrainRest(o *Outcome) {
	node := x.deletionNode()
	m := x.drainMode()
	x.act(RuleDeleteDrainForce)
	if o.OpID.Effects()-o.Ran-1 == 2 { // the condition failed: cordon, then drain
		x.nodeEffect(KindCordon, node, "", "")
	}
	x.drainEffect(node, true, m.timeout, m.retries)
	x.requeue(retry.Short)
}

// drained records a drain done, or a node with nothing to drain: after a
// forced drain the node's volume attachments come next (S3), else the
// instance's deletion.
func (x *decider) drained(forced bool) {
	if forced {
		x.enter(RuleDeleteForceDrained, deleteOp(lastop.StateProcessing, lastop.DescForceDrainSucceeded, ""),
			StageVolumes, FlagDrainForced)
		return
	}
	x.enter(RuleDeleteDrained, deleteOp(lastop.StateProcessing, lastop.DescDrainSucceeded, ""),
		StageDeleteVM, FlagDrainSucceeded)
}

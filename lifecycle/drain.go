package lifecycle

import (
	"strconv"
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
	// rounds bounds how long one unforced drain may take: with pods left
	// after rounds eviction rounds, EvictRetryInterval apart, it failed
	// and begins again after a backoff.
	rounds time.Duration
}

// drainMode decides MCM's forceDeletePods/forceDeleteMachine: forced by
// the force-deletion label or the drain timeout counted from the deletion
// time, or by a node NotReady or ReadonlyFilesystem for longer than
// ForceDrainAfter.
func (x *decider) drainMode() drainMode {
	o := &x.in.Object
	m := drainMode{rounds: time.Duration(max(x.cfg.maxEvictRetries(o), 1)) * x.cfg.EvictRetryInterval}
	m.force = o.ForceDeletion || x.elapsed(x.deleted) >= x.cfg.drainTimeout(o) || x.conditionsForceDrain()
	return m
}

// conditionsForceDrain reports whether the machine's mirrored node
// conditions force a drain: a node NotReady, or with a read-only
// filesystem, for ForceDrainAfter.
func (x *decider) conditionsForceDrain() bool {
	for i := range x.st.Conditions {
		// A condition without a transition time has been so forever, as
		// MCM's time.Since of the zero time says.
		if c := &x.st.Conditions[i]; forcesDrain(c) && (c.Since == 0 || x.elapsed(c.Since) >= x.cfg.ForceDrainAfter) {
			return true
		}
	}
	return false
}

// forcesDrain reports whether condition c, held for ForceDrainAfter,
// forces the drain: a node NotReady, or with a read-only filesystem.
func forcesDrain(c *Condition) bool {
	return c.Type == ConditionReady && c.Status != ConditionTrue ||
		c.Type == "ReadonlyFilesystem" && c.Status != ConditionFalse
}

// drain is S2: set the node's Terminating condition, cordon it and begin
// its drain, as one op whose outcome says which part failed; then, while
// the drain is under way, follow it (draining).
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
	n := x.node()
	if n == nil {
		// The node was read and is not there: as MCM's drain of a node
		// not found, there is nothing to drain (S2e, S2f), and nothing is
		// written to a node of that name the observation does not show.
		x.drained(m.force || x.st.Flags.Has(FlagDeletingPods))
		x.deleteStage()
		return
	}
	if x.st.Flags.Has(FlagDraining) {
		x.draining(n, m)
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
	e := x.put(KindSetNodeCondition)
	e.Node, e.Key, e.Value, e.Message, e.Status = node, ConditionTerminating, reason, ConditionMessage(reason), ConditionTrue
	x.nodeEffect(KindCordon, node, "", "")
	x.drainEffect(node, m.force)
	x.requeue(retry.Short)
}

// draining follows the drain under way of node n: it is done when the
// node shows no pods left; a forced one goes on without them after
// ForcedDrainTimeout (S2g); an unforced one is forced when its drain
// timeout passes or its node's conditions say so, and failed after its
// eviction rounds (S2h); in between, a round of evictions every
// EvictRetryInterval asks again for the pods left.
func (x *decider) draining(n *Node, m drainMode) {
	st := x.st
	forced := st.Flags.Has(FlagDeletingPods)
	spent := x.elapsed(st.StageSince)
	switch {
	case n.Pods <= 0:
		// S2e, S2f: the world shows the node drained.
		x.drained(forced)
		x.deleteStage()
	case forced && spent >= x.cfg.ForcedDrainTimeout:
		// S2g: the pods the forced drain deleted are not all gone in time.
		x.endDrain()
		x.advance(RuleDeleteDrainForcedOn, deleteOp(lastop.StateProcessing, lastop.DescForceDrainFailed, podsLeft(n.Pods)),
			StageVolumes, FlagDrainForced)
	case !forced && m.force:
		// Forced now: the pods left are deleted.
		x.act(RuleDeleteDrainForce)
		x.drainEffect(n.Name, true)
		x.requeue(retry.Short)
	case !forced && spent >= m.rounds:
		// S2h: the evictions of this drain ran out; it begins again.
		x.endDrain()
		x.deleteFailed(RuleDeleteDrainFailed, deleteOp(lastop.StateFailed, lastop.DescDrainFailed, podsLeft(n.Pods)),
			retry.Short, retry.Medium)
	case spent < x.cfg.EvictRetryInterval:
		// The drain began this round; the next asks again.
		x.rule(RuleDeleteDraining)
		x.wake(x.drainBound(forced, m, spent, x.cfg.EvictRetryInterval-spent), x.cfg.EvictRetryInterval)
	default:
		x.act(RuleDeleteDrainRound)
		x.drainEffect(n.Name, forced)
		x.requeue(retry.Short)
	}
}

// drainBound bounds a wait of the drain under way, wanted, by the moment
// it must be looked at again: a forced one's timeout, an unforced one's
// last round (its drain timeout and its node's conditions are the wait's
// own deadlines, see decideWait).
func (x *decider) drainBound(forced bool, m drainMode, spent, wanted time.Duration) time.Duration {
	left := m.rounds - spent
	if forced {
		left = x.cfg.ForcedDrainTimeout - spent
	}
	return max(min(wanted, left), 1)
}

// podsLeft is the detail of a drain that ended with pods left.
func podsLeft(n int) string {
	if n == 1 {
		return "1 pod left on the node"
	}
	return strconv.Itoa(n) + " pods left on the node"
}

// onDrain decides on the outcome of the op that begins a drain (S2b-S2h),
// or forces one under way. When all of it ran, the drain is under way
// from now. A forced drain goes on whatever failed; an unforced one
// retries with backoff from Short towards Medium (MCM issue 703,
// https://github.com/gardener/machine-controller-manager/issues/703), until
// the drain timeout forces it.
func (x *decider) onDrain(o *Outcome) next {
	forced := o.OpID.Rule() == RuleDeleteDrainForce
	n := o.OpID.Effects()
	if o.Ran >= n {
		st := x.st
		flags := st.Flags | FlagDraining
		if forced {
			flags |= FlagDeletingPods
		}
		set(x, &st.Flags, flags)
		set(x, &st.StageSince, x.now)
		set(x, &st.RetryAfter, 0)
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
		x.endDrain()
		return x.entered(RuleDeleteDrainForcedOn, deleteOp(lastop.StateProcessing, lastop.DescForceDrainFailed, o.Error),
			StageVolumes, FlagDrainForced)
	}
	desc := lastop.DescDrainFailed // S2d, S2h
	if n == 3 && failedAt(o, 3) == 0 {
		desc = lastop.DescDrainConditionFailed // S2b
	}
	x.endDrain()
	return x.deleteFailed(RuleDeleteDrainFailed, deleteOp(lastop.StateFailed, desc, o.Error), retry.Short, retry.Medium)
}

// onDrainRound decides on the outcome of a round of the drain under way:
// when the node shows no pods left, a fresh decision records it drained;
// else the drain waits for its next round. A round that failed is the
// drain's failure (onDrain).
func (x *decider) onDrainRound(o *Outcome) next {
	if o.Ran < o.OpID.Effects() {
		if x.st.Flags.Has(FlagDeletingPods) {
			x.endDrain()
			return x.entered(RuleDeleteDrainForcedOn, deleteOp(lastop.StateProcessing, lastop.DescForceDrainFailed, o.Error),
				StageVolumes, FlagDrainForced)
		}
		x.endDrain()
		return x.deleteFailed(RuleDeleteDrainFailed, deleteOp(lastop.StateFailed, lastop.DescDrainFailed, o.Error),
			retry.Short, retry.Medium)
	}
	if n := x.node(); n == nil || n.Pods <= 0 || x.in.NodeReadFailed {
		return fresh
	}
	// Pods are left: the next round comes after EvictRetryInterval, or
	// sooner when a timeout of the drain passes (the fresh decision of a
	// later pass decides on it).
	x.rule(RuleDeleteDraining)
	forced, m := x.st.Flags.Has(FlagDeletingPods), x.drainMode()
	x.wake(x.drainBound(forced, m, x.elapsed(x.st.StageSince), x.cfg.EvictRetryInterval), x.cfg.EvictRetryInterval)
	return done
}

// forcedDrainRest carries on a forced drain whose op o stopped at a write
// before the drain: what followed the failed write.
func (x *decider) forcedDrainRest(o *Outcome) {
	node := x.deletionNode()
	x.act(RuleDeleteDrainForce)
	if o.OpID.Effects()-o.Ran-1 == 2 { // the condition failed: cordon, then drain
		x.nodeEffect(KindCordon, node, "", "")
	}
	x.drainEffect(node, true)
	x.requeue(retry.Short)
}

// drained records a drain done, or a node with nothing to drain: after a
// forced drain the node's volume attachments come next (S3), else the
// instance's deletion.
func (x *decider) drained(forced bool) {
	x.endDrain()
	if forced {
		x.enter(RuleDeleteForceDrained, deleteOp(lastop.StateProcessing, lastop.DescForceDrainSucceeded, ""),
			StageVolumes, FlagDrainForced)
		return
	}
	x.enter(RuleDeleteDrained, deleteOp(lastop.StateProcessing, lastop.DescDrainSucceeded, ""),
		StageDeleteVM, FlagDrainSucceeded)
}

// endDrain records that no drain is under way any more.
func (x *decider) endDrain() {
	set(x, &x.st.Flags, x.st.Flags&^flagsDrainUnderWay)
}

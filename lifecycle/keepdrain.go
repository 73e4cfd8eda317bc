package lifecycle

import (
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/retry"
)

// The drain of a node whose machine stays: before an in-place update
// (StageInPlaceDrain, a Running machine whose node is selected) and of a
// preserved Failed machine's node (StagePreserveDrain). Its rounds and its
// forcing are those of deletion's drain (drain.go), and its stage keeps
// where it is across passes; unlike deletion's it never goes on with pods
// left on the node, since what follows (the node agent's update, a node
// kept for diagnosis without workloads) needs the node empty. StageSince is
// when the drain began; the drain timeout counts from it.

// keepRules are the rules of one kind of the drain of a kept node.
type keepRules struct {
	drain, force, round, draining, failed, backoff Rule
}

// keepRules returns the rules of the drain of stage s.
func (s Stage) keepRules() keepRules {
	if s == StagePreserveDrain {
		return keepRules{RulePreserveDrain, RulePreserveDrainForce, RulePreserveDrainRound, RulePreserveDraining,
			RulePreserveDrainFailed, RulePreserveDrainBackoff}
	}
	return keepRules{RuleInPlaceDrain, RuleInPlaceDrainForce, RuleInPlaceDrainRound, RuleInPlaceDraining,
		RuleInPlaceDrainFailed, RuleInPlaceDrainBackoff}
}

// keepDrainForced reports whether the drain of the machine's kept node is
// forced: by the machine's force-drain label, by the drain timeout counted
// from the drain's start, or by a node NotReady or with a read-only
// filesystem for ForceDrainAfter.
func (x *decider) keepDrainForced() bool {
	o := &x.in.Object
	return o.ForceDrain || x.elapsed(x.st.StageSince) >= x.cfg.drainTimeout(o) || x.conditionsForceDrain()
}

// beginKeepDrain emits the cordon of node n and a first round of its
// drain, as the op of the stage's drain (appended to whatever the caller
// put before them). A preservation's cordon of a schedulable node is the
// lifecycle's to give back, marked as its own in the same write
// (CordonMarkAnnotation, FlagPreserveCordonMarked), so that a cordon
// somebody else makes after that write was lost is not taken for it.
func (x *decider) beginKeepDrain(n *Node, force bool) {
	st := x.st
	r := st.Stage.keepRules()
	if force {
		x.act(r.force)
	} else {
		x.act(r.drain)
	}
	if st.Stage == StagePreserveDrain && !n.Unschedulable {
		set(x, &st.Flags, st.Flags&^FlagPreserveCordoned|FlagPreserveCordonMarked)
		x.nodeEffect(KindCordon, n.Name, CordonMarkAnnotation, CordonMarkPreservation)
	} else {
		x.nodeEffect(KindCordon, n.Name, "", "")
	}
	x.drainEffect(n.Name, force)
	x.requeue(retry.Short)
}

// keepDraining follows the drain of kept node n: begun again after a
// failure before it was under way or when the node shows it uncordoned,
// done when the node shows no pods left,
// forced when its timeout passes, and in between a round of evictions
// every EvictRetryInterval.
func (x *decider) keepDraining(n *Node) {
	st := x.st
	r := st.Stage.keepRules()
	if x.holdRetry(r.backoff) {
		return
	}
	force := x.keepDrainForced()
	spent := x.elapsed(st.StageSince)
	switch {
	case !st.Flags.Has(FlagDraining) || !n.Unschedulable:
		// Not under way yet, or someone uncordoned the node: the cordon
		// and a round again.
		if st.Stage == StageInPlaceDrain {
			x.beginInPlaceDrain(n, inPlaceReason(n), force)
		} else {
			x.beginKeepDrain(n, force)
		}
	case n.Pods <= 0:
		set(x, &st.Failures.Drain, 0)
		if st.Stage == StageInPlaceDrain {
			x.inPlaceDrained(n)
		} else {
			x.preserveDrained(n)
		}
	case force && !st.Flags.Has(FlagDeletingPods):
		x.act(r.force)
		x.drainEffect(n.Name, true)
		x.requeue(retry.Short)
	case spent < x.cfg.EvictRetryInterval:
		x.rule(r.draining)
		x.wake(x.cfg.EvictRetryInterval-spent, x.cfg.EvictRetryInterval)
	default:
		x.act(r.round)
		x.drainEffect(n.Name, st.Flags.Has(FlagDeletingPods))
		x.requeue(retry.Short)
	}
}

// onKeepDrain decides on the outcome of an op of the drain of a kept node.
// When all of it ran, the drain is under way (forced when the op was); a
// fresh decision records it done if the node shows no pods left, else it
// waits for its next round. A write that failed fails the drain, retried
// with backoff from Short towards Medium; before an in-place update MCM's
// I2 records it as a DrainNode operation.
func (x *decider) onKeepDrain(o *Outcome) next {
	st := x.st
	if x.deleting() {
		return fresh // deletion takes over; it drains the node itself
	}
	r := st.Stage.keepRules()
	if o.Ran < o.OpID.Effects() {
		x.pin(r.failed)
		set(x, &st.Failures.Drain, bump(st.Failures.Drain))
		if st.Stage == StageInPlaceDrain {
			x.setOp(lastop.Operation{Type: lastop.TypeDrainNode, State: lastop.StateProcessing, Desc: lastop.DescDrainFailed,
				Detail: boundDetail(o.Error)})
		}
		x.retryLater(x.backoffTo(retry.Short, retry.Medium, st.Failures.Drain))
		return done
	}
	flags := st.Flags | FlagDraining
	if o.OpID.Rule() == r.force {
		flags |= FlagDeletingPods
	}
	set(x, &st.Flags, flags)
	set(x, &st.RetryAfter, 0)
	if n := x.node(); n == nil || n.Pods <= 0 || x.in.NodeReadFailed {
		return fresh
	}
	x.rule(r.draining)
	wait := x.cfg.EvictRetryInterval
	if !st.Flags.Has(FlagDeletingPods) {
		// Looked at again no later than the drain is forced.
		wait = max(min(wait, x.cfg.drainTimeout(&x.in.Object)-x.elapsed(st.StageSince)), 1)
	}
	x.wake(wait, x.cfg.EvictRetryInterval)
	return done
}

// endKeepDrain ends the drain of a kept node: no stage, no drain under
// way.
func (x *decider) endKeepDrain() {
	x.setStage(StageNone)
	x.endDrain()
}

package lifecycle

import (
	"strings"
	"time"

	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// Preservation (MCM's preservation step; its lines P1-P8 in
// doc/mcm-rows.md): a machine, and its node, kept for diagnosis instead of
// replaced. An annotation asks for it (PreserveAnnotation on the machine
// or its node): now, when the machine is Failed, or auto-preserved (the
// owner chose the Failed machine within its maximum). A preserved machine
// has an expiry (Status.PreserveUntil), one preservation timeout after it
// began; its node is kept from the cluster autoscaler and says so in its
// Preserved condition, and a Failed machine's node is drained first
// (keepdrain.go), so its workloads move while the node stays. Preservation
// stops when the annotation no longer asks for it, and ends at the expiry,
// or when an auto-preserved machine recovers: the annotations are removed
// so that it does not begin again, the node is given back.
//
// Decided here, where MCM leaves it open:
//   - Every change to Failed sets the expiry in the same decision when
//     preservation is asked for a Failed machine, so the owner never sees a
//     Failed machine without it that it would replace (MCM sets it in a
//     later reconcile, and some paths to Failed clear it).
//   - Preservation is decided at the start of a pass and never ends the
//     pass: the machine's own flow goes on after its writes (MCM's step
//     ends the reconcile on an error, before creation; MCM issue 1110,
//     https://github.com/gardener/machine-controller-manager/issues/1110).
//   - The node's own annotation, once it carried one, decides (the status
//     records it); the machine's annotation is not moved onto a record of
//     the node's, as MCM does.
//   - A preserved node is cordoned by its drain only when its machine is
//     Failed; it is uncordoned when the machine recovers or preservation
//     stops, only if the lifecycle cordoned it for the preservation.

// preserveAsked returns what the annotations ask of the machine's
// preservation, and whether the machine is preservation-bound at all (it
// is preserved, or an annotation names it, or the node's annotation
// decided before). n is the machine's node, nil when it has none. A
// machine's invalid value counts as none; a node's invalid value decides
// nothing (bound false).
func (x *decider) preserveAsked(n *Node) (Preserve, bool) {
	st := x.st
	machine := x.in.Object.Preserve
	if machine == PreserveInvalid {
		machine = PreserveUnset
	}
	byNode := n != nil && (n.Preserve != PreserveUnset || st.Flags.Has(FlagPreserveByNode))
	switch {
	case byNode && n.Preserve == PreserveInvalid:
		// Decides nothing while a preservation is under way, as MCM;
		// but one past its expiry ends, and what one left on the node
		// is given back.
		if st.PreserveUntil != 0 && x.now < st.PreserveUntil {
			return PreserveUnset, false
		}
		return PreserveFalse, st.PreserveUntil != 0 || st.Flags&flagsPreserveCordon != 0 || preservedLeftover(n) ||
			conditionIs(n.Conditions, ConditionPreserved, ConditionTrue)
	case byNode:
		return n.Preserve, true
	case machine == PreserveUnset && x.in.Grant.Preserve && x.autoPreservationGoesOn():
		return PreserveAutoPreserved, true
	}
	return machine, machine != PreserveUnset || st.PreserveUntil != 0 || st.Flags&(FlagPreserveByNode|flagsPreserveCordon) != 0 ||
		n != nil && preservedLeftover(n)
}

// autoPreservationGoesOn reports whether a grant of auto-preservation
// keeps the machine's preservation or may begin one: one under way
// (whatever began it), or none yet in this spell of Failed
// (FlagAutoPreserved stays once one ended, until the machine leaves
// Failed) and within its preservation timeout of its failure.
func (x *decider) autoPreservationGoesOn() bool {
	st := x.st
	switch {
	case st.PreserveUntil != 0:
		return true // the grant keeps the preservation under way, whatever began it
	case st.Flags.Has(FlagAutoPreserved):
		return false // ended in this spell of Failed
	}
	return autoPreservable(st.PhaseSince, x.now, x.cfg.preserveTimeout(&x.in.Object))
}

// byGrant reports whether the preservation asked, asked, comes from the
// fleet's grant rather than an annotation of the machine or of node n.
func (x *decider) byGrant(n *Node, asked Preserve) bool {
	o := x.in.Object.Preserve
	return asked == PreserveAutoPreserved && (o == PreserveUnset || o == PreserveInvalid) &&
		(n == nil || n.Preserve == PreserveUnset) && !x.st.Flags.Has(FlagPreserveByNode)
}

// autoPreservable reports whether a machine Failed since since may still
// begin an auto-preservation at now: not after one preservation timeout,
// when its preservation would have expired, so an expired one does not
// begin again.
func autoPreservable(since, now Stamp, timeout time.Duration) bool {
	return since != 0 && now < since.Add(timeout)
}

// preservedNode returns the machine's node when it is proven the
// instance's own (it carries the recorded providerID), else nil:
// preservation writes to, cordons and drains no node known only by a name
// or a label, which another incarnation's node may carry.
func (x *decider) preservedNode() *Node {
	n := x.node()
	if n == nil || n.ProviderID == "" || n.ProviderID != x.st.ProviderID {
		return nil
	}
	return n
}

// preservedLeftover reports whether node n still shows a preservation:
// the cluster autoscaler kept off by the lifecycle. Preservation writes the
// Preserved condition False before it takes the autoscaler's annotations
// off, so a node whose condition still says True shows them too.
func preservedLeftover(n *Node) bool { return n.ScaleDownDisabled }

// mayPreserve reports, cheaply, whether anything names the machine's
// preservation: its expiry, its annotations or its node's, its grant, or
// what a preservation left on the node. Most machines have none of them.
// Of the flags of preservation only those of a cordon to give back count
// (FlagPreserveCordoned, FlagPreserveCordonMarked): FlagAutoPreserved
// matters only with a grant, FlagPreserveByNode only when an annotation
// asks.
func (x *decider) mayPreserve() bool {
	n := &x.in.Node
	return x.st.PreserveUntil != 0 || x.in.Object.Preserve != PreserveUnset || n.Preserve != PreserveUnset ||
		n.ScaleDownDisabled || x.in.Grant.Preserve || x.st.Flags&flagsPreserveCordon != 0
}

// conditionIs reports whether conds hold a condition of type typ with
// status s.
func conditionIs(conds []Condition, typ string, s ConditionStatus) bool {
	for i := range conds {
		if conds[i].Type == typ {
			return conds[i].Status == s
		}
	}
	return false
}

// preservation decides the preservation of a machine not being deleted,
// before its phase's flow (P1-P8). It reports whether it decided the
// step: writes to bring the node or the annotations in line (at the start
// of a pass), or the drain of a preserved Failed machine's node. A
// preservation that only begins (its expiry) lets the flow go on.
func (x *decider) preservation() bool {
	if x.in.NodeReadFailed || x.cfg.NoTargetCluster && x.in.Object.Preserve == PreserveUnset && x.st.PreserveUntil == 0 {
		return false
	}
	n, st := x.preservedNode(), x.st
	if n != nil && n.Unschedulable && st.Phase == phase.Failed && st.Stage != StagePreserveDrain &&
		st.Flags&(flagsPreserveCordon|FlagPreserveDrained) == 0 && drainedForPreservation(n) {
		// The node of a Failed machine cordoned by a preservation's drain
		// the lifecycle did not see (MCM's, before the machine was taken
		// over, which lifts it once the machine is not Failed): given back
		// as the lifecycle's own, without a mark. Not while or once the
		// lifecycle drains the node itself: the condition is then its own,
		// and the cordon under it somebody else's unless marked as the
		// lifecycle's.
		set(x, &st.Flags, st.Flags|FlagPreserveCordoned)
	}
	asked, bound := x.preserveAsked(n)
	if !bound {
		return false
	}
	if n != nil && n.Preserve != PreserveUnset {
		set(x, &st.Flags, st.Flags|FlagPreserveByNode)
	}
	expired := st.PreserveUntil != 0 && x.now >= st.PreserveUntil
	failed := st.Phase == phase.Failed
	switch {
	case asked == PreserveNow && expired, asked == PreserveWhenFailed && expired,
		asked == PreserveAutoPreserved && (expired || !failed):
		return x.endPreservation(n) // P5, P2, P7
	case asked == PreserveNow, asked == PreserveWhenFailed && failed, asked == PreserveAutoPreserved:
		return x.preserve(n, asked) // P6, P4, P8
	}
	return x.stopPreservation(n) // P1, P3
}

// preserve keeps the machine: its expiry set when preservation begins, a
// Failed machine's node drained, then the node kept from the cluster
// autoscaler and its Preserved condition True, and a node the lifecycle
// cordoned for the preservation uncordoned once the machine recovered.
func (x *decider) preserve(n *Node, asked Preserve) bool {
	st, o := x.st, &x.in.Object
	if st.PreserveUntil == 0 {
		x.pin(RulePreserve)
		st.PreserveUntil = x.now.Add(x.cfg.preserveTimeout(o))
		x.changed = true
		x.event(RulePreserve, false)
	}
	if x.byGrant(n, asked) {
		set(x, &st.Flags, st.Flags|FlagAutoPreserved)
	}
	if n == nil {
		return false
	}
	failed := st.Phase == phase.Failed
	drained := st.Flags.Has(FlagPreserveDrained) && n.Unschedulable && n.Pods <= 0
	if failed && !drained {
		// Not drained, or no longer as the drain left it (a node object
		// made anew, workloads back): drained (again).
		if st.Stage != StagePreserveDrain {
			x.setStage(StagePreserveDrain)
			set(x, &st.Failures.Drain, 0)
			set(x, &st.Flags, st.Flags&^FlagPreserveDrained)
			x.beginKeepDrain(n, x.keepDrainForced())
			return true
		}
		x.keepDraining(n)
		return true
	}
	if x.in.Outcome != nil {
		return false // the node's writes come at the start of a pass
	}
	wrote := false
	if !n.ScaleDownDisabled {
		// The marker first: a preservation that stops takes off only
		// what the marker says it put there.
		x.nodeEffect(KindAnnotateNode, n.Name, ScaleDownDisabledByAnnotation, "true")
		x.nodeEffect(KindAnnotateNode, n.Name, ScaleDownDisabledAnnotation, "true")
		wrote = true
	}
	reason := ReasonPreservedByUser
	if asked == PreserveAutoPreserved {
		reason = ReasonPreservedByMCM
	}
	msg := "Machine preserved until " + st.PreserveUntil.Time().UTC().String() + "."
	if failed {
		msg = preservedDrainedMessage + msg
	}
	if !hasCondition(n.Conditions, ConditionPreserved, ConditionTrue, reason, msg) {
		x.preservedCondition(n, ConditionTrue, reason, msg)
		wrote = true
	}
	if x.giveBackCordon(n) {
		wrote = true
	}
	if wrote {
		x.rule(RulePreserveNode)
		x.resync()
	}
	return wrote
}

// preservedDrainedMessage begins the message of the Preserved condition
// of a Failed machine's node once the preservation drained it, as MCM
// writes it.
const preservedDrainedMessage = "Preserved node drained successfully. "

// drainedForPreservation reports whether node n says a preservation
// drained it: its Preserved condition True, with the message a
// preservation writes once the node of a Failed machine was drained.
func drainedForPreservation(n *Node) bool {
	for i := range n.Conditions {
		if c := &n.Conditions[i]; c.Type == ConditionPreserved {
			return c.Status == ConditionTrue && strings.HasPrefix(c.Message, preservedDrainedMessage)
		}
	}
	return false
}

// giveBackCordon uncordons node n while it is cordoned, when the cordon
// is the preservation's and the machine is not Failed any more: the
// lifecycle cordoned the schedulable node to drain it while the machine
// was Failed and the node shows the cordon marked as the lifecycle's
// (FlagPreserveCordonMarked), or the status trusts the cordon without a
// mark (FlagPreserveCordoned: MCM's taken over, or an earlier version's).
// Once the node shows it schedulable, the cordon is forgotten (so a write
// lost after the status was saved is made again). It reports whether it emitted the
// uncordon. n is the machine's own node (preservedNode); a shell carries
// the uncordon out at the start of a pass, or with the change to Running
// (running).
func (x *decider) giveBackCordon(n *Node) bool {
	st := x.st
	if st.Flags&flagsPreserveCordon == 0 || st.Phase == phase.Failed {
		return false
	}
	switch {
	case !n.Unschedulable || st.Stage == StageInPlaceDrain || st.Phase.InPlace() || n.Update.Has(UpdateSelected):
		// Given back, or the cordon belongs to an in-place update's
		// drain now.
	case n.OwnCordon || st.Flags.Has(FlagPreserveCordoned):
		x.nodeEffect(KindUncordon, n.Name, CordonMarkAnnotation, "")
		return true
	default:
		// A cordon without the lifecycle's mark: the write of the
		// lifecycle's own cordon was lost, and somebody (an
		// administrator) cordoned the node since. It stays.
	}
	set(x, &st.Flags, st.Flags&^flagsPreserveCordon)
	return false
}

// preserveDrained records the preserved Failed machine's node drained; the
// next pass marks its condition.
func (x *decider) preserveDrained(n *Node) {
	x.rule(RulePreserveDrained)
	x.endKeepDrain()
	set(x, &x.st.Flags, x.st.Flags|FlagPreserveDrained)
	x.requeue(retry.Short)
}

// endPreservation ends a preservation for good (P2, P5, P7): while an
// annotation still asks for it, the annotations are removed (at the start
// of a pass), so that it does not begin again; once none asks, it stops.
func (x *decider) endPreservation(n *Node) bool {
	o := &x.in.Object
	if o.Preserve == PreserveUnset && (n == nil || n.Preserve == PreserveUnset) {
		return x.stopPreservation(n)
	}
	if x.in.Outcome != nil {
		return false
	}
	x.rule(RulePreserveEnd)
	if o.Preserve != PreserveUnset {
		x.put(KindRemoveAnnotation).Key = PreserveAnnotation
	}
	if n != nil && n.Preserve != PreserveUnset {
		x.nodeEffect(KindRemoveNodeAnnotation, n.Name, PreserveAnnotation, "")
	}
	x.requeue(retry.Short)
	return true
}

// stopPreservation stops a preservation no longer asked for (P1, P3): the
// expiry cleared, the node given back (its Preserved condition False, the
// cluster autoscaler's annotations removed, uncordoned when the lifecycle
// cordoned it and the machine is not Failed). The node's writes come at
// the start of a pass and are emitted again while the node shows a
// preservation, so a write lost after the status was saved is made again.
func (x *decider) stopPreservation(n *Node) bool {
	st := x.st
	stopped := st.PreserveUntil != 0
	if stopped {
		x.pin(RulePreserveStop)
		set(x, &st.PreserveUntil, 0)
		x.event(RulePreserveStop, false)
	}
	if st.Stage == StagePreserveDrain {
		x.endKeepDrain()
	}
	if n == nil || n.Preserve == PreserveUnset {
		set(x, &st.Flags, st.Flags&^FlagPreserveByNode)
	}
	if n == nil {
		set(x, &st.Flags, st.Flags&^(FlagPreserveDrained|flagsPreserveCordon))
		return false
	}
	if x.in.Outcome != nil {
		return false // the node's writes come at the start of a pass
	}
	wrote := false
	if conditionIs(n.Conditions, ConditionPreserved, ConditionTrue) {
		x.preservedCondition(n, ConditionFalse, ReasonPreservationStopped, "")
		wrote = true
	}
	if n.ScaleDownDisabled {
		x.nodeEffect(KindRemoveNodeAnnotation, n.Name, ScaleDownDisabledAnnotation, "")
		x.nodeEffect(KindRemoveNodeAnnotation, n.Name, ScaleDownDisabledByAnnotation, "")
		wrote = true
	}
	if x.giveBackCordon(n) {
		wrote = true
	}
	if wrote {
		if stopped {
			x.rule(RulePreserveStop)
		} else {
			// Stopped before (its event reported then): the node's
			// writes only.
			x.rule(RulePreserveNode)
		}
		x.resync()
	}
	return wrote
}

// preservedCondition appends the write of node n's Preserved condition.
func (x *decider) preservedCondition(n *Node, s ConditionStatus, reason, msg string) {
	e := x.put(KindSetNodeCondition)
	e.Node, e.Key, e.Value, e.Message, e.Status = n.Name, ConditionPreserved, reason, msg, s
}

// hasCondition reports whether conds hold a condition of type typ with
// status s, reason and message.
func hasCondition(conds []Condition, typ string, s ConditionStatus, reason, msg string) bool {
	for i := range conds {
		if c := &conds[i]; c.Type == typ {
			return c.Status == s && c.Reason == reason && c.Message == msg
		}
	}
	return false
}

// preserveOnFailure sets the expiry of a machine becoming Failed whose
// annotations ask for its preservation once Failed, in the decision that
// makes it Failed.
func (x *decider) preserveOnFailure() {
	if x.st.PreserveUntil != 0 || x.in.NodeReadFailed {
		return
	}
	n := x.preservedNode()
	if asked, bound := x.preserveAsked(n); bound &&
		(asked == PreserveNow || asked == PreserveWhenFailed || asked == PreserveAutoPreserved) {
		set(x, &x.st.PreserveUntil, x.now.Add(x.cfg.preserveTimeout(&x.in.Object)))
		if x.byGrant(n, asked) {
			set(x, &x.st.Flags, x.st.Flags|FlagAutoPreserved)
		}
	}
}

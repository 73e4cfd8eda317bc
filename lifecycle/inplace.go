package lifecycle

import (
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// The in-place update (MCM's node-agent protocol; rows U1-U8, I1-I5, H5, H6
// and H8 in doc/mcm-rows.md). Three parties share a node: its owner (MCM's
// MachineDeployment controller) labels it a candidate for the update and
// then selects it; the lifecycle mirrors the labels into the node's
// InPlaceUpdate condition, drains the selected node and only then tells the
// node agent ReadyForUpdate; the agent updates the node and labels its
// verdict, which moves the machine to InPlaceUpdateSuccessful (then Running
// once healthy) or InPlaceUpdateFailed (then Failed after the health
// timeout, through the fleet limiter).
//
// Decided here, where MCM leaves it open:
//   - Only a Running machine's node is drained for an update: an unhealthy
//     machine is recovered or replaced first. The drain is a stage of the
//     status (StageInPlaceDrain) and its timeout counts from the stage's
//     start, not from a condition's transition time another writer may move.
//   - While an in-place update is under way (the drain, or a phase of the
//     update), no hot update or metadata patch is asked: the owner paces
//     in-place updates (its maxUnavailable), and an UpdateMachine racing
//     the agent's rework of the node would apply to an instance in flux.
//     A hot update waits until the machine is Running again.
//   - A node InPlaceUpdateSuccessful whose node is unhealthy or missing is
//     Unknown, so its health timeout applies; MCM leaves it there forever.
//   - Deletion wins over an update at any point (checked first, as always).

// inPlaceReason returns the reason of node n's InPlaceUpdate condition, ""
// when it has none.
func inPlaceReason(n *Node) string {
	for i := range n.Conditions {
		if n.Conditions[i].Type == ConditionInPlaceUpdate {
			return n.Conditions[i].Reason
		}
	}
	return ""
}

// inPlaceWant returns the InPlaceUpdate reason node n's labels call for
// when its condition says reason (MCM's rows U2-U8, the agent's verdict
// first), or "" when the condition is as it should be.
func inPlaceWant(n *Node, reason string) string {
	u := n.Update
	switch {
	case !u.Has(UpdateCandidate):
		return "" // U2
	case u.Has(UpdateSucceeded):
		// U6, before the rows of the selection: a verdict that the
		// condition does not say yet (a machine taken over before it
		// did) must reach the owner, who waits for it.
		if reason != ReasonUpdateSuccessful {
			return ReasonUpdateSuccessful
		}
		return ""
	case u.Has(UpdateFailed):
		if reason != ReasonUpdateFailed {
			return ReasonUpdateFailed // U7
		}
		return ""
	case reason == "" || reason == ReasonUpdateSuccessful:
		return ReasonCandidateForUpdate // U3
	case u.Has(UpdateSelected) && reason == ReasonCandidateForUpdate:
		return ReasonSelectedForUpdate // U4
	}
	return "" // U5 (the drain follows), U8
}

// selected reports whether node n's labels select it for an update the
// agent has given no verdict on: its owner labelled it candidate and
// selected, and it carries no update result.
func selected(n *Node) bool {
	return n.Update.Has(UpdateCandidate|UpdateSelected) && n.Update&(UpdateSucceeded|UpdateFailed) == 0
}

// selectedForUpdate reports whether node n, whose InPlaceUpdate condition
// says reason, is selected for an update that has not begun: selected, and
// its condition past the candidate's U3 (set, and not a verdict).
func selectedForUpdate(n *Node, reason string) bool {
	return selected(n) && reason != "" && reason != ReasonUpdateSuccessful && reason != ReasonUpdateFailed
}

// inPlaceCondition appends the write of node n's InPlaceUpdate condition
// with reason.
func (x *decider) inPlaceCondition(n *Node, reason string) {
	e := x.put(KindSetNodeCondition)
	e.Node, e.Key, e.Value, e.Message = n.Name, ConditionInPlaceUpdate, reason, inPlaceMessage(reason, n.UpdateFailedReason)
	e.Status = ConditionTrue
}

// syncInPlace brings node n's InPlaceUpdate condition in line with its
// labels (U3, U4, U6, U7), at the start of a pass only: within a pass the
// shell's cache may not show a write that ran yet. It reports whether it
// emitted the write.
func (x *decider) syncInPlace(n *Node) bool {
	if n == nil || !n.Update.Has(UpdateCandidate) || x.in.Outcome != nil {
		return false // U1, U2
	}
	want := inPlaceWant(n, inPlaceReason(n))
	if want == "" {
		return false
	}
	x.rule(RuleInPlaceCondition)
	x.inPlaceCondition(n, want)
	return true
}

// syncInPlaceNamed is syncInPlace for a decision that health already
// named by named (a change of phase): the decision keeps that name.
func (x *decider) syncInPlaceNamed(n *Node, named Rule) {
	if x.syncInPlace(n) && named != RuleNone {
		x.rule(named)
	}
}

// inPlace runs the in-place update of a Running machine whose node n is in
// line (nil when it has none), after health: the drain under way, or the
// drain of a node just selected, or the condition's sync. It reports
// whether it decided; the hot update and metadata wait while it does.
// Most machines have no update under way nor asked: health asks noInPlace
// first.
func (x *decider) inPlace(n *Node) bool {
	st := x.st
	if st.Stage == StageInPlaceDrain {
		if n != nil && selected(n) {
			x.keepDraining(n)
			return true
		}
		// Deselected, or the agent already gave its verdict: the drain
		// ends. The node stays cordoned; its owner uncordons it.
		x.rule(RuleInPlaceDeselected)
		x.endKeepDrain()
	}
	if n == nil {
		return false
	}
	if x.in.Object.InPlaceGeneration != 0 && x.ownUpdate(n) {
		return true
	}
	if reason := inPlaceReason(n); selectedForUpdate(n, reason) {
		// U4, I2: the drain begins. MCM drains a node whose condition
		// says DrainSuccessful or ReadyForUpdate while its machine is
		// Running only after the phase was lost; drained again, it
		// finishes at once.
		x.setStage(StageInPlaceDrain)
		set(x, &st.Failures.Drain, 0)
		x.beginInPlaceDrain(n, reason, x.keepDrainForced())
		return true
	}
	if x.syncInPlace(n) {
		x.resync()
		return true
	}
	return false
}

// beginInPlaceDrain emits the op that begins the drain of node n, whose
// condition says reason: the condition SelectedForUpdate unless it says so
// (U4), then the cordon and a first round of the drain.
func (x *decider) beginInPlaceDrain(n *Node, reason string, force bool) {
	if reason != ReasonSelectedForUpdate {
		x.inPlaceCondition(n, ReasonSelectedForUpdate)
	}
	x.beginKeepDrain(n, force)
}

// inPlaceDrained records node n drained for its update: the machine is
// InPlaceUpdating, and the node's condition says DrainSuccessful, then
// ReadyForUpdate, which lets the agent go on (I2, I4).
func (x *decider) inPlaceDrained(n *Node) {
	x.rule(RuleInPlaceDrained)
	if !x.become(phase.InPlaceUpdating, RuleInPlaceDrained,
		&lastop.Operation{Type: lastop.TypeInPlaceUpdate, State: lastop.StateProcessing, Desc: lastop.DescInPlaceUpdating}) {
		return
	}
	x.inPlaceCondition(n, ReasonDrainSuccessful)
	x.inPlaceCondition(n, ReasonReadyForUpdate)
	x.requeue(retry.Medium)
}

// inPlaceUpdating decides for an InPlaceUpdating machine whose node n (nil
// when it has none) the agent is updating: its verdict (H5, H6), the
// in-place update timeout (H8), else ReadyForUpdate told again when the
// condition does not say it (I4) and a wait (I3).
func (x *decider) inPlaceUpdating(n *Node) {
	st := x.st
	reason := ""
	if n != nil {
		reason = inPlaceReason(n)
	}
	switch {
	case n != nil && (n.Update.Has(UpdateSucceeded) || reason == ReasonUpdateSuccessful):
		// H5; the condition says the verdict too once it was read, when
		// the owner took the labels off before the lifecycle saw them.
		x.inPlaceUpdated(n)
	case n != nil && (n.Update.Has(UpdateFailed) || reason == ReasonUpdateFailed):
		x.rule(RuleInPlaceFailed)
		if x.become(phase.InPlaceUpdateFailed, RuleInPlaceFailed, &lastop.Operation{Type: lastop.TypeInPlaceUpdate,
			State: lastop.StateFailed, Desc: lastop.DescInPlaceUpdateFailed, Detail: boundDetail(n.UpdateFailedReason)}) &&
			reason != ReasonUpdateFailed {
			x.inPlaceCondition(n, ReasonUpdateFailed) // U7
		}
		x.requeue(retry.Short)
	case x.expired(st.PhaseSince, x.cfg.inPlaceUpdateTimeout(&x.in.Object)):
		x.rule(RuleInPlaceTimeout)
		x.become(phase.InPlaceUpdateFailed, RuleInPlaceTimeout, &lastop.Operation{Type: lastop.TypeInPlaceUpdate,
			State: lastop.StateFailed, Desc: lastop.DescInPlaceTimeout, Elapsed: x.cfg.inPlaceUpdateTimeout(&x.in.Object)})
		x.requeue(retry.Short)
	case n != nil && reason != ReasonReadyForUpdate && x.in.Outcome == nil && stillDrained(n):
		// I4: the condition lost or never got the word (a write that
		// failed, MCM's DrainSuccessful), on the node the lifecycle
		// drained: still selected, cordoned, without pods.
		x.rule(RuleInPlaceReady)
		x.inPlaceCondition(n, ReasonReadyForUpdate)
		x.requeue(retry.Medium)
	default:
		// I3, I1: the agent works; its verdict is a node change, which
		// the shell sees; the timeout wakes the machine at the latest. A
		// node that is no longer the one drained (a new node object,
		// uncordoned, with pods) is not told again: the update times out;
		// its condition is kept in line with its labels meanwhile (U3-U7).
		if n != nil && x.syncInPlace(n) {
			x.requeue(retry.Medium)
			return
		}
		x.rule(RuleInPlaceWaitAgent)
		x.requeue(retry.Medium)
	}
}

// stillDrained reports whether node n is still as the drain before its
// update left it: selected, cordoned, and without pods a drain removes.
func stillDrained(n *Node) bool {
	return selected(n) && n.Unschedulable && n.Pods <= 0
}

// inPlaceUpdated is H5: the agent updated the node of an InPlaceUpdating
// or InPlaceUpdateFailed machine; its condition says UpdateSuccessful
// (U6), and health makes the machine Running once the node is healthy.
func (x *decider) inPlaceUpdated(n *Node) {
	x.rule(RuleInPlaceUpdated)
	if x.become(phase.InPlaceUpdateSuccessful, RuleInPlaceUpdated,
		&lastop.Operation{Type: lastop.TypeInPlaceUpdate, State: lastop.StateSuccessful, Desc: lastop.DescInPlaceUpdated}) &&
		inPlaceReason(n) != ReasonUpdateSuccessful {
		x.inPlaceCondition(n, ReasonUpdateSuccessful)
	}
	x.requeue(retry.Short)
}

// noInPlace reports, cheaply, that the machine has no in-place update under
// way nor asked: no label of the protocol on its node, no drain for one,
// the generation asked the one its node is at.
func (x *decider) noInPlace() bool {
	return x.in.Node.Update == 0 && x.st.Stage != StageInPlaceDrain && x.in.Object.InPlaceGeneration == x.st.InPlaceGeneration
}

// ownUpdate plays the owner's part of the protocol for a shell that asks
// in-place updates through the object (Object.InPlaceGeneration), at the
// start of a pass. While the object asks a generation the node is not at
// and the node gives no verdict, it labels the node candidate and
// selected, again while a label is missing (a write of the two that
// failed). Once the agent's success brought the machine Running again
// (its label; the condition is made to say UpdateSuccessful first), it
// records the generation,
// uncordons the node and takes the labels off, again at each pass while
// the labels are there, so a write of them that failed is made again. It
// reports whether it emitted writes. A failed update is left as it is:
// the machine ends Failed and is replaced.
func (x *decider) ownUpdate(n *Node) bool {
	if x.in.Outcome != nil {
		return false
	}
	st, u := x.st, n.Update
	switch {
	case u.Has(UpdateSucceeded) && inPlaceReason(n) != ReasonUpdateSuccessful:
		// U6 first, also on a node that lost its candidate label (a node
		// object made anew): the condition must stop saying
		// ReadyForUpdate, which would send the agent again, before the
		// node is given back to its workloads.
		x.rule(RuleInPlaceCondition)
		x.inPlaceCondition(n, ReasonUpdateSuccessful)
	case u.Has(UpdateSucceeded):
		x.rule(RuleInPlaceDone)
		set(x, &st.InPlaceGeneration, x.in.Object.InPlaceGeneration)
		if n.Unschedulable {
			x.nodeEffect(KindUncordon, n.Name, "", "")
		}
		x.nodeEffect(KindRemoveNodeLabel, n.Name, CandidateForUpdateLabel, "")
		x.nodeEffect(KindRemoveNodeLabel, n.Name, SelectedForUpdateLabel, "")
		x.nodeEffect(KindRemoveNodeLabel, n.Name, UpdateResultLabel, "")
	case x.in.Object.InPlaceGeneration != st.InPlaceGeneration && u&(UpdateSucceeded|UpdateFailed) == 0 &&
		!u.Has(UpdateCandidate|UpdateSelected):
		x.rule(RuleInPlaceRequest)
		if !u.Has(UpdateCandidate) {
			x.nodeEffect(KindLabelNode, n.Name, CandidateForUpdateLabel, "true")
		}
		if !u.Has(UpdateSelected) {
			x.nodeEffect(KindLabelNode, n.Name, SelectedForUpdateLabel, "true")
		}
	default:
		return false
	}
	x.resync()
	return true
}

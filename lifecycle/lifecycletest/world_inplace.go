package lifecycletest

import (
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// The in-place update in the world of [Explore] (lifecycle/inplace.go):
// besides the lifecycle, two parties act on the own node. Its owner (MCM's
// MachineDeployment controller) labels it a candidate, a request the
// world may make or not, then selects it, which it does in time (fair);
// it withdraws the selection as a fault; and once the node's condition
// says UpdateSuccessful it finishes in time (fair): it takes its labels
// and the agent's verdict off and uncordons the node, and workloads land
// on it again. Under variantOwnUpdate the machine's spec asks the update
// instead (Object.InPlaceGeneration), and the lifecycle plays the owner's
// part with its writes. The node agent updates the node only once its
// condition says ReadyForUpdate: it reports success in time (fair), or
// failure (a fault, under variantAgentFails), or stalls (no event: time
// passes the in-place timeout). The machine's force-drain label may be
// set (a fault) while its node is selected.

// inPlaceReasons are the reasons the node's InPlaceUpdate condition may
// give, by the index wState.ipReason holds; 0 is no condition.
var inPlaceReasons = [...]string{"", lifecycle.ReasonCandidateForUpdate, lifecycle.ReasonSelectedForUpdate,
	lifecycle.ReasonDrainSuccessful, lifecycle.ReasonReadyForUpdate, lifecycle.ReasonUpdateSuccessful,
	lifecycle.ReasonUpdateFailed}

// The indices of inPlaceReasons the world's parties read.
const (
	ipCandidate uint8 = iota + 1
	ipSelected
	ipDrainSuccessful
	ipReady
	ipSuccessful
	ipFailed
)

// wFailedReason is the reason the agent gives for an update that failed.
const wFailedReason = "the update failed"

// reasonIndex returns the index of reason r in inPlaceReasons; a reason the
// world does not know is none (0).
func reasonIndex(r string) uint8 {
	for i, x := range inPlaceReasons {
		if x == r {
			return uint8(i)
		}
	}
	return 0
}

// statusReason returns the index of the InPlaceUpdate condition's reason
// the status mirrors, 0 for none.
func statusReason(st *lifecycle.Status) uint8 {
	for i := range st.Conditions {
		if st.Conditions[i].Type == lifecycle.ConditionInPlaceUpdate {
			return reasonIndex(st.Conditions[i].Reason)
		}
	}
	return 0
}

// inPlaceNode adds to the own node n what the shell reads of its in-place
// update: the owner's labels and the agent's verdict with its reason, and
// the InPlaceUpdate condition after Ready.
func (s *wState) inPlaceNode(n *lifecycle.Node) {
	n.Update, n.Unschedulable, n.OwnCordon = s.upd, s.cordoned, s.cordonMark
	if s.upd.Has(lifecycle.UpdateFailed) {
		n.UpdateFailedReason = wFailedReason
	}
	if s.ipReason != 0 {
		n.Conditions = append(n.Conditions, lifecycle.Condition{Type: lifecycle.ConditionInPlaceUpdate,
			Status: lifecycle.ConditionTrue, Since: lifecycle.StampOf(Epoch), Reason: inPlaceReasons[s.ipReason]})
	}
}

// dropNode removes the own node from s: with it go its volumes, its pods,
// its labels, its conditions, its annotations and its cordon. A node that
// registers later is a new object.
func (s *wState) dropNode() {
	s.node, s.volumes, s.pods, s.forcedDrain = 0, 0, 0, false
	s.upd, s.ipReason, s.cordoned = 0, 0, false
	s.dropPreserveNode()
}

// updateLabels maps the node labels of the in-place update protocol to
// their bits; the update result's label holds either verdict.
var updateLabels = map[string]lifecycle.UpdateLabels{
	lifecycle.CandidateForUpdateLabel: lifecycle.UpdateCandidate,
	lifecycle.SelectedForUpdateLabel:  lifecycle.UpdateSelected,
	lifecycle.UpdateResultLabel:       lifecycle.UpdateSucceeded | lifecycle.UpdateFailed,
}

// applyNodeWrite carries out on the own node a write of its InPlaceUpdate
// condition, of a label of the in-place update protocol, or of its cordon,
// noting ReadyForUpdate written while pods a drain must remove are on it
// or while it is not cordoned. Uncordoned, the node gets workloads again
// unless its machine is being deleted. Any other effect is left alone.
func (s *wState) applyNodeWrite(e *lifecycle.Effect) {
	if s.node != 1 {
		return
	}
	switch {
	case e.Kind == lifecycle.KindCordon:
		if e.Key == lifecycle.CordonMarkAnnotation {
			// Marked when this write made the cordon, unmarked when the
			// node was cordoned already.
			s.cordonMark = !s.cordoned
		}
		s.cordoned = true
	case e.Kind == lifecycle.KindUncordon:
		s.cordoned = false
		if e.Key == lifecycle.CordonMarkAnnotation {
			s.cordonMark = false
		}
		if s.pods == 0 && s.obj.DeletionTime.IsZero() {
			s.pods = 1
		}
	case e.Kind == lifecycle.KindLabelNode && e.Key != lifecycle.UpdateResultLabel:
		s.upd |= updateLabels[e.Key]
	case e.Kind == lifecycle.KindRemoveNodeLabel:
		s.upd &^= updateLabels[e.Key]
	case e.Kind == lifecycle.KindSetNodeCondition && e.Key == lifecycle.ConditionInPlaceUpdate:
		if e.Value == lifecycle.ReasonReadyForUpdate && (s.pods != 0 || !s.cordoned) {
			s.readyUndrained = true
		}
		s.ipReason = reasonIndex(e.Value)
	}
}

// agentFailed reports whether the agent reported the node's update failed.
func (s *wState) agentFailed() bool {
	return s.upd.Has(lifecycle.UpdateFailed) && !s.upd.Has(lifecycle.UpdateSucceeded)
}

// inPlaceAsked reports whether an in-place update is asked of the node or
// under way: the node carries a label of the protocol, the machine's
// status is at the drain before an update, or its spec asks a generation
// its status does not record.
func (s *wState) inPlaceAsked() bool {
	return s.upd != 0 || s.st.Stage == lifecycle.StageInPlaceDrain || s.obj.InPlaceGeneration != s.st.InPlaceGeneration
}

// inPlaceSettled reports whether no in-place update is asked of the node
// or under way, and the node is schedulable, or cordoned by an
// administrator, whose cordon the lifecycle leaves: the end of a Running
// machine.
func (s *wState) inPlaceSettled() bool {
	return !s.inPlaceAsked() && (!s.cordoned || s.cordonBy == cordonAdmin)
}

// inPlaceInvariant returns what the state breaks of the in-place update's
// promises: the agent is told ReadyForUpdate only once the drain
// succeeded, of a node without pods a drain must remove and cordoned; so
// the agent, which only updates a node told ReadyForUpdate, never updates
// one that was not drained.
func (s *wState) inPlaceInvariant() string {
	switch {
	case s.readyUndrained:
		return "ReadyForUpdate was written to the node while pods a drain must remove were on it or while it was not cordoned"
	case s.agentUndrained:
		return "the node agent updated the node, told ReadyForUpdate, while pods a drain must remove were on it or while it was not cordoned"
	}
	return ""
}

// inPlaceWanted returns the end some fault-free path from s, whose key is
// k, must reach because of its in-place update, under variants v: Running
// for a machine between passes whose node's update is asked or under way
// and whose agent has not reported failure, its instance initialized and
// its own node there (the agent then succeeds in time, and its node turns
// healthy again); 0 for any other state, and for an InPlaceUpdating one
// whose node's condition does not say ReadyForUpdate that is past its
// in-place timeout, or whose node is no longer as its drain left it
// (selected, cordoned, without pods: a node object made anew, say): its
// agent is not told, and the timeout fails it.
func (s *wState) inPlaceWanted(k *wKey, v Variants) uint8 {
	if !s.betweenPasses() || s.gone || !s.obj.DeletionTime.IsZero() || v&VariantNoTargetCluster != 0 ||
		!s.inst.exists || !s.inst.initialized || s.node != 1 || s.upd.Has(lifecycle.UpdateFailed) {
		return 0
	}
	switch s.st.Phase {
	case phase.Running:
		if !s.inPlaceAsked() {
			return 0
		}
	case phase.InPlaceUpdating:
		stillDrained := s.upd.Has(lifecycle.UpdateCandidate|lifecycle.UpdateSelected) && s.cordoned && s.pods == 0
		if s.ipReason != ipReady && (k.pastInPlace || !stillDrained) {
			return 0
		}
	case phase.InPlaceUpdateSuccessful:
	default:
		return 0
	}
	return endRunning
}

// inPlaceEvents adds the events of the node's owner and agent to a, under
// variants v. They act on the own node of a machine not being deleted:
// deletion reads nothing of the update, and the world leaves the node to
// it.
func (s *wState) inPlaceEvents(a *eventAdder, v Variants) {
	if s.node != 1 || !s.obj.DeletionTime.IsZero() || s.gone {
		return
	}
	u := s.upd
	verdict := u&(lifecycle.UpdateSucceeded|lifecycle.UpdateFailed) != 0
	// The node's owner plays only where the events let it and the
	// lifecycle does not play its part.
	owner := a.allowed&eventInPlace != 0 && v&variantOwnUpdate == 0
	switch {
	case v&variantOwnUpdate != 0 && s.obj.InPlaceGeneration == 0 && u == 0 && s.ipReason == 0:
		a.add(eventInPlace, "the machine's spec asks an in-place update", false, kindFault, func(n *wState) {
			n.obj.InPlaceGeneration = 1
		})
	case owner && u == 0 && s.ipReason == 0:
		a.add(eventInPlace, "the owner asks an in-place update (candidate)", false, kindFault, func(n *wState) {
			n.upd = lifecycle.UpdateCandidate
		})
	case owner && u == lifecycle.UpdateCandidate:
		a.add(eventInPlace, "the owner selects the node", true, kindOwnerSelects, func(n *wState) {
			n.upd |= lifecycle.UpdateSelected
		})
	}
	if u.Has(lifecycle.UpdateSelected) && !verdict {
		if owner {
			a.add(eventInPlace, "the owner withdraws the selection", false, kindFault, func(n *wState) {
				n.upd &^= lifecycle.UpdateSelected
			})
		}
		if !s.obj.ForceDrain {
			a.add(eventInPlace, "the force-drain label", false, kindFault, func(n *wState) { n.obj.ForceDrain = true })
		}
	}
	if s.ipReason == ipReady && !verdict {
		undrained := s.pods != 0 || !s.cordoned
		a.add(eventInPlace, "the agent updates the node", true, kindAgentUpdates, func(n *wState) {
			n.upd |= lifecycle.UpdateSucceeded
			n.agentUndrained = n.agentUndrained || undrained
		})
		if v&variantAgentFails != 0 {
			a.add(eventInPlace, "the agent fails to update the node", false, kindFault, func(n *wState) {
				n.upd |= lifecycle.UpdateFailed
				n.agentUndrained = n.agentUndrained || undrained
			})
		}
	}
	if owner && u.Has(lifecycle.UpdateSucceeded) && s.ipReason == ipSuccessful {
		a.add(eventInPlace, "the owner finishes: labels off, uncordoned", true, kindOwnerFinishes, func(n *wState) {
			n.upd, n.cordoned = 0, false
			if n.pods == 0 {
				n.pods = 1 // workloads land on it again
			}
		})
	}
}

package lifecycle

// Kind is the kind of an [Effect]. The set is closed: a shell that handles
// every kind handles every decision.
type Kind uint8

// The effect kinds. Each says what the shell must do; every kind except
// [KindEvent] reports failure by stopping the decision's effects there
// (obligation 2 of the package doc). Ensure- and remove-effects are
// idempotent: a write that finds the object already as asked succeeds.
const (
	// KindNone is the zero Kind; no decision holds it.
	KindNone Kind = iota

	// KindEnsureFinalizer: add [Finalizer] to the machine object.
	KindEnsureFinalizer
	// KindRemoveFinalizer: remove [Finalizer] from the machine object.
	KindRemoveFinalizer
	// KindEnsureNodeLabel: set the machine's [NodeLabel] label to Value.
	KindEnsureNodeLabel
	// KindEnsureProviderID: set the machine's spec.providerID to Value.
	KindEnsureProviderID
	// KindEnsurePriority: set the machine's [PriorityAnnotation] to Value.
	KindEnsurePriority
	// KindRemoveAnnotation: remove annotation Key from the machine object. A
	// shell that also takes the request the annotation makes from
	// elsewhere (the project's controller takes [PreserveAnnotation] from
	// its Machine's spec.preserve too) clears it there as well.
	KindRemoveAnnotation

	// KindLabelNode: set label Key to Value on node Node.
	KindLabelNode
	// KindRemoveNodeLabel: remove label Key from node Node. A node that no
	// longer exists counts as done.
	KindRemoveNodeLabel
	// KindAnnotateNode: set annotation Key to Value on node Node.
	KindAnnotateNode
	// KindRemoveNodeAnnotation: remove annotation Key from node Node. A
	// node that no longer exists counts as done.
	KindRemoveNodeAnnotation
	// KindUncordon: mark node Node schedulable and, when Key is set
	// ([CordonMarkAnnotation]), remove the node's annotation Key in the
	// same write. A node that no longer exists counts as done.
	KindUncordon
	// KindRemoveTaint: remove the taint with key Key (every effect) from
	// node Node. A node that no longer exists counts as done.
	KindRemoveTaint
	// KindSetNodeCondition: set condition Key ([ConditionTerminating],
	// [ConditionInPlaceUpdate] or [ConditionPreserved]) to Status on node
	// Node, with reason Value and message Message. A node that no longer
	// exists counts as done.
	KindSetNodeCondition
	// KindCordon: mark node Node unschedulable. When Key is set
	// ([CordonMarkAnnotation]), the same write sets the node's annotation
	// Key to Value if it is the write that makes the node unschedulable,
	// and removes the annotation if the node was unschedulable already:
	// the annotation then says whether the cordon the node shows is the
	// one this effect made ([Node.OwnCordon]). A node that no longer
	// exists counts as done.
	KindCordon
	// KindDrain: one round of the drain of node Node: ask once to evict
	// each of its pods that a drain removes (see Node.Pods), or delete them
	// when Force, and return without waiting for them to go. An eviction
	// refused for now (a PodDisruptionBudget's 429) is not a failure: the
	// pod stays, later inputs count it, and the next round asks again.
	// Report failure, with its error text in Outcome.Error, only when the
	// round could not be carried out (the pods could not be listed, an
	// eviction or deletion failed otherwise). A node that no longer exists
	// counts as done. The lifecycle asks for a round every
	// Config.EvictRetryInterval while pods are left.
	KindDrain
	// KindDeleteVolumeAttachments: delete the live VolumeAttachments of node
	// Node. Failures to delete single attachments count as done: the next
	// pass looks again.
	KindDeleteVolumeAttachments
	// KindRemoveNodeFinalizer: remove finalizer Key from node Node (a node
	// that no longer exists counts as done).
	KindRemoveNodeFinalizer
	// KindDeleteNode: delete node Node; report WriteNotFound when it does
	// not exist.
	KindDeleteNode

	// KindEnsureBootstrapToken: make sure the bootstrap token secret of the
	// machine named Value exists (secret
	// kube-system/bootstrap-token-<BootstrapTokenID(Value)>) and expires at
	// Expiry, and put it into the machine's user data before CreateMachine.
	KindEnsureBootstrapToken
	// KindDeleteBootstrapToken: delete the bootstrap token secret of the
	// machine named Value. A token already gone counts as done.
	KindDeleteBootstrapToken

	// KindEvent: record a Kubernetes event on the machine, of type Warning
	// when Warning is set and Normal otherwise, with reason Rule.Event() and a
	// message rendered from the decision (Rule.Text() and the status'
	// description). Events are best effort: a shell that fails to record one
	// goes on as if it succeeded.
	KindEvent

	// KindCallDriver: invoke the driver with [Decision.Call] and report the
	// result in [Outcome.Result]. It is always the last effect, and a
	// decision has at most one. A driver error is a result, not a failure
	// of the shell: Ran counts the call.
	KindCallDriver

	kindCount
)

// Valid reports whether k is a declared kind other than KindNone.
func (k Kind) Valid() bool { return k > KindNone && k < kindCount }

// String names the kind.
func (k Kind) String() string {
	switch k {
	case KindNone:
		return "none"
	case KindEnsureFinalizer:
		return "ensure-finalizer"
	case KindRemoveFinalizer:
		return "remove-finalizer"
	case KindEnsureNodeLabel:
		return "ensure-node-label"
	case KindEnsureProviderID:
		return "ensure-provider-id"
	case KindEnsurePriority:
		return "ensure-priority"
	case KindLabelNode:
		return "label-node"
	case KindRemoveNodeLabel:
		return "remove-node-label"
	case KindAnnotateNode:
		return "annotate-node"
	case KindRemoveNodeAnnotation:
		return "remove-node-annotation"
	case KindRemoveAnnotation:
		return "remove-annotation"
	case KindUncordon:
		return "uncordon"
	case KindRemoveTaint:
		return "remove-taint"
	case KindSetNodeCondition:
		return "set-node-condition"
	case KindCordon:
		return "cordon"
	case KindDrain:
		return "drain"
	case KindDeleteVolumeAttachments:
		return "delete-volume-attachments"
	case KindRemoveNodeFinalizer:
		return "remove-node-finalizer"
	case KindDeleteNode:
		return "delete-node"
	case KindEnsureBootstrapToken:
		return "ensure-bootstrap-token"
	case KindDeleteBootstrapToken:
		return "delete-bootstrap-token"
	case KindEvent:
		return "event"
	case KindCallDriver:
		return "call-driver"
	}
	return "unknown-kind"
}

// Effect is one thing the shell must do. It is a tagged value: Kind says
// which fields mean something, as each kind's doc states.
type Effect struct {
	// Kind selects what to do.
	Kind Kind
	// Warning marks a [KindEvent] of type Warning.
	Warning bool
	// Force marks a forced [KindDrain]: pods are deleted, not evicted.
	Force bool
	// Status is the status a [KindSetNodeCondition] sets.
	Status ConditionStatus
	// Rule is the rule a [KindEvent] reports.
	Rule Rule
	// Node names the node of a node effect.
	Node string
	// Key is a label or taint key.
	Key string
	// Value is the value written: a label value, a providerID, a priority,
	// a condition's reason, or the machine name of a token effect.
	Value string
	// Message is the message of a [KindSetNodeCondition].
	Message string
	// Expiry is when an ensured bootstrap token expires.
	Expiry Stamp
}

// Reasons of the node condition [ConditionTerminating], as MCM sets them.
const (
	// ReasonScaleDown: the machine is deleted because its owner scaled down.
	ReasonScaleDown = "ScaleDown"
	// ReasonUnhealthy: the machine is deleted because it failed.
	ReasonUnhealthy = "Unhealthy"
)

// Reasons of the node condition [ConditionPreserved], as MCM sets them.
const (
	// ReasonPreservedByMCM: the owner chose the machine for preservation
	// (auto-preserved).
	ReasonPreservedByMCM = "Preserved by MCM."
	// ReasonPreservedByUser: an annotation asked for it.
	ReasonPreservedByUser = "Preserved by user."
	// ReasonPreservationStopped: the preservation stopped.
	ReasonPreservationStopped = "Preservation stopped."
)

// Reasons of the node condition [ConditionInPlaceUpdate], as MCM sets them.
const (
	// ReasonCandidateForUpdate: the node's owner means to update it in place.
	ReasonCandidateForUpdate = "CandidateForUpdate"
	// ReasonSelectedForUpdate: the owner chose the node; it is drained.
	ReasonSelectedForUpdate = "SelectedForUpdate"
	// ReasonDrainSuccessful: the node was drained for the update.
	ReasonDrainSuccessful = "DrainSuccessful"
	// ReasonReadyForUpdate: the node agent may update the node. The
	// lifecycle says it only once the node was drained.
	ReasonReadyForUpdate = "ReadyForUpdate"
	// ReasonUpdateSuccessful: the node agent updated the node.
	ReasonUpdateSuccessful = "UpdateSuccessful"
	// ReasonUpdateFailed: the node agent could not update the node.
	ReasonUpdateFailed = "UpdateFailed"
)

// ConditionMessage returns the message MCM writes with a
// [ConditionTerminating] reason.
func ConditionMessage(reason string) string {
	if reason == ReasonUnhealthy {
		return "Machine Controller is terminating failed machine"
	}
	return "Machine Controller is scaling down machine"
}

// inPlaceMessage returns the message MCM writes with an
// [ConditionInPlaceUpdate] reason; detail is the node agent's reason of a
// failed update.
func inPlaceMessage(reason, detail string) string {
	switch reason {
	case ReasonCandidateForUpdate:
		return "Node is a candidate for in-place update"
	case ReasonSelectedForUpdate:
		return "Node is selected for in-place update"
	case ReasonDrainSuccessful:
		return "Node draining successful"
	case ReasonReadyForUpdate:
		return "Node is ready for in-place update"
	case ReasonUpdateSuccessful:
		return "Node in-place update successful"
	}
	return "Node in-place update failed: " + detail
}

// MaxEffects is the capacity of [Effects]: no decision needs more.
const MaxEffects = 8

// Effects is the ordered, fixed-capacity list of a decision's effects. It
// lives inside the [Decision] value, so building it allocates nothing.
type Effects struct {
	n    uint8
	list [MaxEffects]Effect
}

// Len returns the number of effects.
func (e *Effects) Len() int { return int(e.n) }

// At returns effect i (0 <= i < Len()).
func (e *Effects) At(i int) Effect { return e.list[i] }

// Slice returns the effects as a slice of the list's own storage; it is
// valid while the Effects value is and must not be appended to.
func (e *Effects) Slice() []Effect { return e.list[:e.n:e.n] }

// Last returns the last effect, or the zero Effect when there is none.
func (e *Effects) Last() Effect {
	if e.n == 0 {
		return Effect{}
	}
	return e.list[e.n-1]
}

// clearFrom zeroes the slots from Len() up to (not including) n, which an
// earlier decision used: after it, every slot past Len() is zero.
func (e *Effects) clearFrom(n int) {
	for i := int(e.n); i < n && i < MaxEffects; i++ {
		e.list[i] = Effect{}
	}
}

// prepend puts effects in front of the list, keeping the order of both; it
// reports false, changing nothing, when they do not fit.
func (e *Effects) prepend(front []Effect) bool {
	k := len(front)
	if int(e.n)+k > MaxEffects {
		return false
	}
	copy(e.list[k:int(e.n)+k], e.list[:e.n])
	copy(e.list[:k], front)
	e.n += uint8(k)
	return true
}

package lifecycle

import "github.com/purelifecycle/machine/phase"

// Which statuses a decision that carries an op leaves. An Outcome is
// matched to its decision by the status sequence number in its OpID and by
// the op's rule: while the sequence number matches, the status the outcome
// arrives at is the one the decision left. A mixed-up or forged outcome can
// carry a matching sequence number with the rule of another flow; acted on,
// it would record an instance, create one, or delete one where no decision
// asked. So an outcome whose op could not have been emitted at the status
// it arrives at is refused (AnomalyBadOutcome), and an outcome of an op the
// status could have emitted is always acted on: a property test checks
// every decision the step emits against this table.
//
// Only the status is compared: the object may change between a decision
// and its outcome (a deletion requested meanwhile, labels written), except
// that a deletion, once requested, stays, so an op of the deletion flow
// implies a machine being deleted.

// emittableAt reports whether a decision whose op has rule r and a driver
// call, or writes whose outcome is acted on (handlesWrites), may leave the
// status st; deleting is whether the machine's deletion was requested. The
// outcomes of other ops (node and token writes, events, ensure-effects)
// are not acted on: the next decision is made afresh.
func (r Rule) emittableAt(st *Status, deleting bool) bool {
	creating := st.Phase == phase.None || st.Phase == phase.CrashLoopBackOff
	switch r {
	case RuleCreateLookup:
		// Every creation pass of a machine with no phase or in
		// CrashLoopBackOff (whether or not its status names an instance:
		// an adopted one does), and the lookup of a machine past creation
		// whose status names none.
		return creating || st.ProviderID == ""
	case RuleCreateTimeoutLookup, RuleCreateVMNotFound:
		// Only with the creation intent saved and no instance recorded.
		return creating && st.Stage == StageCreating && st.ProviderID == ""
	case RuleCreateForeignInstance:
		// Another incarnation's instance is found only by a lookup by name.
		return st.ProviderID == ""
	case RuleCreateStaleNode:
		return st.Flags.Has(FlagStaleInstance) && st.ProviderID != ""
	case RuleCreateCreated, RuleCreateUninitialized, RuleCreateAdopted, RuleCreateRecorded:
		// InitializeMachine, for a recorded instance not initialized yet.
		return creating && st.Stage == StageInitializing && st.ProviderID != ""
	case RuleHealthConfirm:
		return (st.Phase == phase.Unknown || st.Phase == phase.InPlaceUpdateFailed) && st.Flags.Has(FlagGranted)
	case RuleUpdate, RuleMetadataPatch, RuleMetadataObserve:
		return st.Phase == phase.Running
	case RuleDeleteLookup:
		return deleting && st.Stage == StageGetVMStatus
	case RuleDeleteDrain, RuleDeleteDrainForce:
		return deleting && st.Stage == StageDrain
	case RuleDeleteVolumes:
		return deleting && st.Stage == StageVolumes
	case RuleDeleteVM:
		return deleting && st.Stage == StageDeleteVM
	case RuleDeleteNode:
		return deleting && st.Stage == StageDeleteNode
	case RuleDeleteRemoveFinalizer:
		return deleting && st.Stage == StageRemoveFinalizer
	}
	return true
}

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
// call, or writes whose outcome is acted on (a handler without a method),
// may leave the status st; deleting is whether the machine's deletion was
// requested. The outcomes of other ops (node and token writes, events,
// ensure-effects) are not acted on: the next decision is made afresh.
func (r Rule) emittableAt(st *Status, deleting bool) bool {
	spec, ok := r.spec()
	switch {
	case !ok:
		return true
	case spec.stage != StageNone:
		// An op of the deletion flow, emitted at its stage.
		return deleting && st.Stage == spec.stage
	}
	return spec.at.holds(st)
}

// opStatus names the statuses at which a decision emits an op of a flow
// other than deletion (a value, not a function, so that the status does not
// escape to the heap).
type opStatus uint8

const (
	// anyStatus: any status.
	anyStatus opStatus = iota
	// atLookup: every creation pass of a machine with no phase or in
	// CrashLoopBackOff (whether or not its status names an instance: an
	// adopted one does), and the lookup of a machine past creation whose
	// status names none.
	atLookup
	// atIntent: only with the creation intent saved and no instance
	// recorded.
	atIntent
	// atUnrecorded: another incarnation's instance is found only by a
	// lookup by name, while no instance is recorded.
	atUnrecorded
	// atStaleInstance: the deletion of an instance made on a stale node
	// object.
	atStaleInstance
	// atInitializing: InitializeMachine, for a recorded instance not
	// initialized yet.
	atInitializing
	// atGranted: the confirmation of an unhealthy machine granted its
	// replacement.
	atGranted
	// atRunning: the hot update and the metadata sub-flow of a Running
	// machine.
	atRunning
	// atInPlaceDrain: the drain of a Running machine's node before its
	// in-place update.
	atInPlaceDrain
	// atPreserveDrain: the drain of a preserved Failed machine's node.
	atPreserveDrain
)

// holds reports whether st is one of the statuses w names.
func (w opStatus) holds(st *Status) bool {
	inCreation := st.Phase == phase.None || st.Phase == phase.CrashLoopBackOff
	switch w {
	case atLookup:
		return inCreation || st.ProviderID == ""
	case atIntent:
		return inCreation && st.Stage == StageCreating && st.ProviderID == ""
	case atUnrecorded:
		return st.ProviderID == ""
	case atStaleInstance:
		return st.Flags.Has(FlagStaleInstance) && st.ProviderID != ""
	case atInitializing:
		return inCreation && st.Stage == StageInitializing && st.ProviderID != ""
	case atGranted:
		return (st.Phase == phase.Unknown || st.Phase == phase.InPlaceUpdateFailed) && st.Flags.Has(FlagGranted)
	case atRunning:
		return st.Phase == phase.Running
	case atInPlaceDrain:
		return st.Phase == phase.Running && st.Stage == StageInPlaceDrain
	case atPreserveDrain:
		return st.Phase == phase.Failed && st.Stage == StagePreserveDrain
	}
	return true
}

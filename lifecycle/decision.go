package lifecycle

import (
	"time"

	"github.com/purelifecycle/machine/driverapi"
)

// Decision is what one [Step] decided: the status after the step, the
// effects the shell must carry out, and when to reconcile again.
//
// The shell's obligations (the package doc states them in full): if
// Changed, persist Status first; then carry out Effects in order, stopping at
// the first failure; then call Step again with an [Outcome] carrying OpID;
// repeat until a decision neither changes the status nor has effects
// ([Decision.Done], at most [MaxStepsPerPass] steps), then requeue after
// Requeue.
type Decision struct {
	// Status is the state after this step.
	Status Status
	// Changed reports whether Status differs from the input's and must be
	// persisted before any effect is carried out.
	Changed bool
	// Effects are the effects to carry out, in order.
	Effects Effects
	// Call is the driver call of the [KindCallDriver] effect, which is
	// always the last effect. Its Method is MethodNone when there is none.
	Call driverapi.Call
	// OpID identifies this decision's effects; the Outcome that reports
	// them carries it back. 0 when there are no effects.
	OpID OpID
	// Requeue is when to reconcile the machine again once the pass ends:
	// always positive, unless the machine is gone.
	Requeue time.Duration
	// Period is the base retry period Requeue derives from (one of retry's
	// periods, the ResourceExhausted period, or a wait bounded by a
	// deadline) before backoff and jitter are added.
	Period time.Duration
	// Rule names the rule that decided: a stable identifier and a short text.
	Rule Rule
	// Wait says, when the machine is waiting, for what, since when and
	// until when.
	Wait Wait
	// Anomalies lists irregular input Step tolerated.
	Anomalies Anomalies
}

// MaxStepsPerPass bounds the steps of one reconcile pass (obligation 4 of the
// package doc).
const MaxStepsPerPass = 8

// HasCall reports whether the decision asks for a driver call.
func (d *Decision) HasCall() bool { return d.Effects.Last().Kind == KindCallDriver }

// Done reports whether the pass ends with this decision: it has no effects
// and did not change the status. A decision that only changed the status is
// followed by another step once the status is saved, as MCM's "return
// ShortRetry after a successful status write" becomes "step again now".
func (d *Decision) Done() bool { return d.Effects.Len() == 0 && !d.Changed }

// OpID identifies the effects of one decision. It packs the status sequence
// number the decision was made at (after its own change), the rule that
// emitted the effects, and how many there are, so an [Outcome] is matched to
// the decision it reports on without any state outside the status.
type OpID uint64

func newOpID(seq uint32, r Rule, n int) OpID {
	return OpID(uint64(seq)<<24 | uint64(r)<<8 | uint64(n&0xff))
}

// Seq returns the status sequence number the decision was made at.
func (id OpID) Seq() uint32 { return uint32(id >> 24) }

// Rule returns the rule that emitted the effects.
func (id OpID) Rule() Rule { return Rule(id >> 8 & 0xffff) }

// Effects returns how many effects the decision had.
func (id OpID) Effects() int { return int(id & 0xff) }

// Wait describes what a machine waits for.
type Wait struct {
	// For names what is awaited; WaitNone when not waiting.
	For WaitFor
	// Since is when the wait began.
	Since Stamp
	// Until is when the wait ends by deadline (unset when it has none).
	Until Stamp
}

// WaitFor names what a machine waits for.
type WaitFor uint8

const (
	// WaitNone: not waiting.
	WaitNone WaitFor = iota
	// WaitRetry: waiting to retry a failed step.
	WaitRetry
	// WaitNodeJoin: waiting for the node to join and turn healthy, until
	// the creation timeout.
	WaitNodeJoin
	// WaitObserver: waiting for a degraded observer to recover.
	WaitObserver
	// WaitProblem: waiting for a problem with the machine or its class to
	// be fixed.
	WaitProblem
	// WaitReplacement: Failed, waiting for the owner to replace the machine.
	WaitReplacement
	// WaitFinalizer: deleting, but the finalizer is missing.
	WaitFinalizer
	// WaitRecovery: unhealthy; waiting for the node to recover until the
	// health timeout.
	WaitRecovery
	// WaitGrant: past the health timeout; waiting for the fleet limiter to
	// grant the replacement.
	WaitGrant
	// WaitCreation: being created (no phase or CrashLoopBackOff), until the
	// creation timeout.
	WaitCreation
	// WaitDeletion: being deleted.
	WaitDeletion
	// WaitPredecessor: being created, waiting for an older incarnation of
	// the machine's name to finish terminating, until Config.PredecessorWait
	// after its creation.
	WaitPredecessor
	// WaitDrain: being deleted, or Running with its node selected for an
	// in-place update, waiting for the pods of the node being drained to
	// go, until the drain is forced (its drain timeout) or, forced while
	// deleting, until deletion goes on without them.
	WaitDrain
	// WaitZoneOutage: past the health timeout, held back because the
	// machine's zone is in an outage (Config.ZoneOutage), until the hold
	// ends.
	WaitZoneOutage
	// WaitInPlaceUpdate: InPlaceUpdating, waiting for the node agent's
	// verdict until the in-place update timeout.
	WaitInPlaceUpdate
	// WaitPreserved: Failed and preserved; its owner does not replace it
	// until the preservation expires.
	WaitPreserved
	waitCount
)

// String names what is awaited.
func (w WaitFor) String() string {
	switch w {
	case WaitNone:
		return "none"
	case WaitRetry:
		return "retry"
	case WaitNodeJoin:
		return "node-join"
	case WaitObserver:
		return "observer"
	case WaitProblem:
		return "problem"
	case WaitReplacement:
		return "replacement"
	case WaitFinalizer:
		return "finalizer"
	case WaitRecovery:
		return "recovery"
	case WaitGrant:
		return "grant"
	case WaitCreation:
		return "creation"
	case WaitDeletion:
		return "deletion"
	case WaitPredecessor:
		return "predecessor"
	case WaitDrain:
		return "drain"
	case WaitZoneOutage:
		return "zone-outage"
	case WaitInPlaceUpdate:
		return "in-place-update"
	case WaitPreserved:
		return "preserved"
	}
	return "unknown-wait"
}

// Anomalies are irregularities of the input that Step tolerated. Each one
// is also visible in the decision's rule when it changed the decision.
type Anomalies uint16

const (
	// AnomalyClockBehind: Now is before a time the decision measures from
	// (the creation time, or a stamp in the status); the elapsed time was
	// taken as zero, so no deadline fired.
	AnomalyClockBehind Anomalies = 1 << iota
	// AnomalyStaleOutcome: the Outcome's OpID is not the one the status
	// expects (a late or duplicate result); it was ignored.
	AnomalyStaleOutcome
	// AnomalyBadOutcome: the Outcome contradicts its OpID (more effects ran
	// than were asked, an OpID of no effect, a result of another method, an
	// op of the deletion flow for a machine not being deleted, or a lookup
	// or creation answer for a machine whose instance is recorded); it was
	// ignored.
	AnomalyBadOutcome
	// AnomalyUnknownCode: the driver answered with a code outside 0..17;
	// it was treated as undecodable.
	AnomalyUnknownCode
	// AnomalyEmptyIdentity: the driver answered OK without a providerID, or
	// without a node name while a target cluster is in use (MCM B1).
	AnomalyEmptyIdentity
	// AnomalyEffectsFull: an effect did not fit in [MaxEffects]; it will be
	// emitted again on the next pass.
	AnomalyEffectsFull
	// AnomalyUndeclaredTransition: a flow asked for a phase change the phase
	// table does not declare; it was refused.
	AnomalyUndeclaredTransition
	// AnomalyForeignNode: the node observed for the machine carries another
	// instance's providerID; it was ignored.
	AnomalyForeignNode
	// AnomalyMissingStamp: the status lacked the time its phase began; it
	// was set to now, so the phase's deadlines count from here.
	AnomalyMissingStamp
	// AnomalyStampClamped: a stamp of the status lay after Now (PhaseSince,
	// StageSince, the metadata times, or a RetryAfter further ahead than any
	// backoff sets): a step whose clock was ahead wrote it, or this step's
	// clock is behind. It was set to Now and saved, so the deadlines that
	// count from it count from Now at the latest instead of waiting for the
	// clock to catch up.
	AnomalyStampClamped
	// AnomalyAdopted: the status lacked the lifecycle's own record of where
	// the machine is in its flow (a creation or deletion stage, or the
	// instance of a machine past creation), as another controller such as
	// MCM leaves it or a lost write of that record does; the step took the
	// machine over from what the status and the object show.
	AnomalyAdopted
)

// Has reports whether every anomaly of b is in a.
func (a Anomalies) Has(b Anomalies) bool { return a&b == b }

// String lists the anomalies, separated by "|", or "none".
func (a Anomalies) String() string {
	if a == 0 {
		return "none"
	}
	names := [...]string{"clock-behind", "stale-outcome", "bad-outcome", "unknown-code",
		"empty-identity", "effects-full", "undeclared-transition", "foreign-node", "missing-stamp", "stamp-clamped", "adopted"}
	s := ""
	for i, n := range names {
		if a&(1<<i) != 0 {
			if s != "" {
				s += "|"
			}
			s += n
		}
	}
	return s
}

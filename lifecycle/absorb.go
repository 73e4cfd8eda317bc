package lifecycle

import (
	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/retry"
)

// The outcome of the previous decision: absorb checks it against its op
// (matchOutcome), hands it to the handler its rule names, and returns what
// the decision goes on with (next), which dispatch carries out (goOn).

// absorb consumes Input.Outcome, which is not nil: it records what the
// outcome proves, names the row, and returns what the decision goes on
// with.
func (x *decider) absorb() next {
	o := x.in.Outcome
	switch o.Persist {
	case WriteOK:
	case WriteConflict:
		x.rule(RulePersistConflict)
		x.requeue(retry.Conflict)
		x.unsaved = true
		return done
	default:
		x.rule(RulePersistFailed)
		x.requeue(retry.Short)
		x.unsaved = true
		return done
	}
	spec, ok := x.matchOutcome(o)
	if !ok {
		return fresh
	}
	if spec.handlesWrites() {
		// An op of API writes whose outcome, complete or not, its handler
		// decides on (matchOutcome refused a driver answer to it).
		return x.handle(spec.handler, nil, o)
	}
	if o.Ran < o.OpID.Effects() {
		if o.Stopped == WriteConflict {
			x.rule(RuleWriteConflict)
			x.requeue(retry.Conflict)
		} else {
			x.rule(RuleWriteFailed)
			x.requeue(retry.Short)
		}
		x.unsaved = true
		return done
	}
	res := &o.Result
	if res.Method == driverapi.MethodNone {
		// The effects are done, and the next decision is made afresh from
		// the world they changed (node and token writes are not repeated
		// within the pass: see running).
		return fresh
	}
	if x.deleting() && spec.stage == StageNone {
		// Deletion was requested while another flow's driver call ran:
		// that flow is over, and its answer counts only for the instance
		// it names, which deletion then deletes.
		x.recordForDeletion(res)
		return fresh
	}
	if x.in.Observer.Degraded && !x.deleting() {
		// The observer turned degraded while the driver was asked: nothing
		// is concluded now (D4); the question is asked again once it
		// recovers. The stage and any grant stay.
		x.rule(RuleFrozen)
		x.requeue(retry.Long)
		return done
	}
	return x.handle(spec.handler, res, nil)
}

// recordForDeletion records the instance a lookup or a creation answered
// with after deletion was requested, when the status records none, so
// deletion deletes it by its providerID. One created on a stale node object
// is recorded as such, without the node's name.
func (x *decider) recordForDeletion(res *driverapi.Result) {
	st := x.st
	if st.ProviderID != "" || res.ProviderID == "" || x.foreignResult(res) {
		return
	}
	switch {
	case res.Method == driverapi.MethodGetStatus && (res.Code == driverapi.OK || res.Code == driverapi.Uninitialized):
	case res.Method == driverapi.MethodCreate && res.Code == driverapi.OK && !res.Undecodable:
		if x.createdOnStaleNode(res) {
			set(x, &st.ProviderID, res.ProviderID)
			set(x, &st.Flags, st.Flags|FlagStaleInstance)
			return
		}
	default:
		return
	}
	set(x, &st.ProviderID, res.ProviderID)
	if res.NodeName != "" {
		set(x, &st.NodeName, res.NodeName)
	}
}

// matchOutcome returns the table entry of the rule of the op the saved
// outcome o reports, and whether o is one this step acts on: an op of the
// decision that left this status, whose effect count, driver method and
// answer agree with what the rule emits. A stale outcome (another status)
// and a mixed-up or forged one are reported as anomalies and not acted on.
func (x *decider) matchOutcome(o *Outcome) (ruleSpec, bool) {
	if o.OpID == 0 {
		// The previous decision only changed the status, which was saved.
		return ruleSpec{}, false
	}
	if o.OpID.Seq() != x.st.Seq {
		x.anomaly(AnomalyStaleOutcome)
		return ruleSpec{}, false
	}
	n := o.OpID.Effects()
	rule := o.OpID.Rule()
	spec, ok := rule.spec()
	res := &o.Result
	switch {
	case !ok || n == 0 || o.Ran < 0 || o.Ran > n || (o.Ran < n && o.Stopped == WriteOK):
		// A decision's OpID always counts at least one effect, of a
		// declared rule.
	case (res.Method != driverapi.MethodNone || spec.handlesWrites()) && !rule.emittableAt(x.st, x.deleting()):
		// No decision of this op leaves this status (ops.go): a mixed-up
		// or forged outcome, which carried on would record, create or
		// delete what no decision asked for.
	case o.Ran == n && res.Method != driverapi.MethodNone && (spec.handler == handleNone || res.Method != spec.method):
		// An answer to a question the rule's op does not ask.
	case rule == RuleCreateLookup && res.ProviderID != "" && x.ref().ProviderID != "" && res.ProviderID != x.ref().ProviderID:
		// Asked by the recorded providerID, answered about another
		// instance: recorded, it would replace the machine's own.
	default:
		return spec, true
	}
	x.anomaly(AnomalyBadOutcome)
	return ruleSpec{}, false
}

// next is what a decision goes on with once its outcome is absorbed: an
// outcome handler records what the outcome proves, names the row, and
// returns the action the row leads to; dispatch carries it out. Keeping the
// two apart leaves one place that decides what a machine does next.
//
// A next packs the action (low byte) and the row that leads there, under
// which the action's op is emitted (initialize, settle and proceed take
// it), so that done and fresh are constants.
type next uint32

// nextAction names an action of the flows that an outcome's row leads to.
type nextAction uint8

const (
	// nextDone: the row decided the whole step (a retry, a wait, a
	// failure, or the op's next effects).
	nextDone nextAction = iota
	// nextFresh: decide as a pass without an outcome would, from the status
	// the outcome left; deletion is checked there, once.
	nextFresh
	// nextInitialize asks InitializeMachine for the instance just recorded.
	nextInitialize
	// nextSettle ends the creation flow.
	nextSettle
	// nextProceed initializes the recorded instance when the creation flow
	// has not initialized it yet, else settles.
	nextProceed
	// nextLookup looks the instance up.
	nextLookup
	// nextCreate asks CreateMachine.
	nextCreate
	// nextPastCreation decides health, or idles an Available machine.
	nextPastCreation
	// nextDeleteForeign deletes the instance of another incarnation that
	// the lookup found.
	nextDeleteForeign
	// nextDeleteStale deletes the instance created on a stale node object.
	nextDeleteStale
	// nextHealth judges the machine's health.
	nextHealth
	// nextMetadata goes on with the metadata of a machine whose update was
	// answered.
	nextMetadata
	// nextObserve asks what the instance carries.
	nextObserve
	// nextPatch patches the instance's metadata.
	nextPatch
	// nextForcedDrain carries on a forced drain after a write before it
	// failed.
	nextForcedDrain
)

const (
	done  = next(nextDone)
	fresh = next(nextFresh)
)

// then returns the action a to go on with under row r.
func then(a nextAction, r Rule) next { return next(a) | next(r)<<8 }

func (n next) action() nextAction { return nextAction(n & 0xff) }
func (n next) rule() Rule         { return Rule(n >> 8) }

// goOn carries out the action an outcome's row leads to.
func (x *decider) goOn(n next) {
	switch n.action() {
	case nextInitialize:
		x.initialize(n.rule())
	case nextSettle:
		x.settle(n.rule())
	case nextProceed:
		x.proceed(n.rule())
	case nextLookup:
		x.lookup()
	case nextCreate:
		x.createInstance()
	case nextPastCreation:
		x.pastCreation()
	case nextDeleteForeign:
		x.deleteForeign(&x.in.Outcome.Result)
	case nextDeleteStale:
		x.deleteStale()
	case nextHealth:
		x.health()
	case nextMetadata:
		x.metadata()
	case nextObserve:
		x.observe()
	case nextPatch:
		x.patch()
	case nextForcedDrain:
		x.forcedDrainRest(x.in.Outcome)
	}
}

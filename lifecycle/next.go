package lifecycle

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

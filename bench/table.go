package bench

import (
	"context"

	"github.com/looplab/fsm"
	"github.com/qmuntal/stateless"

	"github.com/purelifecycle/machine/phase"
)

// State is a machine phase as the peers see it: a string, so looplab needs
// no conversion and stateless boxes a constant (no allocation). The values
// are the library's phase labels.
type State string

// The phases of the table.
const (
	Pending State = "Pending"
	Running State = "Running"
	Unknown State = "Unknown"
	Failed  State = "Failed"
)

// States lists the phases of the table.
func States() []State { return []State{Pending, Running, Unknown, Failed} }

// Event is what a controller observed: for the peers the event it fires,
// for the library the observation it puts into the Input (see Observe).
type Event string

// The events of the table.
const (
	// Healthy: the machine's node is there and healthy.
	Healthy Event = "healthy"
	// Unhealthy: the machine's node is there and not Ready.
	Unhealthy Event = "unhealthy"
	// Timeout: time passed beyond the creation and health timeouts while
	// the node stayed as the phase expects it (healthy when Running, absent
	// when Pending, unhealthy otherwise) and the fleet limiter granted a
	// replacement.
	Timeout Event = "timeout"
)

// Events lists the events of the table.
func Events() []Event { return []Event{Healthy, Unhealthy, Timeout} }

// Edge is one transition of the table.
type Edge struct {
	From  State
	Event Event
	To    State
}

// Table is the transition table everyone models: the health edges of the
// library's phase table (phase.Edges, rows H3, H4, H7, H9) between Pending,
// Running, Unknown and Failed. An event without an edge leaves the phase as
// it is. The benchmarks measure Running -unhealthy-> Unknown -healthy->
// Running (Reuse, Sim) and Pending -healthy-> Running (Fresh, Rehydrate).
func Table() []Edge {
	return []Edge{
		{Pending, Healthy, Running},
		{Unknown, Healthy, Running},
		{Failed, Healthy, Running},
		{Running, Unhealthy, Unknown},
		{Pending, Timeout, Failed},
		{Unknown, Timeout, Failed},
	}
}

// Next returns the phase after event e in phase s according to Table, and
// whether an edge exists.
func Next(s State, e Event) (State, bool) {
	for _, t := range Table() {
		if t.From == s && t.Event == e {
			return t.To, true
		}
	}
	return s, false
}

// PhaseOf returns the library's phase of s.
func PhaseOf(s State) phase.Phase {
	p, err := phase.Parse(string(s))
	if err != nil {
		return phase.None
	}
	return p
}

// PhaseTable is the library's whole phase table (phase.Edges: every
// declared phase change, 11 phases) as events named after their
// destination, "to-Running" and so on: what a controller built on a peer
// would configure to follow the machine's full lifecycle. On the phases of
// Table, to-Running, to-Unknown and to-Failed take exactly Table's Healthy,
// Unhealthy and Timeout edges. The peers' "-phases" variants of the Fresh
// scenario use it, since construction cost grows with the table.
func PhaseTable() []Edge {
	var out []Edge
	for _, e := range phase.Edges() {
		out = append(out, Edge{From: State(e.From.Label()), Event: PhaseEvent(e.To), To: State(e.To.Label())})
	}
	return out
}

// PhaseEvent is the event of PhaseTable that leads to phase p.
func PhaseEvent(p phase.Phase) Event { return Event("to-" + p.Label()) }

// LooplabEvents returns table as looplab's event descriptions, one per
// event (every event of Table and PhaseTable has a single destination).
// A controller builds them once and keeps them.
func LooplabEvents(table []Edge) fsm.Events {
	var evs fsm.Events
	index := map[Event]int{}
	for _, t := range table {
		i, ok := index[t.Event]
		if !ok {
			i = len(evs)
			index[t.Event] = i
			evs = append(evs, fsm.EventDesc{Name: string(t.Event), Dst: string(t.To)})
		}
		evs[i].Src = append(evs[i].Src, string(t.From))
	}
	return evs
}

// The looplab event descriptions of both tables, built once.
var (
	looplabHealth = LooplabEvents(Table())
	looplabPhases = LooplabEvents(PhaseTable())
)

// NewLooplab returns a looplab FSM of Table in phase s, without callbacks:
// the cheapest way to use it.
func NewLooplab(s State) *fsm.FSM {
	return fsm.NewFSM(string(s), looplabHealth, fsm.Callbacks{})
}

// NewLooplabPhases returns a looplab FSM of PhaseTable in phase s.
func NewLooplabPhases(s State) *fsm.FSM {
	return fsm.NewFSM(string(s), looplabPhases, fsm.Callbacks{})
}

// configureStateless permits table's edges on sm, with no guards and no
// actions: the cheapest way to use it.
func configureStateless(sm *stateless.StateMachine, table []Edge) *stateless.StateMachine {
	for _, t := range table {
		sm.Configure(t.From).Permit(t.Event, t.To)
	}
	return sm
}

// NewStateless returns a stateless machine of Table in phase s, firing
// immediately (its cheaper mode; the default queued mode costs more).
func NewStateless(s State) *stateless.StateMachine {
	return configureStateless(stateless.NewStateMachineWithMode(s, stateless.FiringImmediate), Table())
}

// NewStatelessPhases returns a stateless machine of PhaseTable in phase s,
// firing immediately.
func NewStatelessPhases(s State) *stateless.StateMachine {
	return configureStateless(stateless.NewStateMachineWithMode(s, stateless.FiringImmediate), PhaseTable())
}

// NewStatelessStored returns a stateless machine of Table whose state lives
// in *stored (external storage): one configured instance serves every
// machine whose phase is loaded into *stored before firing. It is not safe
// for concurrent use.
func NewStatelessStored(stored *State) *stateless.StateMachine {
	sm := stateless.NewStateMachineWithExternalStorage(
		func(context.Context) (stateless.State, error) { return *stored, nil },
		func(_ context.Context, s stateless.State) error { *stored = s.(State); return nil },
		stateless.FiringImmediate)
	return configureStateless(sm, Table())
}

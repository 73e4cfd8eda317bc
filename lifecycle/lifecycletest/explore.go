package lifecycletest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// An exhaustive bounded exploration of one machine. The state of the
// machine, its object, node, token, observer, grant, the problems the shell
// finds and the provider's instances is explored breadth first from a few
// start states; each transition is a decision of
// [lifecycle.Step] with every outcome of its effects (driver codes by class,
// failed writes, a lost status write, a crash before the outcome is fed
// back, a provider that loses sight of an instance for a moment or drops a
// metadata key), or an event of the world (time passing a deadline, the
// node registering, turning unhealthy or going, the instance vanishing,
// deletion, a spec change, the observer degrading or recovering, the
// limiter's grant, a problem with the machine's class, the node's owner
// and its agent in an in-place update, a user asking or taking back the
// machine's preservation, the fleet's grant of auto-preservation, time
// passing a preservation's expiry). States are abstracted: times become
// "before or after each deadline", counters "zero or more". Every
// decision is checked with [Check], and with the world's promises of
// preservation (a machine made Failed keeps the expiry its preservation
// asks, Preserved True only while asked and of a Failed machine's node
// drained and cordoned, no cordon but the preservation's lifted for it),
// and every state against the world's invariants (one instance per
// incarnation, none of another owner, none left once the machine is gone
// or our finalizer removed, metadata never reported in sync while the
// instance lacks a key, the node agent told ReadyForUpdate only of a
// drained, cordoned node);
// afterwards liveness is checked on the fault-free transitions
// (liveness.go): the states from which no fault-free path reaches an end
// state, the livelocks, and the states whose fault-free paths end other
// than expected are counted. The search is deterministic: the same code
// gives the same states in the same order, the same counts and the same
// edges.

// Place is where a machine is in its lifecycle: its phase and the stage of
// its creation or deletion flow.
type Place struct {
	// Phase is the machine's phase.
	Phase phase.Phase
	// Stage is the program counter of its creation or deletion flow.
	Stage lifecycle.Stage
}

// PlaceOf returns the place a status records.
func PlaceOf(st *lifecycle.Status) Place { return Place{st.Phase, st.Stage} }

// String shows the place as "Phase/stage", such as "Terminating/drain".
func (p Place) String() string { return p.Phase.Label() + "/" + p.Stage.String() }

// Compare orders places by phase, then stage.
func (p Place) Compare(q Place) int {
	return cmp.Or(cmp.Compare(p.Phase, q.Phase), cmp.Compare(p.Stage, q.Stage))
}

// Edge is a kind of decision an exploration observed: from a place, by a
// rule, to a place.
type Edge struct {
	// From is the place in the status the step was given, To the place in
	// the status it decided.
	From, To Place
	// Rule is the decision's rule (Decision.Rule).
	Rule lifecycle.Rule
	// OpRule is the rule that emitted the decision's effects
	// (Decision.OpID.Rule()), RuleNone without effects. It differs from
	// Rule when an outcome's handler decided a row and went on with the
	// next action.
	OpRule lifecycle.Rule
	// Count is the number of explored states in which the step decided so.
	Count int
}

// Report is what an exploration found.
type Report struct {
	// Name is the exploration's name.
	Name string
	// States counts the abstract states explored; each was given to
	// lifecycle.Step once.
	States int
	// Transitions counts the edges of the world explored: every successor
	// of every state, by a decision's outcome or a world event.
	Transitions int
	// Edges are the decisions observed, one per (From, Rule, OpRule, To),
	// ordered by From, To, Rule and OpRule.
	Edges []Edge
	// Stuck counts the states from which no fault-free path reaches an end
	// state (gone or our finalizer removed, Running with its update settled
	// and its metadata in sync on the instance too, Available, Failed; the
	// last three with no preservation under way or asked).
	Stuck int
	// StuckStates describes the first three of them in the order of the
	// search: the state, the path that reached it, and its decision.
	StuckStates []string
	// Starts counts the exploration's start states.
	Starts int
	// Passes is the most reconcile passes a fault-free path takes from an
	// explored state to an end state: once faults stop, every machine of
	// the world reaches its end within Passes passes. Only the passes that
	// lead out of a strongly connected set of states count: the passes of
	// a wait that time or a fair event ends (the node registering, the
	// observer recovering) are not counted, however long it lasts.
	Passes int
	// Livelocks counts the livelocks: fair cycles of fault-free transitions
	// that avoid every end state and pass through a state whose every
	// deadline has passed, where a machine waits or loops forever although
	// faults stopped (see [Explore]).
	Livelocks int
	// LivelockStates describes the first three of them: a state of the
	// cycle whose every deadline has passed, the path that reached it, and
	// the cycle.
	LivelockStates []string
	// Unexpected counts the states from which a fault-free path reaches an
	// end state other than the ones expected of them (see [Explore]), the
	// start states from which no fault-free path reaches the end expected
	// of them, the states of an in-place update from which no fault-free
	// path ends Running, and the states of a Failed machine preserved until
	// its expiry from which none ends Failed.
	Unexpected int
	// UnexpectedStates describes the first three of them: the state, the
	// path that reached it, and the fault-free path to the unexpected end.
	UnexpectedStates []string
}

// ErrExplore is wrapped by every error [Explore] returns that is not a
// broken promise of [Check] (which wraps [ErrPromise]).
var ErrExplore = errors.New("lifecycletest: exploration failed")

// Explore runs the exploration breadth first. It returns an error when a
// decision breaks a promise of [Check] (wrapping [ErrPromise]), when a state
// breaks an invariant of the world, or when the world has MaxStates
// states or more (wrapping [ErrExplore]); the error names the state, the
// path from a start state that reached it, and the decision.
//
// It then checks liveness under fairness on the transitions that are
// fault free (the lifecycle's steps whose effects run and whose driver
// answers, time passing, and the fair events of [EventsFair]) and reports
// what it finds in the [Report]: the states from which no fault-free path
// reaches an end state (Stuck); the livelocks, fair cycles of fault-free
// transitions that avoid every end state and pass a state whose every
// deadline has passed, where a machine waits or loops forever (a cycle is
// fair when it takes the lifecycle's step and every fair event that one of
// its states could take; a cycle whose deadlines are still ahead is a wait
// that time ends); and the states from which a fault-free path ends other
// than expected (Unexpected). A machine whose deletion was requested must
// end gone (or with our finalizer removed); any other must end Running, or
// Available without a target cluster, and may end Failed only where a
// timeout can legitimately fire: not once its instance exists and is
// initialized and its own node is healthy past creation, as nothing fault
// free turns the node unhealthy or removes the instance. From each start
// state, some fault-free path must also reach the end wanted of it: gone
// when deleting, Failed when Failed, else Running (Available); and from
// every state between passes of a machine whose node's in-place update is
// asked or under way, whose agent has not reported failure, some
// fault-free path must end Running (the agent succeeds in time); from
// every state between passes of a Failed machine preserved until its
// expiry, its node not Ready, some fault-free path must end Failed (time
// passes the expiry, the preservation ends, the node is given back). A
// machine preserved, or whose preservation is asked, is at no end before
// its preservation is over and its node given back. Passes is the longest
// fault-free path to an end state, in reconcile passes.
func Explore(x Exploration) (Report, error) {
	return newExplorer(x).run()
}

func newExplorer(x Exploration) *explorer {
	if x.MaxStates <= 0 {
		x.MaxStates = DefaultMaxStates
	}
	return &explorer{x: &x, cfg: x.Variants.config(), index: make(map[wKey]int32)}
}

// run searches breadth first; states are expanded in the order of their
// indices.
func (e *explorer) run() (Report, error) {
	x, limit := e.x, e.x.MaxStates
	rep := Report{Name: x.Name, Starts: len(x.Starts)}
	edges := map[Edge]int{}
	for i, p := range x.Starts {
		j, err := e.visitFrom(startState(p, x.Variants), int32(-1-i), 0, "")
		if err != nil {
			return rep, err
		}
		e.starts = append(e.starts, j)
	}
	e.edgeStart = append(e.edgeStart, 0)
	for i := int32(0); e.q.len() > 0 && len(e.ends) < limit; i++ {
		s := e.q.pop()
		in := s.input()
		d := e.step(in)
		if err := Check(&e.cfg, &in, &d); err != nil {
			return rep, fmt.Errorf("%w\n%s", err, e.describe(i, &s, &d))
		}
		if err := s.checkDrained(&d); err != nil {
			return rep, fmt.Errorf("%w\n%s", err, e.describe(i, &s, &d))
		}
		if err := s.checkPreserve(&in, &d); err != nil {
			return rep, fmt.Errorf("%w\n%s", err, e.describe(i, &s, &d))
		}
		if x.Observe != nil {
			cfg := e.cfg
			x.Observe(&cfg, &in, &d)
		}
		edges[Edge{From: PlaceOf(&in.Status), To: PlaceOf(&d.Status), Rule: d.Rule, OpRule: d.OpID.Rule()}]++
		for o, tr := range s.successors(&d, x.Events, x.Variants) {
			rep.Transitions++
			j, err := e.visitFrom(tr.next, i, o, tr.label)
			if err != nil {
				return rep, err
			}
			if tr.faultFree {
				e.edgeTo = append(e.edgeTo, j)
				e.edgeKind = append(e.edgeKind, uint8(tr.kind))
			}
		}
		e.edgeStart = append(e.edgeStart, int32(len(e.edgeTo)))
	}
	if len(e.ends) >= limit {
		return rep, fmt.Errorf("%w: %s: the state space exceeds %d states", ErrExplore, x.Name, limit)
	}
	rep.States = len(e.ends)
	for ed, n := range edges {
		ed.Count = n
		rep.Edges = append(rep.Edges, ed)
	}
	slices.SortFunc(rep.Edges, func(a, b Edge) int {
		return cmp.Or(a.From.Compare(b.From), a.To.Compare(b.To), cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.OpRule, b.OpRule))
	})
	e.checkLiveness(&rep)
	return rep, nil
}

// step decides in state in: with the exploration's Decide, else with
// lifecycle.Step.
func (e *explorer) step(in lifecycle.Input) lifecycle.Decision {
	if e.x.Decide != nil {
		return e.x.Decide(e.cfg, in)
	}
	return lifecycle.Step(e.cfg, in)
}

// successors returns every successor of s: those of its step, and the
// world's events when s is between passes.
func (s *wState) successors(d *lifecycle.Decision, allowed Events, v Variants) []wTransition {
	out := s.stepSuccessors(d)
	if s.betweenPasses() {
		out = append(out, s.events(allowed, v)...)
	}
	return out
}

// explorer holds the search: states by key, each state's parent and the
// successor that reached it (to replay paths), what the liveness check
// reads of each state, and the fault-free edges in compressed rows, with
// their kinds (states are expanded in index order).
type explorer struct {
	x      *Exploration
	cfg    lifecycle.Config
	index  map[wKey]int32
	parent []int32 // -1-k for the k-th start state
	via    []uint16
	starts []int32 // the state of each start
	// ends holds each state's kind of end state (0: none), expect the end
	// kinds its fault-free paths may reach, want the end kinds one of them
	// must reach (0: none is asked), startsPass whether a step from it
	// starts a reconcile pass, saturated whether all its deadlines passed.
	ends       []uint8
	expect     []uint8
	want       []uint8
	startsPass []bool
	saturated  []bool
	edgeStart  []int32
	edgeTo     []int32
	edgeKind   []uint8
	q          wQueue
}

// visitFrom adds s, reached from parent by its successor number via
// (labelled label), unless its key is known, and returns its index.
func (e *explorer) visitFrom(s wState, parent int32, via int, label string) (int32, error) {
	k := s.key()
	if i, ok := e.index[k]; ok {
		return i, nil
	}
	if msg := s.invariant(); msg != "" {
		path := "start"
		if parent >= 0 {
			path = strings.Join(append(e.path(parent), label), "; ")
		}
		return 0, fmt.Errorf("%w: %s: %s\nstate %s\npath %s", ErrExplore, e.x.Name, msg, k, path)
	}
	i := int32(len(e.ends))
	e.index[k] = i
	e.parent = append(e.parent, parent)
	e.via = append(e.via, uint16(via))
	e.ends = append(e.ends, s.endKind())
	e.expect = append(e.expect, s.expectedEnds(e.x.Variants))
	e.want = append(e.want, s.inPlaceWanted(&k, e.x.Variants)|s.preserveWanted())
	e.startsPass = append(e.startsPass, s.betweenPasses())
	e.saturated = append(e.saturated, s.saturated(k))
	e.q.push(s)
	return i, nil
}

// replay rebuilds state i by replaying its path from its start state.
func (e *explorer) replay(i int32) wState {
	s, _ := e.replayPath(i)
	return s
}

// path returns the labels of the transitions from a start state to state i.
func (e *explorer) path(i int32) []string {
	_, labels := e.replayPath(i)
	return labels
}

func (e *explorer) replayPath(i int32) (wState, []string) {
	var hops []int32
	for ; e.parent[i] >= 0; i = e.parent[i] {
		hops = append(hops, i)
	}
	start := e.x.Starts[-1-e.parent[i]]
	s := startState(start, e.x.Variants)
	labels := []string{"start: " + start.String()}
	for k := len(hops) - 1; k >= 0; k-- {
		d := e.step(s.input())
		tr := s.successors(&d, e.x.Events, e.x.Variants)[e.via[hops[k]]]
		labels = append(labels, tr.label)
		s = tr.next
	}
	return s, labels
}

// describe shows state i for a message.
func (e *explorer) describe(i int32, s *wState, d *lifecycle.Decision) string {
	return fmt.Sprintf("%s: state %s\npath %s\n%s", e.x.Name, s.key(), strings.Join(e.path(i), "; "), d.String())
}

// describeState shows state i, rebuilt by replaying its path, and its
// decision for a message.
func (e *explorer) describeState(i int32) string {
	s := e.replay(i)
	d := e.step(s.input())
	return e.describe(i, &s, &d)
}

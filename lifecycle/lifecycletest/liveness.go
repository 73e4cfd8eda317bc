package lifecycletest

import (
	"fmt"
	"slices"
	"strings"
)

// Liveness under fairness. Once faults stop and the driver answers, a
// machine must reach an end state, and the one expected of where it is:
// gone once its deletion was requested, Running (Available without a target
// cluster) once its instance exists and its own node is healthy, Failed only
// where a timeout can legitimately fire. The check runs on the graph of the
// fault-free transitions the search recorded: the lifecycle's steps with
// fault-free outcomes, time passing between passes, and the world's fair
// events. End states are its sinks: a machine's path ends there.
//
// Fairness is strong: a run that could take a fair event (or a step of the
// lifecycle) infinitely often takes it infinitely often. A node that can
// register registers, a problem is solved, the observer recovers, the
// limiter grants; the controller reconciles. Time passes too, but time is
// not an event the world may withhold, nor one that changes a machine once
// every deadline it counts from has passed: a cycle through a state whose
// every deadline has passed (wState.saturated) is a machine that waits or
// loops forever, while a cycle of states whose deadlines are all still
// ahead is a wait that time ends. So a livelock is a fair cycle of
// fault-free transitions that avoids every end state and passes through a
// state whose every deadline has passed. A deliberate wait of the
// lifecycle's own that resets its deadline each time, without ever letting
// one pass, is not seen as such.
//
// The number of passes a machine takes to its end is counted on the graph
// of the strongly connected components of the fault-free transitions: the
// passes that lead from one component to another, along the longest path to
// an end state. The passes spent inside a component, a wait that time or a
// fair event ends, are not counted.

// fairGraph is the graph of fault-free transitions of an exploration: the
// successors of state v are to[start[v]:start[v+1]], each made by kind[i];
// ends holds each state's end kinds (0: not an end state), and an end state
// is a sink: it has none.
type fairGraph struct {
	start []int32
	to    []int32
	kind  []uint8
	ends  []uint8
}

// out returns the range of v's transitions in to and kind.
func (g *fairGraph) out(v int32) (lo, hi int32) {
	if g.ends[v] != 0 {
		return 0, 0
	}
	return g.start[v], g.start[v+1]
}

// kinds returns the bits of the kinds of v's transitions.
func (g *fairGraph) kinds(v int32) uint32 {
	var k uint32
	lo, hi := g.out(v)
	for i := lo; i < hi; i++ {
		k |= 1 << g.kind[i]
	}
	return k
}

// tarjan is the scratch of Tarjan's algorithm over a fairGraph, reused from
// search to search: index and low are zero outside a search.
type tarjan struct {
	index, low []int32
	on         []bool
	stack      []int32
	call       []tarjanFrame
}

type tarjanFrame struct{ v, pos int32 }

func newTarjan(n int) *tarjan {
	return &tarjan{index: make([]int32, n), low: make([]int32, n), on: make([]bool, n)}
}

// sccs returns the strongly connected components of the subgraph of g on
// nodes (member tells which nodes are in it), in reverse topological order:
// a component's successors come before it. The components are
// order[bounds[i]:bounds[i+1]].
func (g *fairGraph) sccs(t *tarjan, nodes []int32, member func(int32) bool) (order, bounds []int32) {
	counter := int32(0)
	for _, r := range nodes {
		if t.index[r] != 0 {
			continue
		}
		counter++
		t.index[r], t.low[r] = counter, counter
		t.stack, t.on[r] = append(t.stack, r), true
		lo, _ := g.out(r)
		t.call = append(t.call, tarjanFrame{r, lo})
		for len(t.call) > 0 {
			f := &t.call[len(t.call)-1]
			v := f.v
			if _, hi := g.out(v); f.pos < hi {
				w := g.to[f.pos]
				f.pos++
				switch {
				case !member(w):
				case t.index[w] == 0:
					counter++
					t.index[w], t.low[w] = counter, counter
					t.stack, t.on[w] = append(t.stack, w), true
					lo, _ := g.out(w)
					t.call = append(t.call, tarjanFrame{w, lo})
				case t.on[w]:
					t.low[v] = min(t.low[v], t.index[w])
				}
				continue
			}
			t.call = t.call[:len(t.call)-1]
			if len(t.call) > 0 {
				p := t.call[len(t.call)-1].v
				t.low[p] = min(t.low[p], t.low[v])
			}
			if t.low[v] == t.index[v] {
				bounds = append(bounds, int32(len(order)))
				for {
					w := t.stack[len(t.stack)-1]
					t.stack = t.stack[:len(t.stack)-1]
					t.on[w] = false
					order = append(order, w)
					if w == v {
						break
					}
				}
			}
		}
	}
	for _, v := range nodes {
		t.index[v], t.low[v] = 0, 0
	}
	return order, append(bounds, int32(len(order)))
}

// cyclic reports whether the strongly connected component comp holds a
// cycle: more than one node, or a node's transition to itself.
func (g *fairGraph) cyclic(comp []int32) bool {
	if len(comp) > 1 {
		return true
	}
	v := comp[0]
	lo, hi := g.out(v)
	for _, w := range g.to[lo:hi] {
		if w == v {
			return true
		}
	}
	return false
}

// fairCores calls found with every fair cycle set inside the cyclic
// component comp: a strongly connected set of nodes such that every kind of
// transition but time passing that one of its nodes can take, one of its
// transitions within the set takes. Nodes that can take a kind no
// transition within the set takes cannot be on a fair cycle: they are
// removed and what is left is split into components again (the refinement
// of Emerson and Lei for strong fairness).
func (g *fairGraph) fairCores(t *tarjan, mark []uint32, gen *uint32, comp []int32, found func(core []int32)) {
	*gen++
	in := *gen
	for _, v := range comp {
		mark[v] = in
	}
	var enabled, taken uint32
	for _, v := range comp {
		lo, hi := g.out(v)
		for i := lo; i < hi; i++ {
			k := uint32(1) << g.kind[i]
			enabled |= k
			if mark[g.to[i]] == in {
				taken |= k
			}
		}
	}
	bad := enabled &^ taken &^ (1 << kindTime)
	if bad == 0 {
		found(comp)
		return
	}
	var keep []int32
	for _, v := range comp {
		if g.kinds(v)&bad == 0 {
			keep = append(keep, v)
		}
	}
	if len(keep) == 0 {
		return
	}
	*gen++
	sub := *gen
	for _, v := range keep {
		mark[v] = sub
	}
	order, bounds := g.sccs(t, keep, func(w int32) bool { return mark[w] == sub })
	for i := range len(bounds) - 1 {
		if part := order[bounds[i]:bounds[i+1]]; g.cyclic(part) {
			g.fairCores(t, mark, gen, part, found)
		}
	}
}

// liveness is what the analysis found, per state and in total.
type liveness struct {
	comp    []int32 // each state's component
	reach   []uint8 // per component: the end kinds its fault-free paths reach
	passes  []int32 // per component: the most passes to an end state, -1 for none
	maxPass int
	// livelocks are the fair cycle sets that avoid the end states and pass
	// a state whose every deadline has passed.
	livelocks [][]int32
}

// live reports whether a fault-free path leads from state v to an end
// state.
func (l *liveness) live(v int32) bool { return l.passes[l.comp[v]] >= 0 }

// analyse runs the liveness analysis on g: startsPass tells whether a step
// from a state starts a pass, saturated whether every deadline of a state
// has passed.
func analyse(g *fairGraph, startsPass, saturated []bool) *liveness {
	n := len(g.ends)
	t := newTarjan(n)
	nodes := make([]int32, n)
	for i := range nodes {
		nodes[i] = int32(i)
	}
	order, bounds := g.sccs(t, nodes, func(int32) bool { return true })
	nodes = nil
	ncomp := len(bounds) - 1
	l := &liveness{comp: make([]int32, n), reach: make([]uint8, ncomp), passes: make([]int32, ncomp)}
	for c := range ncomp {
		for _, v := range order[bounds[c]:bounds[c+1]] {
			l.comp[v] = int32(c)
		}
	}
	mark := make([]uint32, n)
	var gen uint32
	for c := range ncomp {
		members := order[bounds[c]:bounds[c+1]]
		reach, passes := uint8(0), int32(-1)
		for _, v := range members {
			if g.ends[v] != 0 {
				reach, passes = reach|g.ends[v], max(passes, 0)
			}
			lo, hi := g.out(v)
			for i := lo; i < hi; i++ {
				d := l.comp[g.to[i]]
				if d == int32(c) || l.passes[d] < 0 {
					continue
				}
				reach |= l.reach[d]
				w := l.passes[d]
				if g.kind[i] == uint8(kindStep) && startsPass[v] {
					w++
				}
				passes = max(passes, w)
			}
		}
		l.reach[c], l.passes[c] = reach, passes
		l.maxPass = max(l.maxPass, int(passes))
		if !g.cyclic(members) {
			continue // an end state is a sink, never on a cycle
		}
		g.fairCores(t, mark, &gen, members, func(core []int32) {
			for _, v := range core {
				if saturated[v] {
					l.livelocks = append(l.livelocks, append([]int32(nil), core...))
					return
				}
			}
		})
	}
	return l
}

// path returns a shortest path of fault-free transitions from state from
// to a state for which to reports true, staying in the states within
// reports true for (nil: anywhere), as the positions of its transitions in
// g.to; ok false when there is none. A path from a state to itself has at
// least one transition.
func (g *fairGraph) path(from int32, within, to func(int32) bool) (hops []int32, ok bool) {
	prev := map[int32]int32{} // state -> the transition that reached it
	queue := []int32{from}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		lo, hi := g.out(v)
		for i := lo; i < hi; i++ {
			w := g.to[i]
			if _, seen := prev[w]; seen || (within != nil && !within(w)) {
				continue
			}
			prev[w] = i
			if to(w) {
				for u := w; ; {
					e := prev[u]
					hops = append(hops, e)
					u = g.from(e)
					if u == from {
						break
					}
				}
				slices.Reverse(hops)
				return hops, true
			}
			queue = append(queue, w)
		}
	}
	return nil, false
}

// from returns the state transition i leaves: the last v with start[v] <= i.
func (g *fairGraph) from(i int32) int32 {
	v, _ := slices.BinarySearch(g.start, i+1)
	return int32(v - 1)
}

// kindsString lists the kinds of bits k.
func kindsString(k uint32) string {
	var out []string
	for i, n := range kindNames {
		if k&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return strings.Join(out, ", ")
}

// checkLiveness runs the liveness analysis on the fault-free transitions
// the search recorded and fills the report's Stuck, Passes, Livelocks and
// Unexpected counts, with the first three states of each described.
func (e *explorer) checkLiveness(rep *Report) {
	n := len(e.ends)
	g := &fairGraph{start: e.edgeStart, to: e.edgeTo, kind: e.edgeKind, ends: e.ends}
	l := analyse(g, e.startsPass, e.saturated)
	rep.Passes = l.maxPass
	for i := range int32(n) {
		if l.live(i) {
			continue
		}
		if rep.Stuck < 3 {
			rep.StuckStates = append(rep.StuckStates, e.describeState(i))
		}
		rep.Stuck++
	}
	for _, core := range l.livelocks {
		rep.Livelocks++
		if len(rep.LivelockStates) == 3 {
			continue
		}
		in := map[int32]bool{}
		var at int32 = -1
		var can uint32
		for _, v := range core {
			in[v] = true
			if at < 0 && e.saturated[v] {
				at = v
			}
			can |= g.kinds(v)
		}
		hops, _ := g.path(at, func(w int32) bool { return in[w] }, func(w int32) bool { return w == at })
		rep.LivelockStates = append(rep.LivelockStates, fmt.Sprintf(
			"%s\na fair cycle of %d states that avoids every end state, with every deadline passed here; "+
				"its transitions are of kinds %s; once round: %s",
			e.describeState(at), len(core), kindsString(can), strings.Join(e.labels(at, hops), "; ")))
	}
	// unexpected counts state v and describes it, with what msg says, while
	// fewer than three are.
	unexpected := func(v int32, msg func() string) {
		rep.Unexpected++
		if len(rep.UnexpectedStates) < 3 {
			rep.UnexpectedStates = append(rep.UnexpectedStates, e.describeState(v)+"\n"+msg())
		}
	}
	for v := range int32(n) {
		bad := l.reach[l.comp[v]] &^ e.expect[v]
		if bad == 0 {
			continue
		}
		unexpected(v, func() string {
			hops, _ := g.path(v, nil, func(w int32) bool { return e.ends[w]&bad != 0 })
			return fmt.Sprintf("ends %s, expected %s, by the fault-free path: %s", endsString(bad),
				endsString(e.expect[v]), strings.Join(e.labels(v, hops), "; "))
		})
	}
	for v := range int32(n) {
		if want := e.want[v]; want != 0 && l.reach[l.comp[v]]&want == 0 {
			unexpected(v, func() string {
				why := "an in-place update whose agent did not fail"
				if want == endFailed {
					why = "a Failed machine preserved until its expiry"
				}
				return fmt.Sprintf("no fault-free path ends %s, as one must from %s; they end %s", endsString(want), why,
					endsString(l.reach[l.comp[v]]))
			})
		}
	}
	for k, v := range e.starts {
		s := startState(e.x.Starts[k], e.x.Variants)
		if want, got := s.wantedEnd(e.x.Variants), l.reach[l.comp[v]]; got&want == 0 {
			unexpected(v, func() string {
				return fmt.Sprintf("from the start state %q no fault-free path ends %s; they end %s",
					e.x.Starts[k], endsString(want), endsString(got))
			})
		}
	}
}

// labels returns the labels of the fault-free transitions hops (positions
// in edgeTo) of a path from state from, by replaying it.
func (e *explorer) labels(from int32, hops []int32) []string {
	s := e.replay(from)
	var out []string
	for _, h := range hops {
		d := e.step(s.input())
		k := h - e.edgeStart[from]
		for _, tr := range s.successors(&d, e.x.Events, e.x.Variants) {
			if !tr.faultFree {
				continue
			}
			if k == 0 {
				out = append(out, tr.label)
				s = tr.next
				break
			}
			k--
		}
		from = e.edgeTo[h]
	}
	return out
}

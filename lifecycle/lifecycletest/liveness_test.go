package lifecycletest

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// tEdge is a transition of a hand-made graph.
type tEdge struct {
	from, to int32
	kind     wKind
}

// tGraph is a hand-made graph for the liveness analysis: n states, the end
// kinds of some, the saturated ones; every state starts a pass.
type tGraph struct {
	n         int
	ends      map[int32]uint8
	saturated []int32
	edges     []tEdge
}

func (tg tGraph) analyse() (*fairGraph, *liveness) {
	g := &fairGraph{start: make([]int32, tg.n+1), ends: make([]uint8, tg.n)}
	edges := slices.Clone(tg.edges)
	slices.SortStableFunc(edges, func(a, b tEdge) int { return int(a.from - b.from) })
	for _, e := range edges {
		g.start[e.from+1]++
		g.to = append(g.to, e.to)
		g.kind = append(g.kind, uint8(e.kind))
	}
	for i := range tg.n {
		g.start[i+1] += g.start[i]
	}
	for v, k := range tg.ends {
		g.ends[v] = k
	}
	startsPass, saturated := make([]bool, tg.n), make([]bool, tg.n)
	for i := range tg.n {
		startsPass[i] = true
	}
	for _, v := range tg.saturated {
		saturated[v] = true
	}
	return g, analyse(g, startsPass, saturated)
}

// A loop whose only way out is a choice the world may never make (a step
// with two fault-free outcomes) is a livelock, although a fault-free path
// leads out of it: "some path ends" is not "every fair path ends".
func TestLivelockWithAnAvoidableWayOut(t *testing.T) {
	_, l := tGraph{n: 3, ends: map[int32]uint8{2: endRunning}, saturated: []int32{0, 1},
		edges: []tEdge{{0, 1, kindStep}, {1, 0, kindStep}, {0, 2, kindStep}}}.analyse()
	require.True(t, l.live(0))
	require.True(t, l.live(1))
	require.Len(t, l.livelocks, 1)
	require.ElementsMatch(t, []int32{0, 1}, l.livelocks[0])
}

// The same loop left by a fair event is no livelock: the event happens.
func TestFairEventEndsALoop(t *testing.T) {
	_, l := tGraph{n: 3, ends: map[int32]uint8{2: endRunning}, saturated: []int32{0, 1},
		edges: []tEdge{{0, 1, kindStep}, {1, 0, kindStep}, {0, 2, kindNodeRegisters}}}.analyse()
	require.Empty(t, l.livelocks)
}

// Waiting while a deadline is ahead is no livelock: time passes it. Once
// every deadline passed, waiting without a way out is one, and its states
// have no way out.
func TestTimeEndsAWaitOnlyWhileADeadlineIsAhead(t *testing.T) {
	_, l := tGraph{n: 3, ends: map[int32]uint8{2: endFailed}, saturated: []int32{1},
		edges: []tEdge{{0, 0, kindStep}, {0, 0, kindTime}, {0, 1, kindTime}, {1, 2, kindStep}}}.analyse()
	require.Empty(t, l.livelocks)
	require.True(t, l.live(0))

	_, l = tGraph{n: 2, ends: map[int32]uint8{1: endFailed}, saturated: []int32{0},
		edges: []tEdge{{0, 0, kindStep}, {0, 0, kindTime}}}.analyse()
	require.Equal(t, [][]int32{{0}}, l.livelocks)
	require.False(t, l.live(0))
}

// A cycle of time alone, whose step leads out, is no livelock: the
// controller reconciles.
func TestTheStepIsFair(t *testing.T) {
	_, l := tGraph{n: 2, ends: map[int32]uint8{1: endRunning}, saturated: []int32{0},
		edges: []tEdge{{0, 0, kindTime}, {0, 1, kindStep}}}.analyse()
	require.Empty(t, l.livelocks)
}

// A fair event that ends a loop only from some of its states leaves the
// loop among the others: the refinement finds it.
func TestFairnessRefinesAComponent(t *testing.T) {
	_, l := tGraph{n: 3, ends: map[int32]uint8{2: endRunning}, saturated: []int32{1},
		edges: []tEdge{{0, 1, kindStep}, {1, 0, kindStep}, {1, 1, kindStep}, {0, 2, kindNodeRegisters}}}.analyse()
	require.Equal(t, [][]int32{{1}}, l.livelocks)
}

// Passes count the steps that start a pass and lead out of a component,
// along the longest path to an end; the end kinds a state's fault-free
// paths reach are gathered.
func TestPassesAndReachedEnds(t *testing.T) {
	g, l := tGraph{n: 5, ends: map[int32]uint8{3: endRunning, 4: endFailed},
		edges: []tEdge{{0, 1, kindStep}, {1, 1, kindTime}, {1, 2, kindStep}, {2, 3, kindStep}, {0, 4, kindStep},
			{1, 0, kindTime}}}.analyse()
	require.Equal(t, 2, l.maxPass)
	require.Equal(t, endRunning|endFailed, l.reach[l.comp[0]])
	require.Equal(t, endRunning, l.reach[l.comp[2]])
	hops, ok := g.path(0, nil, func(w int32) bool { return w == 3 })
	require.True(t, ok)
	require.Len(t, hops, 3)
	for i, h := range hops {
		require.Equal(t, []int32{0, 1, 2}[i], g.from(h))
	}
	require.Equal(t, "Running|Failed", endsString(endRunning|endFailed))
	require.Equal(t, "none", endsString(0))
	require.Equal(t, "step, time", kindsString(1<<kindStep|1<<kindTime))
}

package lifecycletest

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/lifecycle"
)

// small is an exploration of about two thousand states: a new machine, fair
// events and its node's health.
func small() Exploration {
	return Exploration{Name: "small", Events: EventsFair | EventNodeHealth, Starts: []Start{StartNew}}
}

// Two runs of an exploration give the same report and observe the same
// decisions in the same order.
func TestExploreIsDeterministic(t *testing.T) {
	run := func() (Report, []lifecycle.Rule) {
		var seen []lifecycle.Rule
		x := small()
		x.Observe = func(_ *lifecycle.Config, _ *lifecycle.Input, d *lifecycle.Decision) { seen = append(seen, d.Rule) }
		rep, err := Explore(x)
		require.NoError(t, err)
		return rep, seen
	}
	a, seenA := run()
	b, seenB := run()
	require.Equal(t, a, b)
	require.Equal(t, seenA, seenB)
	require.Len(t, seenA, a.States, "one decision per state")
	require.Greater(t, a.States, 100)
	require.Greater(t, a.Transitions, a.States)
	require.Zero(t, a.Stuck)
	t.Logf("%d states, %d transitions, %d kinds of decision", a.States, a.Transitions, len(a.Edges))
	total := 0
	for _, e := range a.Edges {
		total += e.Count
	}
	require.Equal(t, a.States, total, "the edges count every decision once")
}

// Replaying the path the search recorded for a state rebuilds that state,
// so messages name a path that really leads to it.
func TestExplorePathsReplay(t *testing.T) {
	e := newExplorer(small())
	_, err := e.run()
	require.NoError(t, err)
	keys := make([]wKey, len(e.end))
	for k, i := range e.index {
		keys[i] = k
	}
	for i := range keys {
		s := e.replay(int32(i))
		require.Equal(t, keys[i], s.key(), "state %d, path %v", i, e.path(int32(i)))
	}
	require.Equal(t, []string{"start: " + StartNew.String()}, e.path(0))
}

// An exploration with more states than its bound fails.
func TestExploreBound(t *testing.T) {
	x := small()
	x.MaxStates = 50
	_, err := Explore(x)
	require.True(t, errors.Is(err, ErrExplore), "%v", err)
}

func TestEventsString(t *testing.T) {
	require.Equal(t, "fair events, deletion", (EventsFair | EventDelete).String())
	require.Equal(t, "", Events(0).String())
	require.Equal(t, "grant, Events(0x400)", (EventGrant | 1<<10).String())
}

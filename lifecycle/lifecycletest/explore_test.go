package lifecycletest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
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
// so messages name a path that really leads to it; also in worlds with
// variants and problems, and in one of the in-place update (its starts,
// without deletion and node health).
func TestExplorePathsReplay(t *testing.T) {
	xs := []Exploration{small()}
	for _, x := range Explorations() {
		switch x.Name {
		case "without a target cluster", "problems with the machine or its class", "health timeout disabled":
			xs = append(xs, x)
		}
	}
	require.Len(t, xs, 4)
	xs = append(xs, Exploration{Name: "in-place", Events: EventsFair | eventInPlace, Starts: inPlaceStarts(0, false)})
	for _, x := range xs {
		e := newExplorer(x)
		_, err := e.run()
		require.NoError(t, err)
		keys := make([]wKey, len(e.ends))
		for k, i := range e.index {
			keys[i] = k
		}
		// Every state of the small world, a thousand or so of the others.
		stride := max(1, len(keys)/1000)
		for i := 0; i < len(keys); i += stride {
			s := e.replay(int32(i))
			require.Equal(t, keys[i], s.key(), "%s: state %d, path %v", x.Name, i, e.path(int32(i)))
		}
		require.Equal(t, []string{"start: " + x.Starts[0].String()}, e.path(0))
	}
}

// Every start state is named, keeps the world's invariants, and differs
// from the others; the adopted ones cover every phase MCM leaves a machine
// in and every deletion step, with and without providerID and node label.
func TestStartStates(t *testing.T) {
	keys := map[wKey]Start{}
	names := map[string]Start{}
	for _, p := range allStarts() {
		require.NotContains(t, p.String(), "Start(", "%d", p)
		s := startState(p, 0)
		require.Empty(t, s.invariant(), p.String())
		other, seen := keys[s.key()]
		require.False(t, seen, "%s and %s have the same key", p, other)
		keys[s.key()] = p
		other, seen = names[p.String()]
		require.False(t, seen, "%d and %d have the same name %q", p, other, p.String())
		names[p.String()] = p
	}
	require.Equal(t, "Start(13)", Start(13).String())
	require.Equal(t, "Start(77)", (adoptedBase | 13).String(), "a place past the adoptions")
	require.Equal(t, "Start(156)", (inPlaceBase | Start(len(inPlacePlaces))).String(), "an in-place place past the places")
	require.Equal(t, fmt.Sprintf("Start(%d)", 256+len(preservePlaces)), (preserveBase | Start(len(preservePlaces))).String(),
		"a preservation place past the places")
	require.True(t, startState(StartRunning, VariantHealthTimeoutDisabled).obj.Overrides.DisableHealthTimeout)

	places := map[Place]int{}
	steps := map[lastop.Step]bool{}
	for _, p := range AdoptedStarts() {
		s := startState(p, 0)
		places[PlaceOf(&s.st)]++
		require.Equal(t, lifecycle.StageNone, s.st.Stage, p.String())
		require.Equal(t, s.obj.ProviderID, s.st.ProviderID, "the status names what the spec names: %s", p)
		require.Equal(t, s.obj.NodeLabel, s.st.NodeName, "the status names what the label names: %s", p)
		if s.st.Phase == phase.Terminating {
			steps[lastop.StepOf(lastop.Operation{Desc: s.st.LastOp.Desc}.Describe(lastop.Args{}))] = true
		}
	}
	require.Len(t, AdoptedStarts(), 4*len(adoptions))
	for _, ph := range []phase.Phase{phase.None, phase.CrashLoopBackOff, phase.Pending, phase.Running, phase.Unknown,
		phase.Failed} {
		require.Equal(t, 4, places[Place{ph, lifecycle.StageNone}], ph.Label())
	}
	require.Equal(t, 4*7, places[Place{phase.Terminating, lifecycle.StageNone}])
	for st := lastop.StepNone; st <= lastop.StepRemoveFinalizer; st++ {
		require.True(t, steps[st] || st == lastop.StepInitialize, "no adopted start at deletion step %s", st)
	}
	require.Len(t, adoptedStarts(true), 4*7)
	require.Len(t, adoptedStarts(false), 4*6)
	for _, p := range LostWriteStarts() {
		require.Less(t, p, startNamed)
	}
}

// The provider may take an UpdateMetadata and drop one of its keys.
func TestProviderDropsAMetadataKey(t *testing.T) {
	s := startState(StartRunning, 0)
	c := driverapi.Call{Method: driverapi.MethodUpdateMetadata, Machine: driverapi.MachineRef{Name: wName, UID: wUID,
		ProviderID: wPID}, Metadata: metaMap(wMetaAll)}
	var metas []wMeta
	for _, r := range s.results(c, lifecycle.RuleMetadataPatch) {
		if r.r.OK() {
			metas = append(metas, r.inst.meta)
		}
	}
	require.Equal(t, []wMeta{wMetaAll, wMetaTeam, 0}, metas, "applied, pool dropped, every change dropped")
	require.Equal(t, map[string]string{"pool": "b", "team": "a"}, metaMap(wMetaAll))
	require.Equal(t, wMetaAll, metaOf(map[string]string{"pool": "b", "team": "a", "other": "x"}))
	require.Equal(t, wMetaTeam, metaOf(map[string]string{"pool": "c", "team": "a"}))
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
	require.Equal(t, "grant, instance gone, node unreadable, metadata key removed, in-place update", (EventGrant |
		EventInstanceGone | EventNodeUnreadable | EventMetadataKeyRemoved | eventInPlace).String())
	require.Equal(t, "in-place update, preservation, preservation on the node, auto-preservation, an administrator's cordon",
		(eventInPlace | eventPreserve | eventPreserveNode | eventAutoPreserve | eventCordon).String())
	require.Equal(t, "Events(0x100000)", Events(1<<20).String())
	require.Equal(t, Events(1<<20-1), eventsAll)
}

func TestVariantsString(t *testing.T) {
	require.Equal(t, "no target cluster, health timeout disabled",
		(VariantNoTargetCluster | VariantHealthTimeoutDisabled).String())
	require.Equal(t, "", Variants(0).String())
	require.Equal(t, "no target cluster, a node agent that may fail", (VariantNoTargetCluster | variantAgentFails).String())
	require.Equal(t, "in-place updates asked through the machine's spec, Variants(0x10)", (variantOwnUpdate | 1<<4).String())
}

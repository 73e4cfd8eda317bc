package lifecycletest

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// preserveStart returns the preservation start named name.
func preserveStart(t *testing.T, name string) Start {
	t.Helper()
	for _, p := range preserveStarts() {
		if p.String() == name {
			return p
		}
	}
	t.Fatalf("no preservation start %q", name)
	return 0
}

// The preservation starts: taken over from MCM at each value of the
// annotation on the machine and on its node, each phase and expiry; the
// lifecycle's own; a Failed machine's node NotReady, a Running one's
// Ready; a preserved node marked, a Failed one's cordoned by the
// preservation and drained.
func TestPreserveStarts(t *testing.T) {
	all := preserveStarts()
	require.Len(t, all, len(preservePlaces))
	asked := map[lifecycle.Preserve]int{}
	for _, p := range all {
		pl, _ := preservePlaceOf(p)
		s := startState(p, VariantNoTargetCluster)
		require.Empty(t, s.invariant(), p.String())
		require.Equal(t, pl.expiry != expiryNone, s.st.PreserveUntil != 0, p.String())
		require.Equal(t, pl.expiry == expiryPassed, preservePastExpiry(&s.st, s.now), p.String())
		if s.node == 1 {
			require.Equal(t, s.st.Phase == phase.Running || pl.healthy, s.healthy, p.String())
			require.Equal(t, pl.marked, s.sdByMCM && s.sdDisabled && s.presStatus == presTrue, p.String())
		}
		if s.cordoned {
			require.Equal(t, cordonPreserve, s.cordonBy, p.String())
		}
		if !pl.own {
			require.Zero(t, s.st.Flags, "taken over: %s", p)
			asked[pl.machine]++
			asked[pl.node]++
		}
	}
	for _, v := range []lifecycle.Preserve{lifecycle.PreserveNow, lifecycle.PreserveWhenFailed,
		lifecycle.PreserveAutoPreserved, lifecycle.PreserveFalse, lifecycle.PreserveInvalid} {
		require.GreaterOrEqual(t, asked[v], 12, "%s on the machine and on the node, two phases, three expiries", v)
	}
	s := startState(preserveStart(t, "Failed machine preserved, draining its node, pods a disruption budget holds"), 0)
	require.Equal(t, lifecycle.StagePreserveDrain, s.st.Stage)
	require.Equal(t, lifecycle.FlagDraining|lifecycle.FlagPreserveCordonMarked, s.st.Flags)
	require.True(t, s.cordonMark, "the lifecycle's own cordon carries its mark")
	require.Equal(t, uint8(2), s.pods)
	require.False(t, s.preserveSettled())
}

// The Preserved condition's message the world abstracts is the one the
// lifecycle writes: for a Running machine, and for a Failed one once its
// node is drained.
func TestPreserveMessage(t *testing.T) {
	for _, tc := range []struct {
		start   string
		drained bool
	}{
		{"Running machine taken over, preserve=now on the machine, no expiry", false},
		{"Failed machine preserved, its node drained, not marked yet", true},
	} {
		s := startState(preserveStart(t, tc.start), 0)
		d := lifecycle.Step(wCfg, s.input())
		found := false
		for _, e := range d.Effects.Slice() {
			if e.Kind == lifecycle.KindSetNodeCondition && e.Key == lifecycle.ConditionPreserved {
				require.Equal(t, presMessage(d.Status.PreserveUntil, tc.drained), e.Message, tc.start)
				s.st = d.Status
				s.applyWrites(&d, d.Effects.Len())
				require.Equal(t, uint8(1)+b2u(tc.drained), s.presMessageClass(), tc.start)
				found = true
			}
		}
		require.True(t, found, "%s: %s", tc.start, d.String())
	}
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// The world carries out preservation's writes: the annotations of the
// machine and the node, the condition, and who cordoned the node.
func TestPreserveWrites(t *testing.T) {
	s := startState(preserveStart(t, "Failed machine taken over, preserve=when-failed on the machine, no expiry"), 0)
	apply := func(k lifecycle.Kind, key, value string, op lifecycle.Rule) {
		e := lifecycle.Effect{Kind: k, Node: wNode, Key: key, Value: value}
		s.applyPreserveWrite(&e, op)
		s.applyNodeWrite(&e)
	}
	apply(lifecycle.KindCordon, "", "", lifecycle.RulePreserveDrain)
	require.True(t, s.cordoned)
	require.Equal(t, cordonPreserve, s.cordonBy)
	apply(lifecycle.KindAnnotateNode, lifecycle.ScaleDownDisabledAnnotation, "true", lifecycle.RulePreserveNode)
	require.True(t, s.sdDisabled)
	require.False(t, s.nodeObject().ScaleDownDisabled, "the shell reads the by-mcm annotation")
	apply(lifecycle.KindAnnotateNode, lifecycle.ScaleDownDisabledByAnnotation, "true", lifecycle.RulePreserveNode)
	require.True(t, s.nodeObject().ScaleDownDisabled)
	apply(lifecycle.KindUncordon, "", "", lifecycle.RulePreserveStop)
	require.False(t, s.cordoned)
	require.Equal(t, uint8(1), s.pods, "workloads come back")
	apply(lifecycle.KindCordon, "", "", lifecycle.RuleDeleteDrain)
	require.Equal(t, cordonOther, s.cordonBy)
	s.nodePreserve = lifecycle.PreserveNow
	apply(lifecycle.KindRemoveNodeAnnotation, lifecycle.PreserveAnnotation, "", lifecycle.RulePreserveEnd)
	require.Equal(t, lifecycle.PreserveUnset, s.nodePreserve)
	rm := lifecycle.Effect{Kind: lifecycle.KindRemoveAnnotation, Key: lifecycle.PreserveAnnotation}
	s.applyPreserveWrite(&rm, lifecycle.RulePreserveEnd)
	require.Equal(t, lifecycle.PreserveUnset, s.obj.Preserve)
	s.dropNode()
	require.False(t, s.sdDisabled || s.sdByMCM || s.cordoned)
}

// The world's events of preservation: the annotations, the fleet's grant
// only while it is due and its fair taking back once it is not, time
// passing the expiry only while one is ahead, none of them while the
// machine is deleted.
func TestPreserveEvents(t *testing.T) {
	labels := func(s wState, allowed Events) []string {
		a := &eventAdder{s: &s, allowed: allowed}
		s.preserveEvents(a)
		var out []string
		for _, tr := range a.out {
			out = append(out, tr.label)
		}
		return out
	}
	s := startState(preserveStart(t, "Failed machine taken over, without a preserve annotation, its expiry ahead"), 0)
	require.Equal(t, []string{"time passes the preservation's expiry"}, labels(s, EventsFair))
	require.Contains(t, labels(s, eventPreserve), "a user annotates the machine preserve=when-failed")
	require.NotContains(t, labels(s, eventPreserve), "a user annotates the node preserve=now")
	require.Contains(t, labels(s, eventPreserveNode), "a user annotates the node preserve=now")
	require.NotContains(t, labels(s, eventAutoPreserve), "the fleet grants auto-preservation",
		"preserved, not by the fleet: not due")
	s.st.PreserveUntil = 0
	require.Contains(t, labels(s, eventAutoPreserve), "the fleet grants auto-preservation")
	s.grantPreserve = true
	require.Contains(t, labels(s, eventAutoPreserve), "the fleet takes auto-preservation back")
	s.st.Phase = phase.Running
	require.Equal(t, []string{"the fleet takes back a grant no longer due"}, labels(s, EventsFair))
	require.Empty(t, labels(s, eventCordon), "cordoned by the preservation's drain")
	s.cordoned = false
	require.Equal(t, []string{"an administrator cordons the node"}, labels(s, eventCordon))
	s.obj.DeletionTime = s.now
	require.Empty(t, labels(s, eventsAll))
}

// A machine preserved until its expiry is not at its end: once the expiry
// passes and the node is given back, it is.
func TestPreserveEnds(t *testing.T) {
	s := startState(preserveStart(t, "Failed machine taken over, preserve=when-failed on the machine, its expiry ahead"), 0)
	require.False(t, s.end())
	require.Equal(t, endFailed, s.wantedEnd(0))
	require.Equal(t, endFailed|endRunning, s.expectedEnds(0), "its node may recover first")
	require.Equal(t, endFailed, s.preserveWanted(), "time passes its expiry and it ends Failed")
	s.healthy = true
	require.Zero(t, s.preserveWanted(), "its node Ready: health makes it Running first")
	s.healthy = false
	s.st.PreserveUntil, s.obj.Preserve = 0, lifecycle.PreserveUnset
	require.False(t, s.end(), "the node still marked")
	s.sdDisabled, s.sdByMCM, s.presStatus = false, false, presFalse
	require.True(t, s.end())
	s.obj.Preserve = lifecycle.PreserveWhenFailed
	require.False(t, s.end(), "when-failed on a Failed machine asks it again")
	s.st.Phase = phase.Running
	require.True(t, s.preserveSettled(), "when-failed does not ask a Running machine's")
	s.obj.Preserve = lifecycle.PreserveAutoPreserved
	require.False(t, s.preserveSettled(), "the auto-preserved annotation of a Running machine is removed")
	s.obj.Preserve, s.nodePreserve = lifecycle.PreserveNow, lifecycle.PreserveFalse
	require.True(t, s.preserveSettled(), "the node's annotation decides")
	s.cordoned, s.cordonBy = true, cordonAdmin
	require.True(t, s.inPlaceSettled(), "an administrator's cordon is the administrator's to lift")
}

// brokenPreserve runs exploration x, whose lifecycle is lifecycle.Step
// with its decision changed by breakIt, and requires the world to catch
// it with an error naming want.
func brokenPreserve(t *testing.T, x Exploration, breakIt func(in *lifecycle.Input, d *lifecycle.Decision), want string) {
	t.Helper()
	x.Decide = func(cfg lifecycle.Config, in lifecycle.Input) lifecycle.Decision {
		d := lifecycle.Step(cfg, in)
		breakIt(&in, &d)
		return d
	}
	_, err := Explore(x)
	require.True(t, errors.Is(err, ErrExplore), "%v", err)
	require.Contains(t, err.Error(), want)
}

// The world catches a lifecycle that breaks a promise of preservation.
func TestPreserveWorldCatchesBrokenPromises(t *testing.T) {
	found := func(names ...string) []Start {
		var out []Start
		for _, n := range names {
			out = append(out, preserveStart(t, n))
		}
		return out
	}
	running := inPlaceStarts(0, true)[:1]
	t.Run("Failed without an expiry", func(t *testing.T) {
		brokenPreserve(t, Exploration{Name: "no expiry", Events: EventsFair | eventPreserve | EventNodeHealth, Starts: running},
			func(in *lifecycle.Input, d *lifecycle.Decision) {
				if d.Status.Phase == phase.Failed && in.Status.Phase != phase.Failed {
					d.Status.PreserveUntil = 0
				}
			}, "made Failed without an expiry ahead")
	})
	t.Run("the expiry moved", func(t *testing.T) {
		brokenPreserve(t, Exploration{Name: "expiry moved", Events: EventsFair,
			Starts: found("Failed machine taken over, preserve=when-failed on the machine, its expiry ahead")},
			func(in *lifecycle.Input, d *lifecycle.Decision) {
				if d.Status.PreserveUntil != 0 {
					d.Status.PreserveUntil = d.Status.PreserveUntil.Add(time.Hour)
				}
			}, "moved from")
	})
	t.Run("Preserved True not asked", func(t *testing.T) {
		brokenPreserve(t, Exploration{Name: "not asked", Events: EventsFair,
			Starts: found("Running machine taken over, preserve=false on the machine, its expiry ahead")},
			func(in *lifecycle.Input, d *lifecycle.Decision) {
				for i, e := range d.Effects.Slice() {
					if e.Kind == lifecycle.KindSetNodeCondition && e.Key == lifecycle.ConditionPreserved {
						d.Effects.Slice()[i].Status = lifecycle.ConditionTrue
					}
				}
			}, "whose preservation is not asked")
	})
	t.Run("Preserved True before the drain", func(t *testing.T) {
		brokenPreserve(t, Exploration{Name: "undrained", Events: EventsFair,
			Starts: found("Failed machine preserved, draining its node by force, pods stuck")},
			func(in *lifecycle.Input, d *lifecycle.Decision) {
				in.Node.Pods = 0 // a lifecycle that does not count the pods
				*d = lifecycle.Step(wCfg, *in)
			}, "Preserved True written to a Failed machine's node while pods")
	})
}

// The world catches a lifecycle that takes every cordon on a preserved
// machine's node for its own, as the lifecycle did before it marked its
// cordon: the lifecycle's cordon lost with its outcome, an administrator's
// cordon since is lifted once the machine recovers.
func TestPreserveWorldCatchesAnAdministratorsCordonLifted(t *testing.T) {
	x := Exploration{Name: "preservation with an administrator's cordon",
		Events: EventsFair | eventPreserve | eventCordon | EventNodeHealth, Starts: inPlaceStarts(0, true)[:1],
		MaxStates: 2_000_000}
	x.Decide = func(cfg lifecycle.Config, in lifecycle.Input) lifecycle.Decision {
		in.Node.OwnCordon = in.Node.Unschedulable // any cordon taken for the lifecycle's own
		return lifecycle.Step(cfg, in)
	}
	_, err := Explore(x)
	require.True(t, errors.Is(err, ErrExplore), "%v", err)
	require.Contains(t, err.Error(), "although an administrator cordoned it")
}

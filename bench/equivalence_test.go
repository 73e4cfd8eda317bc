package bench

import (
	"context"
	"reflect"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

func fixture(t testing.TB) *Fixture {
	t.Helper()
	f, err := NewFixture()
	require.NoError(t, err)
	return f
}

// Every implementation takes the same edges: for each phase and event of
// Table, looplab, stateless and a reconcile pass of the library end in the
// phase Table says (the same phase when it has no edge), and the measured
// edges are declared in the library's phase table.
func TestEquivalence(t *testing.T) {
	f := fixture(t)
	ctx := context.Background()
	for _, s := range States() {
		for _, e := range Events() {
			want, edge := Next(s, e)
			t.Run(string(s)+"/"+string(e), func(t *testing.T) {
				lf := NewLooplab(s)
				err := lf.Event(ctx, string(e))
				require.Equal(t, edge, err == nil, "looplab: %v", err)
				require.Equal(t, string(want), lf.Current(), "looplab")

				sm := NewStateless(s)
				err = sm.FireCtx(ctx, e)
				require.Equal(t, edge, err == nil, "stateless: %v", err)
				require.Equal(t, want, sm.MustState(), "stateless")

				stored := s
				sh := NewStatelessStored(&stored)
				_ = sh.FireCtx(ctx, e)
				require.Equal(t, want, stored, "stateless with external storage")

				p := &Provider{Exists: true}
				in, _ := p.Pass(&f.Config, f.Observe(s, e), nil)
				require.Equal(t, PhaseOf(want).Label(), in.Status.Phase.Label(), "lifecycle")
				if edge {
					require.True(t, phase.Allowed(PhaseOf(s), PhaseOf(want)))
				}
			})
		}
	}
}

// The edges the benchmarks measure, one Step each, as the benchmarks take
// them: the phase each implementation reaches and, for the library and the
// baselines, the effects (one event; four on the first join).
func TestMeasuredEdges(t *testing.T) {
	f := fixture(t)
	cases := []struct {
		name    string
		in      lifecycle.Input
		want    phase.Phase
		effects int
	}{
		{"Running-unhealthy", f.reuse(0), phase.Unknown, 1},
		{"Unknown-healthy", f.Observe(Unknown, Healthy), phase.Running, 1},
		{"Pending-healthy", f.fresh(), phase.Running, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := lifecycle.Step(f.Config, tc.in)
			require.Equal(t, tc.want.Label(), d.Status.Phase.Label(), d.String())
			require.Equal(t, tc.effects, d.Effects.Len(), d.String())
			var into lifecycle.Decision
			lifecycle.StepInto(&into, &f.Checked, &tc.in)
			require.Equal(t, d, into)

			pv := PureValue(f.Config, tc.in)
			require.Equal(t, tc.want, pv.Status.Phase)
			var pi, pz PureDecision
			PureInto(&pi, &f.Config, &tc.in)
			PureIntoZeroing(&pz, &f.Config, &tc.in)
			require.Equal(t, pv, pi)
			require.Equal(t, pv, pz)
		})
	}
}

// The steps the benchmarks measure allocate nothing, by value or into.
func TestMeasuredEdgesAllocateNothing(t *testing.T) {
	f := fixture(t)
	for _, in := range []lifecycle.Input{f.reuse(0), f.Observe(Unknown, Healthy), f.fresh(), f.In[Running]} {
		var d lifecycle.Decision
		require.Zero(t, testing.AllocsPerRun(200, func() { d = lifecycle.Step(f.Config, in) }), "Step %s", d.Rule)
		require.Zero(t, testing.AllocsPerRun(200, func() { lifecycle.StepInto(&d, &f.Checked, &in) }), "StepInto %s", d.Rule)
	}
}

// The baselines move exactly the library's values.
func TestBaselineSizes(t *testing.T) {
	require.Equal(t, unsafe.Sizeof(lifecycle.Decision{}), unsafe.Sizeof(PureDecision{}))
	require.Equal(t, unsafe.Sizeof(lifecycle.Effects{}), unsafe.Sizeof(PureEffects{}))
	t.Logf("sizes: Status %d B, Input %d B, Config %d B, Decision %d B",
		unsafe.Sizeof(lifecycle.Status{}), unsafe.Sizeof(lifecycle.Input{}),
		unsafe.Sizeof(lifecycle.Config{}), unsafe.Sizeof(lifecycle.Decision{}))
}

// PhaseTable, in both peers, permits exactly the library's phase changes,
// and on Table's phases its to-Running, to-Unknown and to-Failed events
// are Table's Healthy, Unhealthy and Timeout.
func TestPhaseTableIsTheLibrarys(t *testing.T) {
	ctx := context.Background()
	for _, from := range phase.All() {
		for _, to := range phase.All() {
			if from == to {
				continue
			}
			s, e := State(from.Label()), PhaseEvent(to)
			allowed := phase.Allowed(from, to)
			require.Equal(t, allowed, NewLooplabPhases(s).Can(string(e)), "looplab %s %s", s, e)
			ok, _ := NewStatelessPhases(s).CanFire(e)
			require.Equal(t, allowed, ok, "stateless %s %s", s, e)
			if allowed {
				sm := NewStatelessPhases(s)
				require.NoError(t, sm.FireCtx(ctx, e))
				require.Equal(t, State(to.Label()), sm.MustState())
			}
		}
	}
	same := map[Event]phase.Phase{Healthy: phase.Running, Unhealthy: phase.Unknown, Timeout: phase.Failed}
	for _, s := range States() {
		for e, p := range same {
			_, edge := Next(s, e)
			require.Equal(t, edge, phase.Allowed(PhaseOf(s), p) && PhaseOf(s) != p, "%s %s", s, e)
		}
	}
}

func TestTableMatchesLooplab(t *testing.T) {
	for _, s := range States() {
		lf := NewLooplab(s)
		for _, e := range Events() {
			_, edge := Next(s, e)
			require.Equal(t, edge, lf.Can(string(e)), "%s %s", s, e)
		}
	}
}

// assemble writes every field of the Input: over an Input whose every
// field is set, it leaves exactly the machine's input. A field added to
// lifecycle.Input fails the first check until assemble and this test
// handle it.
func TestAssembleSetsEveryField(t *testing.T) {
	f := fixture(t)
	src := f.fresh()
	junk := f.In[Failed]
	junk.NodeReadFailed = true
	junk.VolumeAttachments = 3
	junk.TokenExists = !src.TokenExists
	junk.Observer = lifecycle.Observer{Degraded: true, Since: T0}
	junk.Problem = lifecycle.ProblemInvalidMachine
	junk.Grant = lifecycle.Grant{Fail: true}
	junk.PredecessorTerminating = true
	junk.Outcome = &lifecycle.Outcome{Ran: 1}
	v := reflect.ValueOf(junk)
	for i := range v.NumField() {
		if v.Field(i).IsZero() && v.Type().Field(i).Name != "TokenExists" {
			t.Fatalf("the junk input leaves %s zero: set it here and in assemble", v.Type().Field(i).Name)
		}
	}
	assemble(&junk, &src)
	want := lifecycle.Input{Now: src.Now, Object: src.Object, Status: src.Status, Node: src.Node,
		TokenExists: src.TokenExists}
	require.Equal(t, want, junk)
}

package lifecycle_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// The hot path of every flow, as the inputs of the steps a reconcile loop
// makes on it (effects succeed, the provider answers OK): the core's flow
// benchmarks (doc/performance.md). bench/flows_test.go measures the same paths
// with a real machine's string lengths, next to the peer libraries.

// flowPath is one flow's hot path.
type flowPath struct {
	name  string
	steps []lifecycle.Input
	last  lifecycle.Rule // the rule of the decision after the last step's
}

// follow steps from in, answering every driver call with answer, and
// returns the input of every step until a decision is done (or the
// machine's deletion is). The node effects the shell would carry out are
// applied to the node, so the next step sees them.
func follow(tb testing.TB, in lifecycle.Input, answer driverapi.Result) ([]lifecycle.Input, lifecycle.Rule) {
	tb.Helper()
	cfg := lifecycle.DefaultConfig()
	steps := []lifecycle.Input{in}
	d := lifecycle.Step(cfg, in)
	for !d.Done() && d.Rule != lifecycle.RuleDeleteDone {
		if len(steps) > lifecycle.MaxStepsPerPass {
			tb.Fatalf("the path does not end: %s", d.String())
		}
		var r driverapi.Result
		if d.HasCall() {
			r = answer
		}
		in = then(in, d, r)
		for _, e := range d.Effects.Slice() {
			switch e.Kind {
			case lifecycle.KindRemoveTaint:
				in.Node.Taints &^= lifecycle.InstanceNotReady
			case lifecycle.KindLabelNode:
				in.Node.MachineName = e.Value
			case lifecycle.KindDeleteBootstrapToken:
				in.TokenExists = false
			}
		}
		steps = append(steps, in)
		d = lifecycle.Step(cfg, in)
	}
	return steps, d.Rule
}

func flowPaths(tb testing.TB) []flowPath {
	tb.Helper()
	var paths []flowPath
	add := func(name string, in lifecycle.Input, answer driverapi.Result) {
		steps, last := follow(tb, in, answer)
		paths = append(paths, flowPath{name, steps, last})
	}
	create := creationHappyPath(tb)
	paths = append(paths, flowPath{"create-join", create, lifecycle.RuleHealthy})
	paths = append(paths, flowPath{"healthy", []lifecycle.Input{runningInput()}, lifecycle.RuleHealthy})

	unhealthy := runningInput()
	unhealthy.Node = notReadyNode()
	add("unhealthy", unhealthy, driverapi.Result{})

	rejoin := unknownInput()
	rejoin.Node = healthyNode()
	add("rejoin", rejoin, driverapi.Result{})

	timeout := unknownInput()
	timeout.Grant.Fail = true
	add("health-timeout", timeout, ok(providerID, nodeName))

	add("hot-update", updatingInput(), ok(providerID, nodeName))

	paths = append(paths, flowPath{"delete", deletionHappyPath(tb), lifecycle.RuleDeleteDone})
	return paths
}

// The paths end where they are named for, and no step of them allocates,
// by value, into or on.
func TestFlowPathsAllocateNothing(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	k := checked(t, cfg)
	want := map[string]lifecycle.Rule{
		"unhealthy":      lifecycle.RuleHealthWaitUnknown,
		"rejoin":         lifecycle.RuleHealthy,
		"health-timeout": lifecycle.RuleAwaitReplacement,
		"hot-update":     lifecycle.RuleHealthy,
	}
	for _, p := range flowPaths(t) {
		t.Run(p.name, func(t *testing.T) {
			if r, ok := want[p.name]; ok {
				require.Equal(t, r.String(), p.last.String())
			}
			for i, in := range p.steps {
				var d lifecycle.Decision
				require.Zero(t, testing.AllocsPerRun(50, func() { d = lifecycle.Step(cfg, in) }), "Step %d (%s)", i, d.Rule)
				require.Zero(t, testing.AllocsPerRun(50, func() { lifecycle.StepInto(&d, k, &in) }), "StepInto %d (%s)", i, d.Rule)
			}
			if p.name == "health-timeout" {
				d := lifecycle.Step(cfg, p.steps[len(p.steps)-1])
				require.Equal(t, phase.Failed, d.Status.Phase)
			}
		})
	}
}

// BenchmarkFlow measures every step of each flow's hot path: ns/step is the
// mean cost of one decision on it, by value (Step) and into a reused
// Decision (StepInto).
func BenchmarkFlow(b *testing.B) {
	cfg := lifecycle.DefaultConfig()
	k := checked(b, cfg)
	for _, p := range flowPaths(b) {
		perStep := func(b *testing.B) {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(p.steps)), "ns/step")
		}
		b.Run("path="+p.name+"/entry=value", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for i := range p.steps {
					_ = lifecycle.Step(cfg, p.steps[i])
				}
			}
			perStep(b)
		})
		b.Run("path="+p.name+"/entry=into", func(b *testing.B) {
			var d lifecycle.Decision
			b.ReportAllocs()
			for b.Loop() {
				for i := range p.steps {
					lifecycle.StepInto(&d, k, &p.steps[i])
				}
			}
			perStep(b)
		})
	}
}

package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/lifecycle"
)

// The hot paths of the library's flows, as traces: the input of every step
// a reconcile loop makes (effects succeed, the provider answers OK). They
// are the common paths on which no step may allocate: creation, health,
// deletion and hot update.

type flowPath struct {
	name  string
	steps []lifecycle.Input
}

func flowPaths(t testing.TB) []flowPath {
	t.Helper()
	f := fixture(t)
	settle := func(p *Provider, in lifecycle.Input) []lifecycle.Input {
		var trace []lifecycle.Input
		_, err := p.Settle(&f.Config, in, &trace)
		require.NoError(t, err)
		return trace
	}
	running := func(mutate func(*lifecycle.Input)) []lifecycle.Input {
		in := f.In[Running]
		in.Now = in.Now.Add(time.Minute)
		mutate(&in)
		return settle(&Provider{Exists: true}, in)
	}
	return []flowPath{
		{"create", settle(&Provider{}, NewInput(MachineName, MachineUID))},
		{"join", settle(&Provider{Exists: true}, f.fresh())},
		{"healthy", []lifecycle.Input{f.In[Running]}},
		{"unhealthy", running(func(in *lifecycle.Input) { in.Node = f.Unhealthy })},
		{"rejoin", settle(&Provider{Exists: true}, f.Observe(Unknown, Healthy))},
		{"health-timeout", settle(&Provider{Exists: true}, f.Observe(Unknown, Timeout))},
		{"hot-update", running(func(in *lifecycle.Input) { in.Object.UpdateGeneration = in.Status.AppliedGeneration + 1 })},
		{"delete", running(func(in *lifecycle.Input) { in.Object.DeletionTime = in.Now })},
	}
}

// Every step of every flow path allocates nothing, by value or into (the
// core's own alloc tests cover creation, a healthy machine and deletion with
// shorter fixture strings).
func TestFlowsAllocateNothing(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	k := checked(t, cfg)
	for _, p := range flowPaths(t) {
		t.Run(p.name, func(t *testing.T) {
			require.NotEmpty(t, p.steps)
			for i, in := range p.steps {
				var d lifecycle.Decision
				require.Zero(t, testing.AllocsPerRun(100, func() { d = lifecycle.Step(cfg, in) }),
					"step %d (%s) allocates", i, d.Rule)
				require.Zero(t, testing.AllocsPerRun(100, func() { lifecycle.StepInto(&d, k, &in) }),
					"StepInto %d (%s) allocates", i, d.Rule)
			}
		})
	}
}

// The paths take the rules they are named for.
func TestFlowPaths(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	last := map[string]lifecycle.Rule{
		"create":         lifecycle.RuleHealthWaitJoin,
		"join":           lifecycle.RuleHealthy,
		"healthy":        lifecycle.RuleHealthy,
		"unhealthy":      lifecycle.RuleHealthWaitUnknown,
		"rejoin":         lifecycle.RuleHealthy,
		"health-timeout": lifecycle.RuleAwaitReplacement,
		"hot-update":     lifecycle.RuleHealthy,
		"delete":         lifecycle.RuleDeleteDone,
	}
	for _, p := range flowPaths(t) {
		in := p.steps[len(p.steps)-1]
		d := lifecycle.Step(cfg, in)
		require.Equal(t, last[p.name].String(), d.Rule.String(), "%s: %s", p.name, d.String())
		t.Logf("%s: %d steps", p.name, len(p.steps))
	}
}

// BenchmarkFlow steps through each path; ns/step is the mean cost of one
// Step on it. The core has the same benchmark (lifecycle's BenchmarkFlow)
// over its test fixtures; this one uses a real machine's
// string lengths and runs next to the peers.
func BenchmarkFlow(b *testing.B) {
	cfg := lifecycle.DefaultConfig()
	k := checked(b, cfg)
	for _, p := range flowPaths(b) {
		b.Run(fmt.Sprintf("path=%s/impl=lifecycle", p.name), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for i := range p.steps {
					_ = lifecycle.Step(cfg, p.steps[i])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(p.steps)), "ns/step")
		})
		b.Run(fmt.Sprintf("path=%s/impl=lifecycle-into", p.name), func(b *testing.B) {
			var d lifecycle.Decision
			b.ReportAllocs()
			for b.Loop() {
				for i := range p.steps {
					lifecycle.StepInto(&d, k, &p.steps[i])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(p.steps)), "ns/step")
		})
	}
}

// checked returns cfg checked for StepInto.
func checked(t testing.TB, cfg lifecycle.Config) *lifecycle.Checked {
	t.Helper()
	k, err := cfg.Check()
	if err != nil {
		t.Fatal(err)
	}
	return &k
}

package lifecycle_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// creationHappyPath returns the input of every step a machine takes from
// nothing to a healthy Running node, in order.
func creationHappyPath(t testing.TB) []lifecycle.Input {
	cfg := lifecycle.DefaultConfig()
	var steps []lifecycle.Input
	in := newInput()
	in.Object.Finalizer = false
	results := []driverapi.Result{notFound, ok(providerID, nodeName), {}, {}}
	d := lifecycle.Step(cfg, in)
	steps = append(steps, in)
	for _, r := range results {
		in = then(in, d, r)
		steps = append(steps, in)
		d = lifecycle.Step(cfg, in)
	}
	if d.Status.Phase != phase.Pending {
		t.Fatalf("happy path did not reach Pending: %s", d.String())
	}
	// Pending, the node not there yet; then there and healthy; then Running.
	in.Outcome = nil
	in.Status = d.Status
	in.Now = in.Now.Add(time.Minute)
	steps = append(steps, in)
	in.Node = healthyNode()
	in.Node.Taints = lifecycle.InstanceNotReady
	in.TokenExists = true
	steps = append(steps, in)
	d = lifecycle.Step(cfg, in)
	if d.Status.Phase != phase.Running {
		t.Fatalf("happy path did not reach Running: %s", d.String())
	}
	in = then(in, d, driverapi.Result{})
	in.Node.Taints = 0
	in.TokenExists = false
	steps = append(steps, in)
	return steps
}

// One step on the creation happy path allocates nothing.
func TestCreationHappyPathAllocatesNothing(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	k := checked(t, cfg)
	for i, in := range creationHappyPath(t) {
		var d lifecycle.Decision
		n := testing.AllocsPerRun(200, func() { d = lifecycle.Step(cfg, in) })
		require.Zero(t, n, "step %d (%s) allocates", i, d.Rule)
		n = testing.AllocsPerRun(200, func() { lifecycle.StepInto(&d, k, &in) })
		require.Zero(t, n, "StepInto %d (%s) allocates", i, d.Rule)
	}
}

// A healthy Running machine, the most common decision of all.
func TestHealthyRunningAllocatesNothing(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := runningInput()
	in.Object.Metadata = map[string]string{"team": "a", "pool": "web"}
	in.Status.Metadata = map[string]string{"team": "a", "pool": "web"}
	var d lifecycle.Decision
	require.Zero(t, testing.AllocsPerRun(500, func() { d = lifecycle.Step(cfg, in) }))
	require.Equal(t, lifecycle.RuleHealthy, d.Rule)
}

// A hot update: the UpdateMachine decision and its successful outcome.
func TestHotUpdateAllocatesNothing(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	k := checked(t, cfg)
	in := updatingInput()
	d := lifecycle.Step(cfg, in)
	next := then(in, d, driverapi.Result{})
	for _, input := range []lifecycle.Input{in, next} {
		var out lifecycle.Decision
		require.Zero(t, testing.AllocsPerRun(200, func() { lifecycle.StepInto(&out, k, &input) }), out.Rule.String())
	}
	require.Equal(t, lifecycle.RuleUpdateApplied, lifecycle.Step(cfg, next).Rule)
}

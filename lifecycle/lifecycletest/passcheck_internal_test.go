package lifecycletest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/pass"
	"github.com/purelifecycle/machine/retry"
)

// stopped runs f and reports whether it stopped the pass for a violation.
func stopped(f func()) (stop bool) {
	defer func() {
		if x := recover(); x != nil {
			_, stop = x.(stopRun)
			if !stop {
				panic(x)
			}
		}
	}()
	f()
	return false
}

// A decision that breaks a promise of Check stops the run, and the report
// describes the promise, the input and the decision.
func TestShellCheckReportsADecisionThatBreaksAPromise(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := lifecycle.Input{Now: Epoch.Add(time.Minute), Object: lifecycle.Object{Name: "machine-1", UID: "uid-1",
		CreationTime: Epoch}}
	d := lifecycle.Step(cfg, in)
	require.NoError(t, Check(&cfg, &in, &d))
	r := &shellRun{raw: &cfg, world: NewReferenceWorld(WorldSpec{Config: cfg, Now: in.Now, Object: in.Object})}
	require.False(t, stopped(func() { r.Decided(&in, &d) }))

	d.Requeue = 0 // only a machine that is gone has none
	require.True(t, stopped(func() { r.Decided(&in, &d) }))
	require.Contains(t, r.err, ErrPromise.Error())
	require.Contains(t, r.err, "requeue 0s")
	require.Contains(t, r.errDetail, "decided from:\n  now: 1m0s\n  object: machine-1 uid=uid-1")
	require.Contains(t, r.errDetail, "decision:\n"+d.Rule.String())
	msg := r.describe()
	require.Contains(t, msg, "shell check: "+r.err)
	require.Contains(t, msg, "the world now:\n  machine machine-1")
	require.Contains(t, msg, "the run's last calls:\n    decide "+d.Rule.String())
}

// An effect on a node that runs another machine's instance stops the run,
// before the shell carries it out; one on the machine's own node does not.
func TestShellCheckStopsAnEffectOnAnotherMachinesNode(t *testing.T) {
	w := NewReferenceWorld(WorldSpec{Now: Epoch, Nodes: []lifecycle.Node{
		{Name: "node-1", ProviderID: "test:///vm-1"}, {Name: "node-2", ProviderID: "test:///vm-2"}}})
	r := &shellRun{world: w, ours: map[string]bool{"test:///vm-1": true}}
	require.False(t, stopped(func() { r.checkNodeTarget(&lifecycle.Effect{Kind: lifecycle.KindCordon, Node: "node-1"}) }))
	require.False(t, stopped(func() { r.checkNodeTarget(&lifecycle.Effect{Kind: lifecycle.KindCordon, Node: "node-9"}) }))
	require.True(t, stopped(func() { r.checkNodeTarget(&lifecycle.Effect{Kind: lifecycle.KindDrain, Node: "node-2"}) }))
	require.Equal(t, `effect drain node-2 on node node-2, which runs instance "test:///vm-2", `+
		"not one of this machine's", r.err)
}

// A pass without faults that takes every step it may is a loop; one with a
// fault is not, nor one that crashed.
func TestShellCheckJudgesALoop(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	r := &shellRun{c: &ShellCheck{}, raw: &cfg, want: endsRunning,
		world: NewReferenceWorld(WorldSpec{Config: cfg, Now: Epoch})}
	last := pass.Report{Steps: lifecycle.MaxStepsPerPass, End: pass.EndLastStep, Requeue: retry.Short}
	r.pass, r.faultPass = 1, 1
	require.False(t, r.judgePass(last, false))
	r.pass = 2
	require.False(t, r.judgePass(last, true))
	require.Empty(t, r.err)
	r.pass = 3
	require.True(t, r.judgePass(last, false))
	require.Equal(t, "a pass without faults ended after lifecycle.MaxStepsPerPass steps: the machine loops", r.err)
}

// The trace of a run shows each call as it was made, though the shell's
// and the pass's memory is reused.
func TestShellCheckTracesEachCall(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	checked, err := cfg.Check()
	require.NoError(t, err)
	c := &ShellCheck{NewWorld: func(s WorldSpec) PassWorld { return NewReferenceWorld(s) }}
	r := c.newRun(&cfg, &checked, StartNew, faultPlan{})
	require.Empty(t, r.err)
	var lines []string
	for _, l := range r.trace {
		lines = append(lines, l.String())
	}
	trace := strings.Join(lines, "\n")
	for _, want := range []string{
		"the owner deletes the machine",
		"  decide delete.drained: phase=Terminating stage=delete-vm (changed); call DeleteMachine machine-1 providerID=test:///vm-1 uid=uid-1",
		"  invoke DeleteMachine machine-1 providerID=test:///vm-1 uid=uid-1 => OK",
		"  apply delete-node node-1: ok",
		"  apply remove-finalizer " + lifecycle.Finalizer + ": ok",
		"  observe: the machine is gone",
		"  end gone, requeue 0s",
	} {
		require.Contains(t, trace, want)
	}
}

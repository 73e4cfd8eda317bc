package shell_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/examples/memworld"
	"github.com/purelifecycle/machine/examples/shell"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/pass"
	"github.com/purelifecycle/machine/phase"
)

var t0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

// decisions records every decision of a pass, and the input each was
// decided from.
type decisions struct {
	ins []lifecycle.Input
	ds  []lifecycle.Decision
}

func (r *decisions) Decided(in *lifecycle.Input, d *lifecycle.Decision) {
	c := *in
	if in.Outcome != nil {
		o := *in.Outcome
		c.Outcome = &o
	}
	r.ins, r.ds = append(r.ins, c), append(r.ds, *d)
}

func (r *decisions) last() lifecycle.Decision { return r.ds[len(r.ds)-1] }

// run runs one pass of the machine of w with pass.Run and returns its
// report and decisions.
func run(t *testing.T, w shell.World, p driverapi.Driver, now time.Time) (pass.Report, *decisions) {
	t.Helper()
	cfg := checked(t)
	var s pass.Scratch
	rec := &decisions{}
	r := pass.Run(context.Background(), &cfg, &shell.Shell{World: w, Driver: p}, now, &s, rec)
	return r, rec
}

// One pass takes a new machine through creation and initialization to
// Pending, saving the status before each effect.
func ExampleShell() {
	cfg, err := lifecycle.DefaultConfig().Check()
	if err != nil {
		fmt.Println(err)
		return
	}
	p := memworld.NewProvider()
	c := memworld.NewCluster(p, "machine-a", "uid-a", t0)
	var s pass.Scratch
	rules := &decisions{}
	r := pass.Run(context.Background(), &cfg, &shell.Shell{World: c, Driver: p}, t0, &s, rules)
	for _, d := range rules.ds {
		fmt.Println(d.Rule)
	}
	fmt.Println(c.Machine.Status.Phase, "requeue", r.Requeue)
	// Output:
	// create.lookup
	// create.vm-not-found
	// create.created
	// create.pending
	// health.waiting-for-node
	// Pending requeue 1m0s
}

// flakyWorld fails writes on demand.
type flakyWorld struct {
	*memworld.Cluster
	failSave  lifecycle.Write
	failApply map[lifecycle.Kind]lifecycle.Write
}

func (w *flakyWorld) SaveStatus(st lifecycle.Status) lifecycle.Write {
	if w.failSave != lifecycle.WriteOK {
		return w.failSave
	}
	return w.Cluster.SaveStatus(st)
}

func (w *flakyWorld) Apply(e lifecycle.Effect) (lifecycle.Write, error) {
	if r, ok := w.failApply[e.Kind]; ok {
		return r, errors.New("injected failure")
	}
	return w.Cluster.Apply(e)
}

func TestFailedSaveCarriesOutNothing(t *testing.T) {
	p := memworld.NewProvider()
	c := memworld.NewCluster(p, "machine-a", "uid-a", t0)
	w := &flakyWorld{Cluster: c, failSave: lifecycle.WriteConflict}
	r, rec := run(t, w, p, t0)
	require.Equal(t, pass.EndSaveFailed, r.End)
	require.Equal(t, lifecycle.RulePersistConflict, rec.last().Rule)
	require.Equal(t, 0, p.Created, "CreateMachine is never asked when its intent could not be saved")
	require.Equal(t, 200*time.Millisecond, r.Requeue)
}

func TestFailedWriteStopsTheEffects(t *testing.T) {
	p := memworld.NewProvider()
	c := memworld.NewCluster(p, "machine-a", "uid-a", t0)
	w := &flakyWorld{Cluster: c, failApply: map[lifecycle.Kind]lifecycle.Write{lifecycle.KindEnsureFinalizer: lifecycle.WriteFailed}}
	r, rec := run(t, w, p, t0)
	require.Equal(t, lifecycle.RuleWriteFailed, rec.last().Rule)
	require.Zero(t, p.Calls[driverapi.MethodGetStatus], "the driver call after the failed write did not run")
	require.Equal(t, 5*time.Second, r.Requeue)
	out := rec.ins[len(rec.ins)-1].Outcome
	require.NotNil(t, out)
	require.Equal(t, rec.ds[0].OpID, out.OpID)
	require.Zero(t, out.Ran)
	require.Equal(t, lifecycle.WriteFailed, out.Stopped)
	require.Equal(t, "injected failure", out.Error)
}

// Every outcome is reported: each decision after one with effects is made
// with that decision's OpID, all its effects carried out, and, after
// CreateMachine, the driver's answer and the node it names.
func TestEveryOutcomeIsReported(t *testing.T) {
	p := memworld.NewProvider()
	c := memworld.NewCluster(p, "machine-a", "uid-a", t0)
	r, rec := run(t, c, p, t0)
	require.Equal(t, pass.EndDone, r.End)
	require.Len(t, rec.ds, r.Steps)
	require.Nil(t, rec.ins[0].Outcome, "a pass starts from the persisted status alone")
	created := false
	for i := 1; i < len(rec.ds); i++ {
		prev, out := &rec.ds[i-1], rec.ins[i].Outcome
		require.NotNil(t, out, "step %d", i+1)
		require.Equal(t, prev.OpID, out.OpID, "step %d", i+1)
		require.Equal(t, prev.Effects.Len(), out.Ran, "step %d", i+1)
		require.Equal(t, prev.Status, rec.ins[i].Status, "step %d decides from the status just saved", i+1)
		if prev.Call.Method == driverapi.MethodCreate {
			created = true
			require.True(t, out.Result.OK())
			require.Equal(t, "node-vm-1", out.Result.NodeName)
		}
	}
	require.True(t, created)
}

func TestCrashEndsThePass(t *testing.T) {
	cfg := checked(t)
	p := memworld.NewProvider()
	c := memworld.NewCluster(p, "machine-a", "uid-a", t0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := &decisions{}
	cr := &shell.Crash{Shell: &shell.Shell{World: c, Driver: p}, Observer: rec, Cancel: cancel,
		At: func(step, ran int, _ *lifecycle.Decision) bool { return step == 1 && ran == 2 }}
	var s pass.Scratch
	r := pass.Run(ctx, &cfg, cr, t0, &s, cr)
	require.True(t, cr.Crashed)
	require.ErrorIs(t, r.Err, shell.ErrCrashed)
	require.Len(t, rec.ds, 2, "no decision after the crash")
	require.Equal(t, 1, p.Created)
	require.Equal(t, lifecycle.StageCreating, c.Machine.Status.Stage, "the intent was saved")
	saves := c.Machine.Saves
	// The next pass adopts the instance.
	cr = &shell.Crash{Shell: &shell.Shell{World: c, Driver: p}}
	r = pass.Run(context.Background(), &cfg, cr, t0.Add(time.Second), &s, cr)
	require.False(t, cr.Crashed)
	require.Equal(t, pass.EndDone, r.End)
	require.Equal(t, 1, p.Created)
	require.Equal(t, phase.Pending, c.Machine.Status.Phase)
	require.Greater(t, c.Machine.Saves, saves)
}

// A crash after a save, with the decision's effects still to carry out,
// ends the pass at once: the context is canceled and nothing of the
// decision is carried out.
func TestCrashAfterASaveCarriesOutNothing(t *testing.T) {
	cfg := checked(t)
	p := memworld.NewProvider()
	c := memworld.NewCluster(p, "machine-a", "uid-a", t0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cr := &shell.Crash{Shell: &shell.Shell{World: c, Driver: p}, Cancel: cancel,
		At: func(_, ran int, d *lifecycle.Decision) bool {
			return ran == 0 && d.Call.Method == driverapi.MethodCreate
		}}
	var s pass.Scratch
	r := pass.Run(ctx, &cfg, cr, t0, &s, cr)
	require.True(t, cr.Crashed)
	require.Equal(t, pass.EndCanceled, r.End)
	require.Equal(t, lifecycle.StageCreating, c.Machine.Status.Stage, "the intent was saved")
	require.Zero(t, p.Created, "CreateMachine was not asked")
	require.Empty(t, c.Tokens, "nor the bootstrap token written")
}

// laggingWorld shows each pass a node snapshot taken when the pass began,
// as an informer cache that lags the shell's own writes.
type laggingWorld struct {
	*memworld.Cluster
	snapshot map[string]memworld.Node
	writes   int
}

func (w *laggingWorld) Observe(now time.Time) lifecycle.Input {
	in := w.Cluster.Observe(now)
	if n, ok := w.snapshot[in.Node.Name]; ok {
		in.Node = n.Node
		in.Node.MachineName = n.Labels[lifecycle.MachineNameLabel]
	}
	return in
}

func (w *laggingWorld) Apply(e lifecycle.Effect) (lifecycle.Write, error) {
	if e.Kind == lifecycle.KindRemoveTaint || e.Kind == lifecycle.KindLabelNode {
		w.writes++
	}
	return w.Cluster.Apply(e)
}

// Node writes are carried out once per pass even when the shell's node
// cache does not show them yet.
func TestLaggingNodeCacheWritesOncePerPass(t *testing.T) {
	p := memworld.NewProvider()
	c := memworld.NewCluster(p, "machine-a", "uid-a", t0)
	now := t0
	for i := 0; i < 6 && c.Machine.Status.Phase != phase.Running; i++ {
		c.Tick(now)
		r, _ := run(t, c, p, now)
		now = now.Add(r.Requeue)
	}
	require.Equal(t, phase.Running, c.Machine.Status.Phase)
	// Put the startup taint back and freeze the cache with it.
	for _, n := range c.Nodes {
		n.Taints |= lifecycle.InstanceNotReady
		n.Labels = map[string]string{}
	}
	w := &laggingWorld{Cluster: c, snapshot: map[string]memworld.Node{}}
	for name, n := range c.Nodes {
		w.snapshot[name] = *n
	}
	r, _ := run(t, w, p, now)
	require.Equal(t, 2, w.writes, "one taint removal and one label, not one per step")
	require.Less(t, r.Steps, lifecycle.MaxStepsPerPass)
}

// checked returns the default configuration, checked.
func checked(t *testing.T) lifecycle.Checked {
	t.Helper()
	k, err := lifecycle.DefaultConfig().Check()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

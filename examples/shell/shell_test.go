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
	"github.com/purelifecycle/machine/phase"
)

var t0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

// One pass takes a new machine through creation and initialization to
// Pending, saving the status before each effect.
func ExampleReconcile() {
	cfg, err := lifecycle.DefaultConfig().Check()
	if err != nil {
		fmt.Println(err)
		return
	}
	p := memworld.NewProvider()
	c := memworld.NewCluster(p, "machine-a", "uid-a", t0)
	pass := shell.Reconcile(context.Background(), &cfg, c, p, driverapi.Class{}, t0, shell.Hooks{})
	for _, d := range pass.Decisions {
		fmt.Println(d.Rule)
	}
	fmt.Println(c.Machine.Status.Phase, "requeue", pass.Requeue)
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
	cfg := checked(t)
	p := memworld.NewProvider()
	c := memworld.NewCluster(p, "machine-a", "uid-a", t0)
	w := &flakyWorld{Cluster: c, failSave: lifecycle.WriteConflict}
	pass := shell.Reconcile(context.Background(), &cfg, w, p, driverapi.Class{}, t0, shell.Hooks{})
	last := pass.Decisions[len(pass.Decisions)-1]
	require.Equal(t, lifecycle.RulePersistConflict, last.Rule)
	require.Equal(t, 0, p.Created, "CreateMachine is never asked when its intent could not be saved")
	require.Equal(t, 200*time.Millisecond, pass.Requeue)
}

func TestFailedWriteStopsTheEffects(t *testing.T) {
	cfg := checked(t)
	p := memworld.NewProvider()
	c := memworld.NewCluster(p, "machine-a", "uid-a", t0)
	w := &flakyWorld{Cluster: c, failApply: map[lifecycle.Kind]lifecycle.Write{lifecycle.KindEnsureFinalizer: lifecycle.WriteFailed}}
	pass := shell.Reconcile(context.Background(), &cfg, w, p, driverapi.Class{}, t0, shell.Hooks{})
	require.Equal(t, lifecycle.RuleWriteFailed, pass.Decisions[len(pass.Decisions)-1].Rule)
	require.Zero(t, p.Calls[driverapi.MethodGetStatus], "the driver call after the failed write did not run")
	require.Equal(t, 5*time.Second, pass.Requeue)
}

func TestCrashHookEndsThePass(t *testing.T) {
	cfg := checked(t)
	p := memworld.NewProvider()
	c := memworld.NewCluster(p, "machine-a", "uid-a", t0)
	pass := shell.Reconcile(context.Background(), &cfg, c, p, driverapi.Class{}, t0, shell.Hooks{
		CrashAfter: func(step, ran int) bool { return step == 1 && ran == 2 },
	})
	require.True(t, pass.Crashed)
	require.Equal(t, 1, p.Created)
	require.Equal(t, lifecycle.StageCreating, c.Machine.Status.Stage, "the intent was saved")
	// The next pass adopts the instance.
	pass = shell.Reconcile(context.Background(), &cfg, c, p, driverapi.Class{}, t0.Add(time.Second), shell.Hooks{})
	require.False(t, pass.Crashed)
	require.Equal(t, 1, p.Created)
	require.Equal(t, phase.Pending, c.Machine.Status.Phase)
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
	cfg := checked(t)
	p := memworld.NewProvider()
	c := memworld.NewCluster(p, "machine-a", "uid-a", t0)
	now := t0
	for i := 0; i < 6 && c.Machine.Status.Phase != phase.Running; i++ {
		c.Tick(now)
		pass := shell.Reconcile(context.Background(), &cfg, c, p, driverapi.Class{}, now, shell.Hooks{})
		now = now.Add(pass.Requeue)
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
	pass := shell.Reconcile(context.Background(), &cfg, w, p, driverapi.Class{}, now, shell.Hooks{})
	require.Equal(t, 2, w.writes, "one taint removal and one label, not one per step")
	require.Less(t, len(pass.Decisions), lifecycle.MaxStepsPerPass)
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

package pass_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
	"github.com/purelifecycle/machine/lifecycle/pass"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

var t0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

// memShell is one machine in memory: its object, saved status and node,
// the provider's instances, and a log of what the pass did.
type memShell struct {
	obj      lifecycle.Object
	status   lifecycle.Status
	node     lifecycle.Node
	provider *lifecycletest.Provider
	// saveFails makes every save fail so; observeErr every Observe.
	saveFails  lifecycle.Write
	observeErr error
	// loseFinalizer: the object never shows the finalizer written.
	loseFinalizer         bool
	saves, applied, calls int
	decisions             []lifecycle.Decision
}

func newShell() *memShell {
	return &memShell{
		obj:      lifecycle.Object{Name: "m-1", UID: "u-1", Owner: "ms-1", CreationTime: t0},
		provider: lifecycletest.NewProvider(),
	}
}

func (m *memShell) Observe(_ context.Context, now time.Time, in *lifecycle.Input) error {
	if m.observeErr != nil {
		return m.observeErr
	}
	*in = lifecycle.Input{Now: now, Object: m.obj, Status: m.status, Node: m.node}
	return nil
}

func (m *memShell) Save(_ context.Context, st *lifecycle.Status) lifecycle.Write {
	if m.saveFails != lifecycle.WriteOK {
		return m.saveFails
	}
	m.saves++
	m.status = *st
	return lifecycle.WriteOK
}

func (m *memShell) Apply(_ context.Context, e *lifecycle.Effect) (lifecycle.Write, string) {
	m.applied++
	if e.Kind != lifecycle.KindEnsureFinalizer || !m.loseFinalizer {
		lifecycletest.ApplyToObject(&m.obj, e)
	}
	return lifecycle.WriteOK, ""
}

func (m *memShell) Invoke(_ context.Context, c *driverapi.Call, res *driverapi.Result) {
	m.calls++
	m.provider.InvokeInto(res, c)
}

func (m *memShell) Node(context.Context, string) lifecycle.Node { return lifecycle.Node{} }

func (m *memShell) Decided(_ *lifecycle.Input, d *lifecycle.Decision) {
	m.decisions = append(m.decisions, *d)
}

func checked(t testing.TB) *lifecycle.Checked {
	cfg, err := lifecycle.DefaultConfig().Check()
	require.NoError(t, err)
	return &cfg
}

// A new machine's first pass creates and initializes its instance and ends
// Pending, waiting for its node, with the requeue of its last decision.
func TestRunCreatesAMachine(t *testing.T) {
	sh := newShell()
	var s pass.Scratch
	r := pass.Run(context.Background(), checked(t), sh, t0.Add(time.Minute), &s, sh)
	require.Equal(t, pass.EndDone, r.End)
	require.Equal(t, phase.Pending, sh.status.Phase)
	require.Equal(t, 1, sh.provider.Len(), "one instance created")
	require.Equal(t, len(sh.decisions), r.Steps)
	require.Equal(t, s.Decision.Requeue, r.Requeue)
	require.True(t, sh.obj.Finalizer)
	require.NoError(t, r.Err)
}

// A save that fails ends the pass at once: the lifecycle decides on the
// failed save, and nothing of the unsaved decision is carried out.
func TestRunStopsAtAFailedSave(t *testing.T) {
	sh := newShell()
	sh.saveFails = lifecycle.WriteConflict
	var s pass.Scratch
	r := pass.Run(context.Background(), checked(t), sh, t0.Add(time.Minute), &s, sh)
	require.Equal(t, pass.EndSaveFailed, r.End)
	require.Equal(t, lifecycle.RulePersistConflict, sh.decisions[r.Steps-1].Rule)
	unsaved := sh.decisions[r.Steps-2]
	require.True(t, unsaved.Changed)
	require.Equal(t, driverapi.MethodCreate, unsaved.Call.Method, "the creation intent could not be saved")
	require.Zero(t, sh.provider.Len(), "so CreateMachine was not asked")
	require.Equal(t, retry.Conflict, r.Requeue)
}

// The last allowed step's status is saved, but its effects are not carried
// out, as no step is left to report their outcome; the pass requeues after
// retry.Short.
func TestRunDoesNotCarryOutTheLastStepsEffects(t *testing.T) {
	sh := newShell()
	sh.loseFinalizer = true // every decision asks for the finalizer again
	var s pass.Scratch
	r := pass.Run(context.Background(), checked(t), sh, t0.Add(time.Minute), &s, sh)
	require.Equal(t, pass.EndLastStep, r.End)
	require.Equal(t, lifecycle.MaxStepsPerPass, r.Steps)
	last := sh.decisions[len(sh.decisions)-1]
	require.Positive(t, last.Effects.Len())
	var ran int
	for _, d := range sh.decisions[:len(sh.decisions)-1] {
		ran += d.Effects.Len()
	}
	require.Equal(t, ran, sh.applied+sh.calls, "only the effects of the steps before the last")
	require.Equal(t, retry.Short, r.Requeue)
}

// A machine whose object is gone ends the pass with nothing to requeue.
func TestRunEndsForAMachineThatIsGone(t *testing.T) {
	sh := newShell()
	sh.obj = lifecycle.Object{}
	var s pass.Scratch
	r := pass.Run(context.Background(), checked(t), sh, t0, &s, nil)
	require.Equal(t, pass.EndGone, r.End)
	require.Zero(t, r.Requeue)
	require.Zero(t, sh.saves+sh.applied+sh.calls)
}

// An observation that fails ends the pass before any decision; one that
// fails after effects ran ends it there. Both requeue after retry.Short.
func TestRunEndsWhenTheMachineCannotBeRead(t *testing.T) {
	sh := newShell()
	sh.observeErr = errors.New("apiserver unavailable")
	var s pass.Scratch
	r := pass.Run(context.Background(), checked(t), sh, t0, &s, nil)
	require.Equal(t, pass.EndObserveFailed, r.End)
	require.Zero(t, r.Steps)
	require.ErrorIs(t, r.Err, sh.observeErr)
	require.Equal(t, retry.Short, r.Requeue)
}

// A context canceled mid-pass ends it before the next decision's effects:
// what was saved stays, and the next pass goes on from it.
func TestRunStopsWhenCanceled(t *testing.T) {
	sh := newShell()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var s pass.Scratch
	r := pass.Run(ctx, checked(t), sh, t0.Add(time.Minute), &s, sh)
	require.Equal(t, pass.EndCanceled, r.End)
	require.Equal(t, 1, r.Steps)
	require.Zero(t, sh.applied+sh.calls, "nothing carried out")
	require.ErrorIs(t, r.Err, context.Canceled)
	require.Equal(t, retry.Short, r.Requeue)

	// The next pass goes on from the saved status.
	r = pass.Run(context.Background(), checked(t), sh, t0.Add(2*time.Minute), &s, nil)
	require.Equal(t, pass.EndDone, r.End)
	require.Equal(t, phase.Pending, sh.status.Phase)
}

// A pass over a healthy Running machine allocates nothing of its own.
func TestRunAllocatesNothing(t *testing.T) {
	sh := newShell()
	cfg := checked(t)
	var s pass.Scratch
	now := t0.Add(time.Minute)
	pass.Run(context.Background(), cfg, sh, now, &s, nil)
	// The node joins, healthy; the next passes bring it to Running and
	// then find nothing to do.
	sh.node = lifecycle.Node{Name: sh.status.NodeName, ProviderID: sh.status.ProviderID, MachineName: sh.obj.Name,
		Conditions: []lifecycle.Condition{{Type: lifecycle.ConditionReady, Status: lifecycle.ConditionTrue}}}
	for range 3 {
		now = now.Add(time.Minute)
		pass.Run(context.Background(), cfg, sh, now, &s, nil)
	}
	require.Equal(t, phase.Running, sh.status.Phase)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		if r := pass.Run(ctx, cfg, sh, now, &s, nil); r.End != pass.EndDone || r.Steps != 1 {
			t.Fatalf("a healthy pass: %+v", r)
		}
	})
	require.Zero(t, allocs)
}

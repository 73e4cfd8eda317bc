package lifecycle_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// deletionHappyPath returns the input of every step a healthy Running
// machine takes from its deletion request to the finalizer's removal.
func deletionHappyPath(t testing.TB) []lifecycle.Input {
	cfg := lifecycle.DefaultConfig()
	in := deletingInput()
	in.Node.VolumesAttached = 0
	steps := []lifecycle.Input{in}
	d := lifecycle.Step(cfg, in)
	for d.Rule != lifecycle.RuleDeleteDone {
		if len(steps) > 10 {
			t.Fatalf("deletion did not finish: %s", d.String())
		}
		in = then(in, d, driverapi.Result{})
		if d.Status.Stage == lifecycle.StageRemoveFinalizer && d.Effects.Len() > 0 {
			in.Object.Finalizer = false
		}
		if d.Status.Flags.Has(lifecycle.FlagTerminated) && d.Status.Stage == lifecycle.StageRemoveFinalizer {
			in.Node = lifecycle.Node{} // deleted
		}
		steps = append(steps, in)
		d = lifecycle.Step(cfg, in)
	}
	return steps
}

// Every step of the deletion happy path allocates nothing.
func TestDeletionHappyPathAllocatesNothing(t *testing.T) {
	k := checked(t, lifecycle.DefaultConfig())
	steps := deletionHappyPath(t)
	var rules []string
	for i, in := range steps {
		var d lifecycle.Decision
		n := testing.AllocsPerRun(200, func() { lifecycle.StepInto(&d, k, &in) })
		require.Zero(t, n, "step %d (%s) allocates", i, d.Rule)
		rules = append(rules, d.Rule.String())
	}
	require.Equal(t, []string{"delete.begins", "delete.node-known", "delete.drained", "delete.vm-deleted",
		"delete.node-deleted", "delete.done"}, rules)
}

// A Running machine is deleted while a pod disruption budget keeps its drain
// failing: the drain backs off (MCM issue 703,
// https://github.com/gardener/machine-controller-manager/issues/703) until the
// drain timeout, counted from the deletion time, forces it; then the volume
// attachments, the VM, the node and the finalizer go, in that order.
func TestScenarioDeletionWithFailingDrainForcedAfterTimeout(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := deletingInput()
	in.Object.Overrides.DrainTimeout = 10 * time.Minute
	in.VolumeAttachments = 1
	var trace []string
	var drainFailures int
	for pass := 0; pass < 60; pass++ {
		in.Outcome = nil
		var d lifecycle.Decision
		for steps := 0; steps < lifecycle.MaxStepsPerPass; steps++ {
			d = step(t, cfg, in)
			trace = append(trace, d.Rule.String())
			if d.Done() || d.Rule == lifecycle.RuleDeleteDone {
				break
			}
			// Carry the effects out: the drain fails unless forced.
			ran, stopped, msg := d.Effects.Len(), lifecycle.WriteOK, ""
			for i, e := range d.Effects.Slice() {
				switch e.Kind {
				case lifecycle.KindDrain:
					if !e.Force {
						ran, stopped, msg = i, lifecycle.WriteFailed, pdbError
						drainFailures++
					}
				case lifecycle.KindDeleteVolumeAttachments:
					in.VolumeAttachments = 0
				case lifecycle.KindDeleteNode:
					in.Node = lifecycle.Node{}
				case lifecycle.KindRemoveFinalizer:
					in.Object.Finalizer = false
				}
				if stopped != lifecycle.WriteOK {
					break
				}
			}
			in.Status = d.Status
			in.Outcome = &lifecycle.Outcome{OpID: d.OpID, Ran: ran, Stopped: stopped, Error: msg}
			if d.HasCall() && ran == d.Effects.Len() {
				in.Outcome.Result = driverapi.Result{Method: d.Call.Method}
			}
		}
		if d.Rule == lifecycle.RuleDeleteDone {
			break
		}
		in.Status = d.Status
		in.Now = in.Now.Add(d.Requeue)
	}
	require.Equal(t, lifecycle.RuleDeleteDone.String(), trace[len(trace)-1], "%v", trace)
	require.GreaterOrEqual(t, drainFailures, 4, "the drain failed several times before it was forced")
	require.Contains(t, trace, "delete.backoff")
	require.Contains(t, trace, "delete.force-drained")
	require.Contains(t, trace, "delete.volume-attachments-wait")
	require.True(t, in.Now.Sub(in.Object.DeletionTime) > 10*time.Minute, "forced only after the drain timeout")
	require.True(t, in.Status.Flags.Has(lifecycle.FlagDrainForced|lifecycle.FlagTerminated))
	require.Equal(t, phase.Terminating, in.Status.Phase)
}

// Two machines of one owner turn Unknown together (an outage of their
// zone). Past the health timeout the limiter grants one replacement at a
// time: the first is confirmed with the provider and marked Failed; the
// second waits while the first is in flight, and is granted once the first
// is gone.
func TestScenarioUnknownToFailedUnderTheLimiter(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	a, b := unknownInput(), unknownInput()
	b.Object.Name, b.Object.UID = "machine-2", "uid-2"
	b.Status.PhaseSince = a.Status.PhaseSince + 1 // a is the older
	fleet := func(ins ...*lifecycle.Input) []lifecycle.Member {
		var ms []lifecycle.Member
		for _, in := range ins {
			ms = append(ms, lifecycle.MemberOf(&cfg, in))
		}
		return ms
	}

	grants := lifecycle.Limit(nil, &cfg, a.Now, a.Observer, fleet(&a, &b))
	require.Equal(t, []lifecycle.Grant{{Fail: true}, {}}, grants)
	a.Grant, b.Grant = grants[0], grants[1]

	// b waits; a asks the provider and is marked Failed.
	db := step(t, cfg, b)
	require.Equal(t, lifecycle.RuleHealthAwaitGrant, db.Rule)
	da := step(t, cfg, a)
	require.Equal(t, lifecycle.RuleHealthConfirm, da.Rule)
	a = then(a, da, ok(providerID, nodeName))
	da = step(t, cfg, a)
	require.Equal(t, phase.Failed, da.Status.Phase)
	a.Status, a.Outcome = da.Status, nil

	// Next fleet pass: a is Failed (in flight), b still waits.
	b.Now = b.Now.Add(retry.Short)
	grants = lifecycle.Limit(nil, &cfg, b.Now, b.Observer, fleet(&a, &b))
	require.Equal(t, []lifecycle.Grant{{}, {}}, grants)
	b.Grant = grants[1]
	require.Equal(t, lifecycle.RuleHealthAwaitGrant, step(t, cfg, b).Rule)

	// The owner replaces a: a is deleted and its replacement is Pending,
	// in flight, so b still waits: an outage is worked off one replacement
	// at a time, each to Running.
	repl := lifecycle.Member{Name: "machine-3", UID: "uid-3", Owner: a.Object.Owner, Phase: phase.Pending,
		PhaseSince: lifecycle.StampOf(b.Now)}
	grants = lifecycle.Limit(nil, &cfg, b.Now, b.Observer, append(fleet(&b), repl))
	require.False(t, grants[0].Fail)
	// The replacement joined: b is granted.
	repl.Phase = phase.Running
	grants = lifecycle.Limit(nil, &cfg, b.Now, b.Observer, append(fleet(&b), repl))
	require.True(t, grants[0].Fail)
	b.Grant = grants[0]
	db = step(t, cfg, b)
	require.Equal(t, lifecycle.RuleHealthConfirm, db.Rule)
	db = step(t, cfg, then(b, db, fail(driverapi.NotFound, "gone")))
	require.Equal(t, phase.Failed, db.Status.Phase)
	require.Equal(t, "NotFound", db.Status.LastOp.ErrorCode)
}

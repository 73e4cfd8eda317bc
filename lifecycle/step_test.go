package lifecycle_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// Tests of the dispatch and the input checks of step.go: MCM's dispatch
// rows (D1-D10 in doc/mcm-rows.md), the checks of an outcome against the op
// it answers, and stamps later than Now. Bad input: step_badinput_test.go.

// TestDispatchRows has one case per row of MCM's dispatch (D1-D10 in
// doc/mcm-rows.md). Where a row deviates from MCM the case name says so and
// doc/mcm-compat.md lists the deviation.
func TestDispatchRows(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	running := withIdentity(newInput(), phase.Running)
	running.Node = healthyNode()
	running.Status.Conditions = running.Node.Conditions
	running.Status.LastOp = lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateSuccessful,
		Desc: lastop.DescJoined, Elapsed: 3 * time.Minute}
	running.Status.OwnerUID = machineUID
	running.Status.MetadataObserved = lifecycle.StampOf(running.Now)
	joined := op{lastop.TypeCreate, lastop.StateSuccessful, "", "Machine machine-1 successfully joined the cluster in 3m0s"}

	cases := []struct {
		name string
		in   func() lifecycle.Input
		want want
	}{
		{
			name: "D1 machine not found: nothing, no requeue",
			in:   func() lifecycle.Input { in := newInput(); in.Object = lifecycle.Object{}; return in },
			want: want{rule: lifecycle.RuleNoMachine, period: 0},
		},
		{
			name: "D2 finalizer missing: added first, and the pass goes on (deviation: no rate-limited requeue)",
			in:   func() lifecycle.Input { in := newInput(); in.Object.Finalizer = false; return in },
			want: want{rule: lifecycle.RuleCreateLookup, period: retry.Short,
				effects: []string{"ensure-finalizer " + lifecycle.Finalizer, lookupCall}},
		},
		{
			name: "D3 deletion requested: the machine becomes Terminating",
			in: func() lifecycle.Input {
				in := running
				in.Object.DeletionTime = t0.Add(30 * time.Minute)
				return in
			},
			want: want{rule: lifecycle.RuleDeleteBegins, phase: phase.Terminating, period: retry.Short, changed: true,
				op:      op{lastop.TypeDelete, lastop.StateProcessing, "", "Set machine status to termination. Now, getting VM Status"},
				effects: []string{"event Normal MachineTerminating (delete.begins)"}},
		},
		{
			name: "D3 deletion while a creation is in flight proceeds; the instance is found by the creation key (deviation, doc/mcm-compat.md)",
			in: func() lifecycle.Input {
				in := newInput()
				in.Status.Stage = lifecycle.StageCreating
				in.Object.DeletionTime = t0.Add(2 * time.Minute)
				return in
			},
			want: want{rule: lifecycle.RuleDeleteBegins, phase: phase.Terminating, period: retry.Short, changed: true,
				op:      op{lastop.TypeDelete, lastop.StateProcessing, "", "Set machine status to termination. Now, getting VM Status"},
				effects: []string{"event Normal MachineTerminating (delete.begins)"}},
		},
		{
			name: "D4 observer degraded, not deleting: wait Long, nothing written",
			in: func() lifecycle.Input {
				in := running
				in.Observer = lifecycle.Observer{Degraded: true, Since: t0}
				return in
			},
			want: want{rule: lifecycle.RuleFrozen, phase: phase.Running, op: joined, period: retry.Long},
		},
		{
			name: "D4 observer degraded does not hold deletion",
			in: func() lifecycle.Input {
				in := running
				in.Observer = lifecycle.Observer{Degraded: true, Since: t0}
				in.Object.DeletionTime = t0.Add(30 * time.Minute)
				return in
			},
			want: want{rule: lifecycle.RuleDeleteBegins, phase: phase.Terminating, period: retry.Short, changed: true,
				op:      op{lastop.TypeDelete, lastop.StateProcessing, "", "Set machine status to termination. Now, getting VM Status"},
				effects: []string{"event Normal MachineTerminating (delete.begins)"}},
		},
		{
			name: "D5 machine fails validation: Long",
			in:   func() lifecycle.Input { in := newInput(); in.Problem = lifecycle.ProblemInvalidMachine; return in },
			want: want{rule: lifecycle.RuleInvalidMachine, period: retry.Long},
		},
		{
			name: "D6 class or secret missing: Long",
			in:   func() lifecycle.Input { in := newInput(); in.Problem = lifecycle.ProblemClassUnavailable; return in },
			want: want{rule: lifecycle.RuleClassUnavailable, period: retry.Long},
		},
		{
			name: "D6 class without its finalizer: Short",
			in:   func() lifecycle.Input { in := newInput(); in.Problem = lifecycle.ProblemClassNotReady; return in },
			want: want{rule: lifecycle.RuleClassNotReady, period: retry.Short},
		},
		{
			name: "D6 invalid node template: Short",
			in:   func() lifecycle.Input { in := newInput(); in.Problem = lifecycle.ProblemInvalidNodeTemplate; return in },
			want: want{rule: lifecycle.RuleInvalidNodeTemplate, period: retry.Short},
		},
		{
			name: "D7 node label and phase set: health runs (a healthy Running machine idles Long)",
			in:   func() lifecycle.Input { return running },
			want: want{rule: lifecycle.RuleHealthy, phase: phase.Running, op: joined, period: retry.Long},
		},
		{
			name: "D7 Pending without the node label still runs health and joins (deviation, doc/mcm-compat.md)",
			in: func() lifecycle.Input {
				in := withIdentity(newInput(), phase.Pending)
				in.Object.NodeLabel = "" // lost; the node is found by its machine-name label
				in.Status.LastOp = lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateProcessing, Desc: lastop.DescCreating}
				in.Node = healthyNode()
				in.Now = t0.Add(4 * time.Minute)
				return in
			},
			want: want{rule: lifecycle.RuleHealthJoined, phase: phase.Running, period: retry.Long, changed: true,
				op:      op{lastop.TypeCreate, lastop.StateSuccessful, "", "Machine machine-1 successfully joined the cluster in 4m0s"},
				effects: []string{"ensure-node-label " + nodeName, "event Normal MachineRunning (health.joined)"}},
		},
		{
			name: "D8 preservation is not modelled: nothing stops creation (deviation, doc/mcm-compat.md)",
			in:   func() lifecycle.Input { return newInput() },
			want: want{rule: lifecycle.RuleCreateLookup, period: retry.Short, effects: []string{lookupCall}},
		},
		{
			name: "D9 no phase: creation flow",
			in:   func() lifecycle.Input { return newInput() },
			want: want{rule: lifecycle.RuleCreateLookup, period: retry.Short, effects: []string{lookupCall}},
		},
		{
			name: "D9 CrashLoopBackOff: creation flow",
			in: func() lifecycle.Input {
				in := newInput()
				in.Status.Phase = phase.CrashLoopBackOff
				in.Status.PhaseSince = lifecycle.StampOf(t0)
				in.Status.Stage = lifecycle.StageCreating
				return in
			},
			want: want{rule: lifecycle.RuleCreateLookup, phase: phase.CrashLoopBackOff, period: retry.Short, effects: []string{lookupCall}},
		},
		{
			name: "D9 no providerID recorded past creation, none on the node: the provider is asked",
			in: func() lifecycle.Input {
				in := running
				in.Status.ProviderID = ""
				in.Object.ProviderID = ""
				in.Node.ProviderID = ""
				return in
			},
			want: want{rule: lifecycle.RuleCreateLookup, phase: phase.Running, op: joined, period: retry.Short,
				effects: []string{"call GetMachineStatus machine-1 uid=uid-1 key=uid-1/0"}},
		},
		{
			name: "D9 no providerID recorded past creation: adopted from spec.providerID, health goes on (deviation: no lookup needed)",
			in: func() lifecycle.Input {
				in := running
				in.Status.ProviderID = ""
				return in
			},
			want: want{rule: lifecycle.RuleCreateRecorded, phase: phase.Running, op: joined, period: retry.Long, changed: true},
		},
		{
			name: "D10 otherwise: Long (an Available machine)",
			in: func() lifecycle.Input {
				in := withIdentity(newInput(), phase.Available)
				return in
			},
			want: want{rule: lifecycle.RuleIdle, phase: phase.Available, period: retry.Long},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := step(t, cfg, tc.in())
			assertDecision(t, tc.want, d)
		})
	}
}

func TestD1RequeuesNothing(t *testing.T) {
	in := newInput()
	in.Object = lifecycle.Object{}
	d := step(t, lifecycle.DefaultConfig(), in)
	require.Zero(t, d.Requeue)
	require.True(t, d.Done())
}

func TestResyncCarriesDeterministicJitter(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := withIdentity(newInput(), phase.Available)
	d := step(t, cfg, in)
	require.Equal(t, retry.Long, d.Period)
	require.Equal(t, cfg.Retry.Spread(retry.Long, machineUID), d.Requeue)
	require.GreaterOrEqual(t, d.Requeue, retry.Long)
	require.Less(t, d.Requeue, retry.Long+retry.Long/10)
	other := in
	other.Object.UID = "uid-2"
	require.NotEqual(t, d.Requeue, step(t, cfg, other).Requeue, "machines spread out")
}

func TestStaleOrDuplicateOutcomeIsIgnored(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := newInput()
	ds := run(t, cfg, in, notFound)
	in = then(in, ds[1], ok(providerID, nodeName))
	init := step(t, cfg, in) // recorded, initializing
	// The create result is delivered a second time.
	dup := in
	dup.Status = init.Status
	d := step(t, cfg, dup)
	require.True(t, d.Anomalies.Has(lifecycle.AnomalyStaleOutcome))
	require.NotEqual(t, driverapi.MethodCreate, d.Call.Method)
	require.Equal(t, lifecycle.RuleCreateLookup, d.Rule, "decided afresh")
}

func TestPersistFailureCarriesNothingOut(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := newInput()
	ds := run(t, cfg, in, notFound)
	// Saving the create intent failed: the input keeps the old status.
	in.Outcome = &lifecycle.Outcome{OpID: ds[1].OpID, Persist: lifecycle.WriteConflict}
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RulePersistConflict, d.Rule)
	require.Equal(t, retry.Conflict, d.Requeue)
	require.True(t, d.Done())
	require.False(t, d.Changed)
	in.Outcome.Persist = lifecycle.WriteFailed
	require.Equal(t, lifecycle.RulePersistFailed, step(t, cfg, in).Rule)
}

func TestOutcomeThatContradictsItsOpIsIgnored(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := newInput()
	d := step(t, cfg, in)
	in.Outcome = &lifecycle.Outcome{OpID: d.OpID, Ran: 5}
	got := step(t, cfg, in)
	require.True(t, got.Anomalies.Has(lifecycle.AnomalyBadOutcome))
	require.Equal(t, lifecycle.RuleCreateLookup, got.Rule)
	// A result of another method than the rule asked.
	in.Outcome = &lifecycle.Outcome{OpID: d.OpID, Ran: 1, Result: driverapi.Result{Method: driverapi.MethodCreate}}
	got = step(t, cfg, in)
	require.True(t, got.Anomalies.Has(lifecycle.AnomalyBadOutcome))
}

// A step whose clock was hours ahead stamps the status in the future; the
// next step, with the clock right, finds those stamps later than Now. They
// are set to Now and saved (AnomalyStampClamped), so every deadline counts
// from Now at the latest instead of waiting for real time to catch up
// with the jumped clock.
func TestStampsAfterNowAreClamped(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	ahead := func(in lifecycle.Input) lifecycle.Stamp { return lifecycle.StampOf(in.Now.Add(6 * time.Hour)) }

	t.Run("an Unknown machine whose phase began in the future", func(t *testing.T) {
		in := unknownInput()
		in.Status.PhaseSince = ahead(in)
		d := step(t, cfg, in)
		require.True(t, d.Anomalies.Has(lifecycle.AnomalyStampClamped), d.String())
		require.Equal(t, lifecycle.StampOf(in.Now), d.Status.PhaseSince)
		require.True(t, d.Changed, "the clamped stamp is saved")
		require.Equal(t, lifecycle.RuleHealthWaitUnknown, d.Rule)
		require.Equal(t, lifecycle.StampOf(in.Now.Add(cfg.HealthTimeout)), d.Wait.Until, "the deadline counts from now")

		// Just past ten minutes later by the right clock, the timeout has
		// passed.
		in.Status, in.Now, in.Grant.Fail = d.Status, in.Now.Add(cfg.HealthTimeout+time.Second), true
		d = step(t, cfg, in)
		require.Equal(t, lifecycle.RuleHealthConfirm, d.OpID.Rule(), d.String())
	})
	t.Run("every stamp of the status", func(t *testing.T) {
		in := withIdentity(newInput(), phase.Running)
		in.Node = healthyNode()
		in.Status.Conditions = in.Node.Conditions
		in.Status.PhaseSince = ahead(in)
		in.Status.StageSince = ahead(in)
		in.Status.MetadataObserved = ahead(in)
		in.Status.MetadataSince = ahead(in)
		in.Status.RetryAfter = ahead(in)
		d := step(t, cfg, in)
		require.True(t, d.Anomalies.Has(lifecycle.AnomalyStampClamped), d.String())
		now := lifecycle.StampOf(in.Now)
		for name, s := range map[string]lifecycle.Stamp{"PhaseSince": d.Status.PhaseSince, "StageSince": d.Status.StageSince,
			"MetadataObserved": d.Status.MetadataObserved, "MetadataSince": d.Status.MetadataSince,
			"RetryAfter (further ahead than any backoff)": d.Status.RetryAfter} {
			require.LessOrEqual(t, s, now, name)
		}
	})
	t.Run("stamps at or before now are left alone", func(t *testing.T) {
		in := unknownInput()
		d := step(t, cfg, in)
		require.False(t, d.Anomalies.Has(lifecycle.AnomalyStampClamped))
		require.Equal(t, in.Status.PhaseSince, d.Status.PhaseSince)
	})
}

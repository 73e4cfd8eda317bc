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

// Tests of the health flow (health.go) past the health timeout: MCM's
// throttled marking as Failed (T1-T4 in doc/mcm-rows.md), the limiter's
// grant, and the observer's outages. The health rows: health_test.go.

// TestThrottleRows has one case per row of MCM's throttled marking as Failed
// (T1-T4 in doc/mcm-rows.md): the limiter is a pure function whose grant Step
// takes as input.
func TestThrottleRows(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	grantFor := func(in lifecycle.Input, peers ...lifecycle.Member) lifecycle.Input {
		fleet := append([]lifecycle.Member{lifecycle.MemberOf(&cfg, &in)}, peers...)
		in.Grant = lifecycle.Limit(nil, &cfg, in.Now, in.Observer, fleet)[0]
		return in
	}
	peer := func(name string, p phase.Phase, since time.Time) lifecycle.Member {
		in := lifecycle.Input{Object: lifecycle.Object{Name: name, UID: name, Owner: "machineset-1"},
			Status: lifecycle.Status{Phase: p, PhaseSince: lifecycle.StampOf(since)}}
		return lifecycle.MemberOf(&cfg, &in)
	}
	awaiting := want{rule: lifecycle.RuleHealthAwaitGrant, phase: phase.Unknown, op: unknownOp, period: retry.Short}
	runRows(t, []rowCase{
		{
			// MCM's permit (T1) and listing (T2) become the shell's one
			// computation of Limit: when it could not be made, the machine
			// gets no grant, which is this input.
			name: "T1, T2 no grant could be computed (permit not acquired, fleet not listed): wait Short, no write",
			in:   unknownInput,
			want: awaiting,
		},
		{
			name: "T3 another replacement of the owner is in flight: wait Short, no write",
			in:   func() lifecycle.Input { return grantFor(unknownInput(), peer("m-2", phase.Pending, t0)) },
			want: awaiting,
		},
		{
			name: "T4 nothing in flight: granted, confirmed, Failed",
			in: func() lifecycle.Input {
				recent := peer("m-3", phase.Unknown, t0.Add(58*time.Minute)) // not timed out yet
				return grantFor(unknownInput(), peer("m-2", phase.Running, t0), recent)
			},
			results: []driverapi.Result{ok(providerID, nodeName)},
			want: want{rule: lifecycle.RuleHealthTimeout, phase: phase.Failed, period: retry.Long, changed: true,
				op: op{lastop.TypeHealthCheck, lastop.StateFailed, "",
					"Machine machine-1 health checks failing since last 10m0s; provider reports: instance exists. Updating machine phase to Failed. Node Conditions: " + notReadyText},
				effects: []string{"event Warning MachineFailed (health.timeout)"}},
		},
	})
}

// MCM issues 680 and 679
// (https://github.com/gardener/machine-controller-manager/issues/680,
// https://github.com/gardener/machine-controller-manager/issues/679): while
// the observer is degraded nothing is marked Failed; afterwards the health
// timeout counts from its recovery, and Unknown is never rewritten to Running
// without a healthy node.
func TestDeviationHealthTimeoutAfterAnOutage(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := unknownInput()
	in.Grant.Fail = true
	in.Now = t0.Add(3 * time.Hour)
	in.Observer = lifecycle.Observer{Degraded: true, Since: t0.Add(55 * time.Minute)}
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleFrozen, d.Rule)
	require.Equal(t, phase.Unknown, d.Status.Phase)

	in.Observer = lifecycle.Observer{Since: t0.Add(3 * time.Hour)}
	d = step(t, cfg, in)
	require.Equal(t, lifecycle.RuleHealthWaitUnknown, d.Rule, "the outage's end fails nothing at once")
	require.Equal(t, phase.Unknown, d.Status.Phase, "and rewrites nothing to Running")
	require.Equal(t, lifecycle.StampOf(t0.Add(3*time.Hour+10*time.Minute)), d.Wait.Until)

	in.Now = t0.Add(3*time.Hour + 10*time.Minute + time.Second)
	require.Equal(t, lifecycle.RuleHealthConfirm, step(t, cfg, in).Rule)
	// The limiter grants nothing while degraded, and counts from recovery.
	fleet := []lifecycle.Member{lifecycle.MemberOf(&cfg, &in)}
	require.False(t, lifecycle.Limit(nil, &cfg, in.Now, lifecycle.Observer{Degraded: true}, fleet)[0].Fail)
	require.False(t, lifecycle.Limit(nil, &cfg, t0.Add(3*time.Hour+5*time.Minute), in.Observer, fleet)[0].Fail)
	require.True(t, lifecycle.Limit(nil, &cfg, in.Now, in.Observer, fleet)[0].Fail)
}

// A machine that recovers while the provider is asked is not failed.
func TestRecoveryDuringConfirmation(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := unknownInput()
	in.Grant.Fail = true
	d := step(t, cfg, in)
	in = then(in, d, ok(providerID, nodeName))
	in.Node = healthyNode()
	d = step(t, cfg, in)
	require.Equal(t, phase.Running, d.Status.Phase)
	require.False(t, d.Status.Flags.Has(lifecycle.FlagGranted))
}

// A Running machine whose node is healthy holds no grant, so a grant kept
// from before is dropped on recovery; the limiter then counts it no more.
func TestGrantReleasedOnRecovery(t *testing.T) {
	in := unknownInput()
	in.Status.Flags |= lifecycle.FlagGranted
	in.Node = healthyNode()
	d := step(t, lifecycle.DefaultConfig(), in)
	require.Equal(t, phase.Running, d.Status.Phase)
	require.False(t, d.Status.Flags.Has(lifecycle.FlagGranted))
}

// While the observer is degraded nothing is marked Failed, also when it turns
// degraded between a call and its outcome.
func TestNothingFailedWhenTheObserverDegradesMidStep(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := unknownInput()
	in.Grant.Fail = true
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleHealthConfirm, d.Rule)
	next := then(in, d, ok(providerID, nodeName))
	next.Observer = lifecycle.Observer{Degraded: true, Since: next.Now}
	got := step(t, cfg, next)
	require.Equal(t, lifecycle.RuleFrozen, got.Rule)
	require.Equal(t, phase.Unknown, got.Status.Phase)
	require.True(t, got.Status.Flags.Has(lifecycle.FlagGranted), "the grant stays for after the outage")

	creating := newInput()
	creating.Status.Stage = lifecycle.StageCreating
	creating.Now = t0.Add(21 * time.Minute)
	d = step(t, cfg, creating)
	require.Equal(t, lifecycle.RuleCreateTimeoutLookup, d.Rule)
	next = then(creating, d, notFound)
	next.Observer = lifecycle.Observer{Degraded: true, Since: next.Now}
	got = step(t, cfg, next)
	require.Equal(t, lifecycle.RuleFrozen, got.Rule)
	require.Equal(t, phase.None, got.Status.Phase)
}

// A grant is released when it can no longer be used (the timeout raised or
// disabled), so the owner's other machines may be replaced.
func TestGrantReleasedWhenTheTimeoutMoves(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := unknownInput()
	in.Status.Flags |= lifecycle.FlagGranted
	in.Object.Overrides.HealthTimeout = time.Hour
	require.False(t, step(t, cfg, in).Status.Flags.Has(lifecycle.FlagGranted))
	in.Object.Overrides = lifecycle.Overrides{DisableHealthTimeout: true}
	require.False(t, step(t, cfg, in).Status.Flags.Has(lifecycle.FlagGranted))
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
	repl := lifecycle.Input{Object: lifecycle.Object{Name: "machine-3", UID: "uid-3", Owner: a.Object.Owner},
		Status: lifecycle.Status{Phase: phase.Pending, PhaseSince: lifecycle.StampOf(b.Now)}}
	grants = lifecycle.Limit(nil, &cfg, b.Now, b.Observer, fleet(&b, &repl))
	require.False(t, grants[0].Fail)
	// The replacement joined: b is granted.
	repl.Status.Phase = phase.Running
	grants = lifecycle.Limit(nil, &cfg, b.Now, b.Observer, fleet(&b, &repl))
	require.True(t, grants[0].Fail)
	b.Grant = grants[0]
	db = step(t, cfg, b)
	require.Equal(t, lifecycle.RuleHealthConfirm, db.Rule)
	db = step(t, cfg, then(b, db, fail(driverapi.NotFound, "gone")))
	require.Equal(t, phase.Failed, db.Status.Phase)
	require.Equal(t, "NotFound", db.Status.LastOp.ErrorCode)
}

// A Pending machine adopted without its instance in the status (the
// identity recorded from spec.providerID in the same decision) that is
// past its creation timeout fails with the join timeout's event, not with
// the adoption's rule, which has no event reason.
func TestAdoptedPendingMachinePastItsTimeoutFailsWithTheJoinTimeoutEvent(t *testing.T) {
	in := withIdentity(newInput(), phase.Pending)
	in.Status.ProviderID, in.Status.NodeName = "", ""
	in.Status.LastOp = lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateProcessing, Desc: lastop.DescCreating}
	in.Now = t0.Add(20*time.Minute + time.Second)
	d := step(t, lifecycle.DefaultConfig(), in)
	require.Equal(t, phase.Failed, d.Status.Phase)
	require.Equal(t, lifecycle.RuleCreateRecorded, d.Rule, "the adoption is the row")
	require.Contains(t, d.Lines(), "event Warning MachineFailed (health.join-timeout)")
}

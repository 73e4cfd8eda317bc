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

// runningInput is a machine Running for a while, its node healthy and its
// conditions mirrored.
func runningInput() lifecycle.Input {
	in := withIdentity(newInput(), phase.Running)
	in.Now = t0.Add(time.Hour)
	in.Node = healthyNode()
	in.Status.Conditions = in.Node.Conditions
	in.Status.PhaseSince = lifecycle.StampOf(t0.Add(3 * time.Minute))
	in.Status.LastOp = lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateSuccessful,
		Desc: lastop.DescJoined, Elapsed: 3 * time.Minute}
	in.Status.OwnerUID = machineUID
	in.Status.MetadataObserved = lifecycle.StampOf(in.Now.Add(-time.Minute))
	return in
}

// unknownInput is a machine Unknown since t0+50m, its node NotReady, a
// minute past its health timeout.
func unknownInput() lifecycle.Input {
	in := runningInput()
	in.Status.Phase = phase.Unknown
	in.Status.PhaseSince = lifecycle.StampOf(t0.Add(50 * time.Minute))
	in.Now = t0.Add(61 * time.Minute)
	in.Status.LastOp = lastop.Operation{Type: lastop.TypeHealthCheck, State: lastop.StateProcessing, Desc: lastop.DescUnhealthy}
	in.Node = notReadyNode()
	in.Status.Conditions = in.Node.Conditions
	return in
}

func notReadyNode() lifecycle.Node {
	n := healthyNode()
	n.Conditions = []lifecycle.Condition{
		{Type: "Ready", Status: lifecycle.ConditionFalse, Since: lifecycle.StampOf(t0.Add(50 * time.Minute)), Reason: "KubeletNotReady"},
		{Type: "DiskPressure", Status: lifecycle.ConditionFalse},
	}
	return n
}

var (
	joinedOp  = op{lastop.TypeCreate, lastop.StateSuccessful, "", "Machine machine-1 successfully joined the cluster in 3m0s"}
	unknownOp = op{lastop.TypeHealthCheck, lastop.StateProcessing, "",
		"Machine machine-1 is unhealthy - changing MachinePhase to Unknown. Node conditions: " + notReadyText}
	healthyText = "[{Type:Ready Status:True LastHeartbeatTime:0001-01-01 00:00:00 +0000 UTC LastTransitionTime:2026-11-01 10:02:00 +0000 UTC Reason: Message:} " +
		"{Type:DiskPressure Status:False LastHeartbeatTime:0001-01-01 00:00:00 +0000 UTC LastTransitionTime:0001-01-01 00:00:00 +0000 UTC Reason: Message:}]"
	notReadyText = "[{Type:Ready Status:False LastHeartbeatTime:0001-01-01 00:00:00 +0000 UTC LastTransitionTime:2026-11-01 10:50:00 +0000 UTC Reason:KubeletNotReady Message:} " +
		"{Type:DiskPressure Status:False LastHeartbeatTime:0001-01-01 00:00:00 +0000 UTC LastTransitionTime:0001-01-01 00:00:00 +0000 UTC Reason: Message:}]"
)

// TestHealthRows has one case per row of MCM's health flow in scope (H0-H4,
// H7, H9-H13 in doc/mcm-rows.md). Where a row deviates from MCM the case name
// says so and doc/mcm-compat.md lists the deviation.
func TestHealthRows(t *testing.T) {
	runRows(t, []rowCase{
		{
			name: "H0 node unreadable: Short, nothing concluded",
			in: func() lifecycle.Input {
				in := runningInput()
				in.Node = lifecycle.Node{}
				in.NodeReadFailed = true
				return in
			},
			want: want{rule: lifecycle.RuleHealthNodeUnreadable, phase: phase.Running, op: joinedOp, period: retry.Short},
		},
		{
			name: "H1 Running and the node went missing: Unknown (deviation: evaluation goes on, no Short sentinel)",
			in:   func() lifecycle.Input { in := runningInput(); in.Node = lifecycle.Node{}; return in },
			want: want{rule: lifecycle.RuleHealthNodeMissing, phase: phase.Unknown, period: time.Minute, changed: true,
				op: op{lastop.TypeHealthCheck, lastop.StateProcessing, "",
					"Node object went missing. Machine machine-1 is unhealthy - changing MachinePhase to Unknown"},
				effects: []string{"event Warning MachineUnhealthy (health.node-missing)"}},
		},
		{
			name: "H1b Pending and no node: no change from this row (waits for the join)",
			in: func() lifecycle.Input {
				in := withIdentity(newInput(), phase.Pending)
				in.Status.LastOp = lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateProcessing, Desc: lastop.DescCreating}
				return in
			},
			want: want{rule: lifecycle.RuleHealthWaitJoin, phase: phase.Pending, op: pendingOp, period: time.Minute},
		},
		{
			// MCM leaves such a machine Running forever (H1 asks for a
			// mirrored condition); no node is no evidence of health.
			name: "H1b Running without conditions and no node: Unknown (deviation)",
			in: func() lifecycle.Input {
				in := runningInput()
				in.Node, in.Status.Conditions = lifecycle.Node{}, nil
				return in
			},
			want: want{rule: lifecycle.RuleHealthNodeMissing, phase: phase.Unknown, period: time.Minute, changed: true,
				op: op{lastop.TypeHealthCheck, lastop.StateProcessing, "",
					"Node object went missing. Machine machine-1 is unhealthy - changing MachinePhase to Unknown"},
				effects: []string{"event Warning MachineUnhealthy (health.node-missing)"}},
		},
		{
			name: "H2 node conditions changed: mirrored",
			in: func() lifecycle.Input {
				in := runningInput()
				in.Node.Conditions = append(append([]lifecycle.Condition{}, in.Node.Conditions...),
					lifecycle.Condition{Type: "MemoryPressure", Status: lifecycle.ConditionTrue})
				return in
			},
			want: want{rule: lifecycle.RuleHealthConditions, phase: phase.Running, op: joinedOp, period: retry.Long, changed: true},
			check: func(t *testing.T, in lifecycle.Input, d lifecycle.Decision) {
				require.Equal(t, in.Node.Conditions, d.Status.Conditions)
			},
		},
		{
			name: "H3 Pending, node healthy, no critical taint: Running, joined, token deleted, startup taint removed",
			in: func() lifecycle.Input {
				in := withIdentity(newInput(), phase.Pending)
				in.Status.LastOp = lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateProcessing, Desc: lastop.DescCreating}
				in.Now = t0.Add(3 * time.Minute)
				in.Node = healthyNode()
				in.Node.Taints = lifecycle.InstanceNotReady
				in.TokenExists = true
				return in
			},
			want: want{rule: lifecycle.RuleHealthJoined, phase: phase.Running, op: joinedOp, period: retry.Long, changed: true,
				effects: []string{"event Normal MachineRunning (health.joined)",
					"remove-taint node-vm-1 " + lifecycle.TaintInstanceNotReady, "delete-bootstrap-token machine-1"}},
		},
		{
			name: "H3 Pending with the critical-components-not-ready taint stays Pending",
			in: func() lifecycle.Input {
				in := withIdentity(newInput(), phase.Pending)
				in.Status.LastOp = lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateProcessing, Desc: lastop.DescCreating}
				in.Node = healthyNode()
				in.Status.Conditions = in.Node.Conditions
				in.Node.Taints = lifecycle.CriticalComponentsNotReady
				return in
			},
			want: want{rule: lifecycle.RuleHealthWaitJoin, phase: phase.Pending, op: pendingOp, period: time.Minute},
		},
		{
			name: "H3 Unknown, node healthy again: Running, re-joined",
			in:   func() lifecycle.Input { in := unknownInput(); in.Node = healthyNode(); return in },
			want: want{rule: lifecycle.RuleHealthRejoined, phase: phase.Running, period: retry.Long, changed: true,
				op:      op{lastop.TypeHealthCheck, lastop.StateSuccessful, "", "Machine machine-1 successfully re-joined the cluster"},
				effects: []string{"event Normal MachineRunning (health.rejoined)"}},
		},
		{
			name: "H3 Failed, node healthy again: the machine recovers to Running",
			in: func() lifecycle.Input {
				in := unknownInput()
				in.Status.Phase = phase.Failed
				in.Node = healthyNode()
				return in
			},
			want: want{rule: lifecycle.RuleHealthRejoined, phase: phase.Running, period: retry.Long, changed: true,
				op:      op{lastop.TypeHealthCheck, lastop.StateSuccessful, "", "Machine machine-1 successfully re-joined the cluster"},
				effects: []string{"event Normal MachineRunning (health.rejoined)"}},
		},
		{
			name: "H4 Running, node unhealthy: Unknown with the node conditions",
			in:   func() lifecycle.Input { in := runningInput(); in.Node = notReadyNode(); return in },
			want: want{rule: lifecycle.RuleHealthUnhealthy, phase: phase.Unknown, op: unknownOp, period: time.Minute, changed: true,
				effects: []string{"event Warning MachineUnhealthy (health.unhealthy)"}},
		},
		{
			name: "H4 a watched condition not False is unhealthy too (Unknown counts)",
			in: func() lifecycle.Input {
				in := runningInput()
				in.Node.Conditions = []lifecycle.Condition{{Type: "Ready", Status: lifecycle.ConditionTrue}, {Type: "KernelDeadlock"}}
				return in
			},
			want: want{rule: lifecycle.RuleHealthUnhealthy, phase: phase.Unknown, period: time.Minute, changed: true,
				op: op{lastop.TypeHealthCheck, lastop.StateProcessing, "",
					"Machine machine-1 is unhealthy - changing MachinePhase to Unknown. Node conditions: [{Type:Ready Status:True LastHeartbeatTime:0001-01-01 00:00:00 +0000 UTC LastTransitionTime:0001-01-01 00:00:00 +0000 UTC Reason: Message:} {Type:KernelDeadlock Status:Unknown LastHeartbeatTime:0001-01-01 00:00:00 +0000 UTC LastTransitionTime:0001-01-01 00:00:00 +0000 UTC Reason: Message:}]"},
				effects: []string{"event Warning MachineUnhealthy (health.unhealthy)"}},
		},
		{
			name: "H7 Pending past the creation timeout: Failed with the previous operation type",
			in: func() lifecycle.Input {
				in := withIdentity(newInput(), phase.Pending)
				in.Status.LastOp = lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateProcessing, Desc: lastop.DescCreating}
				in.Now = t0.Add(20*time.Minute + time.Second)
				return in
			},
			want: want{rule: lifecycle.RuleHealthJoinTimeout, phase: phase.Failed, period: retry.Long, changed: true,
				op:      op{lastop.TypeCreate, lastop.StateFailed, "", "Machine machine-1 failed to join the cluster in 20m0s minutes."},
				effects: []string{"event Warning MachineFailed (health.join-timeout)"}},
		},
		{
			name: "H9 Unknown past the health timeout, granted: the provider is asked first (deviation, doc/mcm-compat.md)",
			in:   func() lifecycle.Input { in := unknownInput(); in.Grant.Fail = true; return in },
			want: want{rule: lifecycle.RuleHealthConfirm, phase: phase.Unknown, op: unknownOp, period: retry.Short, changed: true,
				effects: []string{"call GetMachineStatus machine-1 providerID=fake:///eu-1/vm-1 uid=uid-1 key=uid-1/0"}},
			check: func(t *testing.T, _ lifecycle.Input, d lifecycle.Decision) {
				require.True(t, d.Status.Flags.Has(lifecycle.FlagGranted), "the grant is recorded before the call")
			},
		},
		{
			name:    "H9 the provider confirms the instance exists: Failed, its answer in LastOperation",
			in:      func() lifecycle.Input { in := unknownInput(); in.Grant.Fail = true; return in },
			results: []driverapi.Result{ok(providerID, nodeName)},
			want: want{rule: lifecycle.RuleHealthTimeout, phase: phase.Failed, period: retry.Long, changed: true,
				op: op{lastop.TypeHealthCheck, lastop.StateFailed, "",
					"Machine machine-1 health checks failing since last 10m0s; provider reports: instance exists. Updating machine phase to Failed. Node Conditions: " + notReadyText},
				effects: []string{"event Warning MachineFailed (health.timeout)"}},
			check: func(t *testing.T, _ lifecycle.Input, d lifecycle.Decision) {
				require.False(t, d.Status.Flags.Has(lifecycle.FlagGranted))
			},
		},
		{
			name:    "H9 the provider reports the instance gone: Failed with its code",
			in:      func() lifecycle.Input { in := unknownInput(); in.Grant.Fail = true; return in },
			results: []driverapi.Result{fail(driverapi.NotFound, "vm-1 terminated")},
			want: want{rule: lifecycle.RuleHealthTimeout, phase: phase.Failed, period: retry.Long, changed: true,
				op: op{lastop.TypeHealthCheck, lastop.StateFailed, "NotFound",
					"Machine machine-1 health checks failing since last 10m0s; provider reports: machine codes error: code = [NotFound] message = [vm-1 terminated]. Updating machine phase to Failed. Node Conditions: " + notReadyText},
				effects: []string{"event Warning MachineFailed (health.timeout)"}},
		},
		{
			name:    "H9 the provider cannot answer: not Failed now, asked again after backoff",
			in:      func() lifecycle.Input { in := unknownInput(); in.Grant.Fail = true; return in },
			results: []driverapi.Result{fail(driverapi.Unavailable, "cloud API down")},
			want:    want{rule: lifecycle.RuleHealthConfirmFailed, phase: phase.Unknown, op: unknownOp, period: retry.Short, changed: true},
			check: func(t *testing.T, _ lifecycle.Input, d lifecycle.Decision) {
				require.True(t, d.Status.Flags.Has(lifecycle.FlagGranted), "the machine keeps its grant")
				require.Equal(t, uint8(1), d.Status.Failures.Health)
			},
		},
		{
			name: "H9 InPlaceUpdateFailed past the health timeout is treated alike",
			in: func() lifecycle.Input {
				in := unknownInput()
				in.Status.Phase = phase.InPlaceUpdateFailed
				in.Grant.Fail = true
				return in
			},
			results: []driverapi.Result{ok(providerID, nodeName)},
			want: want{rule: lifecycle.RuleHealthTimeout, phase: phase.Failed, period: retry.Long, changed: true,
				op: op{lastop.TypeHealthCheck, lastop.StateFailed, "",
					"Machine machine-1 health checks failing since last 10m0s; provider reports: instance exists. Updating machine phase to Failed. Node Conditions: " + notReadyText},
				effects: []string{"event Warning MachineFailed (health.timeout)"}},
		},
		{
			name: "H9 InPlaceUpdateFailed with a healthy node is failed all the same (H3 excludes it), once asked",
			in: func() lifecycle.Input {
				in := unknownInput()
				in.Status.Phase = phase.InPlaceUpdateFailed
				in.Node = healthyNode()
				in.Status.Conditions = in.Node.Conditions
				in.Grant.Fail = true
				return in
			},
			results: []driverapi.Result{ok(providerID, nodeName)},
			want: want{rule: lifecycle.RuleHealthTimeout, phase: phase.Failed, period: retry.Long, changed: true,
				op: op{lastop.TypeHealthCheck, lastop.StateFailed, "",
					"Machine machine-1 health checks failing since last 10m0s; provider reports: instance exists. Updating machine phase to Failed. Node Conditions: " + healthyText},
				effects: []string{"event Warning MachineFailed (health.timeout)"}},
		},
		{
			name:    "H9 a provider without GetMachineStatus (Unimplemented) is answered as MCM: Failed",
			in:      func() lifecycle.Input { in := unknownInput(); in.Grant.Fail = true; return in },
			results: []driverapi.Result{unimplemented},
			want: want{rule: lifecycle.RuleHealthTimeout, phase: phase.Failed, period: retry.Long, changed: true,
				op: op{lastop.TypeHealthCheck, lastop.StateFailed, "Unimplemented",
					"Machine machine-1 health checks failing since last 10m0s; provider reports: status not implemented. Updating machine phase to Failed. Node Conditions: " + notReadyText},
				effects: []string{"event Warning MachineFailed (health.timeout)"}},
		},
		{
			name: "H10 timed out but disableHealthTimeout: nothing, Long",
			in: func() lifecycle.Input {
				in := unknownInput()
				in.Object.Overrides.DisableHealthTimeout = true
				in.Grant.Fail = true
				return in
			},
			want: want{rule: lifecycle.RuleHealthTimeoutDisabled, phase: phase.Unknown, op: unknownOp, period: retry.Long},
		},
		{
			name: "H11 Unknown before the health timeout: look again in a minute",
			in: func() lifecycle.Input {
				in := unknownInput()
				in.Now = t0.Add(55 * time.Minute)
				in.Status.MetadataObserved = lifecycle.StampOf(t0.Add(49 * time.Minute))
				return in
			},
			want: want{rule: lifecycle.RuleHealthWaitUnknown, phase: phase.Unknown, op: unknownOp, period: time.Minute},
		},
		{
			name: "H11 the per-machine health timeout wins over the Config",
			in: func() lifecycle.Input {
				in := unknownInput()
				in.Object.Overrides.HealthTimeout = time.Hour
				in.Grant.Fail = true
				return in
			},
			want: want{rule: lifecycle.RuleHealthWaitUnknown, phase: phase.Unknown, op: unknownOp, period: time.Minute},
		},
		{
			name: "H11 the re-check comes sooner when the deadline is closer",
			in: func() lifecycle.Input {
				in := unknownInput()
				in.Now = t0.Add(59*time.Minute + 30*time.Second)
				return in
			},
			want: want{rule: lifecycle.RuleHealthWaitUnknown, phase: phase.Unknown, op: unknownOp, period: 30 * time.Second},
		},
		{
			name: "H12 a status write does not end the evaluation (deviation, doc/mcm-compat.md)",
			in:   func() lifecycle.Input { in := runningInput(); in.Node = notReadyNode(); return in },
			want: want{rule: lifecycle.RuleHealthUnhealthy, phase: phase.Unknown, op: unknownOp, period: time.Minute, changed: true,
				effects: []string{"event Warning MachineUnhealthy (health.unhealthy)"}},
			check: func(t *testing.T, _ lifecycle.Input, d lifecycle.Decision) {
				require.Equal(t, lifecycle.WaitRecovery, d.Wait.For, "the H11 wait is decided in the same step")
			},
		},
		{
			name: "H13 Running and healthy: Long",
			in:   runningInput,
			want: want{rule: lifecycle.RuleHealthy, phase: phase.Running, op: joinedOp, period: retry.Long},
		},
	})
}

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
	peer := func(name string, p phase.Phase) lifecycle.Member {
		return lifecycle.Member{Name: name, UID: name, Owner: "machineset-1", Phase: p, PhaseSince: lifecycle.StampOf(t0)}
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
			in:   func() lifecycle.Input { return grantFor(unknownInput(), peer("m-2", phase.Pending)) },
			want: awaiting,
		},
		{
			name: "T4 nothing in flight: granted, confirmed, Failed",
			in: func() lifecycle.Input {
				recent := peer("m-3", phase.Unknown)
				recent.PhaseSince = lifecycle.StampOf(t0.Add(58 * time.Minute)) // not timed out yet
				return grantFor(unknownInput(), peer("m-2", phase.Running), recent)
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

// A machine past creation without a recorded instance asks the provider at
// most every Long period; in between, health decides.
func TestLookupOfAMissingInstanceIsThrottled(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := runningInput()
	in.Status.ProviderID, in.Object.ProviderID, in.Node.ProviderID = "", "", ""
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleCreateLookup, d.Rule)
	d = step(t, cfg, then(in, d, notFound))
	require.Equal(t, lifecycle.RuleCreateInstanceMissing, d.Rule)
	in.Status, in.Outcome = d.Status, nil
	in.Now = in.Now.Add(time.Minute)
	require.NotEqual(t, driverapi.MethodGetStatus, step(t, cfg, in).Call.Method)
	in.Now = in.Now.Add(retry.Long)
	require.Equal(t, lifecycle.RuleCreateLookup, step(t, cfg, in).Rule)
}

// Health is never decided without evidence. A node that exists but reports
// no conditions, or no Ready condition (only types the lifecycle does not
// watch, which MCM's isHealthy counts as healthy), is not healthy: a
// Pending machine does not join on it, a Running one turns Unknown. A Running machine with no node and no mirrored conditions
// (adopted so, or its conditions never mirrored) turns Unknown too: MCM's
// H1 asks for a mirrored condition and leaves it Running forever.
func TestHealthWithoutEvidence(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	bare := func(conds ...lifecycle.Condition) lifecycle.Node {
		n := healthyNode()
		n.Conditions = conds
		return n
	}
	unwatched := lifecycle.Condition{Type: "MemoryPressure", Status: lifecycle.ConditionFalse}
	for _, tc := range []struct {
		name      string
		in        lifecycle.Input
		wantPhase phase.Phase
		wantRule  lifecycle.Rule
	}{
		{"a Pending machine does not join a node without conditions",
			func() lifecycle.Input { in := withIdentity(newInput(), phase.Pending); in.Node = bare(); return in }(),
			phase.Pending, lifecycle.RuleHealthWaitJoin},
		{"a Pending machine does not join a node with only unwatched conditions and no Ready",
			func() lifecycle.Input {
				in := withIdentity(newInput(), phase.Pending)
				in.Node = bare(unwatched)
				return in
			}(),
			phase.Pending, lifecycle.RuleHealthConditions},
		{"a Running machine whose node reports no Ready condition turns Unknown",
			func() lifecycle.Input { in := runningInput(); in.Node = bare(unwatched); return in }(),
			phase.Unknown, lifecycle.RuleHealthUnhealthy},
		{"a Running machine whose node reports no conditions turns Unknown",
			func() lifecycle.Input { in := runningInput(); in.Node = bare(); return in }(),
			phase.Unknown, lifecycle.RuleHealthUnhealthy},
		{"H1 deviation: Running, no node and no mirrored conditions turns Unknown",
			func() lifecycle.Input {
				in := runningInput()
				in.Node, in.Status.Conditions = lifecycle.Node{}, nil
				return in
			}(),
			phase.Unknown, lifecycle.RuleHealthNodeMissing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := step(t, cfg, tc.in)
			require.Equal(t, tc.wantPhase.Label(), d.Status.Phase.Label(), d.String())
			require.Equal(t, tc.wantRule.String(), d.Rule.String())
		})
	}
}

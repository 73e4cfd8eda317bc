package lifecycle_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// Tests of the health flow (health.go). This file: MCM's health rows (H0-H13
// in doc/mcm-rows.md), health without evidence, the join and the check of a
// node's conditions. The health timeout, the limiter's grant (T1-T4) and the
// observer's outages: health_timeout_test.go.

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

// A leftover node of an earlier machine with the same name (found by its
// machine-name label) carries another providerID: the machine does not join
// on it, its bootstrap token is kept, and deletion neither drains nor
// deletes it.
func TestAnotherInstancesNodeIsIgnored(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := withIdentity(newInput(), phase.Pending)
	in.Status.LastOp = lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateProcessing, Desc: lastop.DescCreating}
	in.Node = healthyNode()
	in.Node.Name, in.Node.ProviderID = "old-node", "fake:///eu-1/vm-OLD"
	in.TokenExists = true
	d := step(t, cfg, in)
	require.Equal(t, phase.Pending, d.Status.Phase)
	require.True(t, d.Anomalies.Has(lifecycle.AnomalyForeignNode))
	require.Empty(t, d.Lines(), "no token deletion, no label on the foreign node")
	require.Empty(t, d.Status.Conditions, "its conditions are not mirrored")

	in.Object.DeletionTime = in.Now
	in.Status.Phase, in.Status.Stage = phase.Terminating, lifecycle.StageDrain
	in.Status.NodeName = nodeName
	d = step(t, cfg, in)
	for _, l := range d.Lines() {
		require.NotContains(t, l, "old-node")
	}
}

// MCM's isHealthy counts a node without a Ready condition as healthy when
// the watched conditions are False; the lifecycle asks for a Ready
// condition that is True.
func TestDeviationNoReadyConditionIsNotHealthy(t *testing.T) {
	in := withIdentity(newInput(), phase.Pending)
	in.Status.LastOp = lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateProcessing, Desc: lastop.DescCreating}
	in.Node = healthyNode()
	in.Node.Conditions = []lifecycle.Condition{{Type: "DiskPressure", Status: lifecycle.ConditionFalse}}
	d := lifecycle.Step(lifecycle.DefaultConfig(), in)
	require.Equal(t, phase.Pending, d.Status.Phase)
}

func TestJoinedRendersMCMText(t *testing.T) {
	in := withIdentity(newInput(), phase.Pending)
	in.Status.LastOp = lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateProcessing, Desc: lastop.DescCreating}
	in.Node = healthyNode()
	in.Node.Taints = lifecycle.InstanceNotReady
	in.TokenExists = true
	in.Now = t0.Add(7*time.Minute + 30*time.Second)
	d := step(t, lifecycle.DefaultConfig(), in)
	require.Equal(t, lifecycle.RuleHealthJoined, d.Rule)
	require.Equal(t, "Machine machine-1 successfully joined the cluster in 7m30s", lifecycle.Describe(&d.Status, machineName))
	require.Equal(t, []string{
		"event Normal MachineRunning (health.joined)",
		"remove-taint node-vm-1 " + lifecycle.TaintInstanceNotReady,
		"delete-bootstrap-token machine-1",
	}, d.Lines())
}

func TestCriticalComponentsTaintHoldsPending(t *testing.T) {
	in := withIdentity(newInput(), phase.Pending)
	in.Node = healthyNode()
	in.Node.Taints = lifecycle.CriticalComponentsNotReady
	d := step(t, lifecycle.DefaultConfig(), in)
	require.Equal(t, phase.Pending, d.Status.Phase)
	require.Equal(t, lifecycle.RuleHealthConditions, d.Rule)
	require.True(t, d.Changed, "conditions mirrored")
	require.Equal(t, lifecycle.WaitNodeJoin, d.Wait.For)
	require.Equal(t, time.Minute, d.Requeue)
}

// bigNode is the machine's node reporting n conditions of types nobody
// watches, in status Unknown (each one is looked up among the watched
// types), with a Ready condition first.
func bigNode(n int) lifecycle.Node {
	node := healthyNode()
	node.Conditions = make([]lifecycle.Condition, n)
	node.Conditions[0] = lifecycle.Condition{Type: lifecycle.ConditionReady, Status: lifecycle.ConditionTrue}
	for i := 1; i < n; i++ {
		node.Conditions[i] = lifecycle.Condition{Type: "Vendor" + strconv.Itoa(i), Status: lifecycle.ConditionUnknown}
	}
	return node
}

// The check of a node's conditions is linear in their number (the watched
// types are at most MaxNodeConditions) and allocates nothing, even for a
// node reporting a hundred thousand conditions; the node's conditions
// are mirrored by sharing the slice.
func TestConditionCheckAllocatesNothing(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	k := checked(t, cfg)
	in := runningInput()
	in.Node = bigNode(100_000)
	in.Object.Overrides.NodeConditions = make([]string, lifecycle.MaxNodeConditions)
	for i := range in.Object.Overrides.NodeConditions {
		in.Object.Overrides.NodeConditions[i] = "Watched" + strconv.Itoa(i)
	}
	var d lifecycle.Decision
	lifecycle.StepInto(&d, k, &in)
	require.Equal(t, lifecycle.RuleHealthConditions, d.Rule, d.Rule)
	in.Status = d.Status
	require.Zero(t, testing.AllocsPerRun(20, func() { lifecycle.StepInto(&d, k, &in) }))
}

// BenchmarkConditions measures a step of a Running machine whose node
// reports n conditions against the largest list of watched types: the
// cost per condition stays flat as n grows.
func BenchmarkConditions(b *testing.B) {
	cfg := lifecycle.DefaultConfig()
	k := checked(b, cfg)
	for _, n := range []int{100, 10_000, 100_000} {
		b.Run("conditions="+strconv.Itoa(n), func(b *testing.B) {
			in := runningInput()
			in.Node = bigNode(n)
			in.Object.Overrides.NodeConditions = make([]string, lifecycle.MaxNodeConditions)
			for i := range in.Object.Overrides.NodeConditions {
				in.Object.Overrides.NodeConditions[i] = "Watched" + strconv.Itoa(i)
			}
			in.Status.Conditions = in.Node.Conditions
			var d lifecycle.Decision
			b.ReportAllocs()
			for b.Loop() {
				lifecycle.StepInto(&d, k, &in)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/condition")
		})
	}
}

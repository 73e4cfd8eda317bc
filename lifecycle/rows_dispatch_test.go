package lifecycle_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

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

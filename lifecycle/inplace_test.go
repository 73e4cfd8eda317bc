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

// Tests of the in-place update (inplace.go): one case per row of MCM's
// protocol (U1-U8, I1-I5, H5, H6, H8 in doc/mcm-rows.md), then how the
// update meets deletion, health, the hot update and its timeouts.

// inPlaceNode is the machine's healthy node carrying the in-place labels
// and, when reason is not "", the InPlaceUpdate condition with it.
func inPlaceNode(labels lifecycle.UpdateLabels, reason string) lifecycle.Node {
	n := healthyNode()
	n.Update = labels
	if reason != "" {
		n.Conditions = append(cloneConds(n.Conditions), lifecycle.Condition{Type: lifecycle.ConditionInPlaceUpdate,
			Status: lifecycle.ConditionTrue, Reason: reason})
	}
	return n
}

// inPlaceInput is a healthy Running machine whose node carries the labels
// and condition reason given, its conditions mirrored.
func inPlaceInput(labels lifecycle.UpdateLabels, reason string) lifecycle.Input {
	in := runningInput()
	in.Node = inPlaceNode(labels, reason)
	in.Status.Conditions = in.Node.Conditions
	return in
}

// drainingInput is inPlaceInput for a node selected and being drained since
// t0+59m (Now is t0+60m), pods left on it.
func drainingInput(pods int) lifecycle.Input {
	in := inPlaceInput(lifecycle.UpdateCandidate|lifecycle.UpdateSelected, lifecycle.ReasonSelectedForUpdate)
	in.Status.Stage = lifecycle.StageInPlaceDrain
	in.Status.StageSince = lifecycle.StampOf(in.Now.Add(-time.Minute))
	in.Status.Flags = lifecycle.FlagDraining
	in.Node.Pods = pods
	in.Node.Unschedulable = true // the drain's cordon
	return in
}

// updatingPhaseInput is a machine InPlaceUpdating since t0+55m (Now is
// t0+60m), its node told ReadyForUpdate, carrying the labels given.
func updatingPhaseInput(labels lifecycle.UpdateLabels, reason string) lifecycle.Input {
	in := inPlaceInput(labels, reason)
	in.Status.Phase = phase.InPlaceUpdating
	in.Status.PhaseSince = lifecycle.StampOf(in.Now.Add(-5 * time.Minute))
	in.Status.LastOp = lastop.Operation{Type: lastop.TypeInPlaceUpdate, State: lastop.StateProcessing, Desc: lastop.DescInPlaceUpdating}
	in.Node.Unschedulable = true // as the drain left it
	return in
}

const (
	candidate = lifecycle.UpdateCandidate
	selected  = lifecycle.UpdateCandidate | lifecycle.UpdateSelected
)

func conditionLine(reason string) string {
	return "set-node-condition node-vm-1 InPlaceUpdate=True reason=" + reason
}

var (
	updatingOp = op{lastop.TypeInPlaceUpdate, lastop.StateProcessing, "", "Machine machine-1 is undergoing an in-place update"}
	selectedOp = joinedOp
)

// TestInPlaceRows has one case per row of MCM's in-place protocol in
// scope. Where a row deviates from MCM the case name says so and
// doc/mcm-compat.md lists the deviation.
func TestInPlaceRows(t *testing.T) {
	runRows(t, []rowCase{
		{
			name: "U1 InPlaceUpdating and the node is gone: no write, waits for the agent or the timeout",
			in: func() lifecycle.Input {
				in := updatingPhaseInput(selected, lifecycle.ReasonReadyForUpdate)
				in.Node = lifecycle.Node{}
				return in
			},
			want: want{rule: lifecycle.RuleInPlaceWaitAgent, phase: phase.InPlaceUpdating, op: updatingOp, period: retry.Medium},
		},
		{
			name: "U2 no candidate label: the condition is left alone",
			in:   func() lifecycle.Input { return inPlaceInput(0, lifecycle.ReasonCandidateForUpdate) },
			want: want{rule: lifecycle.RuleHealthy, phase: phase.Running, op: joinedOp, period: retry.Long},
		},
		{
			name: "U3 candidate without the condition: CandidateForUpdate",
			in:   func() lifecycle.Input { return inPlaceInput(candidate, "") },
			want: want{rule: lifecycle.RuleInPlaceCondition, phase: phase.Running, op: joinedOp, period: retry.Long,
				effects: []string{conditionLine(lifecycle.ReasonCandidateForUpdate)}},
			check: func(t *testing.T, _ lifecycle.Input, d lifecycle.Decision) {
				require.Equal(t, "Node is a candidate for in-place update", d.Effects.At(0).Message)
			},
		},
		{
			name: "U3 candidate again after an update that succeeded, no result label: CandidateForUpdate",
			in:   func() lifecycle.Input { return inPlaceInput(candidate, lifecycle.ReasonUpdateSuccessful) },
			want: want{rule: lifecycle.RuleInPlaceCondition, phase: phase.Running, op: joinedOp, period: retry.Long,
				effects: []string{conditionLine(lifecycle.ReasonCandidateForUpdate)}},
		},
		{
			name: "U4 selected, condition CandidateForUpdate: SelectedForUpdate, cordon and drain in one op",
			in:   func() lifecycle.Input { return inPlaceInput(selected, lifecycle.ReasonCandidateForUpdate) },
			want: want{rule: lifecycle.RuleInPlaceDrain, phase: phase.Running, op: selectedOp, period: retry.Short, changed: true,
				effects: []string{conditionLine(lifecycle.ReasonSelectedForUpdate), "cordon node-vm-1", "drain node-vm-1"}},
			check: func(t *testing.T, in lifecycle.Input, d lifecycle.Decision) {
				require.Equal(t, lifecycle.StageInPlaceDrain, d.Status.Stage)
				require.Equal(t, lifecycle.StampOf(in.Now), d.Status.StageSince, "the drain timeout counts from here")
				require.Equal(t, "Node is selected for in-place update", d.Effects.At(0).Message)
			},
		},
		{
			name: "U5 selected, condition SelectedForUpdate (adopted mid-drain): the drain begins (deviation: MCM waits Medium for its drain in I2)",
			in:   func() lifecycle.Input { return inPlaceInput(selected, lifecycle.ReasonSelectedForUpdate) },
			want: want{rule: lifecycle.RuleInPlaceDrain, phase: phase.Running, op: selectedOp, period: retry.Short, changed: true,
				effects: []string{"cordon node-vm-1", "drain node-vm-1"}},
		},
		{
			name: "U6 the agent succeeded, condition ReadyForUpdate, machine Running: UpdateSuccessful",
			in: func() lifecycle.Input {
				return inPlaceInput(selected|lifecycle.UpdateSucceeded, lifecycle.ReasonReadyForUpdate)
			},
			want: want{rule: lifecycle.RuleInPlaceCondition, phase: phase.Running, op: joinedOp, period: retry.Long,
				effects: []string{conditionLine(lifecycle.ReasonUpdateSuccessful)}},
		},
		{
			name: "U7 the agent failed: UpdateFailed with the agent's reason",
			in: func() lifecycle.Input {
				in := inPlaceInput(selected|lifecycle.UpdateFailed, lifecycle.ReasonReadyForUpdate)
				in.Node.UpdateFailedReason = "kubelet would not start"
				return in
			},
			want: want{rule: lifecycle.RuleInPlaceCondition, phase: phase.Running, op: joinedOp, period: retry.Long,
				effects: []string{conditionLine(lifecycle.ReasonUpdateFailed)}},
			check: func(t *testing.T, _ lifecycle.Input, d lifecycle.Decision) {
				require.Equal(t, "Node in-place update failed: kubelet would not start", d.Effects.At(0).Message)
			},
		},
		{
			name: "U8 the condition already says the verdict: nothing",
			in: func() lifecycle.Input {
				return inPlaceInput(candidate|lifecycle.UpdateSucceeded, lifecycle.ReasonUpdateSuccessful)
			},
			want: want{rule: lifecycle.RuleHealthy, phase: phase.Running, op: joinedOp, period: retry.Long},
		},
		{
			name: "I1 InPlaceUpdating, node without the condition: ReadyForUpdate told again (deviation: MCM does nothing)",
			in:   func() lifecycle.Input { return updatingPhaseInput(selected, "") },
			want: want{rule: lifecycle.RuleInPlaceReady, phase: phase.InPlaceUpdating, op: updatingOp, period: retry.Medium,
				effects: []string{conditionLine(lifecycle.ReasonReadyForUpdate)}},
		},
		{
			name: "I2 the node shows no pods left after the drain: InPlaceUpdating, DrainSuccessful then ReadyForUpdate",
			in:   func() lifecycle.Input { return drainingInput(0) },
			want: want{rule: lifecycle.RuleInPlaceDrained, phase: phase.InPlaceUpdating, op: updatingOp, period: retry.Medium, changed: true,
				effects: []string{"event Normal InPlaceUpdating (inplace.drained)",
					conditionLine(lifecycle.ReasonDrainSuccessful), conditionLine(lifecycle.ReasonReadyForUpdate)}},
			check: func(t *testing.T, _ lifecycle.Input, d lifecycle.Decision) {
				require.Equal(t, lifecycle.StageNone, d.Status.Stage)
				require.Zero(t, d.Status.Flags&(lifecycle.FlagDraining|lifecycle.FlagDeletingPods))
				require.Equal(t, lifecycle.WaitInPlaceUpdate, d.Wait.For)
			},
		},
		{
			name: "I2 a write of the drain failed: DrainNode Processing, retried after Short",
			in: func() lifecycle.Input {
				in := inPlaceInput(selected, lifecycle.ReasonCandidateForUpdate)
				d := lifecycle.Step(lifecycle.DefaultConfig(), in)
				in.Status = d.Status
				in.Outcome = &lifecycle.Outcome{OpID: d.OpID, Ran: 1, Stopped: lifecycle.WriteFailed, Error: "cordon refused"}
				return in
			},
			want: want{rule: lifecycle.RuleInPlaceDrainFailed, phase: phase.Running, period: retry.Short, changed: true,
				op: op{lastop.TypeDrainNode, lastop.StateProcessing, "",
					"Drain failed due to - cordon refused. Will retry in next sync. Initiate node drain"},
				effects: []string{"event Warning DrainFailed (inplace.drain-failed)"}},
			check: func(t *testing.T, _ lifecycle.Input, d lifecycle.Decision) {
				require.Equal(t, lifecycle.StageInPlaceDrain, d.Status.Stage, "the drain is retried, not abandoned")
				require.Equal(t, lifecycle.WaitRetry, d.Wait.For)
			},
		},
		{
			name: "I3 InPlaceUpdating, ReadyForUpdate: waits for the agent",
			in:   func() lifecycle.Input { return updatingPhaseInput(selected, lifecycle.ReasonReadyForUpdate) },
			want: want{rule: lifecycle.RuleInPlaceWaitAgent, phase: phase.InPlaceUpdating, op: updatingOp, period: retry.Medium},
		},
		{
			name: "I4 InPlaceUpdating, DrainSuccessful: ReadyForUpdate",
			in:   func() lifecycle.Input { return updatingPhaseInput(selected, lifecycle.ReasonDrainSuccessful) },
			want: want{rule: lifecycle.RuleInPlaceReady, phase: phase.InPlaceUpdating, op: updatingOp, period: retry.Medium,
				effects: []string{conditionLine(lifecycle.ReasonReadyForUpdate)}},
			check: func(t *testing.T, _ lifecycle.Input, d lifecycle.Decision) {
				require.Equal(t, "Node is ready for in-place update", d.Effects.At(0).Message)
			},
		},
		{
			name: "I5 Running, condition UpdateFailed, labels agree: nothing",
			in: func() lifecycle.Input {
				return inPlaceInput(candidate|lifecycle.UpdateFailed, lifecycle.ReasonUpdateFailed)
			},
			want: want{rule: lifecycle.RuleHealthy, phase: phase.Running, op: joinedOp, period: retry.Long},
		},
		{
			name: "H5 the agent succeeded: InPlaceUpdateSuccessful, condition UpdateSuccessful",
			in: func() lifecycle.Input {
				return updatingPhaseInput(selected|lifecycle.UpdateSucceeded, lifecycle.ReasonReadyForUpdate)
			},
			want: want{rule: lifecycle.RuleInPlaceUpdated, phase: phase.InPlaceUpdateSuccessful, period: retry.Short, changed: true,
				op:      op{lastop.TypeInPlaceUpdate, lastop.StateSuccessful, "", "Machine machine-1 successfully updated dependencies"},
				effects: []string{"event Normal InPlaceUpdateSuccessful (inplace.updated)", conditionLine(lifecycle.ReasonUpdateSuccessful)}},
		},
		{
			name: "H5 InPlaceUpdateFailed, then the agent succeeded: InPlaceUpdateSuccessful",
			in: func() lifecycle.Input {
				in := updatingPhaseInput(selected|lifecycle.UpdateSucceeded, lifecycle.ReasonUpdateSuccessful)
				in.Status.Phase = phase.InPlaceUpdateFailed
				return in
			},
			want: want{rule: lifecycle.RuleInPlaceUpdated, phase: phase.InPlaceUpdateSuccessful, period: retry.Short, changed: true,
				op:      op{lastop.TypeInPlaceUpdate, lastop.StateSuccessful, "", "Machine machine-1 successfully updated dependencies"},
				effects: []string{"event Normal InPlaceUpdateSuccessful (inplace.updated)"}},
		},
		{
			name: "H6 the agent failed: InPlaceUpdateFailed with its reason, condition UpdateFailed",
			in: func() lifecycle.Input {
				in := updatingPhaseInput(selected|lifecycle.UpdateFailed, lifecycle.ReasonReadyForUpdate)
				in.Node.UpdateFailedReason = "image pull failed"
				return in
			},
			want: want{rule: lifecycle.RuleInPlaceFailed, phase: phase.InPlaceUpdateFailed, period: retry.Short, changed: true,
				op:      op{lastop.TypeInPlaceUpdate, lastop.StateFailed, "", "Machine machine-1 failed to update dependencies: image pull failed"},
				effects: []string{"event Warning InPlaceUpdateFailed (inplace.failed)", conditionLine(lifecycle.ReasonUpdateFailed)}},
		},
		{
			name: "H8 InPlaceUpdating past the in-place timeout: InPlaceUpdateFailed",
			in: func() lifecycle.Input {
				in := updatingPhaseInput(selected, lifecycle.ReasonReadyForUpdate)
				in.Status.PhaseSince = lifecycle.StampOf(in.Now.Add(-20 * time.Minute))
				return in
			},
			want: want{rule: lifecycle.RuleInPlaceTimeout, phase: phase.InPlaceUpdateFailed, period: retry.Short, changed: true,
				op:      op{lastop.TypeInPlaceUpdate, lastop.StateFailed, "", "Machine machine-1 failed to in-place update in 20m0s minutes."},
				effects: []string{"event Warning InPlaceUpdateFailed (inplace.timeout)"}},
			check: func(t *testing.T, _ lifecycle.Input, d lifecycle.Decision) {
				require.Equal(t, lifecycle.WaitRecovery, d.Wait.For, "the health timeout counts next")
			},
		},
		{
			name: "H8 a per-machine in-place timeout wins over the Config's",
			in: func() lifecycle.Input {
				in := updatingPhaseInput(selected, lifecycle.ReasonReadyForUpdate)
				in.Object.Overrides.InPlaceUpdateTimeout = 5 * time.Minute
				return in
			},
			want: want{rule: lifecycle.RuleInPlaceTimeout, phase: phase.InPlaceUpdateFailed, period: retry.Short, changed: true,
				op:      op{lastop.TypeInPlaceUpdate, lastop.StateFailed, "", "Machine machine-1 failed to in-place update in 5m0s minutes."},
				effects: []string{"event Warning InPlaceUpdateFailed (inplace.timeout)"}},
		},
	})
}

// The drain before an update: its rounds, its forcing, and its end when
// the selection is withdrawn.
func TestInPlaceDrain(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	t.Run("pods left past a round's interval: another round", func(t *testing.T) {
		d := step(t, cfg, drainingInput(3))
		require.Equal(t, lifecycle.RuleInPlaceDrainRound, d.Rule)
		require.Equal(t, []string{"drain node-vm-1"}, d.Lines())
		require.Equal(t, lifecycle.WaitDrain, d.Wait.For)
	})
	t.Run("a round that ran: waits for the next round", func(t *testing.T) {
		in := drainingInput(3)
		d := step(t, cfg, in)
		d2 := step(t, cfg, then(in, d, driverapi.Result{}))
		require.Equal(t, lifecycle.RuleInPlaceDraining, d2.Rule)
		require.Equal(t, cfg.EvictRetryInterval, d2.Requeue)
		require.Empty(t, d2.Lines())
	})
	t.Run("the drain timeout forces it, counted from the drain's start", func(t *testing.T) {
		in := drainingInput(3)
		in.Status.StageSince = lifecycle.StampOf(in.Now.Add(-cfg.DrainTimeout))
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleInPlaceDrainForce, d.Rule)
		require.Equal(t, []string{"drain node-vm-1 force"}, d.Lines())
		d2 := step(t, cfg, then(in, d, driverapi.Result{}))
		require.True(t, d2.Status.Flags.Has(lifecycle.FlagDeletingPods))
		require.Equal(t, lifecycle.StageInPlaceDrain, d2.Status.Stage, "a forced drain never goes on with pods left")
	})
	t.Run("the force-drain label forces the first op", func(t *testing.T) {
		in := inPlaceInput(selected, lifecycle.ReasonCandidateForUpdate)
		in.Object.ForceDrain = true
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleInPlaceDrainForce, d.Rule)
		require.Equal(t, []string{conditionLine(lifecycle.ReasonSelectedForUpdate), "cordon node-vm-1", "drain node-vm-1 force"}, d.Lines())
	})
	t.Run("a drain not under way yet (its op failed) begins again after its retry time", func(t *testing.T) {
		in := drainingInput(3)
		in.Status.Flags = 0
		in.Status.RetryAfter = lifecycle.StampOf(in.Now.Add(5 * time.Second))
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleInPlaceDrainBackoff, d.Rule)
		require.Empty(t, d.Lines())
		in.Now = in.Now.Add(5 * time.Second)
		d = step(t, cfg, in)
		require.Equal(t, lifecycle.RuleInPlaceDrain, d.Rule)
		require.Equal(t, []string{"cordon node-vm-1", "drain node-vm-1"}, d.Lines())
	})
	t.Run("uncordoned by someone during the drain: cordoned again, not told ReadyForUpdate", func(t *testing.T) {
		in := drainingInput(0)
		in.Node.Unschedulable = false
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleInPlaceDrain, d.Rule)
		require.Equal(t, []string{"cordon node-vm-1", "drain node-vm-1"}, d.Lines())
	})
	t.Run("the selection withdrawn: the drain ends, hot update and metadata go on", func(t *testing.T) {
		in := drainingInput(3)
		in.Node.Update = lifecycle.UpdateCandidate
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.StageNone, d.Status.Stage)
		require.Zero(t, d.Status.Flags&lifecycle.FlagDraining)
		require.Equal(t, phase.Running, d.Status.Phase)
	})
	t.Run("the pods gone within the pass: InPlaceUpdating on the fresh decision", func(t *testing.T) {
		in := inPlaceInput(selected, lifecycle.ReasonCandidateForUpdate)
		d := step(t, cfg, in)
		in = then(in, d, driverapi.Result{}) // the node showed no pods: nothing to drain
		in.Node.Unschedulable = true         // the cordon ran
		d = step(t, cfg, in)
		require.Equal(t, lifecycle.RuleInPlaceDrained, d.Rule)
		require.Equal(t, phase.InPlaceUpdating, d.Status.Phase)
	})
}

// ReadyForUpdate is never said to a node that was not drained: from a
// Running machine selected for an update with pods on its node, however
// its status was found, no decision of a pass tells the agent to go on.
func TestInPlaceReadyOnlyAfterTheDrain(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	for _, stage := range []lifecycle.Stage{lifecycle.StageNone, lifecycle.StageInPlaceDrain} {
		for _, flags := range []lifecycle.Flags{0, lifecycle.FlagDraining, lifecycle.FlagDraining | lifecycle.FlagDeletingPods} {
			for _, reason := range []string{"", lifecycle.ReasonCandidateForUpdate, lifecycle.ReasonSelectedForUpdate,
				lifecycle.ReasonDrainSuccessful, lifecycle.ReasonReadyForUpdate} {
				in := inPlaceInput(selected, reason)
				in.Status.Stage, in.Status.Flags = stage, flags
				in.Status.StageSince = lifecycle.StampOf(in.Now.Add(-time.Minute))
				in.Node.Pods = 2
				for range 6 {
					d := step(t, cfg, in)
					for _, e := range d.Effects.Slice() {
						require.False(t, e.Kind == lifecycle.KindSetNodeCondition && e.Value == lifecycle.ReasonReadyForUpdate,
							"ReadyForUpdate with pods on the node (stage %s, flags %s, reason %q)", stage, flags, reason)
					}
					require.NotEqual(t, phase.InPlaceUpdating, d.Status.Phase)
					if d.Effects.Len() == 0 {
						in.Status, in.Outcome = d.Status, nil
						in.Now = in.Now.Add(d.Requeue)
						continue
					}
					in = then(in, d, driverapi.Result{})
				}
			}
		}
	}
}

// What a machine found mid-update, or whose world moved under it, does:
// the agent is told ReadyForUpdate only on the node the lifecycle drained,
// a verdict the condition says counts, a failed update stays Failed.
func TestInPlaceFromEveryState(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	t.Run("InPlaceUpdating on a node object made anew (not cordoned, pods): not told again", func(t *testing.T) {
		in := updatingPhaseInput(0, "")
		in.Node.Unschedulable, in.Node.Pods = false, 3
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleInPlaceWaitAgent, d.Rule)
		require.Empty(t, d.Lines())
		// Labelled again by its owner: the condition follows the labels
		// (U3), the agent is still not told.
		in.Node = inPlaceNode(selected, "")
		in.Node.Unschedulable = false
		d = step(t, cfg, in)
		require.Equal(t, []string{conditionLine(lifecycle.ReasonCandidateForUpdate)}, d.Lines())
	})
	t.Run("InPlaceUpdating, the owner finished before the verdict was read: the condition's verdict counts", func(t *testing.T) {
		in := updatingPhaseInput(0, lifecycle.ReasonUpdateSuccessful)
		in.Node.Unschedulable = false
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleInPlaceUpdated, d.Rule)
		require.Equal(t, phase.InPlaceUpdateSuccessful, d.Status.Phase)
		require.NotContains(t, d.Lines(), conditionLine(lifecycle.ReasonReadyForUpdate))
	})
	t.Run("Failed after a failed in-place update, its node healthy: stays Failed", func(t *testing.T) {
		in := inPlaceInput(candidate|lifecycle.UpdateFailed, lifecycle.ReasonUpdateFailed)
		in.Status.Phase = phase.Failed
		in.Status.LastOp = lastop.Operation{Type: lastop.TypeInPlaceUpdate, State: lastop.StateFailed, Desc: lastop.DescHealthConfirmed}
		d := step(t, cfg, in)
		require.Equal(t, phase.Failed, d.Status.Phase)
		require.Equal(t, lifecycle.RuleAwaitReplacement, d.Rule)
	})
	t.Run("Running after a success the condition does not say: UpdateSuccessful first", func(t *testing.T) {
		in := inPlaceInput(selected|lifecycle.UpdateSucceeded, lifecycle.ReasonSelectedForUpdate)
		d := step(t, cfg, in)
		require.Equal(t, []string{conditionLine(lifecycle.ReasonUpdateSuccessful)}, d.Lines())
	})
}

// How the update meets the other flows: deletion wins at any point, the
// update wins over a hot update, and the phases after the verdict end in
// Running or, through the health timeout, Failed.
func TestInPlaceInterplay(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	t.Run("deletion during the drain: Terminating, the drain's flags cleared", func(t *testing.T) {
		in := drainingInput(3)
		in.Object.DeletionTime = in.Now
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleDeleteBegins, d.Rule)
		require.Equal(t, phase.Terminating, d.Status.Phase)
		require.Equal(t, lifecycle.StageGetVMStatus, d.Status.Stage)
		require.Zero(t, d.Status.Flags&(lifecycle.FlagDraining|lifecycle.FlagDeletingPods))
	})
	t.Run("deletion during the drain's op: the outcome hands over to deletion", func(t *testing.T) {
		in := inPlaceInput(selected, lifecycle.ReasonCandidateForUpdate)
		d := step(t, cfg, in)
		in = then(in, d, driverapi.Result{})
		in.Object.DeletionTime = in.Now
		d = step(t, cfg, in)
		require.Equal(t, phase.Terminating, d.Status.Phase)
	})
	t.Run("deletion while the agent updates: Terminating", func(t *testing.T) {
		in := updatingPhaseInput(selected, lifecycle.ReasonReadyForUpdate)
		in.Object.DeletionTime = in.Now
		d := step(t, cfg, in)
		require.Equal(t, phase.Terminating, d.Status.Phase)
	})
	t.Run("hot update and in-place update requested together: the in-place update first", func(t *testing.T) {
		in := inPlaceInput(selected, lifecycle.ReasonCandidateForUpdate)
		in.Object.UpdateGeneration, in.Status.AppliedGeneration = 2, 1
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleInPlaceDrain, d.Rule)
		require.False(t, d.HasCall(), "no UpdateMachine while the node is drained for its in-place update")
		in = updatingPhaseInput(selected, lifecycle.ReasonReadyForUpdate)
		in.Object.UpdateGeneration, in.Status.AppliedGeneration = 2, 1
		d = step(t, cfg, in)
		require.False(t, d.HasCall(), "nor while the agent updates it")
		// Back to Running: the hot update goes on.
		in = runningInput()
		in.Object.UpdateGeneration, in.Status.AppliedGeneration = 2, 1
		require.Equal(t, lifecycle.RuleUpdate, step(t, cfg, in).Rule)
	})
	t.Run("InPlaceUpdateSuccessful, node healthy: Running, re-joined", func(t *testing.T) {
		in := updatingPhaseInput(candidate|lifecycle.UpdateSucceeded, lifecycle.ReasonUpdateSuccessful)
		in.Status.Phase = phase.InPlaceUpdateSuccessful
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleHealthRejoined, d.Rule)
		require.Equal(t, phase.Running, d.Status.Phase)
	})
	t.Run("InPlaceUpdateSuccessful, node unhealthy: Unknown, so its health timeout applies (deviation)", func(t *testing.T) {
		in := updatingPhaseInput(candidate|lifecycle.UpdateSucceeded, lifecycle.ReasonUpdateSuccessful)
		in.Status.Phase = phase.InPlaceUpdateSuccessful
		in.Node.Conditions = append(cloneConds(notReadyNode().Conditions), in.Node.Conditions[2])
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleHealthUnhealthy, d.Rule)
		require.Equal(t, phase.Unknown, d.Status.Phase)
	})
	t.Run("InPlaceUpdateFailed past the health timeout with a grant: confirmed, then Failed", func(t *testing.T) {
		in := updatingPhaseInput(candidate|lifecycle.UpdateFailed, lifecycle.ReasonUpdateFailed)
		in.Status.Phase = phase.InPlaceUpdateFailed
		in.Status.PhaseSince = lifecycle.StampOf(in.Now.Add(-cfg.HealthTimeout))
		in.Grant.Fail = true
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleHealthConfirm, d.Rule)
		d = step(t, cfg, then(in, d, driverapi.Result{ProviderID: providerID}))
		require.Equal(t, lifecycle.RuleHealthTimeout, d.Rule)
		require.Equal(t, phase.Failed, d.Status.Phase)
	})
	t.Run("InPlaceUpdating waits no later than its timeout", func(t *testing.T) {
		in := updatingPhaseInput(selected, lifecycle.ReasonReadyForUpdate)
		in.Status.PhaseSince = lifecycle.StampOf(in.Now.Add(-19 * time.Minute))
		d := step(t, cfg, in)
		require.Equal(t, time.Minute, d.Requeue)
		require.Equal(t, lifecycle.WaitInPlaceUpdate, d.Wait.For)
	})
	t.Run("an Unknown machine's selected node is not drained", func(t *testing.T) {
		in := inPlaceInput(selected, lifecycle.ReasonCandidateForUpdate)
		in.Node.Conditions = append(cloneConds(notReadyNode().Conditions), in.Node.Conditions[2])
		in.Status.Phase = phase.Unknown
		in.Status.Conditions = in.Node.Conditions
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.StageNone, d.Status.Stage)
		require.Equal(t, []string{conditionLine(lifecycle.ReasonSelectedForUpdate)}, d.Lines(), "U4's condition, as MCM, but no drain")
	})
}

// A shell that owns its machines' in-place updates asks one through the
// object's InPlaceGeneration: the lifecycle labels the node, and once the
// agent's update brought the machine Running again, records the
// generation, takes the labels off and uncordons the node.
func TestInPlaceOwnRequest(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	t.Run("asked: the node is labelled candidate and selected", func(t *testing.T) {
		in := inPlaceInput(0, "")
		in.Object.InPlaceGeneration, in.Status.InPlaceGeneration = 2, 1
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleInPlaceRequest, d.Rule)
		require.Equal(t, []string{"label-node node-vm-1 " + lifecycle.CandidateForUpdateLabel + "=true",
			"label-node node-vm-1 " + lifecycle.SelectedForUpdateLabel + "=true"}, d.Lines())
		require.False(t, d.Changed)
	})
	t.Run("done: recorded, uncordoned, labels off", func(t *testing.T) {
		in := inPlaceInput(selected|lifecycle.UpdateSucceeded, lifecycle.ReasonUpdateSuccessful)
		in.Node.Unschedulable = true
		in.Object.InPlaceGeneration, in.Status.InPlaceGeneration = 2, 1
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleInPlaceDone, d.Rule)
		require.Equal(t, int64(2), d.Status.InPlaceGeneration)
		require.Equal(t, []string{"event Normal InPlaceUpdated (inplace.done)", "uncordon node-vm-1",
			"remove-node-label node-vm-1 " + lifecycle.CandidateForUpdateLabel,
			"remove-node-label node-vm-1 " + lifecycle.SelectedForUpdateLabel,
			"remove-node-label node-vm-1 " + lifecycle.UpdateResultLabel}, d.Lines())
		// A write of them that failed: made again at the next pass, though
		// the generation is recorded.
		in.Status = d.Status
		d = step(t, cfg, in)
		require.Equal(t, lifecycle.RuleInPlaceDone, d.Rule)
		require.Contains(t, d.Lines(), "remove-node-label node-vm-1 "+lifecycle.UpdateResultLabel)
	})
	t.Run("the agent's success on a node that lost its candidate label: UpdateSuccessful, then done", func(t *testing.T) {
		in := inPlaceInput(lifecycle.UpdateSucceeded, lifecycle.ReasonReadyForUpdate)
		in.Object.InPlaceGeneration, in.Status.InPlaceGeneration = 2, 1
		d := step(t, cfg, in)
		require.Equal(t, []string{conditionLine(lifecycle.ReasonUpdateSuccessful)}, d.Lines(),
			"the condition stops sending the agent before the node is given back")
		in = inPlaceInput(lifecycle.UpdateSucceeded, lifecycle.ReasonUpdateSuccessful)
		in.Object.InPlaceGeneration, in.Status.InPlaceGeneration = 2, 1
		d = step(t, cfg, in)
		require.Equal(t, lifecycle.RuleInPlaceDone, d.Rule)
		require.Equal(t, int64(2), d.Status.InPlaceGeneration)
	})
	t.Run("a request written in part is completed", func(t *testing.T) {
		in := inPlaceInput(candidate, "")
		in.Object.InPlaceGeneration, in.Status.InPlaceGeneration = 2, 1
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleInPlaceRequest, d.Rule)
		require.Equal(t, []string{"label-node node-vm-1 " + lifecycle.SelectedForUpdateLabel + "=true"}, d.Lines())
	})
	t.Run("the generation asked is the one the node is at: nothing", func(t *testing.T) {
		in := inPlaceInput(0, "")
		in.Object.InPlaceGeneration, in.Status.InPlaceGeneration = 2, 2
		require.Equal(t, lifecycle.RuleHealthy, step(t, cfg, in).Rule)
	})
	t.Run("a failed update is left to fail the machine", func(t *testing.T) {
		in := inPlaceInput(selected|lifecycle.UpdateFailed, lifecycle.ReasonUpdateFailed)
		in.Object.InPlaceGeneration, in.Status.InPlaceGeneration = 2, 1
		require.Equal(t, lifecycle.RuleHealthy, step(t, cfg, in).Rule)
	})
	t.Run("a new instance is created at the generation asked", func(t *testing.T) {
		in := newInput()
		in.Object.InPlaceGeneration = 3
		ds := run(t, cfg, in, notFound)
		require.Equal(t, lifecycle.RuleCreateVMNotFound, ds[1].Rule)
		require.Equal(t, int64(3), ds[1].Status.InPlaceGeneration)
	})
}

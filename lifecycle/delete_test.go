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

// Tests of the deletion flow (delete.go). This file: MCM's deletion dispatch
// rows (X0-X10 in doc/mcm-rows.md), the adoption of MCM's descriptions, a
// deletion during or after a creation, and the happy path. The rows of each
// step (S1-S5) and the proof of the node: delete_steps_test.go.

// deletingInput is a Running machine whose deletion was requested 30s ago.
func deletingInput() lifecycle.Input {
	in := runningInput()
	in.Object.DeletionTime = in.Now.Add(-30 * time.Second)
	in.Node.VolumesAttached = 1
	return in
}

// terminating is deletingInput already Terminating, at the given stage, with
// the given flags and last operation.
func terminating(stage lifecycle.Stage, flags lifecycle.Flags, d lastop.Desc) func() lifecycle.Input {
	return func() lifecycle.Input {
		in := deletingInput()
		in.Status.Phase = phase.Terminating
		in.Status.PhaseSince = lifecycle.StampOf(in.Object.DeletionTime)
		in.Status.Stage = stage
		in.Status.Flags = flags
		in.Status.LastOp = lastop.Operation{Type: lastop.TypeDelete, State: lastop.StateProcessing, Desc: d}
		return in
	}
}

// writeStopped plays in's decision and reports that its effects stopped at
// index ran with w and the error text.
func writeStopped(in lifecycle.Input, ran int, w lifecycle.Write, msg string) lifecycle.Input {
	d := lifecycle.Step(lifecycle.DefaultConfig(), in)
	in.Status = d.Status
	in.Outcome = &lifecycle.Outcome{OpID: d.OpID, Ran: ran, Stopped: w, Error: msg}
	return in
}

func delOp(s lastop.State, desc string) op { return op{lastop.TypeDelete, s, "", desc} }

const (
	getVMStatus   = "Set machine status to termination. Now, getting VM Status"
	deleteVMCall  = "call DeleteMachine machine-1 providerID=fake:///eu-1/vm-1 uid=uid-1"
	removeFinal   = "remove-finalizer " + lifecycle.Finalizer
	pdbError      = "Cannot evict pod as it would violate the pod's disruption budget"
	nodeCondition = "set-node-condition node-vm-1 Terminating=True reason=ScaleDown"
	cordonNode    = "cordon node-vm-1"
	drainNormal   = "drain node-vm-1"
	drainForced   = "drain node-vm-1 force"
)

var (
	drainEffects      = []string{nodeCondition, cordonNode, drainNormal}
	nodeDeleteEffects = []string{"remove-node-finalizer node-vm-1 " + lifecycle.NodeFinalizer, "delete-node node-vm-1"}
)

// TestDeletionDispatchRows has one case per dispatch row of MCM's deletion
// flow (X0-X10 in doc/mcm-rows.md).
func TestDeletionDispatchRows(t *testing.T) {
	runRows(t, []rowCase{
		{
			name: "X0 the class is unavailable: deletion waits by the problem's period",
			in: func() lifecycle.Input {
				in := deletingInput()
				in.Problem = lifecycle.ProblemClassUnavailable
				return in
			},
			want: want{rule: lifecycle.RuleDeleteProblem, phase: phase.Running, op: joinedOp, period: retry.Long},
		},
		{
			name: "X1 a creation in flight does not hold deletion (deviation, doc/mcm-compat.md)",
			in: func() lifecycle.Input {
				in := newInput()
				in.Status.Stage = lifecycle.StageCreating
				in.Object.DeletionTime = in.Now
				return in
			},
			want: want{rule: lifecycle.RuleDeleteBegins, phase: phase.Terminating, period: retry.Short, changed: true,
				op: delOp(lastop.StateProcessing, getVMStatus), effects: []string{"event Normal MachineTerminating (delete.begins)"}},
		},
		{
			name: "X2 the finalizer is missing: Long, nothing done",
			in:   func() lifecycle.Input { in := deletingInput(); in.Object.Finalizer = false; return in },
			want: want{rule: lifecycle.RuleDeleteNoFinalizer, phase: phase.Running, op: joinedOp, period: retry.Long},
		},
		{
			name: "X3 not yet Terminating: Terminating, GetVMStatus",
			in:   deletingInput,
			want: want{rule: lifecycle.RuleDeleteBegins, phase: phase.Terminating, period: retry.Short, changed: true,
				op: delOp(lastop.StateProcessing, getVMStatus), effects: []string{"event Normal MachineTerminating (delete.begins)"}},
			check: func(t *testing.T, _ lifecycle.Input, d lifecycle.Decision) {
				require.Equal(t, lifecycle.StageGetVMStatus, d.Status.Stage)
			},
		},
		{
			name: "X4 GetVMStatus: the node is known, the drain follows",
			in:   terminating(lifecycle.StageGetVMStatus, 0, lastop.DescTerminating),
			want: want{rule: lifecycle.RuleDeleteNodeKnown, phase: phase.Terminating, period: retry.Short, changed: true,
				op: delOp(lastop.StateProcessing, "Initiate node drain"), effects: drainEffects},
		},
		{
			name: "X5 Drain: condition, cordon and drain",
			in:   terminating(lifecycle.StageDrain, 0, lastop.DescInitiateDrain),
			want: want{rule: lifecycle.RuleDeleteDrain, phase: phase.Terminating, period: retry.Short,
				op: delOp(lastop.StateProcessing, "Initiate node drain"), effects: drainEffects},
		},
		{
			name: "X6 Volumes: live attachments are deleted",
			in: func() lifecycle.Input {
				in := terminating(lifecycle.StageVolumes, lifecycle.FlagDrainForced, lastop.DescForceDrainSucceeded)()
				in.VolumeAttachments = 2
				return in
			},
			want: want{rule: lifecycle.RuleDeleteVolumes, phase: phase.Terminating, period: retry.Short,
				op:      delOp(lastop.StateProcessing, "Force Drain successful. Delete Volume Attachments"),
				effects: []string{"delete-volume-attachments node-vm-1"}},
		},
		{
			name: "X7 DeleteVM: DeleteMachine",
			in:   terminating(lifecycle.StageDeleteVM, lifecycle.FlagDrainSucceeded, lastop.DescDrainSucceeded),
			want: want{rule: lifecycle.RuleDeleteVM, phase: phase.Terminating, period: retry.Short,
				op: delOp(lastop.StateProcessing, "Drain successful. Initiate VM deletion"), effects: []string{deleteVMCall}},
		},
		{
			name: "X8 DeleteNode: the node's finalizer and the node",
			in:   terminating(lifecycle.StageDeleteNode, lifecycle.FlagDrainSucceeded|lifecycle.FlagTerminated, lastop.DescVMDeleted),
			want: want{rule: lifecycle.RuleDeleteNode, phase: phase.Terminating, period: retry.Short,
				op: delOp(lastop.StateProcessing, "VM deletion was successful. Initiate node object deletion"), effects: nodeDeleteEffects},
		},
		{
			name: "X9 RemoveFinalizer: the finalizer goes, Long",
			in: terminating(lifecycle.StageRemoveFinalizer, lifecycle.FlagDrainSucceeded|lifecycle.FlagTerminated,
				lastop.DescNodeDeleted),
			want: want{rule: lifecycle.RuleDeleteRemoveFinalizer, phase: phase.Terminating, period: retry.Long,
				op:      delOp(lastop.StateProcessing, `Deletion of Node Object "node-vm-1" is successful. Initiate machine object finalizer removal`),
				effects: []string{removeFinal}},
		},
		{
			name: "X9 once the finalizer is removed the machine is gone for the lifecycle",
			in: func() lifecycle.Input {
				in := terminating(lifecycle.StageRemoveFinalizer, lifecycle.FlagDrainSucceeded|lifecycle.FlagTerminated,
					lastop.DescNodeDeleted)()
				in.Object.Finalizer = false
				return in
			},
			want: want{rule: lifecycle.RuleDeleteDone, phase: phase.Terminating, period: 0,
				op: delOp(lastop.StateProcessing, `Deletion of Node Object "node-vm-1" is successful. Initiate machine object finalizer removal`)},
		},
		{
			name: "X10 MachineSet's \"Deleting machine from cloud provider\": deletion restarts at GetVMStatus",
			in: func() lifecycle.Input {
				in := terminating(lifecycle.StageNone, 0, lastop.DescMachineSetDeleting)()
				return in
			},
			want: want{rule: lifecycle.RuleDeleteRestart, phase: phase.Terminating, period: retry.Short, changed: true,
				op: delOp(lastop.StateProcessing, "Initiate node drain"), effects: drainEffects},
		},
		{
			name: "X10 unknown text restarts too",
			in: func() lifecycle.Input {
				in := terminating(lifecycle.StageNone, 0, lastop.DescUnknown)()
				in.Status.LastOp.Detail = "something else entirely"
				return in
			},
			want: want{rule: lifecycle.RuleDeleteRestart, phase: phase.Terminating, period: retry.Short, changed: true,
				op: delOp(lastop.StateProcessing, "Initiate node drain"), effects: drainEffects},
		},
	})
}

// MCM's descriptions are parsed once to adopt a machine MCM was deleting:
// the deletion resumes at the step the text names (X4-X9).
func TestDeletionAdoptsMCMDescriptions(t *testing.T) {
	cases := []struct {
		description string
		effects     []string
	}{
		{getVMStatus, drainEffects},
		{"Initiate node drain", drainEffects},
		{"Drain failed due to - boom. Will retry in next sync. Initiate node drain", drainEffects},
		{"Drain successful. Initiate VM deletion", []string{deleteVMCall}},
		{"VM deletion was successful. Initiate node object deletion", nodeDeleteEffects},
		{`Deletion of Node Object "node-vm-1" is successful. Initiate machine object finalizer removal`, []string{removeFinal}},
		{"Some future MCM text. Initiate VM deletion", []string{deleteVMCall}},
	}
	for _, tc := range cases {
		t.Run(tc.description, func(t *testing.T) {
			in := terminating(lifecycle.StageNone, 0, lastop.DescNone)()
			in.Status.LastOp, _ = lastop.FromLastOperation(lastop.LastOperation{Description: tc.description,
				Type: lastop.TypeDelete, State: lastop.StateProcessing})
			d := step(t, lifecycle.DefaultConfig(), in)
			require.Equal(t, lifecycle.RuleDeleteAdopted, d.Rule)
			require.Equal(t, tc.effects, d.Lines())
		})
	}
}

// When forced, a failed condition update does not stop the cordon and the
// drain (MCM only logs it): they are asked again without the condition, and
// a failure of those goes on to the volume attachments.
func TestForcedDrainAfterAFailedConditionUpdate(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := terminating(lifecycle.StageDrain, 0, lastop.DescInitiateDrain)()
	in.Object.ForceDeletion = true
	in.VolumeAttachments = 1
	next := writeStopped(in, 0, lifecycle.WriteConflict, "the object has been modified")
	d := step(t, cfg, next)
	require.Equal(t, lifecycle.RuleDeleteDrainForce, d.Rule)
	require.Equal(t, []string{cordonNode, drainForced}, d.Lines())
	// The cordon and drain succeed: Force Drain successful.
	ok := step(t, cfg, then(next, d, driverapi.Result{}))
	require.Equal(t, lifecycle.RuleDeleteForceDrained, ok.Rule)
	// The drain fails: deletion goes on (S2g).
	next2 := next
	next2.Status = d.Status
	next2.Outcome = &lifecycle.Outcome{OpID: d.OpID, Ran: 1, Stopped: lifecycle.WriteFailed, Error: pdbError}
	failed := step(t, cfg, next2)
	require.Equal(t, lifecycle.RuleDeleteDrainForcedOn, failed.Rule)
	require.True(t, failed.Status.Flags.Has(lifecycle.FlagDrainForced))
}

// A node of the recorded name that carries another instance's providerID
// (a name reused with an IP) is neither drained nor deleted.
func TestDeletionLeavesANodeOfAnotherInstanceAlone(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := terminating(lifecycle.StageDrain, 0, lastop.DescInitiateDrain)()
	in.Node.ProviderID = "fake:///eu-1/vm-other" // same name, another instance
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleDeleteDrainSkipped, d.Rule)
	require.Equal(t, []string{deleteVMCall}, d.Lines())
	in = terminating(lifecycle.StageDeleteNode, lifecycle.FlagDrainSkipped|lifecycle.FlagTerminated, lastop.DescVMDeleted)()
	in.Node.ProviderID = "fake:///eu-1/vm-other"
	d = step(t, cfg, in)
	require.Equal(t, []string{removeFinal}, d.Lines(), "not deleted")
}

// MCM checks the class (X0) before the finalizer (X2).
func TestDeletionChecksTheClassFirst(t *testing.T) {
	in := deletingInput()
	in.Object.Finalizer = false
	in.Problem = lifecycle.ProblemClassNotReady
	d := step(t, lifecycle.DefaultConfig(), in)
	require.Equal(t, lifecycle.RuleDeleteProblem, d.Rule)
	require.Equal(t, retry.Short, d.Period)
}

// A NotReady condition without a transition time has been so forever (MCM's
// time.Since of the zero time): the drain is forced.
func TestDrainForcedByAConditionWithoutTime(t *testing.T) {
	in := terminating(lifecycle.StageDrain, 0, lastop.DescInitiateDrain)()
	in.Status.Conditions = []lifecycle.Condition{{Type: "Ready", Status: lifecycle.ConditionFalse}}
	d := step(t, lifecycle.DefaultConfig(), in)
	require.Equal(t, "drain node-vm-1 force", d.Lines()[2])
}

// MCM never reaches the Terminating condition's reason Unhealthy (MCM
// design problem d.9 in doc/mcm-rows.md). Here a Failed machine's node is
// marked Terminating with reason Unhealthy, a scaled-down one with
// ScaleDown.
func TestTerminatingConditionReason(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := deletingInput()
	in.Status.Phase = phase.Failed
	d := step(t, cfg, in)
	require.True(t, d.Status.Flags.Has(lifecycle.FlagWasFailed))
	d = step(t, cfg, then(in, d, driverapi.Result{}))
	require.Equal(t, "set-node-condition node-vm-1 Terminating=True reason=Unhealthy", d.Lines()[0])
	require.Equal(t, "Machine Controller is terminating failed machine", lifecycle.ConditionMessage(lifecycle.ReasonUnhealthy))
	require.Equal(t, "Machine Controller is scaling down machine", lifecycle.ConditionMessage(lifecycle.ReasonScaleDown))
}

// The finalizer goes only after the VM is confirmed gone, and DeleteMachine
// only after the drain: a status without these facts is sent back.
func TestDeletionNeverSkipsTheVMOrTheDrain(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	d := step(t, cfg, terminating(lifecycle.StageRemoveFinalizer, lifecycle.FlagDrainSucceeded, lastop.DescNodeDeleted)())
	require.Equal(t, []string{deleteVMCall}, d.Lines(), "no finalizer removal before the VM is confirmed gone")
	d = step(t, cfg, terminating(lifecycle.StageDeleteVM, 0, lastop.DescDrainSucceeded)())
	require.Equal(t, drainEffects, d.Lines(), "no DeleteMachine before the drain")
}

// A Terminating machine without a deletion time (MCM's MachineSet is about
// to delete it) is left alone.
func TestTerminatingWithoutDeletionTimeWaits(t *testing.T) {
	in := runningInput()
	in.Status.Phase = phase.Terminating
	d := step(t, lifecycle.DefaultConfig(), in)
	require.Equal(t, lifecycle.RuleIdle, d.Rule)
	require.Empty(t, d.Lines())
}

// Deletion after a crash right after CreateMachine finds the instance by
// the creation key and records it before deleting it.
func TestDeletionAfterACrashedCreateFindsTheInstance(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := newInput()
	ds := run(t, cfg, in, notFound)
	in.Status = ds[1].Status // the intent was saved; the shell crashed after the call
	in.Object.DeletionTime = in.Now
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleDeleteBegins, d.Rule)
	in = then(in, d, driverapi.Result{})
	d = step(t, cfg, in)
	require.Equal(t, lifecycle.RuleDeleteLookup, d.Rule)
	require.Equal(t, "uid-1/0", d.Call.IdempotencyKey())
	d = step(t, cfg, then(in, d, ok(providerID, nodeName)))
	require.Equal(t, providerID, d.Status.ProviderID)
	require.Equal(t, nodeName, d.Status.NodeName)
}

// MCM issue 1035
// (https://github.com/gardener/machine-controller-manager/issues/1035):
// deletion that arrives while CreateMachine is in flight. The result is
// recorded first, so deletion finds the instance.
func TestDeviationDeletionDuringCreationKeepsTheInstance(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := newInput()
	ds := run(t, cfg, in, notFound)
	in = then(in, ds[1], ok(providerID, nodeName))
	in.Object.DeletionTime = in.Now
	d := step(t, cfg, in)
	require.Equal(t, providerID, d.Status.ProviderID, "the created instance is recorded")
	require.Equal(t, phase.Terminating, d.Status.Phase)
	require.Equal(t, lifecycle.RuleDeleteBegins, d.Rule)
}

// An answer to another flow's call that comes back after deletion was
// requested ends that flow: a failed CreateMachine does not put the
// machine into CrashLoopBackOff with a backoff before deletion; deletion
// begins in the same decision.
func TestDeletionEndsACreationWhoseCallFailed(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := newInput()
	ds := run(t, cfg, in, notFound)
	in = then(in, ds[1], fail(driverapi.Internal, "boom"))
	in.Object.DeletionTime = in.Now
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleDeleteBegins, d.Rule)
	require.Equal(t, phase.Terminating, d.Status.Phase)
	require.Zero(t, d.Status.Failures.Create, "the failed creation is not counted")
	require.Zero(t, d.Status.RetryAfter)
	require.Equal(t, retry.Short, d.Period)
}

// A CreateMachine that answers, after deletion was requested, with an
// instance on a stale node object records the instance as stale (without
// the node's name, which is another instance's) and begins deletion, which
// deletes the instance by its providerID and leaves the node alone.
func TestDeletionRecordsAStaleInstanceCreatedMeanwhile(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := newInput()
	old := lifecycle.Node{Name: "old-node", ProviderID: "fake:///eu-1/vm-0"}
	ds := run(t, cfg, in, notFound)
	in = thenCreated(in, ds[1], ok(providerID, "old-node"), old)
	in.Object.DeletionTime = in.Now
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleDeleteBegins, d.Rule)
	require.Equal(t, providerID, d.Status.ProviderID)
	require.True(t, d.Status.Flags.Has(lifecycle.FlagStaleInstance))
	require.Empty(t, d.Status.NodeName)
}

// A deletion step's outcome goes on with deletion as a pass would: when
// the class became unavailable meanwhile, deletion holds at the class
// check (X0) rather than going on to the next stage's effects.
func TestDeletionOutcomeHoldsAtTheClassCheck(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := terminating(lifecycle.StageDeleteVM, lifecycle.FlagDrainSucceeded, lastop.DescDrainSucceeded)()
	d := step(t, cfg, in)
	require.Equal(t, driverapi.MethodDelete, d.Call.Method)
	in = then(in, d, driverapi.Result{})
	in.Problem = lifecycle.ProblemClassUnavailable
	d = step(t, cfg, in)
	require.Equal(t, lifecycle.RuleDeleteVMDeleted, d.Rule, "the outcome's row")
	require.Equal(t, lifecycle.StageDeleteNode, d.Status.Stage)
	require.True(t, d.Status.Flags.Has(lifecycle.FlagTerminated))
	require.Zero(t, d.Effects.Len(), "no node deletion before the class is back")
	require.Equal(t, retry.Long, d.Period)
}

// A machine deleted before any instance was recorded may share its name
// with an earlier machine whose instance still runs: that instance's node
// carries the name's machine-name label and its own providerID. The
// deletion asks the provider before it drains such a node, and leaves it
// alone unless the provider names it as this machine's (found by the
// fleet simulator: seed 13 with force-removed machines and reused names).
func TestDeletionWithoutInstanceAsksBeforeDrainingALabelledNode(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	base := newInput()
	base.Status.Phase = phase.CrashLoopBackOff
	base.Status.PhaseSince = lifecycle.StampOf(t0)
	base.Object.DeletionTime = base.Now
	base.Node = healthyNode()
	base.Node.Name, base.Node.ProviderID = "old-node", "fake:///eu-1/vm-OLD"

	d := step(t, cfg, base)
	require.Equal(t, lifecycle.RuleDeleteBegins, d.Rule)
	in := then(base, d, driverapi.Result{})
	d = step(t, cfg, in)
	require.Equal(t, driverapi.MethodGetStatus, d.Call.Method, "the provider is asked first: %s", d.String())
	require.NotEqual(t, "old-node", d.Status.NodeName)

	t.Run("not found: the node is not drained or deleted", func(t *testing.T) {
		in := then(in, d, fail(driverapi.NotFound, "no instance"))
		for range 8 {
			d := step(t, cfg, in)
			for _, l := range d.Lines() {
				require.NotContains(t, l, "old-node", "rule %s", d.Rule)
			}
			if d.Status.Phase != phase.Terminating || d.Call.Method == driverapi.MethodNone && d.Effects.Len() == 0 && !d.Changed {
				break
			}
			in = then(in, d, fail(driverapi.NotFound, "no instance"))
		}
	})
	t.Run("the provider names the node's instance: it is drained", func(t *testing.T) {
		r := ok("fake:///eu-1/vm-OLD", "old-node")
		in := then(in, d, r)
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleDeleteLookupOK, d.Rule)
		require.Equal(t, "old-node", d.Status.NodeName)
		require.Equal(t, lifecycle.KindDrain, d.Effects.Last().Kind, d.String())
	})
}

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

// A deletion time at the Unix epoch is the zero stamp, which elsewhere
// means unset; the machine is deleted all the same, and its decision waits
// for the deletion like any other.
func TestDeletionAtTheUnixEpochIsADeletion(t *testing.T) {
	in := deletingInput()
	in.Object.DeletionTime = time.Unix(0, 0)
	d := step(t, lifecycle.DefaultConfig(), in)
	require.Equal(t, phase.Terminating, d.Status.Phase, d.String())
	require.Equal(t, lifecycle.WaitDeletion, d.Wait.For, d.String())
}

// A bootstrap token that outlived the change to Terminating (its deletion
// failed, or the pass crashed after the status was saved, or the machine
// was adopted from a controller that leaves tokens) is deleted at the
// start of each deletion pass while it exists, before the stage's own
// effects, and not again within the pass.
func TestDeletionDeletesATokenLeftBehind(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	for _, in := range []lifecycle.Input{
		terminating(lifecycle.StageGetVMStatus, 0, lastop.DescTerminating)(),
		terminating(lifecycle.StageDeleteVM, lifecycle.FlagDrainSucceeded, lastop.DescDrainSucceeded)(),
		terminating(lifecycle.StageRemoveFinalizer, lifecycle.FlagDrainSucceeded|lifecycle.FlagTerminated, lastop.DescNodeDeleted)(),
		terminating(lifecycle.StageNone, 0, lastop.DescInitiateDrain)(), // adopted
	} {
		without := step(t, cfg, in)
		in.TokenExists = true
		d := step(t, cfg, in)
		require.Equal(t, without.Rule, d.Rule, "the token changes no decision")
		require.Equal(t, append([]string{"delete-bootstrap-token machine-1"}, without.Lines()...), d.Lines())

		// Within the pass, the next step does not ask again.
		if without.Call.Method != driverapi.MethodNone {
			next := step(t, cfg, then(in, d, driverapi.Result{Code: driverapi.OK}))
			require.NotContains(t, next.Lines(), "delete-bootstrap-token machine-1")
		}
	}
}

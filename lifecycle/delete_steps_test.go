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

// Tests of the deletion flow (delete.go), step by step: MCM's rows of the
// VM status, the drain, the volume attachments, the VM and the node (S1-S5
// in doc/mcm-rows.md), and the node a deletion may act on. The dispatch of
// deletion: delete_test.go.

// TestDeletionGetVMStatusRows has one case per row of S1 (S1a-S1j).
func TestDeletionGetVMStatusRows(t *testing.T) {
	noNode := func() lifecycle.Input {
		in := terminating(lifecycle.StageGetVMStatus, 0, lastop.DescTerminating)()
		in.Node, in.Status.NodeName, in.Object.NodeLabel = lifecycle.Node{}, "", ""
		return in
	}
	skippedToVM := []string{"call DeleteMachine machine-1 providerID=fake:///eu-1/vm-1 uid=uid-1"}
	runRows(t, []rowCase{
		{
			name: "S1a no target cluster: skip drain and volume attachments, DeleteMachine next",
			cfg:  func(c *lifecycle.Config) { c.NoTargetCluster = true },
			in:   terminating(lifecycle.StageGetVMStatus, 0, lastop.DescTerminating),
			want: want{rule: lifecycle.RuleDeleteNoTargetCluster, phase: phase.Terminating, period: retry.Short, changed: true,
				op:      delOp(lastop.StateProcessing, "Running without target cluster, skipping node drain and volume attachment deletion. Initiate VM deletion"),
				effects: skippedToVM},
		},
		{
			name: "S1b the node label is set: no driver call, the drain follows",
			in:   terminating(lifecycle.StageGetVMStatus, 0, lastop.DescTerminating),
			want: want{rule: lifecycle.RuleDeleteNodeKnown, phase: phase.Terminating, period: retry.Short, changed: true,
				op: delOp(lastop.StateProcessing, "Initiate node drain"), effects: drainEffects},
		},
		{
			name: "S1c no label, the node found by its machine-name label: recorded, not written back (deviation, doc/mcm-compat.md)",
			in: func() lifecycle.Input {
				in := terminating(lifecycle.StageGetVMStatus, 0, lastop.DescTerminating)()
				in.Status.NodeName, in.Object.NodeLabel = "", ""
				return in
			},
			want: want{rule: lifecycle.RuleDeleteNodeKnown, phase: phase.Terminating, period: retry.Short, changed: true,
				op: delOp(lastop.StateProcessing, "Initiate node drain"), effects: drainEffects},
			check: func(t *testing.T, _ lifecycle.Input, d lifecycle.Decision) {
				require.Equal(t, nodeName, d.Status.NodeName)
			},
		},
		{
			name: "S1 no node known: GetMachineStatus",
			in:   noNode,
			want: want{rule: lifecycle.RuleDeleteLookup, phase: phase.Terminating, period: retry.Short,
				op:      delOp(lastop.StateProcessing, getVMStatus),
				effects: []string{"call GetMachineStatus machine-1 providerID=fake:///eu-1/vm-1 uid=uid-1 key=uid-1/0"}},
		},
		{
			// The observation of this step was made without the name: the
			// drain comes in the next step, which observes the node by it.
			name:    "S1d GetMachineStatus names the node: recorded, the drain follows",
			in:      noNode,
			results: []driverapi.Result{ok(providerID, nodeName)},
			want: want{rule: lifecycle.RuleDeleteLookupOK, phase: phase.Terminating, period: retry.Short, changed: true,
				op: delOp(lastop.StateProcessing, "Initiate node drain")},
			check: func(t *testing.T, in lifecycle.Input, d lifecycle.Decision) {
				require.Equal(t, nodeName, d.Status.NodeName)
				require.Equal(t, lifecycle.StageDrain, d.Status.Stage)
				next := in
				next.Status, next.Outcome, next.Node = d.Status, nil, healthyNode()
				drain := step(t, lifecycle.DefaultConfig(), next)
				require.Equal(t, drainEffects, drain.Lines())
			},
		},
		{
			name:    "S1e GetMachineStatus undecodable: Failed, Long",
			in:      noNode,
			results: []driverapi.Result{undecodable("tls: handshake failure")},
			want: want{rule: lifecycle.RuleDeleteLookupUndecodable, phase: phase.Terminating, period: retry.Long, changed: true,
				op: delOp(lastop.StateFailed, "Error occurred with decoding machine error status while getting VM status, aborting without retry. tls: handshake failure "+getVMStatus)},
		},
		{
			name:    "S1f GetMachineStatus Unimplemented: on to the drain (no node: skipped, DeleteMachine next)",
			in:      noNode,
			results: []driverapi.Result{unimplemented},
			want: want{rule: lifecycle.RuleDeleteLookupUnimplemented, phase: phase.Terminating, period: retry.Short, changed: true,
				op: delOp(lastop.StateProcessing, "Skipping drain as nodeName is not a valid one for machine. Initiate VM deletion"), effects: skippedToVM},
		},
		{
			name:    "S1g NotFound: on to the drain anyway, DeleteMachine is still called (as MCM does since its fix of DeleteMachine being skipped)",
			in:      noNode,
			results: []driverapi.Result{notFound},
			want: want{rule: lifecycle.RuleDeleteLookupNotFound, phase: phase.Terminating, period: retry.Short, changed: true,
				op: delOp(lastop.StateProcessing, "Skipping drain as nodeName is not a valid one for machine. Initiate VM deletion"), effects: skippedToVM},
		},
		{
			name:    "S1h transient code: Failed, Short",
			in:      noNode,
			results: []driverapi.Result{fail(driverapi.DeadlineExceeded, "timeout")},
			want: want{rule: lifecycle.RuleDeleteLookupRetry, phase: phase.Terminating, period: retry.Short, changed: true,
				op: delOp(lastop.StateFailed, "Error occurred with decoding machine error status while getting VM status, aborting with retry. "+getVMStatus)},
		},
		{
			name:    "S1i Uninitialized: on to the drain",
			in:      noNode,
			results: []driverapi.Result{fail(driverapi.Uninitialized, "half made")},
			want: want{rule: lifecycle.RuleDeleteLookupUninitialized, phase: phase.Terminating, period: retry.Short, changed: true,
				op: delOp(lastop.StateProcessing, "Skipping drain as nodeName is not a valid one for machine. Initiate VM deletion"), effects: skippedToVM},
		},
		{
			name:    "S1j another code: Failed, Medium",
			in:      noNode,
			results: []driverapi.Result{fail(driverapi.PermissionDenied, "no access")},
			want: want{rule: lifecycle.RuleDeleteLookupFailed, phase: phase.Terminating, period: retry.Medium, changed: true,
				op: delOp(lastop.StateFailed, "Error occurred with decoding machine error status while getting VM status, aborting without retry. machine code: machine codes error: code = [PermissionDenied] message = [no access] "+getVMStatus)},
		},
	})
}

// TestDeletionDrainRows has one case per row of S2 (S2a-S2h).
func TestDeletionDrainRows(t *testing.T) {
	atDrain := terminating(lifecycle.StageDrain, 0, lastop.DescInitiateDrain)
	forced := func() lifecycle.Input {
		in := atDrain()
		in.Object.ForceDeletion = true
		in.VolumeAttachments = 1
		return in
	}
	const forcedOn = "Drain failed due to - " + pdbError + ". However, since it's a force deletion shall continue deletion of VM. Delete Volume Attachments"
	runRows(t, []rowCase{
		{
			name: "S2a no node: drain skipped, volume attachments too, DeleteMachine next",
			in: func() lifecycle.Input {
				in := atDrain()
				in.Node, in.Status.NodeName, in.Object.NodeLabel = lifecycle.Node{}, "", ""
				return in
			},
			want: want{rule: lifecycle.RuleDeleteDrainSkipped, phase: phase.Terminating, period: retry.Short, changed: true,
				op:      delOp(lastop.StateProcessing, "Skipping drain as nodeName is not a valid one for machine. Initiate VM deletion"),
				effects: []string{deleteVMCall}},
		},
		{
			name: "S2b the node condition cannot be set, not forced: Failed, retried",
			in:   func() lifecycle.Input { return writeStopped(atDrain(), 0, lifecycle.WriteFailed, "etcd timeout") },
			want: want{rule: lifecycle.RuleDeleteDrainFailed, phase: phase.Terminating, period: retry.Short, changed: true,
				op: delOp(lastop.StateFailed, "Drain failed due to failure in update of node conditions - etcd timeout. Will retry in next sync. Initiate node drain"), effects: []string{"event Warning DrainFailed (delete.drain-failed)"}},
		},
		{
			// MCM goes on without draining; the lifecycle attempts the
			// forced drain first (a deviation), and goes on whatever it
			// returns (S2g below).
			name: "S2c cordon fails, forced: the forced drain is attempted all the same",
			in:   func() lifecycle.Input { return writeStopped(forced(), 1, lifecycle.WriteFailed, pdbError) },
			want: want{rule: lifecycle.RuleDeleteDrainForce, phase: phase.Terminating, period: retry.Short,
				op: delOp(lastop.StateProcessing, "Initiate node drain"), effects: []string{drainForced}},
		},
		{
			name: "S2c then the forced drain fails too: deletion goes on to the volume attachments",
			in: func() lifecycle.Input {
				return writeStopped(writeStopped(forced(), 1, lifecycle.WriteFailed, "node is locked"), 0, lifecycle.WriteFailed, pdbError)
			},
			want: want{rule: lifecycle.RuleDeleteDrainForcedOn, phase: phase.Terminating, period: retry.Short, changed: true,
				op: delOp(lastop.StateProcessing, forcedOn), effects: []string{"delete-volume-attachments node-vm-1"}},
		},
		{
			name: "S2d cordon fails, not forced: Failed, retried",
			in:   func() lifecycle.Input { return writeStopped(atDrain(), 1, lifecycle.WriteFailed, "node is locked") },
			want: want{rule: lifecycle.RuleDeleteDrainFailed, phase: phase.Terminating, period: retry.Short, changed: true,
				op: delOp(lastop.StateFailed, "Drain failed due to - node is locked. Will retry in next sync. Initiate node drain"), effects: []string{"event Warning DrainFailed (delete.drain-failed)"}},
		},
		{
			name:    "S2e forced drain succeeds: Force Drain successful, volume attachments next",
			in:      forced,
			results: []driverapi.Result{{}},
			want: want{rule: lifecycle.RuleDeleteForceDrained, phase: phase.Terminating, period: retry.Short, changed: true,
				op:      delOp(lastop.StateProcessing, "Force Drain successful. Delete Volume Attachments"),
				effects: []string{"delete-volume-attachments node-vm-1"}},
		},
		{
			name:    "S2f drain succeeds: Drain successful, DeleteMachine next",
			in:      atDrain,
			results: []driverapi.Result{{}},
			want: want{rule: lifecycle.RuleDeleteDrained, phase: phase.Terminating, period: retry.Short, changed: true,
				op: delOp(lastop.StateProcessing, "Drain successful. Initiate VM deletion"), effects: []string{deleteVMCall}},
			check: func(t *testing.T, _ lifecycle.Input, d lifecycle.Decision) {
				require.True(t, d.Status.Flags.Has(lifecycle.FlagDrainSucceeded), "recorded after it succeeded")
			},
		},
		{
			name: "S2g forced drain fails: deletion goes on",
			in:   func() lifecycle.Input { return writeStopped(forced(), 2, lifecycle.WriteFailed, pdbError) },
			want: want{rule: lifecycle.RuleDeleteDrainForcedOn, phase: phase.Terminating, period: retry.Short, changed: true,
				op: delOp(lastop.StateProcessing, forcedOn), effects: []string{"delete-volume-attachments node-vm-1"}},
		},
		{
			name: "S2h drain fails, not forced: Failed, retried",
			in:   func() lifecycle.Input { return writeStopped(atDrain(), 2, lifecycle.WriteFailed, pdbError) },
			want: want{rule: lifecycle.RuleDeleteDrainFailed, phase: phase.Terminating, period: retry.Short, changed: true,
				op: delOp(lastop.StateFailed, "Drain failed due to - "+pdbError+". Will retry in next sync. Initiate node drain"), effects: []string{"event Warning DrainFailed (delete.drain-failed)"}},
		},
	})
}

// The drain is forced by the force-deletion label or the drain timeout
// (both shrink it to a minute and one eviction retry), or by a node NotReady
// or ReadonlyFilesystem for five minutes (which keeps its bounds).
func TestDrainForcing(t *testing.T) {
	atDrain := terminating(lifecycle.StageDrain, 0, lastop.DescInitiateDrain)
	cases := []struct {
		name  string
		in    func() lifecycle.Input
		drain string
	}{
		{"normal", atDrain, drainNormal},
		{"force-deletion label", func() lifecycle.Input { in := atDrain(); in.Object.ForceDeletion = true; return in }, drainForced},
		{"drain timeout since the deletion time", func() lifecycle.Input {
			in := atDrain()
			in.Object.DeletionTime = in.Now.Add(-2*time.Hour - time.Second)
			return in
		}, drainForced},
		{"per-machine drain timeout", func() lifecycle.Input {
			in := atDrain()
			in.Object.Overrides.DrainTimeout = 20 * time.Second
			return in
		}, drainForced},
		{"NotReady for over 5 minutes", func() lifecycle.Input {
			in := atDrain()
			in.Status.Conditions = []lifecycle.Condition{{Type: "Ready", Status: lifecycle.ConditionFalse, Since: lifecycle.StampOf(in.Now.Add(-6 * time.Minute))}}
			return in
		}, "drain node-vm-1 force"},
		{"NotReady for 4 minutes", func() lifecycle.Input {
			in := atDrain()
			in.Status.Conditions = []lifecycle.Condition{{Type: "Ready", Status: lifecycle.ConditionFalse, Since: lifecycle.StampOf(in.Now.Add(-4 * time.Minute))}}
			return in
		}, drainNormal},
		{"ReadonlyFilesystem for over 5 minutes", func() lifecycle.Input {
			in := atDrain()
			in.Status.Conditions = []lifecycle.Condition{{Type: "Ready", Status: lifecycle.ConditionTrue},
				{Type: "ReadonlyFilesystem", Status: lifecycle.ConditionTrue, Since: lifecycle.StampOf(in.Now.Add(-6 * time.Minute))}}
			return in
		}, "drain node-vm-1 force"},
		{"max evict retries bounded by drain timeout / 20s", func() lifecycle.Input {
			in := atDrain()
			in.Object.Overrides.DrainTimeout = time.Hour
			return in
		}, "drain node-vm-1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := step(t, lifecycle.DefaultConfig(), tc.in())
			require.Equal(t, tc.drain, d.Lines()[2])
		})
	}
}

// MCM issue 703
// (https://github.com/gardener/machine-controller-manager/issues/703): a drain
// that keeps failing backs off from Short towards Medium instead of retrying
// every five seconds; the retry time is in the status.
func TestDeviationDrainFailuresBackOff(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := terminating(lifecycle.StageDrain, 0, lastop.DescInitiateDrain)()
	var requeues []time.Duration
	for i := 0; i < 8; i++ {
		failed := writeStopped(in, 2, lifecycle.WriteFailed, pdbError)
		d := step(t, cfg, failed)
		require.Equal(t, lifecycle.RuleDeleteDrainFailed, d.Rule)
		requeues = append(requeues, d.Requeue)
		in.Status = d.Status
		in.Outcome = nil
		early := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleDeleteBackoff, early.Rule, "an early reconcile waits")
		in.Now = in.Now.Add(d.Requeue)
	}
	require.Equal(t, retry.Short, requeues[0])
	for i := 1; i < len(requeues); i++ {
		require.GreaterOrEqual(t, requeues[i], requeues[i-1]-requeues[i-1]/10, "non-decreasing up to jitter")
		require.LessOrEqual(t, requeues[i], retry.Medium+retry.Medium/10, "bounded by Medium plus jitter")
	}
	require.Greater(t, requeues[len(requeues)-1], 2*time.Minute)
}

// TestDeletionVolumeRows has one case per row of S3 (S3a-S3e).
func TestDeletionVolumeRows(t *testing.T) {
	atVolumes := terminating(lifecycle.StageVolumes, lifecycle.FlagDrainForced, lastop.DescForceDrainSucceeded)
	forceOK := delOp(lastop.StateProcessing, "Force Drain successful. Delete Volume Attachments")
	runRows(t, []rowCase{
		{
			name: "S3a the node cannot be read: Short, no write",
			in: func() lifecycle.Input {
				in := atVolumes()
				in.Node = lifecycle.Node{}
				in.NodeReadFailed = true
				return in
			},
			want: want{rule: lifecycle.RuleDeleteNodeUnreadable, phase: phase.Terminating, period: retry.Short, op: forceOK},
		},
		{
			name: "S3b the node is gone: on to DeleteMachine",
			in:   func() lifecycle.Input { in := atVolumes(); in.Node = lifecycle.Node{}; return in },
			want: want{rule: lifecycle.RuleDeleteVolumesNodeMissing, phase: phase.Terminating, period: retry.Short, changed: true,
				op:      delOp(lastop.StateProcessing, `Skipping deleteNodeVolAttachments due to - node "node-vm-1" not found. Moving to VM Deletion. Initiate VM deletion`),
				effects: []string{deleteVMCall}},
		},
		{
			// The node only its machine-name label links to the machine,
			// without an instance recorded, is not proven the machine's:
			// its volume attachments are not deleted, nor awaited.
			name: "S3b a node not proven the machine's is none: on to DeleteMachine",
			in: func() lifecycle.Input {
				in := atVolumes()
				in.Status.ProviderID, in.Status.NodeName, in.Object.NodeLabel, in.Object.ProviderID = "", "", "", ""
				in.VolumeAttachments = 3
				return in
			},
			want: want{rule: lifecycle.RuleDeleteVolumesNodeMissing, phase: phase.Terminating, period: retry.Short, changed: true,
				op:      delOp(lastop.StateProcessing, `Skipping deleteNodeVolAttachments due to - node "" not found. Moving to VM Deletion. Initiate VM deletion`),
				effects: []string{"call DeleteMachine machine-1 uid=uid-1"}},
		},
		{
			name: "S3c no volumes attached: on to DeleteMachine",
			in:   func() lifecycle.Input { in := atVolumes(); in.Node.VolumesAttached = 0; return in },
			want: want{rule: lifecycle.RuleDeleteVolumesDetached, phase: phase.Terminating, period: retry.Short, changed: true,
				op:      delOp(lastop.StateProcessing, "Node Volumes for node: node-vm-1 are already detached. Moving to VM Deletion. Initiate VM deletion"),
				effects: []string{deleteVMCall}},
		},
		{
			name: "S3d live attachments: deleted, no status write, Short",
			in:   func() lifecycle.Input { in := atVolumes(); in.VolumeAttachments = 3; return in },
			want: want{rule: lifecycle.RuleDeleteVolumes, phase: phase.Terminating, period: retry.Short, op: forceOK,
				effects: []string{"delete-volume-attachments node-vm-1"}},
		},
		{
			name:    "S3d after the deletion: wait Short, do not delete again in this pass",
			in:      func() lifecycle.Input { in := atVolumes(); in.VolumeAttachments = 3; return in },
			results: []driverapi.Result{{}},
			want:    want{rule: lifecycle.RuleDeleteVolumesWait, phase: phase.Terminating, period: retry.Short, op: forceOK},
		},
		{
			name: "S3e none live: on to DeleteMachine",
			in:   atVolumes,
			want: want{rule: lifecycle.RuleDeleteVolumesDone, phase: phase.Terminating, period: retry.Short, changed: true,
				op:      delOp(lastop.StateProcessing, "No Live VolumeAttachments for node: node-vm-1. Moving to VM Deletion. Initiate VM deletion"),
				effects: []string{deleteVMCall}},
		},
	})
}

// TestDeletionVMRows has one case per row of S4 (S4a-S4e).
func TestDeletionVMRows(t *testing.T) {
	atVM := func() lifecycle.Input {
		in := terminating(lifecycle.StageDeleteVM, lifecycle.FlagDrainSucceeded, lastop.DescDrainSucceeded)()
		in.Status.LastKnownState = "disk-9 kept"
		return in
	}
	const vmCall = deleteVMCall + ` lastKnownState="disk-9 kept"`
	runRows(t, []rowCase{
		{
			name:    "S4a OK: node deletion next",
			in:      atVM,
			results: []driverapi.Result{{}},
			want: want{rule: lifecycle.RuleDeleteVMDeleted, phase: phase.Terminating, period: retry.Short, changed: true,
				op: delOp(lastop.StateProcessing, "VM deletion was successful. Initiate node object deletion"), effects: nodeDeleteEffects},
			check: func(t *testing.T, _ lifecycle.Input, d lifecycle.Decision) {
				require.True(t, d.Status.Flags.Has(lifecycle.FlagTerminated))
				require.Equal(t, "disk-9 kept", d.Status.LastKnownState, "kept when the response has none (deviation: MCM clears it)")
			},
		},
		{
			name:    "S4b NotFound: node deletion next",
			in:      atVM,
			results: []driverapi.Result{notFound},
			want: want{rule: lifecycle.RuleDeleteVMNotFound, phase: phase.Terminating, period: retry.Short, changed: true,
				op: delOp(lastop.StateProcessing, "VM not found. Continuing deletion flow. Initiate node object deletion"), effects: nodeDeleteEffects},
		},
		{
			name:    "S4c transient code: Failed, Short",
			in:      atVM,
			results: []driverapi.Result{fail(driverapi.Aborted, "locked")},
			want: want{rule: lifecycle.RuleDeleteVMRetry, phase: phase.Terminating, period: retry.Short, changed: true,
				op: delOp(lastop.StateFailed, "VM deletion failed due to - machine codes error: code = [Aborted] message = [locked]. However, will re-try in the next resync. Initiate VM deletion")},
		},
		{
			name:    "S4d another code: Failed, Long",
			in:      atVM,
			results: []driverapi.Result{fail(driverapi.PermissionDenied, "no")},
			want: want{rule: lifecycle.RuleDeleteVMFailed, phase: phase.Terminating, period: retry.Long, changed: true,
				op: delOp(lastop.StateFailed, "VM deletion failed due to - machine codes error: code = [PermissionDenied] message = [no]. Aborting operation. Initiate VM deletion"), effects: []string{"event Warning DeleteFailed (delete.vm-failed)"}},
		},
		{
			name:    "S4e undecodable: Failed, Long",
			in:      atVM,
			results: []driverapi.Result{undecodable("EOF")},
			want: want{rule: lifecycle.RuleDeleteVMUndecodable, phase: phase.Terminating, period: retry.Long, changed: true,
				op: delOp(lastop.StateFailed, "Error occurred while decoding machine error: EOF. Initiate VM deletion"), effects: []string{"event Warning DeleteFailed (delete.vm-undecodable)"}},
		},
		{
			name: "S4 DeleteMachine carries the provider's state and the creation key",
			in:   atVM,
			want: want{rule: lifecycle.RuleDeleteVM, phase: phase.Terminating, period: retry.Short,
				op: delOp(lastop.StateProcessing, "Drain successful. Initiate VM deletion"), effects: []string{vmCall}},
		},
	})
}

// TestDeletionNodeRows has one case per row of S5 (S5a-S5g).
func TestDeletionNodeRows(t *testing.T) {
	atNode := terminating(lifecycle.StageDeleteNode, lifecycle.FlagDrainSucceeded|lifecycle.FlagTerminated, lastop.DescVMDeleted)
	vmDeleted := delOp(lastop.StateProcessing, "VM deletion was successful. Initiate node object deletion")
	runRows(t, []rowCase{
		{
			name: "S5a no node known: on to the finalizer",
			in: func() lifecycle.Input {
				in := atNode()
				in.Node, in.Status.NodeName, in.Object.NodeLabel = lifecycle.Node{}, "", ""
				return in
			},
			want: want{rule: lifecycle.RuleDeleteNodeUnnamed, phase: phase.Terminating, period: retry.Long, changed: true,
				op:      delOp(lastop.StateProcessing, `Label "node" not present on machine "machine-1", continuing deletion flow. Initiate machine object finalizer removal`),
				effects: []string{removeFinal}},
		},
		{
			name: "S5b the node does not exist: on to the finalizer",
			in:   func() lifecycle.Input { in := atNode(); in.Node = lifecycle.Node{}; return in },
			want: want{rule: lifecycle.RuleDeleteNodeNotFound, phase: phase.Terminating, period: retry.Long, changed: true,
				op:      delOp(lastop.StateProcessing, `No node object found for "node-vm-1", continuing deletion flow. Initiate machine object finalizer removal`),
				effects: []string{removeFinal}},
		},
		{
			name: "S5c the node cannot be read: Failed, Short",
			in: func() lifecycle.Input {
				in := atNode()
				in.Node = lifecycle.Node{}
				in.NodeReadFailed = true
				return in
			},
			want: want{rule: lifecycle.RuleDeleteNodeUnreadable, phase: phase.Terminating, period: retry.Short, changed: true,
				op: delOp(lastop.StateFailed, `Retrieval of Node Object "node-vm-1" failed due to error: the node could not be read, Retrying. Initiate node object deletion`)},
		},
		{
			// A deviation: MCM takes a machine without a node label for a
			// machine without a node (S5a) even when it cannot read nodes;
			// the node its machine-name label links it to may be there.
			name: "S5c the node cannot be read and no name is known: Failed, Short, not taken for no node",
			in: func() lifecycle.Input {
				in := atNode()
				in.Node, in.Status.NodeName, in.Object.NodeLabel = lifecycle.Node{}, "", ""
				in.NodeReadFailed = true
				return in
			},
			want: want{rule: lifecycle.RuleDeleteNodeUnreadable, phase: phase.Terminating, period: retry.Short, changed: true,
				op: delOp(lastop.StateFailed, `Retrieval of Node Object "" failed due to error: the node could not be read, Retrying. Initiate node object deletion`)},
		},
		{
			name: "S5d the node's finalizer cannot be removed: Failed, Short",
			in:   func() lifecycle.Input { return writeStopped(atNode(), 0, lifecycle.WriteFailed, "admission denied") },
			want: want{rule: lifecycle.RuleDeleteNodeFinalizerFailed, phase: phase.Terminating, period: retry.Short, changed: true,
				op: delOp(lastop.StateFailed, `Removal of finalizers from Node Object "node-vm-1" failed due to error: admission denied, Retrying. Initiate node object deletion`)},
		},
		{
			name:    "S5e the node is deleted: on to the finalizer",
			in:      atNode,
			results: []driverapi.Result{{}},
			want: want{rule: lifecycle.RuleDeleteNodeDeleted, phase: phase.Terminating, period: retry.Long, changed: true,
				op:      delOp(lastop.StateProcessing, `Deletion of Node Object "node-vm-1" is successful. Initiate machine object finalizer removal`),
				effects: []string{removeFinal}},
		},
		{
			name: "S5f the node is gone when deleted: as S5b",
			in: func() lifecycle.Input {
				return writeStopped(atNode(), 1, lifecycle.WriteNotFound, `nodes "node-vm-1" not found`)
			},
			want: want{rule: lifecycle.RuleDeleteNodeNotFound, phase: phase.Terminating, period: retry.Long, changed: true,
				op:      delOp(lastop.StateProcessing, `No node object found for "node-vm-1", continuing deletion flow. Initiate machine object finalizer removal`),
				effects: []string{removeFinal}},
		},
		{
			name: "S5g deleting the node fails: Failed, Short",
			in: func() lifecycle.Input {
				return writeStopped(atNode(), 1, lifecycle.WriteFailed, "etcdserver: request timed out")
			},
			want: want{rule: lifecycle.RuleDeleteNodeFailed, phase: phase.Terminating, period: retry.Short, changed: true,
				op: delOp(lastop.StateFailed, `Deletion of Node Object "node-vm-1" failed due to error: etcdserver: request timed out. Initiate node object deletion`)},
		},
		{
			name: "S5 the node is deleted even without the machine's node label (deviation, doc/mcm-compat.md)",
			in:   func() lifecycle.Input { in := atNode(); in.Object.NodeLabel, in.Status.NodeName = "", ""; return in },
			want: want{rule: lifecycle.RuleDeleteNode, phase: phase.Terminating, period: retry.Short, op: vmDeleted, effects: nodeDeleteEffects},
		},
	})
}

// Deletion cordons, drains and deletes only a node it observed and proved
// to be its instance's. A node name alone proves nothing: the status may
// record one a provider's lookup named for an instance created on a stale
// node object, and node names are reused (an IP, a slot), so the node of
// that name may carry another instance. When the node cannot be read, the
// deletion waits; when it is read and not there, there is nothing of this
// machine to cordon, drain or delete.
func TestDeletionNeverActsOnANodeItDidNotProve(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	nodeKinds := map[lifecycle.Kind]bool{lifecycle.KindSetNodeCondition: true, lifecycle.KindCordon: true,
		lifecycle.KindDrain: true, lifecycle.KindRemoveNodeFinalizer: true, lifecycle.KindDeleteNode: true,
		lifecycle.KindDeleteVolumeAttachments: true}
	unreadable := func(in lifecycle.Input) lifecycle.Input {
		in.Node, in.NodeReadFailed = lifecycle.Node{}, true
		return in
	}
	absent := func(in lifecycle.Input) lifecycle.Input {
		in.Node = lifecycle.Node{}
		return in
	}
	const forced = lifecycle.FlagDrainForced
	for _, tc := range []struct {
		name string
		in   lifecycle.Input
		// wantRule: the rule decided.
		wantRule lifecycle.Rule
	}{
		// S1b records the node its label names, and the drain that follows
		// in the same decision waits.
		{"S1 the node cannot be read", unreadable(terminating(lifecycle.StageGetVMStatus, 0, lastop.DescTerminating)()),
			lifecycle.RuleDeleteNodeKnown},
		{"S2 the node cannot be read", unreadable(terminating(lifecycle.StageDrain, 0, lastop.DescInitiateDrain)()),
			lifecycle.RuleDeleteNodeUnreadable},
		{"S3 the node cannot be read", unreadable(terminating(lifecycle.StageVolumes, forced, lastop.DescForceDrainSucceeded)()),
			lifecycle.RuleDeleteNodeUnreadable},
		{"S5 the node cannot be read", unreadable(terminating(lifecycle.StageDeleteNode, forced|lifecycle.FlagTerminated, lastop.DescVMDeleted)()),
			lifecycle.RuleDeleteNodeUnreadable},
		{"S2 the node is not there", absent(terminating(lifecycle.StageDrain, 0, lastop.DescInitiateDrain)()),
			lifecycle.RuleDeleteDrained},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := step(t, cfg, tc.in)
			require.Equal(t, tc.wantRule.String(), d.Rule.String(), d.String())
			for _, e := range d.Effects.Slice() {
				require.False(t, nodeKinds[e.Kind], "acted on node %q, not proven the instance's: %s", e.Node, d.String())
			}
		})
	}
}

// A forced drain whose condition update or cordon failed, and whose node
// then cannot be read, waits for the node rather than going on to delete
// the instance without a drain having been tried.
func TestForcedDrainWaitsForAnUnreadableNode(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := terminating(lifecycle.StageDrain, 0, lastop.DescInitiateDrain)()
	in.Object.ForceDeletion = true
	in = writeStopped(in, 0, lifecycle.WriteFailed, "etcdserver: request timed out")
	in.Node, in.NodeReadFailed = lifecycle.Node{}, true
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleDeleteNodeUnreadable, d.Rule, d.String())
	require.Equal(t, lifecycle.StageDrain, d.Status.Stage)
	require.Zero(t, d.Effects.Len())
}

package lastop

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	testMachine    = "worker-a-5f7c9-xk2lp"
	testNode       = "ip-10-250-0-17.ec2.internal"
	testConditions = "[{Type:Ready Status:False LastHeartbeatTime:2026-08-19 09:20:30 +0000 UTC LastTransitionTime:2026-08-19 09:15:00 +0000 UTC Reason:KubeletNotReady Message:PLEG is not healthy}]"
)

var testArgs = Args{Machine: testMachine, Node: testNode, Conditions: testConditions}

// descCase is one description with sample values and the exact text MCM's
// format string produces for them (copied by hand from the MCM source named
// in the comment, so a changed template fails here).
type descCase struct {
	desc    Desc
	detail  string
	elapsed time.Duration
	step    Step
	want    string
}

func descCases() []descCase {
	return []descCase{
		// machine.go
		{desc: DescCreating, want: "Creating machine on cloud provider"},
		{desc: DescCreated, want: "Created machine on cloud provider"},
		// machine_util.go machineCreateErrorHandler: "Cloud provider message - " + err.Error()
		{desc: DescCloudProviderError, detail: "machine codes error: code = [ResourceExhausted] message = [quota exceeded]",
			want: "Cloud provider message - machine codes error: code = [ResourceExhausted] message = [quota exceeded]"},
		{desc: DescStaleNode, want: "VM using old node obj"},
		// machine.go initializeMachine: "Provider error: %s. %s"
		{desc: DescInitFailed, detail: "machine codes error: code = [Internal] message = [cloud-init failed]", step: StepInitialize,
			want: "Provider error: machine codes error: code = [Internal] message = [cloud-init failed]. Initialize VM Instance"},

		// machine_util.go reconcileMachineHealth
		{desc: DescNodeMissing, want: "Node object went missing. Machine worker-a-5f7c9-xk2lp is unhealthy - changing MachinePhase to Unknown"},
		{desc: DescJoined, elapsed: 3*time.Minute + 12500*time.Millisecond,
			want: "Machine worker-a-5f7c9-xk2lp successfully joined the cluster in 3m12.5s"},
		{desc: DescRejoined, want: "Machine worker-a-5f7c9-xk2lp successfully re-joined the cluster"},
		{desc: DescUnhealthy,
			want: "Machine worker-a-5f7c9-xk2lp is unhealthy - changing MachinePhase to Unknown. Node conditions: " + testConditions},
		{desc: DescInPlaceUpdated, want: "Machine worker-a-5f7c9-xk2lp successfully updated dependencies"},
		{desc: DescInPlaceUpdateFailed, detail: "kernel upgrade failed",
			want: "Machine worker-a-5f7c9-xk2lp failed to update dependencies: kernel upgrade failed"},
		{desc: DescJoinTimeout, elapsed: 20 * time.Minute,
			want: "Machine worker-a-5f7c9-xk2lp failed to join the cluster in 20m0s minutes."},
		{desc: DescInPlaceTimeout, elapsed: 20 * time.Minute,
			want: "Machine worker-a-5f7c9-xk2lp failed to in-place update in 20m0s minutes."},
		{desc: DescHealthTimeout, elapsed: 10 * time.Minute,
			want: "Machine worker-a-5f7c9-xk2lp health checks failing since last 10m0s minutes. Updating machine phase to Failed. Node Conditions: " + testConditions},
		// machine_safety.go
		{desc: DescHealthTimeoutReset, want: "Machine Health Timeout was reset due to APIServer being unreachable"},

		// machine_util.go setMachineTerminationStatus: machineutils.GetVMStatus
		{desc: DescTerminating, step: StepGetVMStatus, want: "Set machine status to termination. Now, getting VM Status"},
		// pkg/controller/machineset.go
		{desc: DescMachineSetDeleting, want: "Deleting machine from cloud provider"},
		// machine_util.go updateMachineStatusAndNodeLabel
		{desc: DescNoTargetCluster, step: StepDeleteVM,
			want: "Running without target cluster, skipping node drain and volume attachment deletion. Initiate VM deletion"},
		{desc: DescInitiateDrain, step: StepDrain, want: "Initiate node drain"},
		{desc: DescGetVMStatusUndecodable, detail: "rpc error: connection reset", step: StepGetVMStatus,
			want: "Error occurred with decoding machine error status while getting VM status, aborting without retry. rpc error: connection reset Set machine status to termination. Now, getting VM Status"},
		{desc: DescVMNotFoundBeforeDrain, step: StepDrain,
			want: "VM was not found at provider. Moving forward to node drain. Initiate node drain"},
		{desc: DescGetVMStatusRetry, step: StepGetVMStatus,
			want: "Error occurred with decoding machine error status while getting VM status, aborting with retry. Set machine status to termination. Now, getting VM Status"},
		{desc: DescVMUninitializedBeforeDrain, step: StepDrain,
			want: "VM instance was not initialized. Moving forward to node drain. Initiate node drain"},
		{desc: DescGetVMStatusFailed, detail: "machine codes error: code = [PermissionDenied] message = [denied]", step: StepGetVMStatus,
			want: "Error occurred with decoding machine error status while getting VM status, aborting without retry. machine code: machine codes error: code = [PermissionDenied] message = [denied] Set machine status to termination. Now, getting VM Status"},
		// machine_util.go drainNode (printLogInitError: s + " %s")
		{desc: DescDrainSkipped, step: StepDeleteVM,
			want: "Skipping drain as nodeName is not a valid one for machine. Initiate VM deletion"},
		{desc: DescDrainConditionFailed, detail: "etcdserver: request timed out", step: StepDrain,
			want: "Drain failed due to failure in update of node conditions - etcdserver: request timed out. Will retry in next sync. Initiate node drain"},
		{desc: DescForceDrainFailed, detail: "timeout evicting pods", step: StepVolumeAttachments,
			want: "Drain failed due to - timeout evicting pods. However, since it's a force deletion shall continue deletion of VM. Delete Volume Attachments"},
		{desc: DescDrainFailed, detail: "Cannot evict pod as it would violate the pod's disruption budget.", step: StepDrain,
			want: "Drain failed due to - Cannot evict pod as it would violate the pod's disruption budget.. Will retry in next sync. Initiate node drain"},
		{desc: DescForceDrainSucceeded, step: StepVolumeAttachments, want: "Force Drain successful. Delete Volume Attachments"},
		{desc: DescDrainSucceeded, step: StepDeleteVM, want: "Drain successful. Initiate VM deletion"},
		// machine_util.go deleteNodeVolAttachments
		{desc: DescVolumesNodeMissing, detail: `node "ip-10-250-0-17.ec2.internal" not found`, step: StepDeleteVM,
			want: `Skipping deleteNodeVolAttachments due to - node "ip-10-250-0-17.ec2.internal" not found. Moving to VM Deletion. Initiate VM deletion`},
		{desc: DescVolumesDetached, step: StepDeleteVM,
			want: "Node Volumes for node: ip-10-250-0-17.ec2.internal are already detached. Moving to VM Deletion. Initiate VM deletion"},
		{desc: DescNoLiveVolumeAttachments, step: StepDeleteVM,
			want: "No Live VolumeAttachments for node: ip-10-250-0-17.ec2.internal. Moving to VM Deletion. Initiate VM deletion"},
		// machine_util.go deleteVM
		{desc: DescVMDeleted, step: StepDeleteNode, want: "VM deletion was successful. Initiate node object deletion"},
		{desc: DescVMNotFound, step: StepDeleteNode, want: "VM not found. Continuing deletion flow. Initiate node object deletion"},
		{desc: DescVMDeletionRetry, detail: "machine codes error: code = [Unavailable] message = [throttled]", step: StepDeleteVM,
			want: "VM deletion failed due to - machine codes error: code = [Unavailable] message = [throttled]. However, will re-try in the next resync. Initiate VM deletion"},
		{desc: DescVMDeletionAborted, detail: "machine codes error: code = [Internal] message = [boom]", step: StepDeleteVM,
			want: "VM deletion failed due to - machine codes error: code = [Internal] message = [boom]. Aborting operation. Initiate VM deletion"},
		{desc: DescVMDeletionUndecodable, detail: "dial tcp: i/o timeout", step: StepDeleteVM,
			want: "Error occurred while decoding machine error: dial tcp: i/o timeout. Initiate VM deletion"},
		// machine_util.go deleteNodeObject (%q for names, %s for errors)
		{desc: DescNodeLabelMissing, step: StepRemoveFinalizer,
			want: `Label "node" not present on machine "worker-a-5f7c9-xk2lp", continuing deletion flow. Initiate machine object finalizer removal`},
		{desc: DescNodeNotFound, step: StepRemoveFinalizer,
			want: `No node object found for "ip-10-250-0-17.ec2.internal", continuing deletion flow. Initiate machine object finalizer removal`},
		{desc: DescNodeGetFailed, detail: "etcdserver: leader changed", step: StepDeleteNode,
			want: `Retrieval of Node Object "ip-10-250-0-17.ec2.internal" failed due to error: etcdserver: leader changed, Retrying. Initiate node object deletion`},
		{desc: DescNodeFinalizerFailed, detail: "conflict", step: StepDeleteNode,
			want: `Removal of finalizers from Node Object "ip-10-250-0-17.ec2.internal" failed due to error: conflict, Retrying. Initiate node object deletion`},
		{desc: DescNodeDeleted, step: StepRemoveFinalizer,
			want: `Deletion of Node Object "ip-10-250-0-17.ec2.internal" is successful. Initiate machine object finalizer removal`},
		{desc: DescNodeDeleteFailed, detail: "forbidden", step: StepDeleteNode,
			want: `Deletion of Node Object "ip-10-250-0-17.ec2.internal" failed due to error: forbidden. Initiate node object deletion`},
		// machine_util.go updateMachineStatusAndNodeCondition
		{desc: DescInPlaceUpdating, want: "Machine worker-a-5f7c9-xk2lp is undergoing an in-place update"},

		// The library's own descriptions.
		{desc: DescCreateTimeout, elapsed: 21*time.Minute + 3*time.Second,
			want: "Machine worker-a-5f7c9-xk2lp failed to be created in 21m3s; creation timeout exceeded."},
		{desc: DescForeignInstance, detail: "aws:///eu-west-1a/i-0abc",
			want: "Instance aws:///eu-west-1a/i-0abc belongs to another incarnation of machine worker-a-5f7c9-xk2lp; deleting it before creating a new one."},
		{desc: DescStaleInstanceDeleted, want: "Instance created on a stale node object was deleted at provider."},
		{desc: DescHealthConfirmed, elapsed: 10 * time.Minute, detail: "instance stopped",
			want: "Machine worker-a-5f7c9-xk2lp health checks failing since last 10m0s; provider reports: instance stopped. Updating machine phase to Failed. Node Conditions: " + testConditions},
		{desc: DescWaitingForReplacementGrant, elapsed: 12 * time.Minute,
			want: "Machine worker-a-5f7c9-xk2lp health checks failing since last 12m0s; waiting for the fleet limiter to allow its replacement"},
		{desc: DescObserverDegraded, want: "Machine worker-a-5f7c9-xk2lp health timeout paused: observer degraded"},
		{desc: DescHotUpdateApplied, want: "Machine worker-a-5f7c9-xk2lp hot update applied"},
		{desc: DescHotUpdateFailed, detail: "machine codes error: code = [Aborted] message = [busy]",
			want: "Hot update failed due to - machine codes error: code = [Aborted] message = [busy]. Will retry"},
		{desc: DescNeedsReplacement, detail: "machine type changed",
			want: "Machine worker-a-5f7c9-xk2lp cannot be updated in place: machine type changed. Needs replacement"},
		{desc: DescMetadataSynced, want: "Machine worker-a-5f7c9-xk2lp instance metadata in sync"},
		{desc: DescMetadataPending, detail: "tag team=a",
			want: "Machine worker-a-5f7c9-xk2lp instance metadata differs from desired: tag team=a. Patching"},
	}
}

func TestDescCasesCoverEveryDesc(t *testing.T) {
	var got []Desc
	for _, c := range descCases() {
		got = append(got, c.desc)
	}
	require.Equal(t, Descs(), got, "descCases must have one case per Desc, in declaration order")
}

func TestDescribeMatchesMCMText(t *testing.T) {
	for _, c := range descCases() {
		t.Run(c.desc.String(), func(t *testing.T) {
			op := Operation{Desc: c.desc, Detail: c.detail, Elapsed: c.elapsed}
			require.Equal(t, c.want, op.Describe(testArgs))
			require.Equal(t, c.step, c.desc.Step())
		})
	}
}

// TestParseRecoversDescribedValues checks Parse(Describe(x)) for every Desc:
// the Desc, its step, and exactly the values its template names.
func TestParseRecoversDescribedValues(t *testing.T) {
	for _, c := range descCases() {
		t.Run(c.desc.String(), func(t *testing.T) {
			f := c.desc.Format()
			want := Parsed{Desc: c.desc, Step: c.step}
			if strings.Contains(f, "<detail>") {
				want.Detail = c.detail
			}
			if strings.Contains(f, "<elapsed>") {
				want.Elapsed = c.elapsed
			}
			if strings.Contains(f, "<machine") {
				want.Args.Machine = testMachine
			}
			if strings.Contains(f, "<node") {
				want.Args.Node = testNode
			}
			if strings.Contains(f, "<conditions>") {
				want.Args.Conditions = testConditions
			}
			require.Equal(t, want, Parse(c.want))
		})
	}
}

func TestDescFormatsAreDistinctAndWellFormed(t *testing.T) {
	seenFormat := map[string]Desc{}
	seenID := map[string]Desc{}
	for _, d := range Descs() {
		f := d.Format()
		require.NotEmpty(t, f, d)
		require.NotContains(t, seenFormat, f, "%v repeats the format of %v", d, seenFormat[f])
		seenFormat[f] = d
		require.NotContains(t, seenID, d.String(), d)
		seenID[d.String()] = d

		// Only known placeholders, never two in a row.
		rest, prevPh := f, false
		for rest != "" {
			lit, ph, r := nextPart(rest)
			require.NotContains(t, lit, "<", "%v has an unknown placeholder", d)
			require.NotContains(t, lit, ">", "%v has a stray '>'", d)
			require.False(t, prevPh && lit == "" && ph != "", "%v has adjacent placeholders", d)
			prevPh = ph != ""
			rest = r
		}
	}
}

// TestMCMRoutesRenderedTextToItsStep checks that MCM's own search finds, in
// each rendered deletion description, the step its marker names.
func TestMCMRoutesRenderedTextToItsStep(t *testing.T) {
	for _, c := range descCases() {
		want := c.step
		if want == StepInitialize || want == StepNodeReadyForUpdate {
			want = StepNone // not deletion steps: MCM never searches for them
		}
		require.Equal(t, want, StepOf(c.want), c.desc)
	}
}

func TestDescStringAndParseDesc(t *testing.T) {
	for d := range descCount {
		got, err := ParseDesc(d.String())
		require.NoError(t, err)
		require.Equal(t, d, got)
	}
	require.Equal(t, "none", DescNone.String())
	require.Equal(t, "unknown", DescUnknown.String())
	require.Equal(t, "s4c-vm-deletion-retry", DescVMDeletionRetry.String())
	require.Equal(t, "Desc(999)", Desc(999).String())
	require.Equal(t, "", Desc(999).Format())
	require.Equal(t, StepNone, Desc(999).Step())
	require.False(t, Desc(999).Valid())

	_, err := ParseDesc("Desc(999)")
	require.EqualError(t, err, `lastop: unknown description id "Desc(999)"`)
}

func TestDescsIsFresh(t *testing.T) {
	a := Descs()
	a[0] = DescNone
	require.Equal(t, descFirst, Descs()[0])
	require.Len(t, Descs(), int(descCount-descFirst))
}

func TestLibraryDescsCarryNoMarker(t *testing.T) {
	for d := DescCreateTimeout; d < descCount; d++ {
		require.Equal(t, StepNone, StepOf(d.Format()), d)
		require.Equal(t, StepNone, d.Step(), d)
	}
}

func TestDescribeSpecialDescs(t *testing.T) {
	require.Empty(t, Operation{Desc: DescNone, Detail: "ignored"}.Describe(testArgs))
	require.Equal(t, "anything <detail> at all", Operation{Desc: DescUnknown, Detail: "anything <detail> at all"}.Describe(testArgs))
	require.Equal(t, "kept", Operation{Desc: Desc(999), Detail: "kept"}.Describe(testArgs))
}

func TestDescribeQuotesNamesLikeFmtQ(t *testing.T) {
	op := Operation{Desc: DescNodeNotFound}
	require.Equal(t,
		`No node object found for "we\"ird\n", continuing deletion flow. Initiate machine object finalizer removal`,
		op.Describe(Args{Node: "we\"ird\n"}))
	p := Parse(op.Describe(Args{Node: "we\"ird\n"}))
	require.Equal(t, DescNodeNotFound, p.Desc)
	require.Equal(t, "we\"ird\n", p.Args.Node)
}

func TestDescribeFixedTextDoesNotAllocate(t *testing.T) {
	op := Operation{Desc: DescVMDeleted, Type: TypeDelete, State: StateProcessing}
	allocs := testing.AllocsPerRun(100, func() {
		_ = op.Describe(testArgs)
		_ = op.Desc.Step()
		_ = op.Desc.String()
	})
	require.Zero(t, allocs)
}

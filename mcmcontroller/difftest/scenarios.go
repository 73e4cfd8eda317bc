package difftest

import (
	"errors"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/purelifecycle/machine/mcmcontroller/bootstrap"
	"github.com/purelifecycle/machine/mcmcontroller/mcmfake"
)

// Scenarios returns the library of scenarios: at least one for every row
// of doc/mcm-rows.md in scope that one reconcile of one machine can reach,
// each step's Want being MCM's behaviour as the rows document it.
func Scenarios() []Scenario {
	var out []Scenario
	out = append(out, dispatchScenarios()...)
	out = append(out, creationScenarios()...)
	out = append(out, healthScenarios()...)
	out = append(out, deletionScenarios()...)
	out = append(out, inPlaceScenarios()...)
	out = append(out, preserveScenarios()...)
	for i := range out {
		if d, ok := passGoesOn[out[i].Name]; ok {
			out[i].Deviations = append(out[i].Deviations, d)
		}
		out[i].Deviations = append(out[i].Deviations, more[out[i].Name]...)
		out[i].Deviations = append(out[i].Deviations, everywhere...)
	}
	return out
}

// everywhere are the deviations every scenario accepts, each limited to
// the writes it explains: the label of the drop-in's bootstrap token, the
// token MCM makes before a lookup that then fails, and the record of the
// node template the drop-in writes in a pass where MCM's reconcile ends
// before its node-template sync.
var everywhere = []Deviation{
	{Step: -1, Heading: "A bootstrap token per machine UID", Test: "TestMachineRunsAsUnderMCM",
		Only: "write only by the second: secret kube-system/bootstrap-token-<id>: metadata.labels." + bootstrap.MachineUIDLabel},
	{Step: -1, Heading: "The bootstrap token is made for CreateMachine only", Test: "TestDeviationTokenOnlyForCreateMachine",
		Only: "write only by the first: secret kube-system/bootstrap-token-<id>"},
	{Step: -1, Heading: "The node template is synced after every pass", Test: "TestMachineRunsAsUnderMCM",
		Only: "write only by the second: node node-1: metadata.annotations." + lastAppliedALT},
}

// lastAppliedALT is MCM's record on a node of the node template it applied.
const lastAppliedALT = "node.machine.sapcloud.io/last-applied-anno-labels-taints"

// more names the deviations of scenarios beyond those of their steps'
// rows: mostly where the two runs end, once the machine settled.
var more = map[string][]Deviation{
	// MCM moves a machine to Pending one pass after it initialized the
	// instance, asking GetMachineStatus once more.
	"adopt-found-instance":       {pendingAtOnce},
	"adopt-providerid-not-found": {pendingAtOnce},
	"adopt-uninitialized":        {pendingAtOnce},
	"create-internal":            {pendingAtOnce},
	"create-resource-exhausted":  {pendingAtOnce},
	"create-unavailable":         {pendingAtOnce},
	"finalizer-first":            {pendingAtOnce},
	"lookup-internal":            {pendingAtOnce},
	"no-target-cluster":          {pendingAtOnce},
	"create-to-running":          {pendingAtOnce, joinedText},
	"init-fails": {
		{Step: 1, Heading: "Pending in the pass that initialized the instance", Test: "TestCreationRowsPhaseB"},
		{Step: 2, Heading: "Pending in the pass that initialized the instance", Test: "TestCreationRowsPhaseB"},
		pendingAtOnce, createdState,
	},
	"init-not-found": {pendingAtOnce, createdState},
	// The drop-in initializes the instance its own CreateMachine made when
	// a lookup finds it, where MCM initializes only an instance its lookup
	// reports Uninitialized (and then asks GetMachineStatus once more).
	"create-without-node-name": {{Step: End, Heading: "Initialization is retried from the stage",
		Test: "TestDeviationInitializationRetriedFromTheStage", Only: "all driver calls"}},
	"init-undecodable": {createdState},
	// A failure that repeats: MCM asks again at each reconcile, the drop-in
	// backs off, so their calls differ in number while the machine does
	// not settle.
	"create-undecodable": {backsOff, {Step: End, Heading: "Backoff from the second consecutive failure",
		Test: "TestDeviationBackoffFromTheSecondFailure", Only: "CreateMachine calls"}},
	"delete-lookup-undecodable": {backsOff},
	"delete-vm-undecodable":     {backsOff},
	"class-without-finalizer": {
		{Step: -1, Heading: "The class's finalizer is added by the pass", Test: "TestMachineDeletedAsUnderMCM"},
		{Step: End, Heading: "The class's finalizer is added by the pass", Test: "TestMachineDeletedAsUnderMCM"},
	},
	"create-fails-after-timeout": {
		{Step: -1, Heading: "The creation timeout applies in every phase before Running", Test: "TestCreationTimeoutWithoutIntentFailsAtOnce"},
		{Step: End, Heading: "The creation timeout applies in every phase before Running", Test: "TestCreationTimeoutWithoutIntentFailsAtOnce"},
	},
	"create-stale-node": {
		{Step: End, Heading: "A stale-node instance is deleted until the provider confirms it", Test: "TestDeviationStaleInstanceDeletedUntilConfirmed",
			Only: "lastOperation.description"},
		{Step: End, Heading: "Only a machine being created creates", Test: "TestFailedMachineNeverCreates"},
	},
	"failed-without-instance-creates": {{Step: End, Heading: "Only a machine being created creates", Test: "TestFailedMachineNeverCreates"}},
	// MCM deletes no node the machine's label does not name; the drop-in
	// deletes the node it found by its machine-name label and providerID.
	"delete-node-without-label": {{Step: End, Heading: "The node is found without the label and recorded, never written back",
		Test: "node is deleted even without the machine's node label", Only: "nodes"}},
	"crashloop-node-healthy-runs": {
		{Step: End, Heading: "No Running before initialization", Test: "TestDeviationNoRunningBeforeInitialization", Only: "all driver calls"},
		joinedText,
	},
	"node-missing-no-conditions": {{Step: End, Heading: "Health is never decided without evidence", Test: "TestHealthWithoutEvidence"}},
	"node-missing-to-failed":     {{Step: End, Heading: "Marking Failed asks the provider first", Test: "TestHealthRows"}},
	"unknown-to-failed":          {{Step: End, Heading: "Marking Failed asks the provider first", Test: "TestHealthRows"}},
	// The drop-in writes the record of the node template in the first
	// reconcile, MCM in the second.
	"pending-critical-taint": {{Step: 1, Heading: "The node template is synced after every pass", Test: "TestMachineRunsAsUnderMCM",
		Only: "write only by the first: node node-1: metadata.annotations." + lastAppliedALT}},
}

// passGoesOn names, for the scenarios in which the project's pass goes on
// where MCM's reconcile ends, the deviation that explains it: a pass takes
// as many steps as the machine's state allows (up to
// lifecycle.MaxStepsPerPass), where MCM returns after one. From the first
// reconcile that differs on, the project's controller is ahead of MCM's,
// so every later reconcile differs; where the two runs end, once the
// machine settled, must still agree (CompareEnds), unless a deviation at
// End says otherwise.
var passGoesOn = map[string]Deviation{
	"finalizer-first":                finalizerSamePass,
	"create-to-running":              finalizerSamePass,
	"adopt-providerid-not-found":     finalizerSamePass,
	"adopt-uninitialized":            finalizerSamePass,
	"adopt-found-instance":           finalizerSamePass,
	"no-target-cluster":              finalizerSamePass,
	"delete-running":                 stageGoesOn,
	"delete-machineset-text":         stageGoesOn,
	"delete-node-by-machine-name":    stageGoesOn,
	"delete-node-from-provider":      stageGoesOn,
	"delete-lookup-unimplemented":    stageGoesOn,
	"delete-lookup-not-found":        stageGoesOn,
	"delete-lookup-uninitialized":    stageGoesOn,
	"drain-without-node-name":        stageGoesOn,
	"drain-forced-by-label":          stageGoesOn,
	"drain-notready-under-5m":        stageGoesOn,
	"drain-forced-after-notready-5m": stageGoesOn,
	"drain-forced-by-timeout":        stageGoesOn,
	"volumes-node-gone":              stageGoesOn,
	"volumes-detached":               stageGoesOn,
	"volumes-attached":               stageGoesOn,
	"drain-forced-cordon-refused":    stageGoesOn,
	"delete-vm-not-found":            stageGoesOn,
	"delete-node-without-label":      stageGoesOn,
	"delete-node-missing":            stageGoesOn,
	"delete-node-refused":            stageGoesOn,
	"drain-condition-refused":        stageGoesOn,
	"inplace-deleted":                stageGoesOn,
}

// The deviations of a pass that goes on.
var (
	finalizerSamePass = Deviation{Step: -1, Heading: "The finalizer is added in the same pass", Test: "TestDispatchRows"}
	stageGoesOn       = Deviation{Step: -1, Heading: "A stage that advances goes straight on", Test: "TestDeletionHappyPathAllocatesNothing"}
)

// Deviations of several scenarios.
var (
	// pendingAtOnce: MCM asked GetMachineStatus once more.
	pendingAtOnce = Deviation{Step: End, Heading: "Pending in the pass that initialized the instance", Test: "TestCreationRowsPhaseB",
		Only: "all driver calls"}
	// joinedText: v0.62.1's H3 text has no elapsed time.
	joinedText = Deviation{Step: End, Heading: "Where MCM v0.62.1 differs from the rows", Test: "TestJoinedRendersMCMText",
		Only: "lastOperation.description"}
	// createdState: the state CreateMachine answered is kept when the
	// initialization fails.
	createdState = Deviation{Step: 0, Heading: "LastKnownState is never cleared by an error path", Test: "TestCreationRowsPhaseB",
		Only: "write only by the second: machine " + machineName + ": status.lastKnownState"}
	// backsOff: a failure that repeats is asked again after backoff.
	backsOff = Deviation{Step: End, Heading: "Backoff from the second consecutive failure", Test: "TestDeviationBackoffFromTheSecondFailure",
		Only: "all driver calls"}
)

// both returns the difference lines of a write only by the first run and
// of one only by the second, each starting with prefix.
func both(prefix string) []string {
	return []string{"write only by the first: " + prefix, "write only by the second: " + prefix}
}

// accept returns the deviation of the section starting with heading,
// which names test, at each of the steps, for each of the difference
// lines starting with one of only.
func accept(heading, test string, steps []int, only ...string) []Deviation {
	var out []Deviation
	for _, i := range steps {
		for _, o := range only {
			out = append(out, Deviation{Step: i, Heading: heading, Test: test, Only: o})
		}
	}
	return out
}

// at is a list of steps.
func at(steps ...int) []int { return steps }

// askedFirst accepts the drop-in's GetMachineStatus before it marks the
// machine Failed at step i, and the text that names the answer from then
// on, and where the runs end.
func askedFirst(i int) []Deviation {
	const heading, test = "Marking Failed asks the provider first", "TestHealthRows"
	return concat(
		accept(heading, test, at(i), "driver calls"),
		accept(heading, test, at(-1), append([]string{"lastOperation.description"},
			both("machine "+machineName+": status.lastOperation.description")...)...),
		accept(heading, test, at(End), "lastOperation.description", "all driver calls"))
}

// MCM's retry periods (machineutils.RetryPeriod).
const (
	conflict = 200 * time.Millisecond
	short    = 5 * time.Second
	medium   = 3 * time.Minute
	long     = 10 * time.Minute
)

// machineName is the scenarios' machine: at least five bytes, as MCM
// derives its bootstrap token's ID from the last five.
const machineName = "worker-a-1"

// Shorthands of MCM's phases, operation types and states.
const (
	pending      = v1alpha1.MachinePending
	running      = v1alpha1.MachineRunning
	unknown      = v1alpha1.MachineUnknown
	failed       = v1alpha1.MachineFailed
	crashLoop    = v1alpha1.MachineCrashLoopBackOff
	terminating  = v1alpha1.MachineTerminating
	opCreate     = v1alpha1.MachineOperationCreate
	opHealth     = v1alpha1.MachineOperationHealthCheck
	opDelete     = v1alpha1.MachineOperationDelete
	stProcessing = v1alpha1.MachineStateProcessing
	stFailed     = v1alpha1.MachineStateFailed
	stSuccessful = v1alpha1.MachineStateSuccessful
)

// The driver methods, briefly.
const (
	mGet    = mcmfake.MethodGetStatus
	mCreate = mcmfake.MethodCreate
	mInit   = mcmfake.MethodInitialize
	mDelete = mcmfake.MethodDelete
)

// MCM's deletion step markers (machineutils).
const (
	markGetVMStatus   = "Set machine status to termination. Now, getting VM Status"
	markDrain         = "Initiate node drain"
	markVolumes       = "Delete Volume Attachments"
	markVMDeletion    = "Initiate VM deletion"
	markNodeDeletion  = "Initiate node object deletion"
	markFinalizerGone = "Initiate machine object finalizer removal"
)

// newMachine returns a machine of the default class with no status.
func newMachine() v1alpha1.Machine {
	return v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: machineName}}
}

// machineAt returns a machine in phase p with last operation op, the
// providerID and node label of instance n (none for 0) and the
// conditions cs.
func machineAt(p v1alpha1.MachinePhase, op v1alpha1.LastOperation, n int, cs ...corev1.NodeCondition) v1alpha1.Machine {
	m := newMachine()
	m.Status.CurrentStatus.Phase = p
	m.Status.CurrentStatus.TimeoutActive = p == pending // as MCM leaves a Pending machine (B8)
	m.Status.LastOperation = op
	m.Status.Conditions = cs
	if n > 0 {
		m.Spec.ProviderID = ProviderID(n)
		m.Labels = map[string]string{v1alpha1.NodeLabelKey: NodeName(n)}
		m.Annotations = map[string]string{"machinepriority.machine.sapcloud.io": "3"}
	}
	return m
}

// lastOp returns a last operation.
func lastOp(t v1alpha1.MachineOperationType, s v1alpha1.MachineState, d string) v1alpha1.LastOperation {
	return v1alpha1.LastOperation{Type: t, State: s, Description: d}
}

// Last operations MCM leaves.
var (
	opCreating = lastOp(opCreate, stProcessing, "Creating machine on cloud provider")
	opJoined   = lastOp(opCreate, stSuccessful, "Machine "+machineName+" successfully joined the cluster")
	opMissing  = lastOp(opHealth, stProcessing, "Node object went missing. Machine "+machineName+
		" is unhealthy - changing MachinePhase to Unknown")
)

// cond returns a node condition of type t and status s.
func cond(t corev1.NodeConditionType, s corev1.ConditionStatus) corev1.NodeCondition {
	return corev1.NodeCondition{Type: t, Status: s, Reason: "Scenario", Message: "set by the scenario"}
}

// Node conditions.
var (
	readyTrue  = cond(corev1.NodeReady, corev1.ConditionTrue)
	readyFalse = cond(corev1.NodeReady, corev1.ConditionFalse)
	diskFalse  = cond(corev1.NodeDiskPressure, corev1.ConditionFalse)
)

// nodeOf returns the node of instance n, with its providerID, the
// machine-name label and the conditions cs.
func nodeOf(n int, cs ...corev1.NodeCondition) corev1.Node {
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: NodeName(n), Labels: map[string]string{"node.gardener.cloud/machine-name": machineName}},
		Spec:       corev1.NodeSpec{ProviderID: ProviderID(n)},
		Status:     corev1.NodeStatus{Conditions: cs},
	}
}

// errUndecodable is an error without MCM's code and message groups.
var errUndecodable = errors.New("the provider broke down")

// undecodable answers every call of m with errUndecodable.
func undecodable(m mcmfake.Method) Action {
	return Hook(string(m)+" fails undecodably", m, func(mcmfake.Call) error { return errUndecodable })
}

// world returns a world of machine m with instances 1..n of it, the
// nodes given and everything else default.
func world(m v1alpha1.Machine, instances int, nodes ...corev1.Node) World {
	w := World{Machine: m, Nodes: nodes}
	for range instances {
		w.Instances = append(w.Instances, Instance{})
	}
	return w
}

// do is a list of actions.
func do(as ...Action) []Action { return as }

// want is a list of checks.
func want(cs ...Check) []Check { return cs }

// rows is a list of row ids.
func rows(ids ...string) []string { return ids }

// NotExercised are the rows in scope that no scenario runs through MCM's
// controller, each with the reason: one reconcile of one machine, driven
// synchronously against a real API server and the fake cloud, cannot reach
// them.
var NotExercised = map[string]string{
	"B9": "unreachable in v0.62.1: a machine enters creation with a phase other than none or CrashLoopBackOff only without " +
		"a providerID, and then B2 always writes one and B7 ends the pass",
	"H0":  "MCM reads the node through its informer's cache, which does not fail",
	"T1":  "the permit is held by another worker marking a machine of the same deployment Failed at the same time; reconciles run one at a time",
	"T2":  "MCM lists the machines through its informer's cache, which does not fail",
	"X1":  "the creation map holds a machine only while another worker creates it; reconciles run one at a time",
	"S2c": "a row of later MCMs, which cordon as a step of its own; in v0.62.1 a refused cordon is a failed drain (S2g, same text)",
	"S2d": "a row of later MCMs, which cordon as a step of its own; in v0.62.1 a refused cordon is a failed drain (S2h, same text)",
	"S3a": "MCM reads the node through its informer's cache, which does not fail",
	"S5c": "MCM reads the node through its informer's cache, which does not fail",
	"S5f": "the node would have to be in MCM's cache and gone from the API server; the controller's caches are synced before each reconcile",
}

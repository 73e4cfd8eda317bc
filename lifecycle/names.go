package lifecycle

// Names the lifecycle reads and writes on Kubernetes objects. They are MCM's,
// so that machines MCM manages can be driven by this library and back.
const (
	// Finalizer is the machine finalizer the lifecycle adds before anything
	// else and removes last (MCM's machine.sapcloud.io/machine-controller-manager).
	Finalizer = "machine.sapcloud.io/machine-controller-manager"
	// NodeFinalizer is the finalizer MCM puts on nodes of machines it manages;
	// deletion removes it before deleting the node.
	NodeFinalizer = "node.machine.sapcloud.io/machine-controller"
	// NodeLabel is the machine label that names the machine's node.
	NodeLabel = "node"
	// MachineNameLabel is the node label that names the node's machine.
	MachineNameLabel = "node.gardener.cloud/machine-name"
	// ZoneLabel is the node label that names the node's zone, which the
	// shell reads into [Node.Zone].
	ZoneLabel = "topology.kubernetes.io/zone"
	// PriorityAnnotation is the machine annotation MCM's MachineSet reads to
	// choose machines to delete; creation sets it to [DefaultPriority] when empty.
	PriorityAnnotation = "machinepriority.machine.sapcloud.io"
	// DefaultPriority is the value creation gives [PriorityAnnotation].
	DefaultPriority = "3"
	// ForceDeletionLabel, parsed as a boolean, forces drain and deletion.
	ForceDeletionLabel = "force-deletion"
	// CreationTimeoutAnnotation is the machine annotation (a Go duration)
	// that overrides the creation timeout; the shell parses it into
	// [Overrides.CreationTimeout].
	CreationTimeoutAnnotation = "node.machine.sapcloud.io/effective-creation-timeout"
	// TaintCriticalComponentsNotReady (NoSchedule) on a node keeps a Pending
	// machine from becoming Running.
	TaintCriticalComponentsNotReady = "node.gardener.cloud/critical-components-not-ready"
	// TaintInstanceNotReady is the startup taint of MCM's initialization
	// proposal (MCM issue 740,
	// https://github.com/gardener/machine-controller-manager/issues/740): the
	// kubelet registers with it and the lifecycle removes it once the machine
	// is Running, so no workload lands before initialization finished.
	TaintInstanceNotReady = "node.machine.sapcloud.io/instance-not-ready"
	// ConditionReady is the node condition that must be True for a healthy node.
	ConditionReady = "Ready"
	// ConditionTerminating is the node condition deletion sets to True.
	ConditionTerminating = "Terminating"
	// ConditionInPlaceUpdate is the node condition of MCM's in-place update
	// protocol: always True, its reason tells the owner and the node agent
	// where the update stands (the Reason constants below).
	ConditionInPlaceUpdate = "InPlaceUpdate"
	// CandidateForUpdateLabel on a node: its owner (MCM's MachineDeployment
	// controller) means to update the node in place; the shell reads it into
	// [Node.Update].
	CandidateForUpdateLabel = "node.machine.sapcloud.io/candidate-for-update"
	// SelectedForUpdateLabel on a node: its owner chose it for the in-place
	// update now; the lifecycle drains it and then tells the node agent
	// ReadyForUpdate.
	SelectedForUpdateLabel = "node.machine.sapcloud.io/selected-for-update"
	// UpdateResultLabel on a node is the node agent's verdict,
	// [UpdateResultSuccessful] or [UpdateResultFailed].
	UpdateResultLabel = "node.machine.sapcloud.io/update-result"
	// UpdateResultSuccessful is the [UpdateResultLabel] value of an update
	// that succeeded.
	UpdateResultSuccessful = "successful"
	// UpdateResultFailed is the [UpdateResultLabel] value of an update that
	// failed.
	UpdateResultFailed = "failed"
	// UpdateFailedReasonAnnotation on a node is the node agent's text of why
	// the update failed; the shell reads it into [Node.UpdateFailedReason].
	UpdateFailedReasonAnnotation = "node.machine.sapcloud.io/update-failed-reason"
	// ForceDrainLabel on a machine, exactly "True", forces the drain before
	// an in-place update (MCM reads it so, unlike [ForceDeletionLabel]); the
	// shell reads it into [Object.ForceDrain].
	ForceDrainLabel = "force-drain"
	// PreserveAnnotation, on a machine or its node, asks to keep the machine
	// and its node for diagnosis instead of replacing it: [PreserveNow],
	// [PreserveWhenFailed], [PreserveAutoPreserved] or "false". The
	// shell parses it with [ParsePreserve] into [Object.Preserve] and
	// [Node.Preserve].
	PreserveAnnotation = "node.machine.sapcloud.io/preserve"
	// ScaleDownDisabledAnnotation on a node keeps the cluster autoscaler
	// from removing it; a preserved machine's node carries it, "true".
	ScaleDownDisabledAnnotation = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
	// ScaleDownDisabledByAnnotation, "true", says the lifecycle (or MCM)
	// put [ScaleDownDisabledAnnotation] on the node, so it takes it off
	// again; one somebody else put there stays.
	ScaleDownDisabledByAnnotation = "cluster-autoscaler.kubernetes.io/scale-down-disabled-by-mcm"
	// ConditionPreserved is the node condition of preservation: True while
	// the machine is preserved (for a Failed machine, once its node is
	// drained), False once it stopped.
	ConditionPreserved = "Preserved"
	// CordonMarkAnnotation is a node annotation of the lifecycle's own
	// (MCM has none like it): the shell sets it, to
	// [CordonMarkPreservation], in the same write as the cordon of a
	// preservation's drain, and removes it with the uncordon that gives
	// the cordon back ([KindCordon] and [KindUncordon] with it as Key), so
	// that the node itself tells the lifecycle's cordon from one somebody
	// else made ([Node.OwnCordon]).
	CordonMarkAnnotation = "machine.purelifecycle.dev/cordoned-for"
	// CordonMarkPreservation is the value of [CordonMarkAnnotation].
	CordonMarkPreservation = "preservation"
	// BootstrapTokenNamespace holds the bootstrap token secrets.
	BootstrapTokenNamespace = "kube-system"
)

// BootstrapTokenID returns the ID of the bootstrap token of a machine, as MCM
// derives it: the first 6 hexadecimal digits of the last 5 bytes of the
// machine name, that is the hexadecimal of its fifth- to third-last bytes.
// Names that agree there share an ID (worker-1 to worker-9 all give
// 6b6572), so a shell that creates tokens by this ID must tell whose token
// a secret is. MCM panics on a name of fewer than 5 bytes; here such a name
// is taken whole, and one of fewer than 3 bytes is left-padded with zeros,
// so the ID always has the 6 characters a bootstrap token ID needs. The
// token's secret is kube-system/bootstrap-token-<ID>. It allocates; shells
// call it, the core only names the machine in its token effects.
func BootstrapTokenID(machineName string) string {
	const hexdigits = "0123456789abcdef"
	tail := machineName
	if len(tail) > 5 {
		tail = tail[len(tail)-5:]
	}
	buf := make([]byte, 0, 10)
	for i := 0; i < len(tail); i++ {
		buf = append(buf, hexdigits[tail[i]>>4], hexdigits[tail[i]&0x0f])
	}
	for len(buf) < 6 {
		buf = append([]byte{'0'}, buf...)
	}
	return string(buf[:6])
}

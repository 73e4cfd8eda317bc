package lifecycle

import (
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/phase"
)

// Input is everything one [Step] reads. It is read-only: Step copies what it
// changes, and never writes through the slices and maps it holds.
//
// How the shell fills each field is written on the field. The shell reads
// the world from its caches before each step; within one pass it passes the
// object as its own last write returned it, or newer, never an older copy.
type Input struct {
	// Now is the time of this step. The core never reads a clock; a zero
	// Now is refused (rule input.zero-now).
	Now time.Time
	// Object holds the machine object's fields the lifecycle reads. A zero
	// Object (no name, no UID) means the machine no longer exists (MCM D1).
	Object Object
	// Status is the lifecycle's own persisted state, as last saved.
	Status Status
	// Node is the machine's node, found by the machine's "node" label, else
	// by the node name recorded in Status, else by the node label
	// node.gardener.cloud/machine-name = machine name, else by the
	// providerID recorded in Status; Name "" when there is none. A node the
	// shell read without finding it is absent: deletion drains and deletes
	// only a node it observed, never one known only by name.
	Node Node
	// NodeReadFailed reports that the shell could not read the node for a
	// reason other than its absence (MCM H0, S3a, S5c); Node is then zero.
	NodeReadFailed bool
	// VolumeAttachments counts the live VolumeAttachments of the node
	// (spec.nodeName is the node, no deletionTimestamp); read for deletion
	// after a forced drain (MCM S3).
	VolumeAttachments int
	// TokenExists reports whether the machine's bootstrap token secret exists
	// (see [BootstrapTokenID]).
	TokenExists bool
	// Observer reports whether what the shell observes through (the API
	// server, the cloud API) is degraded. While it is, nothing is marked
	// Failed and non-deleting machines wait (MCM D4).
	Observer Observer
	// Problem is what the shell found wrong with the machine or its class
	// before it could ask the lifecycle (MCM D5, D6, X0).
	Problem Problem
	// Grant is what the fleet functions allow this machine now (see
	// [Limit]).
	Grant Grant
	// PredecessorTerminating reports that an older incarnation of the
	// machine's name (another UID) is still terminating: its instance, or
	// its node, is not gone yet. A machine being created waits for it
	// before it looks its instance up by name, as a kubelet makes a new pod
	// wait until the old pod of its name has terminated: that lookup would
	// find the older incarnation's instance and delete it, while its own
	// deletion may still be draining its node. The wait is bounded by
	// Config.PredecessorWait counted from the machine's creation time, and
	// the creation timeout counts from its end.
	//
	// A Kubernetes shell sets it when it sees the older incarnation: an
	// instance at the provider that carries the machine's name and another
	// owner UID and whose node still exists, or a node labelled with the
	// machine's name that carries another instance's providerID and is not
	// deleted yet. It clears it once neither remains.
	PredecessorTerminating bool
	// Outcome reports what happened to the previous decision's effects; nil
	// at the start of a pass.
	Outcome *Outcome
}

// Object is the machine object as the lifecycle reads it. The lifecycle
// changes it only through ensure-effects.
type Object struct {
	// Name and UID identify the machine. A new object with an old name has
	// a new UID: another incarnation.
	Name, UID string
	// Owner is the UID of the machine's owner (its MachineSet); the fleet
	// limiter groups machines by it. "" for machines without an owner.
	Owner string
	// CreationTime is the object's creationTimestamp; the creation timeout
	// counts from it.
	CreationTime time.Time
	// DeletionTime is the object's deletionTimestamp; zero when the machine
	// is not being deleted. The drain timeout counts from it.
	DeletionTime time.Time
	// Finalizer reports whether [Finalizer] is on the object.
	Finalizer bool
	// ForceDeletion reports whether [ForceDeletionLabel] parses as true.
	ForceDeletion bool
	// ForceDrain reports whether [ForceDrainLabel] is "True": the drain
	// before an in-place update deletes pods instead of evicting them.
	ForceDrain bool
	// Preserve is the machine's [PreserveAnnotation] (a shell that offers
	// its own request for preservation fills it from that too).
	Preserve Preserve
	// NodeLabel is the value of the machine's [NodeLabel] label, "" when absent.
	NodeLabel string
	// ProviderID is spec.providerID.
	ProviderID string
	// Priority is the value of [PriorityAnnotation], "" when absent.
	Priority string
	// UpdateGeneration is the desired hot-update generation: the version of
	// the part of the spec the provider can apply to a running instance (tags,
	// say: MCM issue 750,
	// https://github.com/gardener/machine-controller-manager/issues/750). A
	// Running machine whose instance is at another generation gets an
	// UpdateMachine; new instances are created at it.
	UpdateGeneration int64
	// InPlaceGeneration is the desired in-place update generation, for a
	// shell that owns the in-place update of its machines itself (the
	// project's controller; for MCM's machines the MachineDeployment
	// controller labels the nodes, and the shell leaves it 0). While it
	// differs from the status' InPlaceGeneration, a Running machine's node
	// is labelled candidate and selected for an update; once the node
	// agent's update brought the machine Running again, the generation is
	// recorded, and the labels are taken off and the node uncordoned. New
	// instances are created at it.
	InPlaceGeneration int64
	// Metadata is the desired instance metadata (read-only). The instance must
	// also carry the machine's UID as its owner: the lifecycle compares both
	// with what GetMachineStatus reports and patches every difference with one
	// UpdateMetadata.
	Metadata map[string]string
	// Overrides are the per-machine settings of the machine's spec that win
	// over [Config].
	Overrides Overrides
}

// Overrides are per-machine settings (MCM's inline MachineConfiguration and
// the creation-timeout annotation). A field that is not positive (nil for
// NodeConditions) means "use the Config". NodeConditions holds at most
// MaxNodeConditions types (rule input.out-of-range).
type Overrides struct {
	// CreationTimeout: the [CreationTimeoutAnnotation] when set, else
	// spec creationTimeout.
	CreationTimeout time.Duration
	// HealthTimeout is spec healthTimeout.
	HealthTimeout time.Duration
	// DrainTimeout is spec drainTimeout.
	DrainTimeout time.Duration
	// InPlaceUpdateTimeout is spec inPlaceUpdateTimeout.
	InPlaceUpdateTimeout time.Duration
	// PreserveTimeout is spec machinePreserveTimeout.
	PreserveTimeout time.Duration
	// MaxEvictRetries is spec maxEvictRetries.
	MaxEvictRetries int32
	// DisableHealthTimeout is spec disableHealthTimeout: an unhealthy machine
	// is then never marked Failed.
	DisableHealthTimeout bool
	// NodeConditions is spec nodeConditions: the node condition types that
	// make a node unhealthy when not False. Nil means the Config's list.
	NodeConditions []string
}

// Node is what the lifecycle reads of a node. The zero Node (Name "") means
// no node was found.
type Node struct {
	// Name of the node.
	Name string
	// ProviderID is the node's spec.providerID, "" when not yet set.
	ProviderID string
	// MachineName is the value of the node's [MachineNameLabel] label.
	MachineName string
	// Conditions are the node's status conditions (read-only).
	Conditions []Condition
	// Taints are the taints the lifecycle reads.
	Taints Taints
	// Deleting reports whether the node has a deletionTimestamp.
	Deleting bool
	// Update is what the node's labels of the in-place update protocol say
	// ([CandidateForUpdateLabel], [SelectedForUpdateLabel],
	// [UpdateResultLabel]).
	Update UpdateLabels
	// Preserve is the node's [PreserveAnnotation].
	Preserve Preserve
	// ScaleDownDisabled reports that the node carries
	// [ScaleDownDisabledByAnnotation] "true": the lifecycle, or MCM, kept
	// the cluster autoscaler from removing it.
	ScaleDownDisabled bool
	// Unschedulable is the node's spec.unschedulable: it is cordoned.
	Unschedulable bool
	// OwnCordon reports that the node carries [CordonMarkAnnotation]: the
	// cordon it shows is the one a preservation's drain made.
	OwnCordon bool
	// VolumesAttached counts the node's status.volumesAttached.
	VolumesAttached int
	// Zone is the value of the node's [ZoneLabel] label, "" when it has
	// none: the zone the fleet limiter counts the machine in
	// ([Config.ZoneOutage]).
	Zone string
	// Pods counts the pods a drain of the node must remove: the pods bound
	// to it other than DaemonSet and mirror pods, those already terminating
	// included. A drain is done when none is left, so a shell fills it
	// whenever [NeedsPods] says.
	Pods int
	// UpdateFailedReason is the node's [UpdateFailedReasonAnnotation], ""
	// when absent.
	UpdateFailedReason string
}

// Preserve is a value of [PreserveAnnotation].
type Preserve uint8

const (
	// PreserveUnset: no annotation.
	PreserveUnset Preserve = iota
	// PreserveFalse: "false", preservation not wanted (and stopped).
	PreserveFalse
	// PreserveNow: "now", preserve the machine whatever its phase.
	PreserveNow
	// PreserveWhenFailed: "when-failed", preserve the machine once it is
	// Failed.
	PreserveWhenFailed
	// PreserveAutoPreserved: "auto-preserved", the owner chose the Failed
	// machine for preservation within its maximum.
	PreserveAutoPreserved
	// PreserveInvalid: any other value, the empty one included.
	PreserveInvalid
)

// ParsePreserve reads a [PreserveAnnotation]: its value, and whether the
// annotation is present.
func ParsePreserve(value string, present bool) Preserve {
	switch {
	case !present:
		return PreserveUnset
	case value == "false":
		return PreserveFalse
	case value == "now":
		return PreserveNow
	case value == "when-failed":
		return PreserveWhenFailed
	case value == "auto-preserved":
		return PreserveAutoPreserved
	}
	return PreserveInvalid
}

// String returns the annotation's value: "" for PreserveUnset and
// "invalid" for PreserveInvalid.
func (p Preserve) String() string {
	switch p {
	case PreserveFalse:
		return "false"
	case PreserveNow:
		return "now"
	case PreserveWhenFailed:
		return "when-failed"
	case PreserveAutoPreserved:
		return "auto-preserved"
	case PreserveInvalid:
		return "invalid"
	}
	return ""
}

// UpdateLabels is the set of in-place update labels a node carries.
type UpdateLabels uint8

const (
	// UpdateCandidate: [CandidateForUpdateLabel] is set (to any value).
	UpdateCandidate UpdateLabels = 1 << iota
	// UpdateSelected: [SelectedForUpdateLabel] is set (to any value).
	UpdateSelected
	// UpdateSucceeded: [UpdateResultLabel] is [UpdateResultSuccessful].
	UpdateSucceeded
	// UpdateFailed: [UpdateResultLabel] is [UpdateResultFailed].
	UpdateFailed
)

// Has reports whether every label of l is in s.
func (s UpdateLabels) Has(l UpdateLabels) bool { return s&l == l }

// UpdateLabelsOf returns the in-place update labels among a node's labels.
func UpdateLabelsOf(labels map[string]string) UpdateLabels {
	var u UpdateLabels
	if _, ok := labels[CandidateForUpdateLabel]; ok {
		u |= UpdateCandidate
	}
	if _, ok := labels[SelectedForUpdateLabel]; ok {
		u |= UpdateSelected
	}
	switch labels[UpdateResultLabel] {
	case UpdateResultSuccessful:
		u |= UpdateSucceeded
	case UpdateResultFailed:
		u |= UpdateFailed
	}
	return u
}

// NeedsPods reports whether a shell must count the pods of node n into
// Node.Pods, for a step given status st and object o: for a machine being
// deleted, a Failed one (whose node is drained when it is preserved) and a
// node selected for an in-place update, all of which may be drained.
func NeedsPods(st *Status, o *Object, n *Node) bool {
	return !o.DeletionTime.IsZero() || st.Phase == phase.Failed || n.Update.Has(UpdateSelected)
}

// Found reports whether the node exists.
func (n Node) Found() bool { return n.Name != "" }

// Taints is the set of node taints the lifecycle reads.
type Taints uint8

const (
	// CriticalComponentsNotReady is [TaintCriticalComponentsNotReady] with
	// effect NoSchedule.
	CriticalComponentsNotReady Taints = 1 << iota
	// InstanceNotReady is [TaintInstanceNotReady], any effect.
	InstanceNotReady
)

// Has reports whether every taint of t is in s.
func (s Taints) Has(t Taints) bool { return s&t == t }

// Condition is a node condition, as observed and as mirrored into a Status.
type Condition struct {
	// Type is the condition type, such as "Ready" or "DiskPressure".
	Type string
	// Status is True, False or Unknown.
	Status ConditionStatus
	// Since is the condition's lastTransitionTime.
	Since Stamp
	// Reason and Message are the condition's own texts.
	Reason, Message string
}

// ConditionStatus is the status of a condition. The zero value is
// ConditionUnknown, which counts as unhealthy.
type ConditionStatus uint8

const (
	// ConditionUnknown is Kubernetes' "Unknown".
	ConditionUnknown ConditionStatus = iota
	// ConditionTrue is "True".
	ConditionTrue
	// ConditionFalse is "False".
	ConditionFalse
)

// String returns Kubernetes' text for the status.
func (s ConditionStatus) String() string {
	switch s {
	case ConditionTrue:
		return "True"
	case ConditionFalse:
		return "False"
	}
	return "Unknown"
}

// Observer reports the health of what the shell observes through.
type Observer struct {
	// Degraded reports that the API server or cloud API cannot be trusted
	// now (unreachable, or its caches are stale).
	Degraded bool
	// Since is when the observer became degraded or, when not degraded,
	// when it became healthy again (zero: healthy for as long as known).
	// After an outage, timeouts count from here at the earliest, so the end
	// of an outage never fails a fleet at once. While it was degraded,
	// machines waited a Long period: when it recovers, the shell reconciles
	// its machines (as informers relist after their watches reconnect), so
	// what happened meanwhile, a node healthy again, is seen at once.
	Since time.Time
}

// Problem is what the shell found wrong before it could ask the lifecycle.
type Problem uint8

const (
	// ProblemNone: the machine and its class are fine.
	ProblemNone Problem = iota
	// ProblemInvalidMachine: the machine failed validation or conversion
	// (MCM D5: retried Long).
	ProblemInvalidMachine
	// ProblemClassUnavailable: the machine class or its secret is missing or
	// unreadable (MCM D6: retried Long).
	ProblemClassUnavailable
	// ProblemClassNotReady: the class exists but is not ready yet, for
	// example it lacks its finalizer (MCM D6: retried Short).
	ProblemClassNotReady
	// ProblemInvalidNodeTemplate: the class's node template is invalid (MCM
	// D6: retried Short).
	ProblemInvalidNodeTemplate
)

// String names the problem.
func (p Problem) String() string {
	switch p {
	case ProblemNone:
		return "none"
	case ProblemInvalidMachine:
		return "invalid-machine"
	case ProblemClassUnavailable:
		return "class-unavailable"
	case ProblemClassNotReady:
		return "class-not-ready"
	case ProblemInvalidNodeTemplate:
		return "invalid-node-template"
	}
	return "unknown-problem"
}

// Outcome tells [Step] what happened to the previous decision's effects (the
// caller's obligations 1 to 3 of the package doc). Successes are reported too:
// the lifecycle learns that an effect was carried out only from its Outcome.
type Outcome struct {
	// OpID is the previous decision's [Decision.OpID]. An Outcome whose OpID
	// the status does not expect (a late or duplicate result) is ignored.
	OpID OpID
	// Persist is the result of saving the previous decision's Status. When
	// it is not [WriteOK], nothing else ran.
	Persist Write
	// Ran counts the effects carried out, in order, the driver call included
	// once it returned (whatever its code).
	Ran int
	// Stopped is the result of the effect at index Ran when the shell
	// stopped before the end: the write that failed. [WriteOK] when every
	// effect ran.
	Stopped Write
	// Error is the error text of the write that stopped the effects, for the
	// LastOperation descriptions that quote it (a failed drain, say).
	Error string
	// Result is the driver call's result when the decision had one and it
	// ran.
	Result driverapi.Result
	// CreatedNode is the node whose name a CreateMachine Result returned, if
	// such a node exists (the stale-node check of MCM A5); Name "" when
	// there is none. The shell fills it only for a CreateMachine result.
	CreatedNode Node
}

// Grant is what the fleet functions allow one machine now. The shell
// computes it with [Limit] once per owner per fleet pass and serialises
// grants per owner.
type Grant struct {
	// Fail allows an Unknown or InPlaceUpdateFailed machine past its health
	// timeout to be marked Failed (after the provider is asked). A machine
	// that already holds a grant (FlagGranted) keeps it while it may use it.
	Fail bool
	// Preserve, for a Failed machine that no annotation names, preserves
	// it as auto-preserved ([Config.AutoPreserve]); once the grant is
	// gone, its preservation stops.
	Preserve bool
	// Held, when set, says the machine's zone is in an outage
	// ([Config.ZoneOutage]): the machine is not marked Failed before Held,
	// and waits for it ([WaitZoneOutage]), never longer than the Config's
	// hold past its health timeout.
	Held time.Time
}

// Write is the result of an API write: persisting the status or carrying
// out an object, node or token effect.
type Write uint8

const (
	// WriteOK: the write succeeded (or, for an event, was attempted).
	WriteOK Write = iota
	// WriteConflict: the API server refused a stale write (HTTP 409).
	WriteConflict
	// WriteNotFound: the object written to does not exist.
	WriteNotFound
	// WriteFailed: any other error.
	WriteFailed
)

// String names the write result.
func (w Write) String() string {
	switch w {
	case WriteOK:
		return "ok"
	case WriteConflict:
		return "conflict"
	case WriteNotFound:
		return "not-found"
	case WriteFailed:
		return "failed"
	}
	return "unknown-write"
}

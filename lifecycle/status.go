package lifecycle

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// Status is the lifecycle's persisted state of one machine. Everything the
// flows decide on is explicit here; nothing is inferred from free text. The
// shell saves it whenever [Decision.Changed] is true, before it carries out
// any effect: it is the write-ahead record.
//
// The value is kept compact (times are [Stamp]s, enums are bytes) because
// copying it is the main cost of a step. Slices and maps in it are never
// written in place: a step that changes one builds a new one.
type Status struct {
	// Phase is MCM's machine phase.
	Phase phase.Phase
	// Stage is the program counter of the creation and deletion flows.
	Stage Stage
	// Flags are the facts a flow recorded.
	Flags Flags
	// Failures counts consecutive failures per sub-flow, for backoff.
	Failures Failures
	// Attempt is the creation attempt. With the machine's UID it forms the
	// idempotency key of CreateMachine; it grows only when an instance is
	// deliberately discarded, so retries of one creation reuse one key.
	Attempt uint32
	// Seq grows by one with every change of the status. Decisions carry it
	// in their [OpID], so an outcome of an older decision is recognised.
	Seq uint32
	// PhaseSince is when the current phase was entered.
	PhaseSince Stamp
	// StageSince is when the current stage was entered.
	StageSince Stamp
	// RetryAfter is the earliest time the current stage may ask the driver
	// again after a failure (its backoff); unset when it need not wait. A
	// reconcile that comes earlier, for whatever reason, waits: backoff is
	// kept by the status, not by the shell's requeue.
	RetryAfter Stamp
	// LastOp is MCM's LastOperation in structured form; lastop renders its
	// description on demand.
	LastOp lastop.Operation
	// ProviderID identifies the machine's instance at the provider; "" until
	// an instance is recorded.
	ProviderID string
	// NodeName is the name of the instance's node as the provider reported it.
	NodeName string
	// LastKnownState is the provider's opaque state, as the last
	// CreateMachine or DeleteMachine response gave it. No error path clears it.
	LastKnownState string
	// Addresses are the instance's addresses (read-only; replaced, never
	// written in place). Only kept without a target cluster, as MCM does.
	Addresses []driverapi.Address
	// Conditions mirror the node's conditions (read-only; replaced, never
	// written in place).
	Conditions []Condition
	// OwnerUID is the machine UID the provider last reported the instance
	// belongs to (its owner UID metadata); a lagging one is repaired.
	OwnerUID string
	// AppliedGeneration is the hot-update generation the instance is at: the
	// one it was created at, or the last one UpdateMachine applied.
	AppliedGeneration int64
	// InPlaceGeneration is the in-place update generation the node is at:
	// the one its instance was created at, or the last one an in-place
	// update the lifecycle asked for brought (Object.InPlaceGeneration).
	InPlaceGeneration int64
	// RejectedGeneration is the hot-update generation the provider could not
	// apply in place; while it is the desired one, the machine needs
	// replacement (FlagNeedsReplacement) and no update is asked.
	RejectedGeneration int64
	// Metadata is the instance metadata last observed by GetMachineStatus,
	// restricted to the keys the lifecycle manages (read-only; replaced,
	// never written in place).
	Metadata map[string]string
	// MetadataObserved is when GetMachineStatus last reported the instance's
	// metadata.
	MetadataObserved Stamp
	// MetadataSince is when the current metadata patch was asked; with
	// Failures.Metadata it sets when the next one may be.
	MetadataSince Stamp
	// PreserveUntil is when the machine's preservation ends (MCM's
	// preserveExpiryTime); unset while it is not preserved.
	PreserveUntil Stamp
	// CreationFrom is when the creation timeout starts counting, when that
	// is later than the object's creation time: the end of a wait for an
	// older incarnation of the machine's name (Input.PredecessorTerminating),
	// and, while the machine waits, the latest that wait may end.
	CreationFrom Stamp
	// UIDHash is the machine's UID hashed for its deterministic jitter
	// ([retry.HashKey]), kept so that a step does not hash the UID at every
	// resync; 0 until a step that changes the status records it. It belongs
	// to the UID: a shell saves and reads it back with the rest, and never
	// carries it to an object with another UID. Whatever it holds, a
	// requeue stays within its jitter window.
	UIDHash retry.KeyHash
}

// Stage is the program counter of the creation and deletion flows: the step a
// machine is in, explicit in the status instead of hidden in a description
// (MCM design problem d.1 in doc/mcm-rows.md). The zero value is StageNone.
type Stage uint8

const (
	// StageNone: no flow is in progress.
	StageNone Stage = iota
	// StageCreating: a CreateMachine was decided (the intent and the
	// attempt are recorded) and its instance is not recorded yet.
	StageCreating
	// StageInitializing: the instance is recorded; InitializeMachine has not
	// succeeded yet.
	StageInitializing
	// StageGetVMStatus: deletion began; find the node and ask the provider
	// about the instance (MCM S1, marker "Set machine status to termination.
	// Now, getting VM Status").
	StageGetVMStatus
	// StageDrain: cordon and drain the node (MCM S2, "Initiate node drain").
	StageDrain
	// StageVolumes: after a forced drain, delete the node's volume
	// attachments (MCM S3, "Delete Volume Attachments").
	StageVolumes
	// StageDeleteVM: ask DeleteMachine (MCM S4, "Initiate VM deletion").
	StageDeleteVM
	// StageDeleteNode: delete the node object (MCM S5, "Initiate node object
	// deletion").
	StageDeleteNode
	// StageRemoveFinalizer: remove the machine's finalizer (MCM X9,
	// "Initiate machine object finalizer removal").
	StageRemoveFinalizer
	// StageInPlaceDrain: the node of a Running machine was selected for an
	// in-place update; it is cordoned and drained before the node agent is
	// told to go on (MCM I2). StageSince is when the drain began; the drain
	// timeout counts from it.
	StageInPlaceDrain
	// StagePreserveDrain: the node of a preserved Failed machine is
	// cordoned and drained, so its workloads move while the node is kept
	// for diagnosis. StageSince is when the drain began.
	StagePreserveDrain
	stageCount
)

// String names the stage.
func (s Stage) String() string {
	switch s {
	case StageNone:
		return "none"
	case StageCreating:
		return "creating"
	case StageInitializing:
		return "initializing"
	case StageGetVMStatus:
		return "get-vm-status"
	case StageDrain:
		return "drain"
	case StageVolumes:
		return "volume-attachments"
	case StageDeleteVM:
		return "delete-vm"
	case StageDeleteNode:
		return "delete-node"
	case StageRemoveFinalizer:
		return "remove-finalizer"
	case StageInPlaceDrain:
		return "in-place-drain"
	case StagePreserveDrain:
		return "preserve-drain"
	}
	return "unknown-stage"
}

// ParseStage returns the stage whose String is text, so a shell can store
// the stage as text and read it back. The empty text is [StageNone] too, for
// a status written without a stage; any other text is an error.
func ParseStage(text string) (Stage, error) {
	if text == "" {
		return StageNone, nil
	}
	for s := range stageCount {
		if s.String() == text {
			return s, nil
		}
	}
	return StageNone, fmt.Errorf("lifecycle: unknown stage %q", text)
}

// Valid reports whether s is a declared stage.
func (s Stage) Valid() bool { return s < stageCount }

// ofCreation reports whether the stage belongs to the creation flow.
func (s Stage) ofCreation() bool { return s == StageCreating || s == StageInitializing }

// deleting reports whether the stage belongs to the deletion flow.
func (s Stage) deleting() bool { return s >= StageGetVMStatus && s <= StageRemoveFinalizer }

// Flags are facts a flow recorded in the status.
type Flags uint32

const (
	// FlagStaleInstance: the recorded instance was created on a stale node
	// object (MCM A5) and must be deleted at the provider; ProviderID names it.
	FlagStaleInstance Flags = 1 << iota
	// FlagGranted: the fleet limiter granted this Unknown machine its
	// replacement; the lifecycle is confirming with the provider before it
	// marks the machine Failed. The limiter counts it as in flight.
	FlagGranted
	// FlagWasFailed: deletion began while the machine was Failed; the node's
	// Terminating condition says Unhealthy instead of ScaleDown.
	FlagWasFailed
	// FlagDrainSucceeded: the node was drained (MCM S2f).
	FlagDrainSucceeded
	// FlagDrainForced: the drain was forced, whether or not it succeeded
	// (MCM S2c, S2e, S2g).
	FlagDrainForced
	// FlagDrainSkipped: there was no node to drain (MCM S1a, S2a).
	FlagDrainSkipped
	// FlagTerminated: the provider confirmed the instance is gone
	// (DeleteMachine answered OK or NotFound). Terminating is the phase of a
	// deletion that began; Terminated is this fact.
	FlagTerminated
	// FlagNeedsReplacement: the provider cannot apply the desired hot update
	// in place (Unimplemented or FailedPrecondition); the machine keeps
	// running at its applied generation until its owner replaces it. The
	// lifecycle never replaces it silently.
	FlagNeedsReplacement
	// FlagMetadataUnverified: an UpdateMetadata was asked after the last
	// observation; only the next observation tells what the instance
	// carries, so the machine is not in sync until then.
	FlagMetadataUnverified
	// FlagDraining: the drain of the node is under way (in StageDrain,
	// StageInPlaceDrain or StagePreserveDrain): its node is cordoned and its pods are being
	// evicted; in StageDrain, StageSince is when this drain began. The drain ends when the observed node has no
	// pods left to drain (Node.Pods), or by its timeouts.
	FlagDraining
	// FlagDeletingPods: the drain under way (FlagDraining) is forced: it
	// deletes the node's pods instead of evicting them; in StageDrain,
	// StageSince is when it was forced.
	FlagDeletingPods
	// FlagPreserveByNode: the node's preserve annotation decides the
	// machine's preservation; once the node carried one, its removal
	// stops the preservation even where the machine's own annotation asks
	// for it.
	FlagPreserveByNode
	// FlagPreserveDrained: the node of the preserved machine was drained
	// while it was Failed; it counts while the node shows it cordoned and
	// without pods, and goes when the machine leaves Failed.
	FlagPreserveDrained
	// FlagAutoPreserved: the preservation was granted by the fleet
	// (Grant.Preserve, Config.AutoPreserve), not asked by an annotation.
	// It stays once that preservation ended, until the machine leaves
	// Failed, so that one spell of Failed is auto-preserved once.
	FlagAutoPreserved
	// FlagPreserveCordoned: the node's cordon is the lifecycle's to give
	// back without the node marking it so: the cordon of a preservation's
	// drain the lifecycle did not see, found on the node of a Failed
	// machine whose Preserved condition said the preservation drained it
	// (MCM's, before a take-over), or one an earlier version of the
	// lifecycle made, which did not mark its cordons. It uncordons the
	// node once the machine is no longer Failed.
	FlagPreserveCordoned
	// FlagPreserveCordonMarked: the lifecycle cordoned the node,
	// schedulable until then, to drain it for the preservation of the
	// Failed machine, with its mark ([CordonMarkAnnotation]) in the same
	// write. It uncordons the node once the machine is no longer Failed
	// if the node still shows the mark ([Node.OwnCordon]); a cordon
	// without it is somebody else's (the lifecycle's own cordon write was
	// lost and an administrator cordoned the node since), which stays,
	// and the flag goes.
	FlagPreserveCordonMarked

	flagsKnown = FlagStaleInstance | FlagGranted | FlagWasFailed | FlagDrainSucceeded |
		FlagDrainForced | FlagDrainSkipped | FlagTerminated | FlagNeedsReplacement | FlagMetadataUnverified |
		FlagDraining | FlagDeletingPods | FlagPreserveByNode | FlagPreserveDrained | FlagAutoPreserved |
		FlagPreserveCordoned | FlagPreserveCordonMarked
	// flagsPreserveCordon: the lifecycle holds a cordon of the node to
	// give back once the machine is no longer Failed.
	flagsPreserveCordon = FlagPreserveCordoned | FlagPreserveCordonMarked
	flagsDrainUnderWay  = FlagDraining | FlagDeletingPods
	flagsDrained        = FlagDrainSucceeded | FlagDrainForced | FlagDrainSkipped
)

// Has reports whether every flag of f is set in s.
func (s Flags) Has(f Flags) bool { return s&f == f }

// flagNames names each declared flag, by bit. It is read-only.
var flagNames = [...]string{"stale-instance", "granted", "was-failed", "drain-succeeded", "drain-forced",
	"drain-skipped", "terminated", "needs-replacement", "metadata-unverified", "draining", "deleting-pods",
	"preserve-by-node", "preserve-drained", "auto-preserved", "preserve-cordoned", "preserve-cordon-marked"}

// String names the flags of s, joined by ",", such as
// "drain-succeeded,terminated"; a bit no flag declares reads "bit-N". The
// empty set is "". [ParseFlags] reads it back.
func (s Flags) String() string {
	var b []byte
	for i := 0; i < 32; i++ {
		if s&(1<<i) == 0 {
			continue
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		if i < len(flagNames) {
			b = append(b, flagNames[i]...)
		} else {
			b = append(b, "bit-"...)
			b = strconv.AppendInt(b, int64(i), 10)
		}
	}
	return string(b)
}

// ParseFlags returns the flags whose String is text, so a shell can store
// them as names and read them back; an unknown name is an error.
func ParseFlags(text string) (Flags, error) {
	var f Flags
	for text != "" {
		name := text
		if i := strings.IndexByte(text, ','); i >= 0 {
			name, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		bit := -1
		for i, n := range flagNames {
			if n == name {
				bit = i
			}
		}
		if rest, ok := strings.CutPrefix(name, "bit-"); ok && bit < 0 {
			if n, err := strconv.Atoi(rest); err == nil && n >= len(flagNames) && n < 32 {
				bit = n
			}
		}
		if bit < 0 {
			return 0, fmt.Errorf("lifecycle: unknown flag %q", name)
		}
		f |= 1 << bit
	}
	return f, nil
}

// Failures counts consecutive failures per sub-flow. A count grows when a
// step of its sub-flow fails and returns to zero when one succeeds; backoff
// and jitter apply from the second failure (retry.Policy.Backoff).
type Failures struct {
	// Create counts failed lookups, creations and initializations.
	Create uint8
	// Health counts failed confirmations of an unhealthy machine.
	Health uint8
	// Delete counts failed deletion steps (drains included).
	Delete uint8
	// Update counts failed hot updates.
	Update uint8
	// Metadata counts metadata patches that did not converge.
	Metadata uint8
	// Drain counts failed drains of a node whose machine stays: before an
	// in-place update, or of a preserved Failed machine.
	Drain uint8
}

// bump returns n+1, saturating.
func bump(n uint8) uint8 {
	if n == 255 {
		return n
	}
	return n + 1
}

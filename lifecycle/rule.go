package lifecycle

import "strconv"

// Rule names the rule behind a decision. Its [Rule.String] is a stable
// identifier ("create.vm-not-found") for logs, metrics and tests; its
// [Rule.Text] is a short sentence for people. Rules are only ever added; an
// identifier never changes meaning.
type Rule uint16

// The rules. The comment on each names the MCM decision-table row it
// implements, or the deviation (doc/mcm-compat.md) it adds.
const (
	// RuleNone is the zero Rule; no decision holds it.
	RuleNone Rule = iota

	// RuleNoMachine: the machine object is gone; nothing to do (D1).
	RuleNoMachine
	// RuleInvalidConfig: the Config fails Validate; nothing is done.
	RuleInvalidConfig
	// RuleZeroNow: Input.Now is the zero time; nothing is done.
	RuleZeroNow
	// RuleInvalidObject: the object has a name but no UID, or a UID but no
	// name; nothing is done.
	RuleInvalidObject
	// RuleInvalidStatus: the status holds an unknown phase, stage or flag;
	// nothing is done and the status is kept as it is.
	RuleInvalidStatus
	// RuleInputOutOfRange: a time of the input lies outside the years a
	// Stamp holds (1678 to 2262), or the machine watches more than
	// MaxNodeConditions condition types; nothing is done and the status is
	// kept as it is.
	RuleInputOutOfRange

	// RulePersistConflict: saving the previous decision's status met a
	// conflict; retry after the conflict period.
	RulePersistConflict
	// RulePersistFailed: saving the previous decision's status failed.
	RulePersistFailed
	// RuleWriteConflict: an effect's write met a conflict.
	RuleWriteConflict
	// RuleWriteFailed: an effect's write failed (or its object is gone).
	RuleWriteFailed

	// RuleFrozen: the observer is degraded and the machine is not being
	// deleted; wait (D4).
	RuleFrozen
	// RuleInvalidMachine: the machine failed validation (D5).
	RuleInvalidMachine
	// RuleClassUnavailable: the class or its secret is missing (D6).
	RuleClassUnavailable
	// RuleClassNotReady: the class is not ready yet (D6).
	RuleClassNotReady
	// RuleInvalidNodeTemplate: the class's node template is invalid (D6).
	RuleInvalidNodeTemplate
	// RuleIdle: nothing to do until the next resync or check (D10; also a
	// machine in MCM's in-place phases, or Terminating without a deletion
	// time).
	RuleIdle
	// RuleAwaitReplacement: the machine is Failed; its owner replaces it.
	RuleAwaitReplacement
	// RuleDeleteBegins: deletion was requested; the machine becomes
	// Terminating (D3, X3).
	RuleDeleteBegins
	// RuleDeleteNoFinalizer: deletion was requested but the finalizer is
	// missing; nothing can be done (X2).
	RuleDeleteNoFinalizer

	// RuleCreateLookup: ask GetMachineStatus whether the instance exists
	// (creation flow, every pass).
	RuleCreateLookup
	// RuleCreateLookupUndecodable: GetMachineStatus failed with an error
	// that is not a status error; no writes (A1).
	RuleCreateLookupUndecodable
	// RuleCreateVMNotFound: no instance exists; record the creation intent
	// and ask CreateMachine (A2-A6).
	RuleCreateVMNotFound
	// RuleCreateResourceExhausted: CreateMachine answered ResourceExhausted (A2).
	RuleCreateResourceExhausted
	// RuleCreateTransient: CreateMachine answered a transient code (A3).
	RuleCreateTransient
	// RuleCreateFailed: CreateMachine failed otherwise (A4).
	RuleCreateFailed
	// RuleCreateStaleNode: the created instance's node name belongs to a
	// node of another instance; mark Failed and delete the instance (A5,
	// compared by providerID).
	RuleCreateStaleNode
	// RuleCreateStaleDeleted: the stale-node instance is gone at the provider.
	RuleCreateStaleDeleted
	// RuleCreateCreated: CreateMachine succeeded; record the instance and
	// ask InitializeMachine (A6).
	RuleCreateCreated
	// RuleCreateEmptyIdentity: the driver answered OK without a providerID
	// or node name; nothing is recorded (B1).
	RuleCreateEmptyIdentity
	// RuleCreateRecorded: GetMachineStatus found nothing but an instance is
	// recorded; go on with it (A7).
	RuleCreateRecorded
	// RuleCreateUninitialized: the instance exists but must be initialized
	// (A8).
	RuleCreateUninitialized
	// RuleCreateLookupFailed: GetMachineStatus failed with a decodable code
	// (A9).
	RuleCreateLookupFailed
	// RuleCreateAdopted: GetMachineStatus found the instance; record it (A10).
	RuleCreateAdopted
	// RuleCreateForeignInstance: the instance found belongs to another
	// incarnation of the machine (another UID); delete it, never adopt it.
	RuleCreateForeignInstance
	// RuleCreateForeignDeleted: the other incarnation's instance is gone;
	// create afresh with a new idempotency key.
	RuleCreateForeignDeleted
	// RuleCreateInitUnimplemented: InitializeMachine is not implemented;
	// nothing to initialize (B3).
	RuleCreateInitUnimplemented
	// RuleCreateInitUndecodable: InitializeMachine failed with an error that
	// is not a status error; no status write (B4).
	RuleCreateInitUndecodable
	// RuleCreateInitFailed: InitializeMachine failed (B5).
	RuleCreateInitFailed
	// RuleCreatePending: the instance is created and initialized; wait for
	// its node (B8).
	RuleCreatePending
	// RuleCreateAvailable: the instance is created and initialized and there
	// is no target cluster (B6, B8).
	RuleCreateAvailable
	// RuleCreateTimeout: a machine still being created (no phase or
	// CrashLoopBackOff, whatever its stage) passed its creation timeout (MCM
	// issue 1110,
	// https://github.com/gardener/machine-controller-manager/issues/1110).
	RuleCreateTimeout
	// RuleCreateBackoff: a creation step failed; waiting for its retry time
	// (Status.RetryAfter).
	RuleCreateBackoff
	// RuleCreateTimeoutLookup: the creation timed out while a CreateMachine
	// may have run; look the instance up once more before failing, so it is
	// recorded.
	RuleCreateTimeoutLookup
	// RuleCreateInstanceMissing: a machine past creation has no recorded
	// instance and the provider has none; it is never created again, health
	// decides (MCM D9 would create a new VM).
	RuleCreateInstanceMissing
	// RuleCreateAwaitPredecessor: an older incarnation of the machine's
	// name is still terminating; the creation waits for it, bounded by
	// Config.PredecessorWait, before it looks the instance up by name.
	RuleCreateAwaitPredecessor

	// RuleHealthWaitJoin: Pending; waiting for the node to join and turn
	// healthy (H11).
	RuleHealthWaitJoin
	// RuleHealthJoined: the node joined and is healthy; Running (H3, first
	// join).
	RuleHealthJoined
	// RuleHealthRejoined: the node is healthy again; Running (H3).
	RuleHealthRejoined
	// RuleHealthJoinTimeout: Pending past the creation timeout; Failed (H7).
	RuleHealthJoinTimeout
	// RuleHealthUnhealthy: Running with an unhealthy node; Unknown (H4).
	RuleHealthUnhealthy
	// RuleHealthNodeMissing: Running and the node went missing; Unknown (H1).
	RuleHealthNodeMissing
	// RuleHealthConditions: the node's conditions changed; mirrored (H2).
	RuleHealthConditions
	// RuleHealthSync: Running and healthy; remove the startup taint, delete
	// the bootstrap token and label the node as the flows require.
	RuleHealthSync
	// RuleHealthy: Running and healthy; nothing to do until the next resync
	// (H13).
	RuleHealthy
	// RuleHealthWaitUnknown: Unknown; waiting for the node to recover (H11).
	RuleHealthWaitUnknown

	// RuleHealthNodeUnreadable: the node could not be read; retry Short (H0).
	RuleHealthNodeUnreadable
	// RuleHealthTimeoutDisabled: Unknown past the health timeout, but the
	// machine disables it; nothing happens (H10).
	RuleHealthTimeoutDisabled
	// RuleHealthAwaitGrant: Unknown past the health timeout; the fleet
	// limiter has not granted its replacement (T1-T3).
	RuleHealthAwaitGrant
	// RuleHealthConfirm: granted; ask the provider what it sees before
	// marking the machine Failed (MCM never asks).
	RuleHealthConfirm
	// RuleHealthConfirmFailed: the provider could not be asked; the machine
	// is not marked Failed now and the question is retried.
	RuleHealthConfirmFailed
	// RuleHealthTimeout: Unknown past the health timeout, granted and
	// confirmed; Failed (H9, T4).
	RuleHealthTimeout

	// RuleDeleteProblem: the class or its secret is unavailable; deletion
	// waits (X0).
	RuleDeleteProblem
	// RuleDeleteAdopted: a machine another controller was deleting resumes
	// at the step its LastOperation names (X4-X9).
	RuleDeleteAdopted
	// RuleDeleteRestart: Terminating without a known step (such as MCM's
	// "Deleting machine from cloud provider"); deletion restarts (X10).
	RuleDeleteRestart
	// RuleDeleteNoTargetCluster: no target cluster; skip drain and volumes
	// (S1a).
	RuleDeleteNoTargetCluster
	// RuleDeleteNodeKnown: the node is known; go on to the drain (S1b, S1c).
	RuleDeleteNodeKnown
	// RuleDeleteLookup: the node is not known; ask GetMachineStatus (S1).
	RuleDeleteLookup
	// RuleDeleteLookupOK: the provider named the node; go on to the drain
	// (S1d).
	RuleDeleteLookupOK
	// RuleDeleteLookupUndecodable: GetMachineStatus failed undecodably (S1e).
	RuleDeleteLookupUndecodable
	// RuleDeleteLookupUnimplemented: GetMachineStatus is not implemented; go
	// on to the drain (S1f).
	RuleDeleteLookupUnimplemented
	// RuleDeleteLookupNotFound: the provider has no instance; go on to the
	// drain anyway (S1g).
	RuleDeleteLookupNotFound
	// RuleDeleteLookupRetry: GetMachineStatus failed transiently (S1h).
	RuleDeleteLookupRetry
	// RuleDeleteLookupUninitialized: the instance was never initialized; go
	// on to the drain (S1i).
	RuleDeleteLookupUninitialized
	// RuleDeleteLookupFailed: GetMachineStatus failed otherwise (S1j).
	RuleDeleteLookupFailed
	// RuleDeleteDrain: set the node's Terminating condition, cordon it and
	// begin its drain with a first round of evictions (S2).
	RuleDeleteDrain
	// RuleDeleteDrainForce: the same, forced: pods are deleted, and deletion
	// goes on if the drain fails (S2); also an unforced drain under way
	// when its drain timeout or its node's conditions force it.
	RuleDeleteDrainForce
	// RuleDeleteDrainRound: the drain under way asks again to evict (or,
	// forced, to delete) the pods left on the node, one round every
	// EvictRetryInterval.
	RuleDeleteDrainRound
	// RuleDeleteDraining: the drain under way waits for the node's pods to
	// go, until its next round or its timeout.
	RuleDeleteDraining
	// RuleDeleteDrainSkipped: there is no node to drain (S2a).
	RuleDeleteDrainSkipped
	// RuleDeleteDrainFailed: a step of the drain failed, or its pods were
	// not all gone after MaxEvictRetries rounds, and it is not forced; the
	// drain begins again after a backoff (S2b, S2d, S2h).
	RuleDeleteDrainFailed
	// RuleDeleteDrainForcedOn: a step of a forced drain failed, or pods
	// were left when ForcedDrainTimeout passed; deletion goes on (S2c,
	// S2g).
	RuleDeleteDrainForcedOn
	// RuleDeleteForceDrained: the forced drain succeeded: the node has no
	// pods left to drain (S2e).
	RuleDeleteForceDrained
	// RuleDeleteDrained: the drain succeeded: the node has no pods left to
	// drain (S2f).
	RuleDeleteDrained
	// RuleDeleteVolumes: delete the node's live volume attachments (S3d).
	RuleDeleteVolumes
	// RuleDeleteVolumesWait: volume attachments were deleted; look again
	// later (S3d).
	RuleDeleteVolumesWait
	// RuleDeleteVolumesNodeMissing: the node is gone; skip to the VM (S3b).
	RuleDeleteVolumesNodeMissing
	// RuleDeleteVolumesDetached: the node has no volumes attached (S3c).
	RuleDeleteVolumesDetached
	// RuleDeleteVolumesDone: no live volume attachments remain (S3e).
	RuleDeleteVolumesDone
	// RuleDeleteNodeUnreadable: the node could not be read (S3a, S5c).
	RuleDeleteNodeUnreadable
	// RuleDeleteVM: ask DeleteMachine, always (S4, MCM issue 850,
	// https://github.com/gardener/machine-controller-manager/issues/850).
	RuleDeleteVM
	// RuleDeleteVMDeleted: the provider deleted the instance (S4a).
	RuleDeleteVMDeleted
	// RuleDeleteVMNotFound: the provider has no instance (S4b).
	RuleDeleteVMNotFound
	// RuleDeleteVMRetry: DeleteMachine failed transiently (S4c).
	RuleDeleteVMRetry
	// RuleDeleteVMFailed: DeleteMachine failed otherwise (S4d).
	RuleDeleteVMFailed
	// RuleDeleteVMUndecodable: DeleteMachine failed undecodably (S4e).
	RuleDeleteVMUndecodable
	// RuleDeleteNode: remove the node's finalizer and delete it (S5).
	RuleDeleteNode
	// RuleDeleteNodeUnnamed: no node is known for the machine (S5a).
	RuleDeleteNodeUnnamed
	// RuleDeleteNodeNotFound: the node does not exist (S5b, S5f).
	RuleDeleteNodeNotFound
	// RuleDeleteNodeFinalizerFailed: removing the node's finalizer failed
	// (S5d).
	RuleDeleteNodeFinalizerFailed
	// RuleDeleteNodeDeleted: the node was deleted (S5e).
	RuleDeleteNodeDeleted
	// RuleDeleteNodeFailed: deleting the node failed (S5g).
	RuleDeleteNodeFailed
	// RuleDeleteRemoveFinalizer: remove the machine's finalizer, last (X9).
	RuleDeleteRemoveFinalizer
	// RuleDeleteDone: the finalizer is removed; the machine is gone.
	RuleDeleteDone
	// RuleDeleteBackoff: a deletion step failed; waiting for its retry time.
	RuleDeleteBackoff

	// RuleUpdate: the desired hot-update generation differs from the
	// applied one; ask UpdateMachine (hot update, see hotupdate.go).
	RuleUpdate
	// RuleUpdateApplied: UpdateMachine applied the generation.
	RuleUpdateApplied
	// RuleUpdateNeedsReplacement: the provider cannot apply the change in
	// place (Unimplemented, FailedPrecondition); the machine needs
	// replacement and keeps running.
	RuleUpdateNeedsReplacement
	// RuleUpdateFailed: UpdateMachine failed; retried with backoff, the
	// machine keeps running.
	RuleUpdateFailed

	// RuleMetadataObserve: ask GetMachineStatus what the instance carries
	// (after a patch, and at least every Long period).
	RuleMetadataObserve
	// RuleMetadataObserveFailed: the provider could not say; look again
	// after backoff.
	RuleMetadataObserveFailed
	// RuleMetadataPatch: the instance's metadata differs; one UpdateMetadata
	// with every differing key.
	RuleMetadataPatch
	// RuleMetadataPatched: UpdateMetadata answered OK; whether it took is
	// asked next.
	RuleMetadataPatched
	// RuleMetadataPatchFailed: UpdateMetadata failed; the instance is asked
	// what it carries after backoff.
	RuleMetadataPatchFailed
	// RuleMetadataSynced: the observation shows every desired key.
	RuleMetadataSynced
	// RuleMetadataDiffers: the observation differs from the desired
	// metadata; patched, after backoff when a patch did not take (a dropped
	// key).
	RuleMetadataDiffers

	// RuleInPlaceCondition: the node's InPlaceUpdate condition does not say
	// what its in-place labels do; set its reason (U3, U4, U6, U7).
	RuleInPlaceCondition
	// RuleInPlaceDrain: the node of a Running machine was selected for an
	// in-place update; cordon and drain it (U4, I2).
	RuleInPlaceDrain
	// RuleInPlaceDrainForce: as RuleInPlaceDrain, deleting the pods (the
	// force-drain label, the drain timeout, or a node NotReady or with a
	// read-only filesystem for ForceDrainAfter).
	RuleInPlaceDrainForce
	// RuleInPlaceDrainRound: ask again to remove the pods left on the node.
	RuleInPlaceDrainRound
	// RuleInPlaceDraining: the node drains; waiting for its pods to go.
	RuleInPlaceDraining
	// RuleInPlaceDrainFailed: a write of the drain failed; drained again
	// after a backoff (I2).
	RuleInPlaceDrainFailed
	// RuleInPlaceDrainBackoff: waiting for the retry time of a failed
	// in-place drain.
	RuleInPlaceDrainBackoff
	// RuleInPlaceDeselected: the node's selection for the update was
	// withdrawn, or the agent already reported, while it drained; the drain
	// ends.
	RuleInPlaceDeselected
	// RuleInPlaceDrained: the node is drained; the machine is
	// InPlaceUpdating and the node agent is told ReadyForUpdate (I2, I4).
	RuleInPlaceDrained
	// RuleInPlaceReady: the node of an InPlaceUpdating machine does not
	// tell the agent ReadyForUpdate; tell it again (I4).
	RuleInPlaceReady
	// RuleInPlaceWaitAgent: waiting for the node agent's verdict until the
	// in-place update timeout (I3).
	RuleInPlaceWaitAgent
	// RuleInPlaceUpdated: the node agent reported success (H5).
	RuleInPlaceUpdated
	// RuleInPlaceFailed: the node agent reported failure (H6).
	RuleInPlaceFailed
	// RuleInPlaceTimeout: the in-place update passed its timeout without a
	// verdict (H8).
	RuleInPlaceTimeout
	// RuleInPlaceRequest: the object asks an in-place update generation the
	// node is not at; label the node candidate and selected (the owner's
	// part, for a shell that owns it).
	RuleInPlaceRequest
	// RuleInPlaceDone: the in-place update asked brought the machine
	// Running again; record the generation, take the labels off and
	// uncordon the node.
	RuleInPlaceDone

	// RulePreserve: the machine's preservation begins: it is kept until
	// its expiry, one preservation timeout ahead (P4, P6, P8).
	RulePreserve
	// RulePreserveNode: the node is brought in line with the machine's
	// preservation: kept from the cluster autoscaler, its Preserved
	// condition True, uncordoned once the machine recovered; or, the
	// preservation stopped before, given back.
	RulePreserveNode
	// RulePreserveDrain: cordon and drain the node of a preserved Failed
	// machine.
	RulePreserveDrain
	// RulePreserveDrainForce: as RulePreserveDrain, deleting the pods.
	RulePreserveDrainForce
	// RulePreserveDrainRound: ask again to remove the pods left on the
	// preserved node.
	RulePreserveDrainRound
	// RulePreserveDraining: the preserved node drains; waiting for its
	// pods to go.
	RulePreserveDraining
	// RulePreserveDrainFailed: a write of the preserved node's drain
	// failed; drained again after a backoff.
	RulePreserveDrainFailed
	// RulePreserveDrainBackoff: waiting for the retry time of a failed
	// drain of the preserved node.
	RulePreserveDrainBackoff
	// RulePreserveDrained: the preserved node is drained; its Preserved
	// condition says so.
	RulePreserveDrained
	// RulePreserveKept: a Failed machine is kept until its preservation
	// expires; its owner does not replace it before.
	RulePreserveKept
	// RulePreserveStop: preservation is no longer asked (P1, P3); it stops
	// and the node is given back.
	RulePreserveStop
	// RulePreserveEnd: preservation expired, or an auto-preserved machine
	// is no longer Failed (P2, P5, P7); the annotations that asked for it
	// are removed, so it does not begin again, and it stops.
	RulePreserveEnd

	ruleCount
)

// String returns the rule's stable identifier, such as "create.vm-not-found".
func (r Rule) String() string {
	if r >= ruleCount {
		return "rule(" + strconv.Itoa(int(r)) + ")"
	}
	return ruleSpecs[r].id
}

// Text returns a short sentence saying what the rule decided.
func (r Rule) Text() string {
	if r >= ruleCount {
		return "unknown rule"
	}
	return ruleSpecs[r].text
}

// Event returns the Kubernetes event reason the rule reports, "" when the
// rule reports none.
func (r Rule) Event() string {
	if r >= ruleCount {
		return ""
	}
	return ruleSpecs[r].event
}

// Warning reports whether the rule's event is a Warning (the machine needs
// attention) rather than Normal; false for a rule without an event.
func (r Rule) Warning() bool {
	if r >= ruleCount {
		return false
	}
	return ruleSpecs[r].warn
}

// spec returns a copy of the rule's entry of the table, and false for an
// undeclared rule.
func (r Rule) spec() (ruleSpec, bool) {
	if r >= ruleCount {
		return ruleSpec{}, false
	}
	return ruleSpecs[r], true
}

// Valid reports whether r is a declared rule other than RuleNone.
func (r Rule) Valid() bool { return r > RuleNone && r < ruleCount }

// Rules returns every declared rule except RuleNone, in declaration order.
func Rules() []Rule {
	out := make([]Rule, 0, ruleCount-1)
	for r := RuleNone + 1; r < ruleCount; r++ {
		out = append(out, r)
	}
	return out
}

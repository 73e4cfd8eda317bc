package lastop

import (
	"fmt"
	"strconv"
	"strings"
)

// Desc names one description: a fixed text or a template MCM writes into
// LastOperation.Description (the step markers and the rows of MCM's creation,
// health, deletion and in-place flows in doc/mcm-rows.md), or one the library
// adds for flows MCM lacks. [Desc.Format] gives the text with its
// placeholders. The zero value is [DescNone], the empty description.
//
// Where MCM writes the same text in several rows, one Desc stands for all of
// them and the operation's [Type] and [State] tell the rows apart (for
// example [DescDrainFailed] is S2d and S2h with TypeDelete/StateFailed, and
// the in-place drain failure with TypeDrainNode/StateProcessing).
//
// Values are stable: new descriptions are only ever appended.
type Desc uint16

// The descriptions. Row names (A4, S2d, ...) are those of doc/mcm-rows.md.
const (
	// DescNone is the empty description.
	DescNone Desc = iota
	// DescUnknown is a description [Parse] could not match to any other Desc.
	// It renders as Operation.Detail verbatim, so foreign text round-trips.
	DescUnknown

	// DescCreating is B8 with a target cluster: the machine enters Pending.
	DescCreating
	// DescCreated is B8 without a target cluster: the machine is Available.
	DescCreated
	// DescCloudProviderError is A2-A4 and A9: CreateMachine or
	// GetMachineStatus failed during creation; <detail> is the driver
	// error's full text.
	DescCloudProviderError
	// DescStaleNode is A5: the new VM registered under an existing node
	// object of another name; the VM was deleted and the machine failed.
	DescStaleNode
	// DescInitFailed is B5: InitializeMachine failed; <detail> is the driver
	// error's full text.
	DescInitFailed

	// DescNodeMissing is H1: a Running machine's node object disappeared.
	DescNodeMissing
	// DescJoined is H3 for a creation: the node joined; <elapsed> is the time
	// since the machine's creation, in Go's duration syntax.
	DescJoined
	// DescRejoined is H3 otherwise (also after an in-place update): the node
	// is healthy again.
	DescRejoined
	// DescUnhealthy is H4: a Running machine's node is unhealthy.
	// <conditions> is MCM's %+v of the node conditions ([FormatConditions]).
	DescUnhealthy
	// DescInPlaceUpdated is H5: the node agent reported success.
	DescInPlaceUpdated
	// DescInPlaceUpdateFailed is H6: the node agent reported failure;
	// <detail> is the node's update-failed-reason annotation.
	DescInPlaceUpdateFailed
	// DescJoinTimeout is H7: a Pending machine passed its creation timeout.
	// MCM names the configured timeout (not the time elapsed) in Go's
	// duration syntax and then writes " minutes", as in "20m0s minutes.".
	DescJoinTimeout
	// DescInPlaceTimeout is H8: an in-place update passed its timeout, named
	// the same way as in [DescJoinTimeout].
	DescInPlaceTimeout

	// DescHealthTimeout is T4: an Unknown machine passed its health timeout
	// and is marked Failed. <elapsed> is the configured health timeout,
	// named as in [DescJoinTimeout]; <conditions> as in [DescUnhealthy].
	DescHealthTimeout
	// DescHealthTimeoutReset is the safety controller's unfreeze after
	// MCM's API-server freeze (doc/mcm-rows.md): an Unknown machine is set
	// back to Running.
	DescHealthTimeoutReset

	// DescTerminating is X3 and X10: the machine is set to Terminating. The
	// text is the GetVMStatus marker itself.
	DescTerminating
	// DescMachineSetDeleting is written by the MachineSet controller when it
	// deletes a machine, a Failed one for instance (doc/mcm-rows.md). It
	// carries no marker, so MCM restarts the deletion pipeline at X3
	// (X10; MCM design problem d.2).
	DescMachineSetDeleting
	// DescNoTargetCluster is S1a: no target cluster, skip drain and volume
	// attachments.
	DescNoTargetCluster
	// DescInitiateDrain is S1b, S1c, S1d and S1f: the drain marker alone.
	DescInitiateDrain
	// DescGetVMStatusUndecodable is S1e: GetMachineStatus returned an error
	// that is not a status error; <detail> is its text.
	DescGetVMStatusUndecodable
	// DescVMNotFoundBeforeDrain is S1g: GetMachineStatus returned NotFound.
	DescVMNotFoundBeforeDrain
	// DescGetVMStatusRetry is S1h: GetMachineStatus returned a transient
	// code.
	DescGetVMStatusRetry
	// DescVMUninitializedBeforeDrain is S1i: GetMachineStatus returned
	// Uninitialized.
	DescVMUninitializedBeforeDrain
	// DescGetVMStatusFailed is S1j: GetMachineStatus returned another code;
	// <detail> is the driver error's full text.
	DescGetVMStatusFailed
	// DescDrainSkipped is S2a: the machine has no node label.
	DescDrainSkipped
	// DescDrainConditionFailed is S2b: setting the node's Terminating
	// condition failed; <detail> is the error's text.
	DescDrainConditionFailed
	// DescForceDrainFailed is S2c and S2g: cordon or drain failed during a
	// force deletion, which continues; <detail> is the error's text.
	DescForceDrainFailed
	// DescDrainFailed is S2d and S2h (TypeDelete, StateFailed) and the
	// in-place drain failure of I2 (TypeDrainNode, StateProcessing): cordon
	// or drain failed and is retried; <detail> is the error's text.
	DescDrainFailed
	// DescForceDrainSucceeded is S2e.
	DescForceDrainSucceeded
	// DescDrainSucceeded is S2f.
	DescDrainSucceeded
	// DescVolumesNodeMissing is S3b: the node is gone; <detail> is the
	// lister's NotFound error text.
	DescVolumesNodeMissing
	// DescVolumesDetached is S3c: the node reports no attached volumes.
	DescVolumesDetached
	// DescNoLiveVolumeAttachments is S3e: no live VolumeAttachment is left.
	DescNoLiveVolumeAttachments
	// DescVMDeleted is S4a: DeleteMachine succeeded.
	DescVMDeleted
	// DescVMNotFound is S4b: DeleteMachine returned NotFound.
	DescVMNotFound
	// DescVMDeletionRetry is S4c: DeleteMachine returned a transient code;
	// <detail> is the driver error's full text.
	DescVMDeletionRetry
	// DescVMDeletionAborted is S4d: DeleteMachine returned another code;
	// <detail> is the driver error's full text.
	DescVMDeletionAborted
	// DescVMDeletionUndecodable is S4e: DeleteMachine returned an error that
	// is not a status error; <detail> is its text.
	DescVMDeletionUndecodable
	// DescNodeLabelMissing is S5a: the machine has no node label.
	DescNodeLabelMissing
	// DescNodeNotFound is S5b and S5f: the node object does not exist.
	DescNodeNotFound
	// DescNodeGetFailed is S5c: reading the node failed; <detail> is the
	// error's text.
	DescNodeGetFailed
	// DescNodeFinalizerFailed is S5d: removing the node's finalizer failed;
	// <detail> is the error's text.
	DescNodeFinalizerFailed
	// DescNodeDeleted is S5e: the node object was deleted.
	DescNodeDeleted
	// DescNodeDeleteFailed is S5g: deleting the node failed; <detail> is the
	// error's text.
	DescNodeDeleteFailed

	// DescInPlaceUpdating is I2: the node was drained for an in-place update.
	DescInPlaceUpdating

	// DescCreateTimeout is the library's: the machine was not created (no
	// phase or CrashLoopBackOff) within the creation timeout (MCM issue 1110,
	// https://github.com/gardener/machine-controller-manager/issues/1110).
	// <elapsed> is the configured creation timeout.
	DescCreateTimeout
	// DescForeignInstance is the library's: an instance found for the
	// machine's name belongs to another incarnation of the machine (another
	// UID) and is deleted first; <detail> is its provider ID.
	DescForeignInstance
	// DescStaleInstanceDeleted is the library's: the instance created on a
	// stale node object (A5) was deleted at the provider.
	DescStaleInstanceDeleted
	// DescHealthConfirmed is the library's: the health timeout passed, the
	// provider was asked and answered (the instance exists, is gone, is not
	// initialized, or cannot be reported); <detail> is its answer, <elapsed>
	// the health timeout.
	DescHealthConfirmed
	// DescWaitingForReplacementGrant is the library's: the health timeout
	// passed but the fleet limiter has not granted a replacement yet.
	DescWaitingForReplacementGrant
	// DescObserverDegraded is the library's: the health timeout is paused
	// because the observer (API server or cloud API) is degraded.
	DescObserverDegraded
	// DescHotUpdateApplied is the library's: a hot update (Driver.UpdateMachine)
	// was applied (the lifecycle status records the generation).
	DescHotUpdateApplied
	// DescHotUpdateFailed is the library's: a hot update failed and is
	// retried; <detail> is the driver error's text.
	DescHotUpdateFailed
	// DescNeedsReplacement is the library's: the change cannot be applied in
	// place; <detail> says why.
	DescNeedsReplacement
	// DescMetadataSynced is the library's: instance metadata matches the spec.
	DescMetadataSynced
	// DescMetadataPending is the library's: instance metadata differs and is
	// being patched; <detail> names the differing keys.
	DescMetadataPending

	descCount
)

// descFirst is the first Desc that names a text of its own.
const descFirst = DescUnknown + 1

// The placeholders of [Desc.Format].
const (
	phMachine       = "<machine>"
	phMachineQuoted = "<machine|quoted>"
	phNode          = "<node>"
	phNodeQuoted    = "<node|quoted>"
	phDetail        = "<detail>"
	phElapsed       = "<elapsed>"
	phConditions    = "<conditions>"
)

// descTexts holds each description's short id and template, indexed by
// Desc. It is read-only: a test (doc/tables_test.go) proves no code of the
// package writes it.
var descTexts = [descCount]struct{ id, format string }{
	DescNone:                       {"none", ""},
	DescUnknown:                    {"unknown", phDetail},
	DescCreating:                   {"b8-creating", "Creating machine on cloud provider"},
	DescCreated:                    {"b8-created", "Created machine on cloud provider"},
	DescCloudProviderError:         {"a2-cloud-provider-message", "Cloud provider message - <detail>"},
	DescStaleNode:                  {"a5-stale-node", "VM using old node obj"},
	DescInitFailed:                 {"b5-init-failed", "Provider error: <detail>. Initialize VM Instance"},
	DescNodeMissing:                {"h1-node-missing", "Node object went missing. Machine <machine> is unhealthy - changing MachinePhase to Unknown"},
	DescJoined:                     {"h3-joined", "Machine <machine> successfully joined the cluster in <elapsed>"},
	DescRejoined:                   {"h3-rejoined", "Machine <machine> successfully re-joined the cluster"},
	DescUnhealthy:                  {"h4-unhealthy", "Machine <machine> is unhealthy - changing MachinePhase to Unknown. Node conditions: <conditions>"},
	DescInPlaceUpdated:             {"h5-inplace-updated", "Machine <machine> successfully updated dependencies"},
	DescInPlaceUpdateFailed:        {"h6-inplace-update-failed", "Machine <machine> failed to update dependencies: <detail>"},
	DescJoinTimeout:                {"h7-join-timeout", "Machine <machine> failed to join the cluster in <elapsed> minutes."},
	DescInPlaceTimeout:             {"h8-inplace-timeout", "Machine <machine> failed to in-place update in <elapsed> minutes."},
	DescHealthTimeout:              {"t4-health-timeout", "Machine <machine> health checks failing since last <elapsed> minutes. Updating machine phase to Failed. Node Conditions: <conditions>"},
	DescHealthTimeoutReset:         {"unfreeze-health-reset", "Machine Health Timeout was reset due to APIServer being unreachable"},
	DescTerminating:                {"x3-terminating", "Set machine status to termination. Now, getting VM Status"},
	DescMachineSetDeleting:         {"machineset-deleting", "Deleting machine from cloud provider"},
	DescNoTargetCluster:            {"s1a-no-target-cluster", "Running without target cluster, skipping node drain and volume attachment deletion. Initiate VM deletion"},
	DescInitiateDrain:              {"s1b-initiate-drain", "Initiate node drain"},
	DescGetVMStatusUndecodable:     {"s1e-vm-status-undecodable", "Error occurred with decoding machine error status while getting VM status, aborting without retry. <detail> Set machine status to termination. Now, getting VM Status"},
	DescVMNotFoundBeforeDrain:      {"s1g-vm-not-found", "VM was not found at provider. Moving forward to node drain. Initiate node drain"},
	DescGetVMStatusRetry:           {"s1h-vm-status-retry", "Error occurred with decoding machine error status while getting VM status, aborting with retry. Set machine status to termination. Now, getting VM Status"},
	DescVMUninitializedBeforeDrain: {"s1i-vm-uninitialized", "VM instance was not initialized. Moving forward to node drain. Initiate node drain"},
	DescGetVMStatusFailed:          {"s1j-vm-status-failed", "Error occurred with decoding machine error status while getting VM status, aborting without retry. machine code: <detail> Set machine status to termination. Now, getting VM Status"},
	DescDrainSkipped:               {"s2a-drain-skipped", "Skipping drain as nodeName is not a valid one for machine. Initiate VM deletion"},
	DescDrainConditionFailed:       {"s2b-drain-condition-failed", "Drain failed due to failure in update of node conditions - <detail>. Will retry in next sync. Initiate node drain"},
	DescForceDrainFailed:           {"s2c-force-drain-failed", "Drain failed due to - <detail>. However, since it's a force deletion shall continue deletion of VM. Delete Volume Attachments"},
	DescDrainFailed:                {"s2d-drain-failed", "Drain failed due to - <detail>. Will retry in next sync. Initiate node drain"},
	DescForceDrainSucceeded:        {"s2e-force-drain-succeeded", "Force Drain successful. Delete Volume Attachments"},
	DescDrainSucceeded:             {"s2f-drain-succeeded", "Drain successful. Initiate VM deletion"},
	DescVolumesNodeMissing:         {"s3b-volumes-node-missing", "Skipping deleteNodeVolAttachments due to - <detail>. Moving to VM Deletion. Initiate VM deletion"},
	DescVolumesDetached:            {"s3c-volumes-detached", "Node Volumes for node: <node> are already detached. Moving to VM Deletion. Initiate VM deletion"},
	DescNoLiveVolumeAttachments:    {"s3e-no-live-attachments", "No Live VolumeAttachments for node: <node>. Moving to VM Deletion. Initiate VM deletion"},
	DescVMDeleted:                  {"s4a-vm-deleted", "VM deletion was successful. Initiate node object deletion"},
	DescVMNotFound:                 {"s4b-vm-not-found", "VM not found. Continuing deletion flow. Initiate node object deletion"},
	DescVMDeletionRetry:            {"s4c-vm-deletion-retry", "VM deletion failed due to - <detail>. However, will re-try in the next resync. Initiate VM deletion"},
	DescVMDeletionAborted:          {"s4d-vm-deletion-aborted", "VM deletion failed due to - <detail>. Aborting operation. Initiate VM deletion"},
	DescVMDeletionUndecodable:      {"s4e-vm-deletion-undecodable", "Error occurred while decoding machine error: <detail>. Initiate VM deletion"},
	DescNodeLabelMissing:           {"s5a-node-label-missing", `Label "node" not present on machine <machine|quoted>, continuing deletion flow. Initiate machine object finalizer removal`},
	DescNodeNotFound:               {"s5b-node-not-found", "No node object found for <node|quoted>, continuing deletion flow. Initiate machine object finalizer removal"},
	DescNodeGetFailed:              {"s5c-node-get-failed", "Retrieval of Node Object <node|quoted> failed due to error: <detail>, Retrying. Initiate node object deletion"},
	DescNodeFinalizerFailed:        {"s5d-node-finalizer-failed", "Removal of finalizers from Node Object <node|quoted> failed due to error: <detail>, Retrying. Initiate node object deletion"},
	DescNodeDeleted:                {"s5e-node-deleted", "Deletion of Node Object <node|quoted> is successful. Initiate machine object finalizer removal"},
	DescNodeDeleteFailed:           {"s5g-node-delete-failed", "Deletion of Node Object <node|quoted> failed due to error: <detail>. Initiate node object deletion"},
	DescInPlaceUpdating:            {"b7-inplace-updating", "Machine <machine> is undergoing an in-place update"},
	DescCreateTimeout:              {"create-timeout", "Machine <machine> failed to be created in <elapsed>; creation timeout exceeded."},
	DescForeignInstance:            {"foreign-instance", "Instance <detail> belongs to another incarnation of machine <machine>; deleting it before creating a new one."},
	DescStaleInstanceDeleted:       {"stale-instance-deleted", "Instance created on a stale node object was deleted at provider."},
	DescHealthConfirmed:            {"health-confirmed", "Machine <machine> health checks failing since last <elapsed>; provider reports: <detail>. Updating machine phase to Failed. Node Conditions: <conditions>"},
	DescWaitingForReplacementGrant: {"waiting-for-replacement-grant", "Machine <machine> health checks failing since last <elapsed>; waiting for the fleet limiter to allow its replacement"},
	DescObserverDegraded:           {"observer-degraded", "Machine <machine> health timeout paused: observer degraded"},
	DescHotUpdateApplied:           {"hot-update-applied", "Machine <machine> hot update applied"},
	DescHotUpdateFailed:            {"hot-update-failed", "Hot update failed due to - <detail>. Will retry"},
	DescNeedsReplacement:           {"needs-replacement", "Machine <machine> cannot be updated in place: <detail>. Needs replacement"},
	DescMetadataSynced:             {"metadata-synced", "Machine <machine> instance metadata in sync"},
	DescMetadataPending:            {"metadata-pending", "Machine <machine> instance metadata differs from desired: <detail>. Patching"},
}

// info returns d's short id and its template; "" and "" for a value that
// is not a Desc.
func (d Desc) info() (id, format string) {
	if d >= descCount {
		return "", ""
	}
	return descTexts[d].id, descTexts[d].format
}

// String returns a short stable id for d, such as "s4c-vm-deletion-retry"
// (MCM's row, then a name) or "create-timeout" (the library's own), or
// "Desc(N)" for a value that is not a Desc. It is meant for logs and tests;
// [ParseDesc] reverses it.
func (d Desc) String() string {
	if id, _ := d.info(); id != "" {
		return id
	}
	return "Desc(" + strconv.Itoa(int(d)) + ")"
}

// Format returns d's template: MCM's exact text with placeholders where
// [Operation.Describe] inserts values. A fixed description has none and is
// returned as is. The placeholders are:
//
//	<machine>          Args.Machine
//	<machine|quoted>   Args.Machine as Go's %q quotes it
//	<node>             Args.Node
//	<node|quoted>      Args.Node as Go's %q quotes it
//	<detail>           Operation.Detail
//	<elapsed>          Operation.Elapsed in Go's duration syntax ("20m0s")
//	<conditions>       Args.Conditions
//
// [DescUnknown]'s format is "<detail>"; [DescNone]'s and an invalid value's
// is "".
func (d Desc) Format() string {
	_, f := d.info()
	return f
}

// Step returns the marker d's text ends with, which is the step the flow
// continues with, or [StepNone] if it ends with none. Descriptions the
// library adds never end with a marker: they are not part of MCM's deletion
// pipeline. Step does not allocate.
func (d Desc) Step() Step {
	f := d.Format()
	for s := StepNone + 1; s < stepCount; s++ {
		if strings.HasSuffix(f, s.Marker()) {
			return s
		}
	}
	return StepNone
}

// Valid reports whether d is one of the declared descriptions.
func (d Desc) Valid() bool { return d < descCount }

// Descs returns every description except [DescNone] and [DescUnknown], in
// declaration order, in a new slice.
func Descs() []Desc {
	all := make([]Desc, 0, descCount-descFirst)
	for d := descFirst; d < descCount; d++ {
		all = append(all, d)
	}
	return all
}

// ParseDesc returns the Desc whose [Desc.String] is id, including "none" and
// "unknown".
func ParseDesc(id string) (Desc, error) {
	for d := range descCount {
		if d.String() == id {
			return d, nil
		}
	}
	return DescNone, fmt.Errorf("lastop: unknown description id %q", id)
}

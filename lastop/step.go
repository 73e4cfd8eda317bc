package lastop

import (
	"strconv"
	"strings"
)

// Step is a program-counter marker: one of the stage constants MCM appends to
// its descriptions (the deletion step markers of doc/mcm-rows.md). MCM's
// termination reconciler finds its next deletion step by looking for these
// texts in the description; see [StepOf]. The zero value is [StepNone], no
// marker.
type Step uint8

// The steps, one per deletion step marker of MCM.
const (
	// StepNone: the description carries no marker.
	StepNone Step = iota
	// StepGetVMStatus: deletion step 1, look up the VM and the node name.
	// X3 writes the marker as the whole description.
	StepGetVMStatus
	// StepInitialize: initialize the VM instance (creation, B5). Not a
	// deletion step; [StepOf] never returns it.
	StepInitialize
	// StepDrain: deletion step 2, drain the node.
	StepDrain
	// StepVolumeAttachments: deletion step 3, delete the node's volume
	// attachments (only after a force drain).
	StepVolumeAttachments
	// StepDeleteVM: deletion step 4, delete the VM.
	StepDeleteVM
	// StepDeleteNode: deletion step 5, delete the node object.
	StepDeleteNode
	// StepRemoveFinalizer: deletion step 6, remove the machine's finalizer.
	StepRemoveFinalizer
	// StepNodeReadyForUpdate: the node is drained for an in-place update.
	// MCM builds this text but always overwrites it before the status is
	// written; [StepOf] never returns it.
	StepNodeReadyForUpdate
	stepCount
)

// Marker returns MCM's exact text for s (utils.go in machineutils), or "" for
// [StepNone] and for a value that is not a step.
func (s Step) Marker() string {
	switch s {
	case StepGetVMStatus:
		return "Set machine status to termination. Now, getting VM Status"
	case StepInitialize:
		return "Initialize VM Instance"
	case StepDrain:
		return "Initiate node drain"
	case StepVolumeAttachments:
		return "Delete Volume Attachments"
	case StepDeleteVM:
		return "Initiate VM deletion"
	case StepDeleteNode:
		return "Initiate node object deletion"
	case StepRemoveFinalizer:
		return "Initiate machine object finalizer removal"
	case StepNodeReadyForUpdate:
		return "Node drain successful. Node is ready for update"
	}
	return ""
}

// String returns a short stable id for s, such as "delete-vm", or "Step(N)"
// for a value that is not a step.
func (s Step) String() string {
	switch s {
	case StepNone:
		return "none"
	case StepGetVMStatus:
		return "get-vm-status"
	case StepInitialize:
		return "initialize"
	case StepDrain:
		return "drain"
	case StepVolumeAttachments:
		return "volume-attachments"
	case StepDeleteVM:
		return "delete-vm"
	case StepDeleteNode:
		return "delete-node"
	case StepRemoveFinalizer:
		return "remove-finalizer"
	case StepNodeReadyForUpdate:
		return "node-ready-for-update"
	}
	return "Step(" + strconv.Itoa(int(s)) + ")"
}

// StepOf returns the deletion step MCM's termination reconciler picks for a
// machine whose LastOperation has this description: the first of
// [StepGetVMStatus], [StepDrain], [StepVolumeAttachments], [StepDeleteVM],
// [StepDeleteNode] and [StepRemoveFinalizer] whose marker the description
// contains anywhere (strings.Contains, in MCM's order), or [StepNone] when it
// contains none, in which case MCM restarts the pipeline at X3.
//
// This reproduces MCM faithfully, including its flaw (MCM design problem d.1
// in doc/mcm-rows.md): a description is searched as a whole, so error text
// embedded in it can reroute the pipeline. A "VM deletion failed due to -
// <err>. ... Initiate VM deletion" whose <err> contains the full GetVMStatus
// marker yields [StepGetVMStatus], not [StepDeleteVM]; a merely similar text
// such as "getting VM Status" alone matches nothing. To learn the step a
// description was written for, use [Parse] instead. StepOf does not allocate.
func StepOf(description string) Step {
	order := [...]Step{StepGetVMStatus, StepDrain, StepVolumeAttachments, StepDeleteVM, StepDeleteNode, StepRemoveFinalizer}
	for _, s := range order {
		if strings.Contains(description, s.Marker()) {
			return s
		}
	}
	return StepNone
}

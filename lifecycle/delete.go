package lifecycle

import (
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// The deletion flow (MCM's deletion rows X0-X10 and S1-S5, doc/mcm-rows.md).
// Its program counter is Status.Stage:
//
//	X3 ─▶ GetVMStatus ─▶ Drain ─┬─────────────▶ DeleteVM ─▶ DeleteNode ─▶ RemoveFinalizer ─▶ gone
//	                            └─(forced)─▶ Volumes ─┘
//
// Each stage advances only after the outcome of its effect reports it done
// (a drain is recorded as successful after it succeeded, never before), and
// a stage that advances goes straight on to the next one in the same
// decision, so the happy path takes six steps. Unlike MCM, the stage is
// explicit in the status; MCM's description is parsed once, to adopt a
// machine MCM was deleting. DeleteMachine is always asked, the node is
// always deleted when it exists, found without the machine's node label,
// and the finalizer goes last.

// delete runs a pass of the deletion flow.
func (x *decider) delete() {
	st := x.st
	if !x.in.Object.Finalizer && st.Stage == StageRemoveFinalizer {
		// Our finalizer is gone: so is the machine, for the lifecycle.
		x.rule(RuleDeleteDone)
		x.gone = true
		return
	}
	if p := x.in.Problem; p != ProblemNone {
		// X0, checked first as MCM does: the class is needed for the
		// driver calls ahead.
		x.rule(RuleDeleteProblem)
		x.requeue(problemPeriod(p))
		return
	}
	if !x.in.Object.Finalizer {
		// X2: without the finalizer nothing holds the object for us.
		x.rule(RuleDeleteNoFinalizer)
		x.requeue(retry.Long)
		return
	}
	if st.Phase != phase.Terminating {
		x.beginDeletion()
		return
	}
	if !st.Stage.deleting() {
		x.resumeDeletion()
	}
	if x.in.Outcome == nil {
		// The token the change to Terminating deleted may be left: a
		// crash or a failed write after the status was saved, or a
		// machine adopted from a controller that leaves it. Deleted at
		// each pass start while it exists, before the stage's effects.
		x.dropToken()
	}
	x.deleteStage()
}

func problemPeriod(p Problem) time.Duration {
	if p == ProblemClassNotReady || p == ProblemInvalidNodeTemplate {
		return retry.Short
	}
	return retry.Long
}

// beginDeletion is X3: the machine becomes Terminating and deletion starts
// at GetVMStatus. An update or creation in flight is abandoned; its
// recorded instance stays recorded, so deletion deletes it.
func (x *decider) beginDeletion() {
	st := x.st
	x.rule(RuleDeleteBegins)
	flags := st.Flags &^ (FlagGranted | flagsDrained | flagsDrainUnderWay | FlagWasFailed | FlagPreserveByNode | FlagPreserveDrained | flagsPreserveCordon |
		FlagAutoPreserved)
	if st.Phase == phase.Failed {
		flags |= FlagWasFailed
	}
	set(x, &st.Flags, flags)
	set(x, &st.Failures.Delete, 0)
	set(x, &st.PreserveUntil, 0) // X3: a machine being deleted is no longer kept
	x.setStage(StageGetVMStatus)
	x.become(phase.Terminating, RuleDeleteBegins, &lastop.Operation{Type: lastop.TypeDelete, State: lastop.StateProcessing, Desc: lastop.DescTerminating})
	x.requeue(retry.Short)
}

// resumeDeletion resumes the deletion of a Terminating machine that has no
// deletion stage: one MCM was deleting (its description names the step,
// X4-X9) or one whose description names none, such as MCM's MachineSet's
// "Deleting machine from cloud provider" (X10: restart).
func (x *decider) resumeDeletion() {
	st := x.st
	x.anomaly(AnomalyAdopted)
	op := st.LastOp
	step := op.Desc.Step()
	if op.Desc == lastop.DescUnknown {
		step = lastop.StepOf(op.Detail)
	}
	drained := Flags(0)
	var stage Stage
	switch step {
	case lastop.StepGetVMStatus:
		stage = StageGetVMStatus
	case lastop.StepDrain:
		stage = StageDrain
	case lastop.StepVolumeAttachments:
		stage, drained = StageVolumes, FlagDrainForced
	case lastop.StepDeleteVM:
		stage, drained = StageDeleteVM, drainedBy(op.Desc)
	case lastop.StepDeleteNode:
		stage, drained = StageDeleteNode, drainedBy(op.Desc)|FlagTerminated
	case lastop.StepRemoveFinalizer:
		stage, drained = StageRemoveFinalizer, drainedBy(op.Desc)|FlagTerminated
	default:
		x.pin(RuleDeleteRestart)
		x.setStage(StageGetVMStatus)
		x.setOp(lastop.Operation{Type: lastop.TypeDelete, State: lastop.StateProcessing, Desc: lastop.DescTerminating})
		return
	}
	x.pin(RuleDeleteAdopted)
	set(x, &st.Flags, st.Flags|drained)
	x.setStage(stage)
}

// drainedBy tells how MCM's pipeline left the drain behind a description
// that points past it.
func drainedBy(d lastop.Desc) Flags {
	switch d {
	case lastop.DescNoTargetCluster, lastop.DescDrainSkipped:
		return FlagDrainSkipped
	case lastop.DescVolumesNodeMissing, lastop.DescVolumesDetached, lastop.DescNoLiveVolumeAttachments:
		return FlagDrainForced
	}
	return FlagDrainSucceeded
}

// deleteStage carries out the current deletion stage. A drain forced now
// (its timeout passed, or its node stayed NotReady) does not wait for the
// retry time a failed unforced one set: the seal requeued that retry to
// the moment it is forced.
func (x *decider) deleteStage() {
	if !(x.st.Stage == StageDrain && x.drainMode().force) && x.holdRetry(RuleDeleteBackoff) {
		return
	}
	switch x.st.Stage {
	case StageGetVMStatus:
		x.findNode()
	case StageDrain:
		x.drain()
	case StageVolumes:
		x.volumes()
	case StageDeleteVM:
		x.deleteVM()
	case StageDeleteNode:
		x.deleteNode()
	case StageRemoveFinalizer:
		x.removeFinalizer()
	}
}

// advance records a stage's result and goes straight on to the next stage.
func (x *decider) advance(r Rule, op lastop.Operation, next Stage, flags Flags) {
	x.enter(r, op, next, flags)
	x.deleteStage()
}

// entered is enter for an outcome's handler: the decision then goes on with
// deletion from the stage entered (decideFresh's first check).
func (x *decider) entered(r Rule, op lastop.Operation, next Stage, flags Flags) next {
	x.enter(r, op, next, flags)
	return fresh
}

// enter records a stage's result and moves to the next stage.
func (x *decider) enter(r Rule, op lastop.Operation, next Stage, flags Flags) {
	x.pin(r)
	st := x.st
	set(x, &st.Flags, st.Flags|flags)
	set(x, &st.Failures.Delete, 0)
	x.setOp(op)
	x.setStage(next)
}

// deleteFailed records a failed deletion step, which is retried after
// period, with backoff from the second consecutive failure up to limit. The
// decision is done: it waits for the retry.
func (x *decider) deleteFailed(r Rule, op lastop.Operation, period, limit time.Duration) next {
	x.pin(r)
	st := x.st
	set(x, &st.Failures.Delete, bump(st.Failures.Delete))
	x.setOp(op)
	x.retryLater(x.backoffTo(period, limit, st.Failures.Delete))
	return done
}

// deletionNode is the node deletion acts on: the node observed (found by
// label, machine-name label or providerID), else the recorded one, else the
// machine's node label. "" when none is known.
//
// Without a recorded instance, an observed node that carries a providerID
// and is named neither by the status nor by the machine's node label was
// found only by its machine-name label: it may belong to an earlier machine
// of the same name whose instance still runs. It is not this machine's
// until the provider says so (findNode asks GetMachineStatus, which records
// the instance).
func (x *decider) deletionNode() string {
	if n := x.node(); n != nil {
		st := x.st
		if st.ProviderID != "" || n.ProviderID == "" || n.Name == st.NodeName || n.Name == x.in.Object.NodeLabel {
			return n.Name
		}
		return ""
	}
	name := x.st.NodeName
	if name == "" {
		name = x.in.Object.NodeLabel
	}
	if x.in.Node.Found() && x.in.Node.Name == name {
		// The node of that name carries another instance's providerID (a
		// name reused with an IP, say): it is not this machine's to drain
		// or delete.
		return ""
	}
	return name
}

func deleteOp(s lastop.State, d lastop.Desc, detail string) lastop.Operation {
	return lastop.Operation{Type: lastop.TypeDelete, State: s, Desc: d, Detail: boundDetail(detail)}
}

// findNode is S1: find the node to drain, asking the provider only when no
// node is known.
func (x *decider) findNode() {
	if x.cfg.NoTargetCluster {
		// S1a.
		x.advance(RuleDeleteNoTargetCluster, deleteOp(lastop.StateProcessing, lastop.DescNoTargetCluster, ""),
			StageDeleteVM, FlagDrainSkipped)
		return
	}
	if node := x.deletionNode(); node != "" {
		// S1b, S1c: the node is known (by label, machine-name label or
		// providerID); it is recorded, not written back as a label.
		set(x, &x.st.NodeName, node)
		x.advance(RuleDeleteNodeKnown, deleteOp(lastop.StateProcessing, lastop.DescInitiateDrain, ""), StageDrain, 0)
		return
	}
	x.act(RuleDeleteLookup)
	x.call(driverapi.Call{Method: driverapi.MethodGetStatus, Machine: x.ref(), Attempt: x.st.Attempt})
	x.requeue(retry.Short)
}

// onDeleteLookup decides on GetMachineStatus's answer during deletion
// (S1d-S1j).
func (x *decider) onDeleteLookup(res *driverapi.Result) next {
	code, class := x.classify(res)
	foreign := res.OwnerUID != "" && res.OwnerUID != x.in.Object.UID
	switch {
	case code == driverapi.OK && !foreign:
		// S1d: the provider names the node (maybe none).
		st := x.st
		if st.ProviderID == "" && res.ProviderID != "" {
			set(x, &st.ProviderID, res.ProviderID)
		}
		if res.NodeName != "" {
			set(x, &st.NodeName, res.NodeName)
		}
		op := deleteOp(lastop.StateProcessing, lastop.DescInitiateDrain, "")
		if res.NodeName != "" && res.NodeName != x.in.Node.Name {
			// The observation this step was given was made without the
			// name: stop at the drain, so the next step sees the node by
			// it (a drain acts only on a node observed).
			x.enter(RuleDeleteLookupOK, op, StageDrain, 0)
			x.requeue(retry.Short)
			return done
		}
		return x.entered(RuleDeleteLookupOK, op, StageDrain, 0)
	case class == retry.ClassUndecodable:
		// S1e.
		return x.deleteFailed(RuleDeleteLookupUndecodable,
			deleteOp(lastop.StateFailed, lastop.DescGetVMStatusUndecodable, res.ErrorText()), retry.Long, retry.Long)
	case code == driverapi.Unimplemented:
		// S1f.
		return x.entered(RuleDeleteLookupUnimplemented, deleteOp(lastop.StateProcessing, lastop.DescInitiateDrain, ""), StageDrain, 0)
	case code == driverapi.NotFound, code == driverapi.OK:
		// S1g (also another incarnation's instance: not ours to drain).
		return x.entered(RuleDeleteLookupNotFound, deleteOp(lastop.StateProcessing, lastop.DescVMNotFoundBeforeDrain, ""), StageDrain, 0)
	case class == retry.ClassTransient:
		// S1h.
		return x.deleteFailed(RuleDeleteLookupRetry, deleteOp(lastop.StateFailed, lastop.DescGetVMStatusRetry, ""), retry.Short, 0)
	case code == driverapi.Uninitialized:
		// S1i.
		return x.entered(RuleDeleteLookupUninitialized,
			deleteOp(lastop.StateProcessing, lastop.DescVMUninitializedBeforeDrain, ""), StageDrain, 0)
	default:
		// S1j.
		return x.deleteFailed(RuleDeleteLookupFailed,
			deleteOp(lastop.StateFailed, lastop.DescGetVMStatusFailed, res.ErrorText()), retry.Medium, 0)
	}
}

// volumes is S3, after a forced drain: wait until the node's volume
// attachments are gone, deleting the live ones.
func (x *decider) volumes() {
	node := x.deletionNode()
	prev := x.st.LastOp.Type
	switch {
	case x.in.NodeReadFailed:
		// S3a.
		x.rule(RuleDeleteNodeUnreadable)
		x.requeue(retry.Short)
	case node == "" || x.node() == nil:
		// S3b: MCM quotes its node lister's NotFound error. A node not
		// proven this machine's (deletionNode) is none: its volume
		// attachments are not this machine's to delete.
		x.advance(RuleDeleteVolumesNodeMissing, lastop.Operation{Type: prev, State: lastop.StateProcessing,
			Desc: lastop.DescVolumesNodeMissing, Detail: `node "` + node + `" not found`}, StageDeleteVM, 0)
	case x.in.Node.VolumesAttached == 0:
		// S3c.
		x.advance(RuleDeleteVolumesDetached, lastop.Operation{Type: prev, State: lastop.StateProcessing,
			Desc: lastop.DescVolumesDetached}, StageDeleteVM, 0)
	case x.in.VolumeAttachments > 0:
		// S3d: no status write; look again after Short.
		x.act(RuleDeleteVolumes)
		x.nodeEffect(KindDeleteVolumeAttachments, node, "", "")
		x.requeue(retry.Short)
	default:
		// S3e.
		x.advance(RuleDeleteVolumesDone, lastop.Operation{Type: prev, State: lastop.StateProcessing,
			Desc: lastop.DescNoLiveVolumeAttachments}, StageDeleteVM, 0)
	}
}

// deleteVM is S4: DeleteMachine, always (MCM issue 850,
// https://github.com/gardener/machine-controller-manager/issues/850), by the
// recorded providerID or else by name, UID and creation key. Only after the
// drain succeeded, was forced or was skipped.
func (x *decider) deleteVM() {
	st := x.st
	if st.Flags&flagsDrained == 0 {
		x.setStage(StageDrain)
		x.deleteStage()
		return
	}
	x.act(RuleDeleteVM)
	x.call(driverapi.Call{Method: driverapi.MethodDelete, Machine: x.ref(), Attempt: st.Attempt,
		LastKnownState: st.LastKnownState})
	x.requeue(retry.Short)
}

// onDeleteVM decides on DeleteMachine's answer (S4a-S4e). LastKnownState takes
// the response's value only when it has one (MCM clears it, MCM design problem
// d.12 in doc/mcm-rows.md).
func (x *decider) onDeleteVM(res *driverapi.Result) next {
	code, class := x.classify(res)
	if res.LastKnownState != "" {
		set(x, &x.st.LastKnownState, res.LastKnownState)
	}
	switch {
	case code == driverapi.OK:
		return x.entered(RuleDeleteVMDeleted, deleteOp(lastop.StateProcessing, lastop.DescVMDeleted, ""), StageDeleteNode, FlagTerminated)
	case code == driverapi.NotFound:
		return x.entered(RuleDeleteVMNotFound, deleteOp(lastop.StateProcessing, lastop.DescVMNotFound, ""), StageDeleteNode, FlagTerminated)
	case class == retry.ClassTransient:
		return x.deleteFailed(RuleDeleteVMRetry, deleteOp(lastop.StateFailed, lastop.DescVMDeletionRetry, res.ErrorText()), retry.Short, 0)
	case class == retry.ClassUndecodable:
		return x.deleteFailed(RuleDeleteVMUndecodable, deleteOp(lastop.StateFailed, lastop.DescVMDeletionUndecodable, res.ErrorText()), retry.Long, retry.Long)
	default:
		return x.deleteFailed(RuleDeleteVMFailed, deleteOp(lastop.StateFailed, lastop.DescVMDeletionAborted, res.ErrorText()), retry.Long, retry.Long)
	}
}

// deleteNode is S5: remove the node's finalizer and delete the node, whenever
// it exists, whether or not the machine has its node label (MCM issues
// 874, 875 and 1044:
// https://github.com/gardener/machine-controller-manager/issues/874,
// https://github.com/gardener/machine-controller-manager/issues/875,
// https://github.com/gardener/machine-controller-manager/issues/1044).
func (x *decider) deleteNode() {
	st := x.st
	if st.Flags&FlagTerminated == 0 {
		x.setStage(StageDeleteVM)
		x.deleteStage()
		return
	}
	node := x.deletionNode()
	switch {
	case x.in.NodeReadFailed:
		// S5c, also without a node name: a node that cannot be read
		// may be the instance's, found by its machine-name label, and is
		// not left behind on a guess.
		x.deleteFailed(RuleDeleteNodeUnreadable,
			deleteOp(lastop.StateFailed, lastop.DescNodeGetFailed, "the node could not be read"), retry.Short, 0)
	case node == "":
		// S5a.
		x.advance(RuleDeleteNodeUnnamed, deleteOp(lastop.StateProcessing, lastop.DescNodeLabelMissing, ""), StageRemoveFinalizer, 0)
	case x.node() == nil:
		// S5b.
		x.advance(RuleDeleteNodeNotFound, deleteOp(lastop.StateProcessing, lastop.DescNodeNotFound, ""), StageRemoveFinalizer, 0)
	default:
		x.act(RuleDeleteNode)
		x.nodeEffect(KindRemoveNodeFinalizer, node, NodeFinalizer, "")
		x.nodeEffect(KindDeleteNode, node, "", "")
		x.requeue(retry.Short)
	}
}

// onNodeDelete decides on the outcome of the node deletion (S5d-S5g).
func (x *decider) onNodeDelete(o *Outcome) next {
	switch {
	case o.Ran >= o.OpID.Effects():
		return x.entered(RuleDeleteNodeDeleted, deleteOp(lastop.StateProcessing, lastop.DescNodeDeleted, ""), StageRemoveFinalizer, 0)
	case failedAt(o, 2) == 0:
		return x.deleteFailed(RuleDeleteNodeFinalizerFailed, deleteOp(lastop.StateFailed, lastop.DescNodeFinalizerFailed, o.Error), retry.Short, 0)
	case o.Stopped == WriteNotFound:
		return x.entered(RuleDeleteNodeNotFound, deleteOp(lastop.StateProcessing, lastop.DescNodeNotFound, ""), StageRemoveFinalizer, 0)
	default:
		return x.deleteFailed(RuleDeleteNodeFailed, deleteOp(lastop.StateFailed, lastop.DescNodeDeleteFailed, o.Error), retry.Short, 0)
	}
}

// removeFinalizer is X9: the finalizer goes last, once the instance is
// confirmed gone and the node deleted or absent.
func (x *decider) removeFinalizer() {
	if x.st.Flags&FlagTerminated == 0 {
		x.setStage(StageDeleteVM)
		x.deleteStage()
		return
	}
	x.act(RuleDeleteRemoveFinalizer)
	x.put(KindRemoveFinalizer).Key = Finalizer
	x.requeue(retry.Long)
}

// failedAt returns the index, within the op's last tail effects, of the
// effect that stopped the op (effects before the tail, such as an event,
// are never the failing one).
func failedAt(o *Outcome, tail int) int {
	return o.Ran - (o.OpID.Effects() - tail)
}

// onVolumesDetaching decides after the deletion of the volume attachments:
// they go asynchronously; look again after Short (S3d).
func (x *decider) onVolumesDetaching(*Outcome) next {
	x.rule(RuleDeleteVolumesWait)
	x.requeue(retry.Short)
	return done
}

// onFinalizerRemoved decides on the outcome of the finalizer's removal: the
// machine is gone once it ran.
func (x *decider) onFinalizerRemoved(o *Outcome) next {
	switch {
	case o.Ran >= o.OpID.Effects():
		x.rule(RuleDeleteDone)
		x.gone = true
	case o.Stopped == WriteConflict:
		x.rule(RuleWriteConflict)
		x.requeue(retry.Conflict)
	default:
		x.rule(RuleWriteFailed)
		x.requeue(retry.Short)
	}
	return done
}

package difftest

import (
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/codes"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
)

// deletingAt returns a world whose machine is being deleted at the step
// whose marker ends its description, with instance 1 and its node label
// when withNode, and the nodes given.
func deletingAt(marker string, withNode bool, nodes ...corev1.Node) World {
	n := 0
	if withNode {
		n = 1
	}
	w := world(machineAt(terminating, lastOp(opDelete, stProcessing, marker), n, readyTrue), 1, nodes...)
	w.Deleting = true
	return w
}

// withoutNodeLabel returns w with its machine's providerID set and no
// node label.
func withoutNodeLabel(w World) World {
	w.Machine.Spec.ProviderID = ProviderID(1)
	w.Machine.Labels = nil
	return w
}

// deletionScenarios are the rows of b.6.
func deletionScenarios() []Scenario {
	noClass := deletingAt(markGetVMStatus, true)
	noClass.NoClass = true
	otherFinalizer := deletingAt(markGetVMStatus, true)
	otherFinalizer.Machine.Finalizers = []string{"example.com/keep"}
	byLabel := deletingAt(markDrain, true, nodeOf(1, readyTrue))
	byLabel.Machine.Labels["force-deletion"] = "True"
	notReady := deletingAt(markDrain, true, nodeOf(1, readyFalse))
	notReady.Machine.Status.Conditions = []corev1.NodeCondition{readyFalse}
	attached := nodeOf(1, readyTrue)
	attached.Status.VolumesAttached = []corev1.AttachedVolume{{Name: "kubernetes.io/csi/" + "disk^vol-1", DevicePath: "/dev/vdb"}}
	finalized := nodeOf(1, readyTrue)
	finalized.Finalizers = []string{"node.machine.sapcloud.io/machine-controller"}
	uninit := withoutNodeLabel(deletingAt(markGetVMStatus, false))
	uninit.NeedsInit, uninit.Instances = true, []Instance{{Uninitialized: true}}
	getVM := func(name, row string, c codes.Code, st v1alpha1.MachineState, desc string, retry time.Duration) Scenario {
		return Scenario{Name: name, Rows: rows("X4", row),
			World: withoutNodeLabel(deletingAt(markGetVMStatus, false)),
			Steps: []Step{{Do: do(FailNext(mGet, c)), Rows: rows("X4", row), Want: want(Phase(terminating), Op(opDelete, st),
				DescHas(desc), Calls(mGet), Requeue(retry))}}}
	}
	deleteVM := func(name, row string, c codes.Code, st v1alpha1.MachineState, desc string, retry time.Duration) Scenario {
		return Scenario{Name: name, Rows: rows("X7", row),
			World: deletingAt(markVMDeletion, true, nodeOf(1, readyTrue)),
			Steps: []Step{{Do: do(FailNext(mDelete, c)), Rows: rows("X7", row), Want: want(Phase(terminating), Op(opDelete, st),
				DescHas(desc), Calls(mDelete), Requeue(retry))}}}
	}
	return []Scenario{{
		Name: "delete-running", Rows: rows("D3", "X3", "X4", "S1b", "X5", "S2f", "X7", "S4a", "X8", "S5e", "X9", "D1"),
		World: world(machineAt(running, opJoined, 1, readyTrue), 1, nodeOf(1, readyTrue)),
		Steps: []Step{
			{Do: do(DeleteMachine()), Rows: rows("D3", "X3"), Want: want(Phase(terminating), Op(opDelete, stProcessing),
				Desc(markGetVMStatus), Calls(), Requeue(short))},
			{Rows: rows("X4", "S1b"), Want: want(Desc(markDrain), Calls(), Requeue(short))},
			{Rows: rows("X5", "S2f"), Want: want(Desc("Drain successful. "+markVMDeletion), Calls(),
				Wrote("node node-1: spec.unschedulable: +\"true\""), Wrote("node node-1: status.conditions[type=Terminating]"), Requeue(short))},
			{Rows: rows("X7", "S4a"), Want: want(Desc("VM deletion was successful. "+markNodeDeletion), Calls(mDelete), Requeue(short))},
			{Rows: rows("X8", "S5e"), Want: want(Desc(`Deletion of Node Object "node-1" is successful. `+markFinalizerGone),
				Wrote("node node-1: deleted"), Calls(), Requeue(short))},
			{Rows: rows("X9"), Want: want(Gone(), Calls(), Requeue(long))},
			{Rows: rows("D1"), Want: want(Gone(), Calls(), NoWrites())},
		},
	}, {
		Name: "delete-class-missing", Rows: rows("X0"),
		World: noClass,
		Steps: []Step{{Rows: rows("X0"), Want: want(Phase(terminating), Calls(), NoWrites(), Requeue(long))}},
	}, {
		Name: "delete-without-mcm-finalizer", Rows: rows("X2"),
		World: otherFinalizer,
		Steps: []Step{{Rows: rows("X2"), Want: want(Phase(terminating), Calls(), NoWrites(), Requeue(long), ErrHas("missing finalizers"))}},
	}, {
		Name: "delete-machineset-text", Rows: rows("X10", "X3"),
		World: deletingAt("Deleting machine from cloud provider", true, nodeOf(1, readyTrue)),
		Steps: []Step{{Rows: rows("X10", "X3"), Want: want(Phase(terminating), Desc(markGetVMStatus), Calls(), Requeue(short))}},
	}, {
		// S1c and S1d write the node label with an object update, then
		// the status with the machine read before it: the status write
		// always meets a conflict, and the next pass goes on as S1b.
		Name: "delete-node-by-machine-name", Rows: rows("X4", "S1c", "S1b"),
		World: withoutNodeLabel(deletingAt(markGetVMStatus, false, nodeOf(1, readyTrue))),
		Steps: []Step{
			{Rows: rows("X4", "S1c"), Want: want(NodeLabel(NodeName(1)), Desc(markGetVMStatus), Calls(), Requeue(conflict),
				ErrHas("the object has been modified"))},
			{Rows: rows("X4", "S1b"), Want: want(Desc(markDrain), Calls(), Requeue(short))},
		},
	}, {
		Name: "delete-node-from-provider", Rows: rows("X4", "S1d", "S1b"),
		World: withoutNodeLabel(deletingAt(markGetVMStatus, false)),
		Steps: []Step{
			{Rows: rows("X4", "S1d"), Want: want(NodeLabel(NodeName(1)), Desc(markGetVMStatus), Calls(mGet), Requeue(conflict),
				ErrHas("the object has been modified"))},
			{Rows: rows("X4", "S1b"), Want: want(Desc(markDrain), Calls(), Requeue(short))},
		},
	}, {
		Name: "delete-lookup-undecodable", Rows: rows("X4", "S1e"),
		World: withoutNodeLabel(deletingAt(markGetVMStatus, false)),
		Steps: []Step{{Do: do(undecodable(mGet)), Rows: rows("X4", "S1e"), Want: want(Op(opDelete, stFailed),
			DescHas("Error occurred with decoding machine error status while getting VM status, aborting without retry.", markGetVMStatus),
			Calls(mGet), Requeue(long))}},
	},
		getVM("delete-lookup-unimplemented", "S1f", codes.Unimplemented, stProcessing, markDrain, short),
		getVM("delete-lookup-not-found", "S1g", codes.NotFound, stProcessing, "VM was not found at provider. Moving forward to node drain. "+markDrain, short),
		getVM("delete-lookup-unavailable", "S1h", codes.Unavailable, stFailed, "aborting with retry. "+markGetVMStatus, short),
		getVM("delete-lookup-internal", "S1j", codes.Internal, stFailed, "aborting without retry. machine code: ", medium),
		{
			Name: "delete-lookup-uninitialized", Rows: rows("X4", "S1i"),
			World: uninit,
			Steps: []Step{{Rows: rows("X4", "S1i"), Want: want(Op(opDelete, stProcessing),
				Desc("VM instance was not initialized. Moving forward to node drain. "+markDrain), Calls(mGet), Requeue(short))}},
		}, {
			Name: "drain-without-node-name", Rows: rows("X5", "S2a"),
			World: withoutNodeLabel(deletingAt(markDrain, false)),
			Steps: []Step{{Rows: rows("X5", "S2a"), Want: want(Op(opDelete, stProcessing),
				Desc("Skipping drain as nodeName is not a valid one for machine. "+markVMDeletion), Calls(), Requeue(short))}},
		}, {
			Name: "drain-forced-by-label", Rows: rows("X5", "S2e"),
			World: byLabel,
			Steps: []Step{{Rows: rows("X5", "S2e"), Want: want(Desc("Force Drain successful. "+markVolumes), Calls(), Requeue(short))}},
		}, {
			Name: "drain-notready-under-5m", Rows: rows("X5", "S2f"),
			World: notReady,
			Steps: []Step{
				{Do: do(Advance(4 * time.Minute)), Rows: rows("X5", "S2f"), Want: want(Desc("Drain successful. " + markVMDeletion))},
			},
		}, {
			Name: "drain-forced-after-notready-5m", Rows: rows("X5", "S2e"),
			World: notReady,
			Steps: []Step{{Do: do(Advance(6 * time.Minute)), Rows: rows("X5", "S2e"), Want: want(Desc("Force Drain successful. " + markVolumes))}},
		}, {
			Name: "drain-forced-by-timeout", Rows: rows("X5", "S2e"),
			World: deletingAt(markDrain, true, nodeOf(1, readyTrue)),
			Steps: []Step{{Do: do(Advance(2*time.Hour + time.Minute)), Rows: rows("X5", "S2e"),
				Want: want(Desc("Force Drain successful. " + markVolumes))}},
		}, {
			Name: "volumes-node-gone", Rows: rows("X6", "S3b"),
			World: deletingAt(markVolumes, true),
			Steps: []Step{{Rows: rows("X6", "S3b"), Want: want(Op(opDelete, stProcessing),
				DescHas("Skipping deleteNodeVolAttachments due to - ", "Moving to VM Deletion. "+markVMDeletion), Calls(), Requeue(0))}},
		}, {
			Name: "volumes-detached", Rows: rows("X6", "S3c"),
			World: deletingAt(markVolumes, true, nodeOf(1, readyTrue)),
			Steps: []Step{{Rows: rows("X6", "S3c"), Want: want(
				Desc("Node Volumes for node: node-1 are already detached. Moving to VM Deletion. "+markVMDeletion), Calls(), Requeue(0))}},
		}, {
			Name: "volumes-attached", Rows: rows("X6", "S3d", "S3e"),
			World: deletingAt(markVolumes, true, attached),
			Steps: []Step{
				{Do: do(AddVolumeAttachment("va-1", NodeName(1))), Rows: rows("X6", "S3d"), Want: want(Desc(markVolumes),
					Wrote("volumeattachment va-1: deleted"), NoWrites("machine "), Calls(), Requeue(short))},
				{Rows: rows("X6", "S3e"), Want: want(Desc("No Live VolumeAttachments for node: node-1. Moving to VM Deletion. "+markVMDeletion),
					Calls(), Requeue(short))},
			},
		},
		{
			Name: "drain-condition-refused", Rows: rows("X5", "S2b", "S2f"),
			World: deletingAt(markDrain, true, nodeOf(1, readyTrue)),
			Steps: []Step{
				{Do: do(DenyNode(NodeName(1), "nodes/status", admissionv1.Update)), Rows: rows("X5", "S2b"), Want: want(Op(opDelete, stFailed),
					DescHas("Drain failed due to failure in update of node conditions - ", denyMessage, "Will retry in next sync. "+markDrain),
					NoWrites("node "), Calls(), Requeue(short))},
				{Do: do(AllowNodes(), Advance(short)), Rows: rows("X5", "S2f"), Want: want(Op(opDelete, stProcessing), Desc("Drain successful. "+markVMDeletion),
					Wrote("node node-1: spec.unschedulable"), Requeue(short))},
			},
		}, {
			// In v0.62.1 the cordon is part of the drain: a refused cordon
			// is a failed drain (S2h, S2g), which later MCMs split into S2d
			// and S2c with the same texts.
			Name: "drain-cordon-refused", Rows: rows("X5", "S2h"),
			World: deletingAt(markDrain, true, nodeOf(1, readyTrue)),
			Steps: []Step{{Do: do(DenyNode(NodeName(1), "nodes", admissionv1.Update)), Rows: rows("X5", "S2h"), Want: want(Op(opDelete, stFailed),
				DescHas("Drain failed due to - ", denyMessage, "Will retry in next sync. "+markDrain),
				Wrote("node node-1: status.conditions[type=Terminating].status: +\"True\""), Calls(), Requeue(short))}},
		}, {
			Name: "drain-forced-cordon-refused", Rows: rows("X5", "S2g"),
			World: byLabel,
			Steps: []Step{{Do: do(DenyNode(NodeName(1), "nodes", admissionv1.Update), DenyNode(NodeName(1), "nodes/status", admissionv1.Update)),
				Rows: rows("X5", "S2g"), Want: want(Op(opDelete, stProcessing),
					DescHas("Drain failed due to - ", denyMessage, "However, since it's a force deletion shall continue deletion of VM. "+markVolumes),
					NoWrites("node "), Calls(), Requeue(short))}},
		},
		deleteVM("delete-vm-not-found", "S4b", codes.NotFound, stProcessing, "VM not found. Continuing deletion flow. "+markNodeDeletion, short),
		deleteVM("delete-vm-unavailable", "S4c", codes.Unavailable, stFailed, "However, will re-try in the next resync. "+markVMDeletion, short),
		deleteVM("delete-vm-internal", "S4d", codes.Internal, stFailed, "Aborting operation. "+markVMDeletion, long),
		{
			Name: "delete-vm-undecodable", Rows: rows("X7", "S4e"),
			World: deletingAt(markVMDeletion, true, nodeOf(1, readyTrue)),
			Steps: []Step{{Do: do(undecodable(mDelete)), Rows: rows("X7", "S4e"), Want: want(Op(opDelete, stFailed),
				Desc("Error occurred while decoding machine error: the provider broke down. "+markVMDeletion), Calls(mDelete), Requeue(long))}},
		}, {
			Name: "delete-node-without-label", Rows: rows("X8", "S5a"),
			World: withoutNodeLabel(deletingAt(markNodeDeletion, false, nodeOf(1, readyTrue))),
			Steps: []Step{{Rows: rows("X8", "S5a"), Want: want(Op(opDelete, stProcessing),
				Desc(`Label "node" not present on machine "worker-a-1", continuing deletion flow. `+markFinalizerGone), NoWrites("node "),
				Requeue(short))}},
		}, {
			Name: "delete-node-finalizer-refused", Rows: rows("X8", "S5d"),
			World: deletingAt(markNodeDeletion, true, finalized),
			Steps: []Step{{Do: do(DenyNode(NodeName(1), "nodes", admissionv1.Update)), Rows: rows("X8", "S5d"), Want: want(Op(opDelete, stFailed),
				DescHas(`Removal of finalizers from Node Object "node-1" failed due to error: `, denyMessage, "Retrying. "+markNodeDeletion),
				NoWrites("node "), Requeue(short))}},
		}, {
			Name: "delete-node-refused", Rows: rows("X8", "S5g", "S5e"),
			World: deletingAt(markNodeDeletion, true, finalized),
			Steps: []Step{
				{Do: do(DenyNode(NodeName(1), "nodes", admissionv1.Delete)), Rows: rows("X8", "S5g"), Want: want(Op(opDelete, stFailed),
					DescHas(`Deletion of Node Object "node-1" failed due to error: `, denyMessage, markNodeDeletion),
					Wrote("node node-1: metadata.finalizers[0]: -"), Requeue(short))},
				{Do: do(AllowNodes(), Advance(short)), Rows: rows("X8", "S5e"), Want: want(Op(opDelete, stProcessing), Wrote("node node-1: deleted"), Requeue(short))},
			},
		}, {
			Name: "delete-node-missing", Rows: rows("X8", "S5b"),
			World: deletingAt(markNodeDeletion, true),
			Steps: []Step{{Rows: rows("X8", "S5b"), Want: want(Op(opDelete, stProcessing),
				Desc(`No node object found for "node-1", continuing deletion flow. `+markFinalizerGone), Requeue(short))}},
		}}
}

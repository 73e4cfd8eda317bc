package difftest

import (
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// MCM's in-place update: its phases and operation types, the node labels
// the MachineDeployment controller and the node agent set, and the
// reasons of the node condition InPlaceUpdate.
const (
	inPlaceUpdating   = v1alpha1.MachineInPlaceUpdating
	inPlaceSuccessful = v1alpha1.MachineInPlaceUpdateSuccessful
	inPlaceFailed     = v1alpha1.MachineInPlaceUpdateFailed
	opInPlace         = v1alpha1.MachineOperationInPlaceUpdate
	opDrainNode       = v1alpha1.MachineOperationDrainNode

	candidateLabel = v1alpha1.LabelKeyNodeCandidateForUpdate
	selectedLabel  = v1alpha1.LabelKeyNodeSelectedForUpdate
	resultLabel    = v1alpha1.LabelKeyNodeUpdateResult
	failedReason   = v1alpha1.AnnotationKeyMachineUpdateFailedReason
)

// inPlaceMessages are the messages MCM writes with each reason of the
// InPlaceUpdate condition (UpdateFailed's is followed by the agent's
// reason).
var inPlaceMessages = map[string]string{
	v1alpha1.CandidateForUpdate: "Node is a candidate for in-place update",
	v1alpha1.SelectedForUpdate:  "Node is selected for in-place update",
	v1alpha1.DrainSuccessful:    "Node draining successful",
	v1alpha1.ReadyForUpdate:     "Node is ready for in-place update",
	v1alpha1.UpdateSuccessful:   "Node in-place update successful",
	v1alpha1.UpdateFailed:       "Node in-place update failed: ",
}

// inPlaceCond returns the InPlaceUpdate condition with reason, as MCM
// writes it.
func inPlaceCond(reason string) corev1.NodeCondition {
	return corev1.NodeCondition{Type: v1alpha1.NodeInPlaceUpdate, Status: corev1.ConditionTrue, Reason: reason,
		Message: inPlaceMessages[reason]}
}

// reasonWrite is the check of a write of the InPlaceUpdate condition's
// reason on node-1.
func reasonWrite(reason string) Check {
	return Wrote("node node-1: status.conditions[type=InPlaceUpdate].reason: ", `"`+reason+`"`)
}

// noReasonWrite expects no write of the InPlaceUpdate condition on node-1.
func noReasonWrite() Check {
	return Check{Name: "no write of the InPlaceUpdate condition", OK: func(o *Observation) bool {
		return !Wrote("node node-1: status.conditions[type=InPlaceUpdate]").OK(o)
	}}
}

// templated returns node n with MCM's record of the class's (empty) node
// template, as MCM leaves a node it has synced: its first reconcile then
// goes on past the node-template sync to the in-place steps.
func templated(n corev1.Node) corev1.Node {
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[lastAppliedALT] = `{"metadata":{},"spec":{}}`
	return n
}

// updateNode returns node 1, Ready, synced, labelled by the
// MachineDeployment controller with the labels given (set to "true"), its
// InPlaceUpdate condition saying reason ("" for none) and cordoned when
// cordoned.
func updateNode(reason string, cordoned bool, labels ...string) corev1.Node {
	cs := []corev1.NodeCondition{readyTrue}
	if reason != "" {
		cs = append(cs, inPlaceCond(reason))
	}
	n := templated(nodeOf(1, cs...))
	for _, l := range labels {
		n.Labels[l] = "true"
	}
	n.Spec.Unschedulable = cordoned
	return n
}

// inPlaceMachine returns the machine in phase p with last operation op
// and the copy of node 1's conditions, Ready and InPlaceUpdate with reason.
func inPlaceMachine(p v1alpha1.MachinePhase, op v1alpha1.LastOperation, reason string) v1alpha1.Machine {
	return machineAt(p, op, 1, readyTrue, inPlaceCond(reason))
}

// finishUpdate plays the MachineDeployment controller once the node is
// updated: the labels and the failure reason of the in-place update off,
// the node uncordoned, and the taint that keeps workloads off until the
// critical components are ready on.
func finishUpdate() Action {
	return ChangeNode("the MachineDeployment controller finishes the update of node-1", NodeName(1), func(n *corev1.Node) {
		for _, l := range []string{candidateLabel, selectedLabel, resultLabel} {
			delete(n.Labels, l)
		}
		delete(n.Annotations, failedReason)
		n.Spec.Unschedulable = false
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "node.gardener.cloud/critical-components-not-ready",
			Effect: corev1.TaintEffectNoSchedule})
	})
}

// copiedAt accepts, at each of the steps, a difference in when the
// machine's copy of the InPlaceUpdate condition is written (H2): MCM copies
// the node's condition at the start of the reconcile after the one that
// wrote it, the drop-in in the first pass whose read of the node, through
// its cache, shows it, which may be the pass that wrote it. The steps are
// those between a controller's write of the node's condition and MCM's
// copy of it; where the runs end, the machine's conditions must agree
// (lastMachines).
func copiedAt(steps ...int) []Deviation {
	var out []Deviation
	for _, i := range steps {
		for _, who := range []string{"first", "second"} {
			out = append(out, Deviation{Step: i, Heading: "Checked against MCM reconcile by reconcile", Test: "TestDropInAgainstMCM",
				Only: "write only by the " + who + ": machine " + machineName + ": status.conditions[type=InPlaceUpdate]"})
		}
	}
	return out
}

// verdictWithPhase accepts the node's InPlaceUpdate condition of the
// agent's verdict (U6, U7) written by the drop-in at step i, with the
// phase (H5, H6), and by MCM at step j, a reconcile later.
func verdictWithPhase(i, j int) []Deviation {
	const heading, test = "Condition writes at the start of a pass, the verdict's with its phase", "TestInPlaceRows"
	return []Deviation{
		{Step: i, Heading: heading, Test: test, Only: "write only by the second: node node-1: status.conditions[type=InPlaceUpdate]"},
		{Step: j, Heading: heading, Test: test, Only: "write only by the first: node node-1: status.conditions[type=InPlaceUpdate]"},
	}
}

// statusWriteGoesOn accepts that the drop-in's pass goes on after a
// status write at step i, where MCM's reconcile ends, so the reconciles up
// to j differ.
func statusWriteGoesOn(i, j int) []Deviation {
	var out []Deviation
	for k := i; k <= j; k++ {
		out = append(out, Deviation{Step: k, Heading: "A status write does not end the evaluation", Test: "TestHealthRows"})
	}
	return out
}

// workload returns a pod of a ReplicaSet, bound to node. Its grace period
// is 0: no kubelet ends a pod here, so an eviction deletes it at once.
func workload(node string) corev1.Pod {
	var grace int64
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1",
			Kind: "ReplicaSet", Name: "web", UID: "uid-of-the-replicaset", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10"}}},
	}
}

// Last operations of the in-place update.
var (
	opUpdating = lastOp(opInPlace, stProcessing, "Machine worker-a-1 is undergoing an in-place update")
	opUpdated  = lastOp(opInPlace, stSuccessful, "Machine worker-a-1 successfully updated dependencies")
)

// inPlaceScenarios are the rows of b.7 and the in-place rows of b.4.
func inPlaceScenarios() []Scenario {
	const agentReason = "the new kubelet did not start"
	const ready = "node node-1 is ready for in-place update"
	readyForUpdate := World{Machine: inPlaceMachine(inPlaceUpdating, opUpdating, v1alpha1.ReadyForUpdate), Instances: []Instance{{}},
		Nodes: []corev1.Node{updateNode(v1alpha1.ReadyForUpdate, true, candidateLabel, selectedLabel)}}
	noNode := World{Machine: inPlaceMachine(inPlaceUpdating, opUpdating, v1alpha1.ReadyForUpdate), Instances: []Instance{{}}}
	selected := world(inPlaceMachine(running, opJoined, v1alpha1.SelectedForUpdate), 1,
		updateNode(v1alpha1.SelectedForUpdate, false, candidateLabel, selectedLabel))
	// An Unknown machine whose node the MachineDeployment controller
	// selected.
	unknownSelected := selected
	unknownSelected.Machine = machineAt(unknown, lastOp(opHealth, stProcessing, "Machine worker-a-1 is unhealthy - changing MachinePhase to Unknown"),
		1, readyFalse, inPlaceCond(v1alpha1.SelectedForUpdate))
	unknownSelected.Nodes = []corev1.Node{updateNode(v1alpha1.SelectedForUpdate, false, candidateLabel, selectedLabel)}
	unknownSelected.Nodes[0].Status.Conditions[0] = readyFalse
	// An update that succeeded, on a node that is not Ready.
	succeededUnhealthy := World{Machine: machineAt(inPlaceSuccessful, opUpdated, 1, readyFalse, inPlaceCond(v1alpha1.UpdateSuccessful)),
		Instances: []Instance{{}}, Nodes: []corev1.Node{updateNode(v1alpha1.UpdateSuccessful, true, candidateLabel, selectedLabel)}}
	succeededUnhealthy.Nodes[0].Labels[resultLabel] = v1alpha1.LabelValueNodeUpdateSuccessful
	succeededUnhealthy.Nodes[0].Status.Conditions[0] = readyFalse
	// The agent updates the node, whose InPlaceUpdate condition is gone.
	conditionLost := World{Machine: machineAt(inPlaceUpdating, opUpdating, 1, readyTrue), Instances: []Instance{{}},
		Nodes: []corev1.Node{updateNode("", true, candidateLabel, selectedLabel)}}
	// The agent's success, which the condition does not say yet, on a
	// machine InPlaceUpdateSuccessful (taken over before the verdict was
	// written to the condition).
	verdictUnsaid := World{Machine: inPlaceMachine(inPlaceSuccessful, opUpdated, v1alpha1.SelectedForUpdate), Instances: []Instance{{}},
		Nodes: []corev1.Node{updateNode(v1alpha1.SelectedForUpdate, true, candidateLabel, selectedLabel)}}
	verdictUnsaid.Nodes[0].Labels[resultLabel] = v1alpha1.LabelValueNodeUpdateSuccessful
	// The node made anew: registered again under its name, with the
	// machine-name label and an annotation of the kubelet (and no record of
	// the node template), it runs a workload, is not cordoned and shows
	// nothing of the update.
	madeAnew := World{Machine: inPlaceMachine(inPlaceUpdating, opUpdating, v1alpha1.ReadyForUpdate), Instances: []Instance{{}},
		Nodes: []corev1.Node{nodeOf(1, readyTrue)}, Pods: []corev1.Pod{workload(NodeName(1))}}
	madeAnew.Nodes[0].Annotations = map[string]string{"volumes.kubernetes.io/controller-managed-attach-detach": "true"}
	return []Scenario{{
		// The whole protocol, as the MachineDeployment controller and the
		// node agent play it: candidate, selected, drained, updated,
		// Running again, the labels taken off, then candidate once more.
		// The drop-in copies the condition it wrote in the same pass when
		// its cache shows the write; its pass goes on from the agent's
		// verdict (H5, with U6) to Running (H3), where MCM takes four
		// reconciles.
		Name:  "inplace-update-succeeds",
		Rows:  rows("U2", "I1", "U3", "I5", "H2", "H12", "U4", "I2", "I4", "H11", "U8", "I3", "H5", "H3", "U6"),
		World: world(machineAt(running, opJoined, 1, readyTrue), 1, updateNode("", false)),
		Steps: []Step{
			{Rows: rows("U2", "I1"), Want: want(Phase(running), Calls(), NoWrites(), Requeue(long))},
			{Do: do(LabelNode(NodeName(1), candidateLabel, "true")), Rows: rows("U3", "I5"), Want: want(Phase(running), Calls(),
				NoWrites("machine "), reasonWrite(v1alpha1.CandidateForUpdate), Requeue(long))},
			{Rows: rows("H2", "H12"), Want: want(Phase(running), Calls(),
				Wrote("machine worker-a-1: status.conditions[type=InPlaceUpdate].reason: +\"CandidateForUpdate\""), Requeue(short))},
			{Do: do(LabelNode(NodeName(1), selectedLabel, "true")), Rows: rows("U4", "I2", "I4"), Want: want(Phase(inPlaceUpdating),
				Op(opInPlace, stProcessing), Desc(opUpdating.Description), Calls(), Wrote("node node-1: spec.unschedulable: +\"true\""),
				reasonWrite(v1alpha1.ReadyForUpdate), Requeue(medium), ErrHas(ready))},
			{Rows: rows("H2", "H12"), Want: want(Phase(inPlaceUpdating), Calls(), noReasonWrite(), Requeue(short))},
			{Rows: rows("H11", "U8", "I3"), Want: want(Phase(inPlaceUpdating), Calls(), NoWrites(), Requeue(medium), ErrHas(ready))},
			{Do: do(LabelNode(NodeName(1), resultLabel, v1alpha1.LabelValueNodeUpdateSuccessful)), Rows: rows("H5", "H12"),
				Want: want(Phase(inPlaceSuccessful), Op(opInPlace, stSuccessful), Desc(opUpdated.Description), Calls(), noReasonWrite(),
					Requeue(short))},
			{Rows: rows("H3", "H12"), Want: want(Phase(running), Op(opHealth, stSuccessful),
				Desc("Machine worker-a-1 successfully re-joined the cluster"), Calls(), Requeue(short))},
			{Rows: rows("U6", "I5"), Want: want(Phase(running), Calls(), NoWrites("machine "), reasonWrite(v1alpha1.UpdateSuccessful),
				Requeue(long))},
			{Rows: rows("H2", "H12"), Want: want(Phase(running), Calls(), Requeue(short))},
			{Do: do(finishUpdate()), Rows: rows("U2", "I5"), Want: want(Phase(running), Calls(), NoWrites(), Requeue(long))},
			{Do: do(LabelNode(NodeName(1), candidateLabel, "true")), Rows: rows("U3", "I5"), Want: want(Phase(running), Calls(),
				reasonWrite(v1alpha1.CandidateForUpdate), Requeue(long))},
		},
		Deviations: concat(copiedAt(1, 2, 3, 4, 6, 7, 9, 11), verdictWithPhase(6, 8), statusWriteGoesOn(6, 7)),
	}, {
		// The agent reports a failure; past the health timeout the
		// machine is marked Failed. MCM then makes it Running again, its
		// node Ready (its H3 applies to any Failed machine); the drop-in
		// asks the provider first, and keeps the machine Failed for its
		// owner to replace.
		Name: "inplace-update-fails", Rows: rows("H6", "H12", "H11", "U7", "I5", "H2", "H9", "T4"),
		World: readyForUpdate,
		Steps: []Step{
			{Do: do(AnnotateNode(NodeName(1), failedReason, agentReason), LabelNode(NodeName(1), resultLabel, v1alpha1.LabelValueNodeUpdateFailed)),
				Rows: rows("H6", "H12"), Want: want(Phase(inPlaceFailed), Op(opInPlace, stFailed),
					Desc("Machine worker-a-1 failed to update dependencies: "+agentReason), Calls(), noReasonWrite(), Requeue(short))},
			{Rows: rows("H11", "U7", "I5"), Want: want(Phase(inPlaceFailed), Calls(), NoWrites("machine "),
				reasonWrite(v1alpha1.UpdateFailed), Wrote("node node-1: status.conditions[type=InPlaceUpdate].message: ", agentReason),
				Requeue(long))},
			{Rows: rows("H2", "H12"), Want: want(Phase(inPlaceFailed), Calls(), Requeue(short))},
			{Do: do(Advance(11 * time.Minute)), Rows: rows("H9", "T4"), Want: want(Phase(failed), Op(opInPlace, stFailed),
				DescHas("health checks failing since last 10m0s minutes"), Calls())},
		},
		Deviations: concat(copiedAt(0, 1, 2), verdictWithPhase(0, 1),
			accept("A failed in-place update ends Failed", "TestInPlaceFromEveryState", at(End), "phase", "lastOperation.type",
				"lastOperation.state", "lastOperation.description"),
			askedFirst(3)),
	}, {
		// The node is gone while the agent updates it; the in-place
		// timeout passes.
		Name: "inplace-timeout-node-gone", Rows: rows("H1b", "H11", "U1", "I1", "H8", "H12"),
		World: noNode,
		Steps: []Step{
			{Rows: rows("H1b", "H11", "U1", "I1"), Want: want(Phase(inPlaceUpdating), Calls(), NoWrites(), Requeue(long))},
			{Do: do(Advance(19 * time.Minute)), Rows: rows("H11", "U1", "I1"), Want: want(Phase(inPlaceUpdating), Calls(), NoWrites(),
				Requeue(long))},
			{Do: do(Advance(2 * time.Minute)), Rows: rows("H8", "H12"), Want: want(Phase(inPlaceFailed), Op(opInPlace, stFailed),
				Desc("Machine worker-a-1 failed to in-place update in 20m0s minutes."), Calls(), Requeue(short))},
		},
	}, {
		// The cordon of the drain is refused, then let through.
		Name: "inplace-drain-refused", Rows: rows("U5", "I2", "I4"),
		World: selected,
		Steps: []Step{
			{Do: do(DenyNode(NodeName(1), "nodes", admissionv1.Update)), Rows: rows("U5", "I2"), Want: want(Phase(running),
				Op(opDrainNode, stProcessing), DescHas("Drain failed due to - ", denyMessage, "Will retry in next sync. "+markDrain),
				Calls(), NoWrites("node "), Requeue(short))},
			{Do: do(AllowNodes(), Advance(short)), Rows: rows("U5", "I2", "I4"), Want: want(Phase(inPlaceUpdating),
				Op(opInPlace, stProcessing), Desc(opUpdating.Description), Wrote("node node-1: spec.unschedulable: +\"true\""),
				reasonWrite(v1alpha1.ReadyForUpdate), Calls(), Requeue(medium), ErrHas(ready))},
		},
		Deviations: copiedAt(1),
	}, {
		// The machine is deleted while the agent updates its node.
		Name: "inplace-deleted", Rows: rows("H11", "U8", "I3", "D3", "X3"),
		World: readyForUpdate,
		Steps: []Step{
			{Rows: rows("H11", "U8", "I3"), Want: want(Phase(inPlaceUpdating), Calls(), NoWrites(), Requeue(medium), ErrHas(ready))},
			{Do: do(DeleteMachine()), Rows: rows("D3", "X3"), Want: want(Phase(terminating), Op(opDelete, stProcessing),
				Desc(markGetVMStatus), Calls(), Requeue(short))},
		},
	}, {
		// MCM drains the selected node of an Unknown machine, which then
		// is InPlaceUpdating; the drop-in drains only a Running machine's.
		Name: "inplace-unknown-drained", Rows: rows("H11", "U5", "I2", "I4"),
		World: unknownSelected,
		Steps: []Step{{Rows: rows("H11", "U5", "I2", "I4"), Want: want(Phase(inPlaceUpdating), Op(opInPlace, stProcessing),
			Wrote("node node-1: spec.unschedulable: +\"true\""), reasonWrite(v1alpha1.ReadyForUpdate), Calls(), Requeue(medium),
			ErrHas(ready))}},
		Deviations: []Deviation{
			{Step: 0, Heading: "The in-place update drains only a Running machine's node", Test: "TestInPlaceInterplay"},
			{Step: End, Heading: "The in-place update drains only a Running machine's node", Test: "TestInPlaceInterplay"},
		},
	}, {
		// MCM leaves a machine whose update succeeded on a node that is
		// not Ready in InPlaceUpdateSuccessful for ever; the drop-in makes
		// it Unknown.
		Name: "inplace-successful-unhealthy", Rows: rows("H13", "U8", "I5"),
		World: succeededUnhealthy,
		Steps: []Step{{Rows: rows("H13", "U8", "I5"), Want: want(Phase(inPlaceSuccessful), Calls(), NoWrites(), Requeue(long))}},
		Deviations: []Deviation{
			{Step: 0, Heading: "An update that succeeded on an unhealthy node is Unknown", Test: "TestInPlaceInterplay"},
			{Step: End, Heading: "An update that succeeded on an unhealthy node is Unknown", Test: "TestInPlaceInterplay"},
		},
	}, {
		// The node of an InPlaceUpdating machine lost its InPlaceUpdate
		// condition: MCM starts the protocol over (U3) and drains the
		// node again; the drop-in, the phase proving the drain and the
		// node still as the drain left it (selected, cordoned, without
		// pods), says ReadyForUpdate again.
		Name: "inplace-condition-lost", Rows: rows("H11", "U3", "I5"),
		World: conditionLost,
		Steps: []Step{{Rows: rows("H11", "U3", "I5"), Want: want(Phase(inPlaceUpdating), Calls(), NoWrites("machine "),
			reasonWrite(v1alpha1.CandidateForUpdate), Requeue(long))}},
		Deviations: concat(copiedAt(0), []Deviation{{Step: 0, Heading: "ReadyForUpdate only after the drain, written with the phase",
			Test: "TestInPlaceRows"}}),
	}, {
		// The agent's success on a node whose condition still says
		// SelectedForUpdate, the machine InPlaceUpdateSuccessful: MCM
		// makes it Running (H3), then, its U5 before the verdict's U6,
		// drains the node again and tells the agent ReadyForUpdate, until
		// H5 and H3 bring the machine back to Running and U6 writes the
		// verdict; the drop-in writes the verdict first.
		Name: "inplace-verdict-unsaid", Rows: rows("H3", "H12", "U5", "I2", "I4", "H2", "H5", "U6", "I5"),
		World: verdictUnsaid,
		Steps: []Step{
			{Rows: rows("H3", "H12"), Want: want(Phase(running), Op(opHealth, stSuccessful), Calls(), noReasonWrite(), Requeue(short))},
			{Rows: rows("U5", "I2", "I4"), Want: want(Phase(inPlaceUpdating), Op(opInPlace, stProcessing), Desc(opUpdating.Description),
				reasonWrite(v1alpha1.ReadyForUpdate), Calls(), Requeue(medium), ErrHas("node node-1 is ready for in-place update"))},
			{Rows: rows("H2", "H12"), Want: want(Phase(inPlaceUpdating), Calls(), Requeue(short))},
			{Rows: rows("H5", "H12"), Want: want(Phase(inPlaceSuccessful), Op(opInPlace, stSuccessful), Calls(), Requeue(short))},
			{Rows: rows("H3", "H12"), Want: want(Phase(running), Op(opHealth, stSuccessful), Calls(), Requeue(short))},
			{Rows: rows("U6", "I5"), Want: want(Phase(running), reasonWrite(v1alpha1.UpdateSuccessful), Calls(), Requeue(long))},
		},
		Deviations: []Deviation{{Step: -1, Heading: toldAgain, Test: "TestInPlaceFromEveryState"}},
	}, {
		// The node of an InPlaceUpdating machine was made anew: deleted
		// and registered again under its name, it is uncordoned, runs a
		// workload and has neither the labels nor the condition of the
		// update. Both copy the conditions (H2) and wait. The
		// MachineDeployment controller then labels it candidate again (it
		// labels the node of each machine of the old machine set) and
		// selects it (a node without the selected label is not counted as
		// updating): MCM writes the condition anew (U3, U4), drains the
		// node, evicting the workload, and tells the agent ReadyForUpdate
		// again (I2, I4); the drop-in writes the condition (U3, U4) but
		// neither cordons nor drains nor tells the agent on a node the
		// drain did not leave so. MCM's drain stamps the phase anew, but
		// the labels come at once here, so both end the update by its
		// timeout (H8) in the same reconcile.
		Name: "inplace-node-made-anew", Rows: rows("H2", "H12", "H11", "U2", "I1", "U3", "I5", "U4", "I2", "I4", "U8", "I3", "H8"),
		World: madeAnew,
		Steps: []Step{
			{Rows: rows("H2", "H12"), Want: want(Phase(inPlaceUpdating), Op(opInPlace, stProcessing), Calls(), NoWrites("node ", "pod "),
				Wrote("machine worker-a-1: status.conditions[type=InPlaceUpdate].reason: -\"ReadyForUpdate\""), Requeue(short))},
			{Rows: rows("H11", "U2", "I1"), Want: want(Phase(inPlaceUpdating), Calls(), NoWrites(), Requeue(long))},
			{Do: do(LabelNode(NodeName(1), candidateLabel, "true")), Rows: rows("H11", "U3", "I5"), Want: want(Phase(inPlaceUpdating),
				Calls(), NoWrites("machine ", "pod "), reasonWrite(v1alpha1.CandidateForUpdate), Requeue(long))},
			{Rows: rows("H2", "H12"), Want: want(Phase(inPlaceUpdating), Calls(), noReasonWrite(),
				Wrote("machine worker-a-1: status.conditions[type=InPlaceUpdate].reason: +\"CandidateForUpdate\""), Requeue(short))},
			{Do: do(LabelNode(NodeName(1), selectedLabel, "true")), Rows: rows("H11", "U4", "I2", "I4"), Want: want(Phase(inPlaceUpdating),
				Op(opInPlace, stProcessing), Desc(opUpdating.Description), Calls(), Wrote("node node-1: spec.unschedulable: +\"true\""),
				Wrote("pod web-1: deleted"), reasonWrite(v1alpha1.ReadyForUpdate), Requeue(medium), ErrHas(ready))},
			{Rows: rows("H2", "H12"), Want: want(Phase(inPlaceUpdating), Calls(), noReasonWrite(),
				Wrote("machine worker-a-1: status.conditions[type=InPlaceUpdate].reason: ", "ReadyForUpdate"), Requeue(short))},
			{Rows: rows("H11", "U8", "I3"), Want: want(Phase(inPlaceUpdating), Calls(), NoWrites(), Requeue(medium), ErrHas(ready))},
			{Do: do(Advance(19 * time.Minute)), Rows: rows("H11", "U8", "I3"), Want: want(Phase(inPlaceUpdating), Calls(), NoWrites(),
				Requeue(medium), ErrHas(ready))},
			{Do: do(Advance(2 * time.Minute)), Rows: rows("H8", "H12"), Want: want(Phase(inPlaceFailed), Op(opInPlace, stFailed),
				Desc("Machine worker-a-1 failed to in-place update in 20m0s minutes."), Calls(), Requeue(short))},
		},
		Deviations: concat(copiedAt(2, 3),
			accept(toldAgain, "TestInPlaceFromEveryState", at(4), both("")...),
			accept(toldAgain, "TestInPlaceFromEveryState", at(5), "write only by the first: machine "+machineName+
				": status.conditions[type=InPlaceUpdate]"),
			accept(toldAgain, "TestInPlaceFromEveryState", at(End), "machine conditions", "nodes")),
	}}
}

// toldAgain starts the heading of the deviation that tells the agent
// ReadyForUpdate again only on the node the drain left.
const toldAgain = "The agent is told again only on the node that was drained"

// concat joins lists of deviations.
func concat(ds ...[]Deviation) []Deviation {
	var out []Deviation
	for _, d := range ds {
		out = append(out, d...)
	}
	return out
}

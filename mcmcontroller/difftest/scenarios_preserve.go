package difftest

import (
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// The values of MCM's preserve annotation.
const (
	preserveNow        = "now"
	preserveWhenFailed = "when-failed"
	preserveAuto       = "auto-preserved"
	preserveFalse      = "false"
)

// MCM's texts of the node condition Preserved.
const (
	byUser      = "Preserved by user."
	byMCM       = "Preserved by MCM."
	stopped     = "Preservation stopped."
	keptUntil   = "Machine preserved until <time>."
	drainedKept = "Preserved node drained successfully. " + keptUntil
)

// expirySet and expiryCleared check the write of the machine's
// preservation expiry.
var (
	expirySet     = Wrote("machine worker-a-1: status.currentStatus.preserveExpiryTime: +")
	expiryCleared = Wrote("machine worker-a-1: status.currentStatus.preserveExpiryTime: -")
)

// preservedAs checks the write of node-1's Preserved condition with
// status s, reason and message.
func preservedAs(s corev1.ConditionStatus, reason, msg string) Check {
	const c = "node node-1: status.conditions[type=Preserved]."
	return Check{Name: "node-1 Preserved " + string(s) + " " + reason + " " + msg, OK: func(o *Observation) bool {
		return Wrote(c+"status: ", `"`+string(s)+`"`).OK(o) && Wrote(c+"reason: ", `"`+reason+`"`).OK(o) &&
			(msg == "" || Wrote(c+"message: ", `"`+msg+`"`).OK(o))
	}}
}

// keptFromAutoscaler and givenToAutoscaler check the writes of the
// cluster autoscaler's annotations on node-1.
var (
	keptFromAutoscaler = Wrote("node node-1: metadata.annotations." + scaleDownDisabledByMCM + `: +"true"`)
	givenToAutoscaler  = Wrote("node node-1: metadata.annotations." + scaleDownDisabledByMCM + `: -"true"`)
)

// cordoned and uncordoned check the writes of node-1's cordon.
var (
	cordoned   = Wrote(`node node-1: spec.unschedulable: +"true"`)
	uncordoned = Wrote(`node node-1: spec.unschedulable: -"true"`)
)

// annotated returns a copy of m with the annotation key=value.
func annotated(m v1alpha1.Machine, key, value string) v1alpha1.Machine {
	m = *m.DeepCopy()
	setOrDelete(&m.Annotations, key, value)
	return m
}

// preservedCopied checks MCM's copy of node-1's Preserved condition into
// the machine (H2), in the reconcile after the one that wrote it.
func preservedCopied(reason string) Check {
	return Wrote("machine worker-a-1: status.conditions[type=Preserved].reason: ", `"`+reason+`"`)
}

// What the deviations of preservation accept: the writes of node-1, of
// the machine's expiry, of its preserve annotation and of MCM's record of
// the node's value.
var (
	nodeWrites      = both("node node-1: ")
	expiryWrites    = both("machine " + machineName + ": status.currentStatus.preserveExpiryTime")
	annotationWrite = both("machine " + machineName + ": metadata.annotations." + preserveAnnotation + ":")
	recordWrite     = both("machine " + machineName + ": metadata.annotations." + lastAppliedNodePreserve)
)

// preservedCopiedAt accepts, at each of the steps, a difference in when
// the machine's copy of node-1's Preserved condition is written (H2), as
// copiedAt does for the InPlaceUpdate condition.
func preservedCopiedAt(steps ...int) []Deviation {
	return accept("Checked against MCM reconcile by reconcile", "TestDropInAgainstMCM", steps,
		both("machine "+machineName+": status.conditions[type=Preserved]")...)
}

// drainThenMark accepts, at each of the steps, the node writes of a
// preserved Failed machine's drain and then of its node's condition and
// the autoscaler's annotations, which the drop-in makes in two passes
// where MCM makes them in one reconcile; the drain of the node of a
// machine that was preserved while Running and failed later, which MCM
// leaves as it is; and the cordon given back as the machine recovers,
// where MCM uncordons as the preservation stops.
func drainThenMark(steps ...int) []Deviation {
	return accept("A preserved node is cordoned only by its Failed machine's drain", "TestPreserveInterplay", steps, nodeWrites...)
}

// annotationsFirst accepts, at each of the steps, an end of a
// preservation in two passes: the preserve annotations removed, then the
// preservation stopped (the expiry cleared, the node given back), where
// MCM does both in one reconcile.
func annotationsFirst(steps ...int) []Deviation {
	return accept("Which annotation decides, and what is removed", "TestPreserveInterplay", steps,
		append(append(append([]string{}, nodeWrites...), expiryWrites...), annotationWrite...)...)
}

// recorded accepts, at each of the steps, MCM's record on the machine of
// its node's preserve annotation, which the drop-in neither writes nor
// removes; End for where the runs end.
func recorded(steps ...int) []Deviation {
	out := accept("Which annotation decides, and what is removed", "TestPreserveAnnotationPrecedence", steps, recordWrite...)
	for i := range out {
		if out[i].Step == End {
			out[i].Only = "machine preservation"
		}
	}
	return out
}

// failedWithExpiry accepts the drop-in's expiry in the status write that
// makes the machine Failed, at step i, where MCM sets it in the next
// reconcile.
func failedWithExpiry(i int) []Deviation {
	return accept("Every path to Failed sets the preservation's expiry", "TestEveryPathToFailedSetsTheExpiry", at(i, i+1),
		expiryWrites...)
}

// preserveScenarios are the lines of b.8 (P1-P8).
func preserveScenarios() []Scenario {
	readyNode := templated(nodeOf(1, readyTrue))
	notReadyNode := templated(nodeOf(1, readyFalse))
	runningMachine := machineAt(running, opJoined, 1, readyTrue)
	healthFailed := lastOp(opHealth, stFailed, "Machine worker-a-1 health checks failing since last 10m0s minutes. "+
		"Updating machine phase to Failed. Node Conditions: []")
	failedMachine := machineAt(failed, healthFailed, 1, readyFalse)
	const failing = "health checks failing since last 10m0s minutes"
	expires := Advance(DefaultSettings.PreserveTimeout + time.Minute)
	return []Scenario{{
		// Preserved with now while Running, on the machine's annotation,
		// then the annotation says false.
		Name: "preserve-now-running", Rows: rows("P6", "H2", "H12", "P1"),
		World: world(runningMachine, 1, readyNode),
		Steps: []Step{
			{Do: do(AnnotateMachine(preserveAnnotation, preserveNow)), Rows: rows("P6"), Want: want(Phase(running), Calls(), expirySet,
				keptFromAutoscaler, preservedAs(corev1.ConditionTrue, byUser, keptUntil), NoWrites("node node-1: spec"), Requeue(long))},
			{Rows: rows("H2", "H12"), Want: want(Phase(running), Calls(), preservedCopied(byUser), Requeue(short))},
			{Do: do(AnnotateMachine(preserveAnnotation, preserveFalse)), Rows: rows("P1"), Want: want(Phase(running), Calls(),
				expiryCleared, givenToAutoscaler, preservedAs(corev1.ConditionFalse, stopped, ""), Requeue(long))},
		},
		Deviations: preservedCopiedAt(0, 1, 2),
	}, {
		// Preserved with now on the node's annotation, until the
		// preservation expires: MCM records the node's value on the
		// machine, and removes both annotations as it stops.
		Name: "preserve-node-now-expires", Rows: rows("P6", "H2", "H12", "P5"),
		World: world(runningMachine, 1, readyNode),
		Steps: []Step{
			{Do: do(AnnotateNode(NodeName(1), preserveAnnotation, preserveNow)), Rows: rows("P6"), Want: want(Phase(running), Calls(),
				expirySet, keptFromAutoscaler, preservedAs(corev1.ConditionTrue, byUser, keptUntil),
				Wrote("machine worker-a-1: metadata.annotations."+lastAppliedNodePreserve+`: +"now"`), Requeue(long))},
			{Rows: rows("H2", "H12"), Want: want(Phase(running), Calls(), preservedCopied(byUser), Requeue(short))},
			{Do: do(expires), Rows: rows("P5"), Want: want(Phase(running), Calls(), expiryCleared, givenToAutoscaler,
				preservedAs(corev1.ConditionFalse, stopped, ""), Wrote("node node-1: metadata.annotations."+preserveAnnotation+`: -"now"`),
				Wrote("machine worker-a-1: metadata.annotations."+lastAppliedNodePreserve+`: -"now"`), Requeue(long))},
		},
		Deviations: concat(recorded(0, 2, End), preservedCopiedAt(0, 1, 2), annotationsFirst(2)),
	}, {
		// Annotated to be preserved when it fails, the machine is
		// Running, Unknown, then Failed, and preserved (its node drained,
		// so cordoned) until the preservation expires.
		Name: "preserve-when-failed", Rows: rows("H2", "H4", "H12", "H9", "T4", "P3", "P4", "P2"),
		World: world(annotated(runningMachine, preserveAnnotation, preserveWhenFailed), 1, readyNode),
		Steps: []Step{
			{Do: do(SetNodeConditions(NodeName(1), readyFalse)), Rows: rows("H2", "H4", "H12"), Want: want(Phase(unknown), Calls(),
				Requeue(short))},
			{Do: do(Advance(11 * time.Minute)), Rows: rows("H9", "T4", "P3"), Want: want(Phase(failed), DescHas(failing), Calls(),
				NoWrites("node "), Requeue(long))},
			{Rows: rows("P4"), Want: want(Phase(failed), Calls(), expirySet, keptFromAutoscaler, cordoned,
				preservedAs(corev1.ConditionTrue, byUser, drainedKept), Requeue(long))},
			{Rows: rows("H2", "H12"), Want: want(Phase(failed), Calls(), preservedCopied(byUser), Requeue(short))},
			{Do: do(expires), Rows: rows("P2"), Want: want(Phase(failed), Calls(), expiryCleared, givenToAutoscaler,
				preservedAs(corev1.ConditionFalse, stopped, ""), NoWrites("node node-1: spec"),
				Wrote("machine worker-a-1: metadata.annotations."+preserveAnnotation+`: -"when-failed"`), Requeue(long))},
		},
		Deviations: concat(askedFirst(1), failedWithExpiry(1), drainThenMark(1, 2), preservedCopiedAt(2, 3),
			annotationsFirst(4)),
	}, {
		// A Failed machine preserved on its node's annotation, until the
		// annotation goes: MCM's record of the node's value then decides.
		Name: "preserve-node-when-failed", Rows: rows("P4", "H2", "H12", "P1"),
		World: world(failedMachine, 1, notReadyNode),
		Steps: []Step{
			{Do: do(AnnotateNode(NodeName(1), preserveAnnotation, preserveWhenFailed)), Rows: rows("P4"), Want: want(Phase(failed),
				Calls(), expirySet, keptFromAutoscaler, cordoned, preservedAs(corev1.ConditionTrue, byUser, drainedKept),
				Wrote("machine worker-a-1: metadata.annotations."+lastAppliedNodePreserve+`: +"when-failed"`), Requeue(long))},
			{Rows: rows("H2", "H12"), Want: want(Phase(failed), Calls(), preservedCopied(byUser), Requeue(short))},
			{Do: do(AnnotateNode(NodeName(1), preserveAnnotation, "")), Rows: rows("P1"), Want: want(Phase(failed), Calls(),
				expiryCleared, givenToAutoscaler, preservedAs(corev1.ConditionFalse, stopped, ""), NoWrites("node node-1: spec"),
				Requeue(long))},
		},
		Deviations: concat(recorded(0, 2, End), drainThenMark(0, 1), preservedCopiedAt(0, 1, 2)),
	}, {
		// A Failed machine MCM's MachineSet annotated auto-preserved is
		// preserved; its node recovers, the machine is Running, and the
		// preservation ends: the annotation removed, the node uncordoned.
		Name: "preserve-auto-recovers", Rows: rows("P8", "H2", "H3", "H12", "P7"),
		World: world(annotated(failedMachine, preserveAnnotation, preserveAuto), 1, notReadyNode),
		Steps: []Step{
			{Rows: rows("P8"), Want: want(Phase(failed), Calls(), expirySet, keptFromAutoscaler, cordoned,
				preservedAs(corev1.ConditionTrue, byMCM, drainedKept), Requeue(long))},
			{Do: do(SetNodeConditions(NodeName(1), readyTrue)), Rows: rows("H2", "H3", "H12"), Want: want(Phase(running),
				Op(opHealth, stSuccessful), preservedCopied(byMCM), Calls(), Requeue(short))},
			{Rows: rows("P7"), Want: want(Phase(running), Calls(), expiryCleared, givenToAutoscaler, uncordoned,
				preservedAs(corev1.ConditionFalse, stopped, ""),
				Wrote("machine worker-a-1: metadata.annotations."+preserveAnnotation+`: -"auto-preserved"`), Requeue(long))},
		},
		Deviations: concat(drainThenMark(0, 1), preservedCopiedAt(1, 2), annotationsFirst(2)),
	}, {
		// Preserved with now while Running, the machine then fails: MCM
		// leaves the node as it is, not drained.
		Name: "preserve-now-then-fails", Rows: rows("P6", "H2", "H4", "H12", "H9", "T4"),
		World: world(annotated(runningMachine, preserveAnnotation, preserveNow), 1, readyNode),
		Steps: []Step{
			{Rows: rows("P6"), Want: want(Phase(running), Calls(), expirySet, keptFromAutoscaler,
				preservedAs(corev1.ConditionTrue, byUser, keptUntil), Requeue(long))},
			{Rows: rows("H2", "H12"), Want: want(Phase(running), Calls(), preservedCopied(byUser), Requeue(short))},
			{Do: do(SetNodeConditions(NodeName(1), readyFalse)), Rows: rows("H2", "H4", "H12"), Want: want(Phase(unknown), Calls(),
				Requeue(short))},
			{Do: do(Advance(11 * time.Minute)), Rows: rows("H9", "T4", "P6"), Want: want(Phase(failed), DescHas(failing), Calls(),
				NoWrites("node "), Requeue(long))},
			{Rows: rows("P6"), Want: want(Phase(failed), Calls(), NoWrites(), Requeue(long))},
		},
		Deviations: concat(preservedCopiedAt(0, 1), askedFirst(3), drainThenMark(3, 4),
			accept("A preserved node is cordoned only by its Failed machine's drain", "TestPreserveInterplay", at(End), "nodes")),
	}, {
		// A preserved Failed machine is deleted: the expiry is cleared
		// as the deletion begins, and the deletion goes on as for any
		// machine.
		Name: "preserve-deleted", Rows: rows("P4", "D3", "X3"),
		World: world(annotated(failedMachine, preserveAnnotation, preserveWhenFailed), 1, notReadyNode),
		Steps: []Step{
			{Rows: rows("P4"), Want: want(Phase(failed), Calls(), expirySet, cordoned,
				preservedAs(corev1.ConditionTrue, byUser, drainedKept), Requeue(long))},
			{Do: do(DeleteMachine()), Rows: rows("D3", "X3"), Want: want(Phase(terminating), Op(opDelete, stProcessing),
				Desc(markGetVMStatus), Calls(), expiryCleared, Requeue(short))},
		},
		Deviations: append(drainThenMark(0), Deviation{Step: 1, Heading: stageGoesOn.Heading, Test: stageGoesOn.Test}),
	}}
}

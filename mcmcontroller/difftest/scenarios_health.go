package difftest

import (
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// healthScenarios are the rows of b.4 and b.5.
func healthScenarios() []Scenario {
	yes := true
	tainted := nodeOf(1, readyTrue)
	tainted.Spec.Taints = []corev1.Taint{{Key: "node.gardener.cloud/critical-components-not-ready", Effect: corev1.TaintEffectNoSchedule}}
	noHealthTimeout := machineAt(unknown, opMissing, 1, readyFalse)
	noHealthTimeout.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{DisableHealthTimeout: &yes}
	inDeployment := func(m v1alpha1.Machine) v1alpha1.Machine {
		m.Labels["name"] = "deployment-a"
		return m
	}
	peer := machineAt(pending, opCreating, 0)
	peer.Name = "worker-a-2"
	peer.Labels = map[string]string{"name": "deployment-a"}
	failedInit := lastOp(opCreate, stFailed, "Provider error: machine codes error: code = [Internal] message = [boom]. Initialize VM Instance")
	failedInit.ErrorCode = "Internal"
	healthFailed := lastOp(opHealth, stFailed, "Machine worker-a-1 health checks failing since last 10m0s minutes. "+
		"Updating machine phase to Failed. Node Conditions: []")
	const unhealthy = "Machine worker-a-1 is unhealthy - changing MachinePhase to Unknown. Node conditions: "
	return []Scenario{{
		Name: "pending-critical-taint", Rows: rows("H2", "H3", "H12", "H11"),
		World: world(machineAt(pending, opCreating, 1), 1, tainted),
		Steps: []Step{
			{Rows: rows("H2", "H3", "H12"), Want: want(Phase(pending), Calls(), Wrote("machine worker-a-1: status.conditions[type=Ready].status: +\"True\""),
				Requeue(short))},
			{Rows: rows("H3", "H11"), Want: want(Phase(pending), Calls(), NoWrites("machine "))},
		},
	}, {
		Name: "pending-timeout", Rows: rows("H1b", "H11", "H7", "H12"),
		World: world(machineAt(pending, opCreating, 1), 1),
		Steps: []Step{
			{Rows: rows("H1b", "H11"), Want: want(Phase(pending), Calls(), NoWrites("machine "), Requeue(long))},
			{Do: do(Advance(21 * time.Minute)), Rows: rows("H1b", "H7", "H12"), Want: want(Phase(failed), Op(opCreate, stFailed),
				DescHas("Machine worker-a-1 failed to join the cluster in "), Calls(), Requeue(short))},
		},
	}, {
		Name: "node-missing-to-failed", Rows: rows("H1", "H12", "H1b", "H11", "H9", "T4"),
		World: world(inDeployment(machineAt(running, opJoined, 1, readyTrue)), 1),
		Steps: []Step{
			{Rows: rows("H1", "H12"), Want: want(Phase(unknown), Op(opHealth, stProcessing), Desc(opMissing.Description), Calls(), Requeue(short))},
			{Rows: rows("H1b", "H11"), Want: want(Phase(unknown), NoWrites("machine "), Requeue(long))},
			{Do: do(Advance(11 * time.Minute)), Rows: rows("H9", "T4"), Want: want(Phase(failed), Op(opHealth, stFailed),
				DescHas("Machine worker-a-1 health checks failing since last 10m0s minutes. Updating machine phase to Failed. Node Conditions: "),
				Calls(), Requeue(long))},
		},
		Deviations: []Deviation{{Step: 2, Heading: "Marking Failed asks the provider first", Test: "TestHealthRows"}},
	}, {
		Name: "node-missing-no-conditions", Rows: rows("H1b"),
		World:      world(machineAt(running, opJoined, 1), 1),
		Steps:      []Step{{Rows: rows("H1b"), Want: want(Phase(running), Calls(), NoWrites(), Requeue(long))}},
		Deviations: []Deviation{{Step: 0, Heading: "Health is never decided without evidence", Test: "TestHealthWithoutEvidence"}},
	}, {
		Name: "conditions-copied", Rows: rows("H2", "H12"),
		World: world(machineAt(running, opJoined, 1, readyTrue), 1, nodeOf(1, readyTrue, diskFalse)),
		Steps: []Step{{Rows: rows("H2", "H12"), Want: want(Phase(running), Desc(opJoined.Description), Calls(),
			Wrote("machine worker-a-1: status.conditions[type=DiskPressure].status: +\"False\""), Requeue(short))}},
	}, {
		Name: "unhealthy-and-back", Rows: rows("H2", "H4", "H12", "H3"),
		World: world(machineAt(running, opJoined, 1, readyTrue), 1, nodeOf(1, readyFalse)),
		Steps: []Step{
			{Rows: rows("H2", "H4", "H12"), Want: want(Phase(unknown), Op(opHealth, stProcessing), DescHas(unhealthy, "Type:Ready Status:False"),
				Calls(), Requeue(short))},
			{Do: do(SetNodeConditions(NodeName(1), readyTrue)), Rows: rows("H2", "H3", "H12"), Want: want(Phase(running),
				Op(opHealth, stSuccessful), Desc("Machine worker-a-1 successfully re-joined the cluster"), Calls(), Requeue(short))},
		},
	}, {
		// T4 ends with Short and no error, and D7 goes on after a health
		// step without an error: the pass runs on to D10, whose Long is
		// the requeue, not T4's Short.
		Name: "unknown-to-failed", Rows: rows("H11", "H9", "T4", "H13"),
		World: world(inDeployment(machineAt(unknown, lastOp(opHealth, stProcessing, unhealthy+"[]"), 1, readyFalse)), 1,
			nodeOf(1, readyFalse)),
		Steps: []Step{
			{Rows: rows("H11"), Want: want(Phase(unknown), Calls(), NoWrites("machine "))},
			{Do: do(Advance(9 * time.Minute)), Rows: rows("H11"), Want: want(Phase(unknown), Calls(), NoWrites("machine "))},
			{Do: do(Advance(2 * time.Minute)), Rows: rows("H9", "T4"), Want: want(Phase(failed), Op(opHealth, stFailed),
				DescHas("health checks failing since last 10m0s minutes", "Type:Ready Status:False"), Requeue(long))},
			{Rows: rows("H13"), Want: want(Phase(failed), Calls(), NoWrites("machine "))},
		},
		// From the step that marks the machine Failed on, its description
		// is the one that names the provider's answer.
		Deviations: []Deviation{{Step: -1, Heading: "Marking Failed asks the provider first", Test: "TestHealthRows"}},
	}, {
		Name: "unknown-health-timeout-disabled", Rows: rows("H10"),
		World: world(noHealthTimeout, 1, nodeOf(1, readyFalse)),
		Steps: []Step{{Do: do(Advance(11 * time.Minute)), Rows: rows("H10"), Want: want(Phase(unknown), Calls(), NoWrites("machine "))}},
	}, {
		Name: "unknown-limited", Rows: rows("H9", "T3"),
		World: World{Machine: inDeployment(machineAt(unknown, opMissing, 1, readyFalse)), Instances: []Instance{{}},
			Nodes: []corev1.Node{nodeOf(1, readyFalse)}, Peers: []v1alpha1.Machine{peer}},
		Steps: []Step{{Do: do(Advance(11 * time.Minute)), Rows: rows("H9", "T3"), Want: want(Phase(unknown), Calls(), NoWrites("machine "),
			Requeue(short), ErrHas("other machines are getting replaced"))}},
	}, {
		Name: "crashloop-node-healthy-runs", Rows: rows("H3", "H12"),
		World: world(machineAt(crashLoop, failedInit, 1), 1, nodeOf(1, readyTrue)),
		Steps: []Step{{Rows: rows("H3", "H12"), Want: want(Phase(running), Op(opCreate, stSuccessful),
			Desc("Machine worker-a-1 successfully joined the cluster"), Calls(), Requeue(short))}},
		Deviations: []Deviation{{Step: 0, Heading: "No Running before initialization", Test: "TestDeviationNoRunningBeforeInitialization"}},
	}, {
		Name: "failed-node-healthy-runs", Rows: rows("H3", "H12"),
		World: world(machineAt(failed, healthFailed, 1), 1, nodeOf(1, readyTrue)),
		Steps: []Step{{Rows: rows("H3", "H12"), Want: want(Phase(running), Op(opHealth, stSuccessful),
			Desc("Machine worker-a-1 successfully re-joined the cluster"), Calls(), Requeue(short))}},
	}}
}

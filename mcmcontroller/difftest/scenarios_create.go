package difftest

import (
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/codes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// dispatchScenarios are the rows of b.1 that decide before any flow.
func dispatchScenarios() []Scenario {
	noFinalizer := newMachine()
	noFinalizer.Finalizers = []string{}
	badClass := newMachine()
	badClass.Spec.Class = v1alpha1.ClassSpec{Name: ClassName}
	noClassFinalizer := &v1alpha1.MachineClass{ObjectMeta: metav1.ObjectMeta{Name: ClassName},
		ProviderSpec: runtime.RawExtension{Raw: []byte(`{}`)}, SecretRef: &corev1.SecretReference{Name: "cloud"}, Provider: "Test"}
	return []Scenario{{
		Name: "gone", Rows: rows("D1"),
		World: World{Machine: noFinalizer, Deleting: true},
		Steps: []Step{{Rows: rows("D1"), Want: want(Gone(), Calls(), NoWrites())}},
	}, {
		Name: "finalizer-first", Rows: rows("D2", "A6", "B2", "B3", "B6"),
		World: World{Machine: noFinalizer},
		Steps: []Step{
			{Rows: rows("D2"), Want: want(Finalized(true), Phase(""), Calls(), ErrHas("finalizers are UPDATED"), Requeue(short))},
			{Rows: rows("A6", "B2", "B3", "B6"), Want: want(Calls(mGet, mCreate, mInit), ProviderIDIs(ProviderID(1)), NodeLabel(NodeName(1)))},
		},
	}, {
		Name: "frozen", Rows: rows("D4"),
		World: World{Machine: newMachine(), Frozen: true},
		Steps: []Step{{Rows: rows("D4"), Want: want(Calls(), NoWrites(), Requeue(long), ErrHas("frozen"))}},
	}, {
		Name: "invalid-machine", Rows: rows("D5"),
		World: World{Machine: badClass},
		Steps: []Step{{Rows: rows("D5"), Want: want(Calls(), NoWrites(), Requeue(long), ErrHas("validation of Machine failed"))}},
	}, {
		Name: "no-class", Rows: rows("D6"),
		World: World{Machine: newMachine(), NoClass: true},
		Steps: []Step{{Rows: rows("D6"), Want: want(Calls(), NoWrites(), Requeue(long))}},
	}, {
		Name: "class-without-finalizer", Rows: rows("D6"),
		World: World{Machine: newMachine(), Class: noClassFinalizer},
		Steps: []Step{{Rows: rows("D6"), Want: want(Calls(), NoWrites(), Requeue(short), ErrHas("has no finalizers set"))}},
	}, {
		// D7 syncs the node template: the first time, MCM records what it
		// applied on the node and ends the pass.
		Name: "running-steady", Rows: rows("D7", "H13", "D8", "D10"),
		World: world(machineAt(running, opJoined, 1, readyTrue), 1, nodeOf(1, readyTrue)),
		Steps: []Step{
			{Rows: rows("D7", "H13"), Want: want(Phase(running), Calls(), NoWrites("machine "),
				Wrote("node node-1: metadata.annotations.node.machine.sapcloud.io/last-applied-anno-labels-taints"),
				Requeue(short), ErrHas("ALTs have been reconciled"))},
			{Rows: rows("D7", "H13", "D8", "D10"), Want: want(Phase(running), Calls(), NoWrites(), Requeue(long), ErrHas(""))},
		},
	}, {
		// MCM sends a machine without providerID into creation whatever
		// its phase: a Failed machine whose providerID was never written
		// gets a new VM.
		Name: "failed-without-instance-creates", Rows: rows("D9", "A6", "B2", "B7"),
		World:      World{Machine: machineAt(failed, lastOp(opCreate, stFailed, "Cloud provider message - boom"), 0)},
		Steps:      []Step{{Rows: rows("D9", "A6", "B2"), Want: want(Calls(mGet, mCreate, mInit), ProviderIDIs(ProviderID(1)), Phase(failed))}},
		Deviations: []Deviation{{Step: 0, Heading: "Only a machine being created creates", Test: "TestFailedMachineNeverCreates"}},
	}}
}

// creationScenarios are the rows of b.2 and b.3.
func creationScenarios() []Scenario {
	createFails := func(name, row string, c codes.Code, retry time.Duration) Scenario {
		return Scenario{
			Name: name, Rows: rows(row),
			World: World{Machine: newMachine()},
			Steps: []Step{{Do: do(FailNext(mCreate, c)), Rows: rows(row), Want: want(Calls(mGet, mCreate), Phase(crashLoop),
				Op(opCreate, stFailed), DescHas("Cloud provider message - ", "code = ["+c.String()+"]"), ErrorCode(c.String()),
				ProviderIDIs(""), Requeue(retry))}},
		}
	}
	pendingWorld := func() World {
		w := world(newMachine(), 0)
		return w
	}
	staleWorld := World{Machine: newMachine(), Nodes: []corev1.Node{nodeOf(1, readyTrue)}}
	staleWorld.Nodes[0].Spec.ProviderID = "fake:///zone-a/old"
	adoptNotFound := machineAt("", lastOp("", "", ""), 9)
	adoptNotFound.Annotations = nil
	uninit := World{Machine: newMachine(), NeedsInit: true, Instances: []Instance{{Uninitialized: true}}}
	initFails := World{Machine: newMachine(), NeedsInit: true}
	return []Scenario{{
		Name: "create-to-running", Rows: rows("A6", "B2", "B3", "B6", "A10", "B8", "H11", "H3", "H12", "D7", "H13", "D10"),
		World: pendingWorld(),
		Steps: []Step{
			{Rows: rows("A6", "B2", "B3", "B6"), Want: want(Calls(mGet, mCreate, mInit), Phase(""), ProviderIDIs(ProviderID(1)),
				NodeLabel(NodeName(1)), Wrote("secret kube-system/bootstrap-token-<id>: created"), Requeue(short),
				ErrHas("Machine initialization (if required) is successful"))},
			{Rows: rows("A10", "B8"), Want: want(Calls(mGet), Phase(pending), Op(opCreate, stProcessing),
				Desc("Creating machine on cloud provider"), Requeue(short))},
			{Rows: rows("H11"), Want: want(Calls(), Phase(pending), NoWrites("machine "), Requeue(long))},
			{Do: do(AddNode(nodeOf(1, readyTrue))), Rows: rows("H3", "H12"), Want: want(Calls(), Phase(running),
				Op(opCreate, stSuccessful), Desc("Machine worker-a-1 successfully joined the cluster"),
				Wrote("secret kube-system/bootstrap-token-<id>: deleted"), Requeue(short), ErrHas("Phase/Conditions have been UPDATED"))},
			{Rows: rows("D7", "H13"), Want: want(Calls(), Phase(running), NoWrites("machine "), Requeue(short),
				ErrHas("ALTs have been reconciled"))},
			{Rows: rows("D10"), Want: want(Calls(), Phase(running), NoWrites(), Requeue(long))},
		},
	},
		{
			// Without a target cluster a machine is Available once created,
			// and its deletion skips the drain and the node.
			Name: "no-target-cluster", Rows: rows("A6", "B2", "B3", "B6", "A10", "B8", "D8", "D10", "X3", "S1a", "S4a", "S5a", "X9"),
			World: World{Machine: newMachine(), NoTarget: true},
			Steps: []Step{
				{Rows: rows("A6", "B2", "B3", "B6"), Want: want(Calls(mGet, mCreate, mInit), Phase(""), ProviderIDIs(ProviderID(1)), NodeLabel(""),
					Wrote("machine worker-a-1: status.addresses[type=InternalIP].address: +\"10.0.0.2\""), NoWrites("secret "), Requeue(short))},
				{Rows: rows("A10", "B8"), Want: want(Calls(mGet), Phase(v1alpha1.MachineAvailable), Op(opCreate, stSuccessful),
					Desc("Created machine on cloud provider"), Requeue(short))},
				{Rows: rows("D8", "D10"), Want: want(Calls(), Phase(v1alpha1.MachineAvailable), NoWrites(), Requeue(long))},
				{Do: do(DeleteMachine()), Rows: rows("X3"), Want: want(Phase(terminating), Desc(markGetVMStatus), Requeue(short))},
				{Rows: rows("S1a"), Want: want(Op(opDelete, stProcessing), Calls(),
					Desc("Running without target cluster, skipping node drain and volume attachment deletion. "+markVMDeletion), Requeue(short))},
				{Rows: rows("S4a"), Want: want(Calls(mDelete), Desc("VM deletion was successful. "+markNodeDeletion), Requeue(short))},
				{Rows: rows("S5a"), Want: want(Calls(), Desc(`Label "node" not present on machine "worker-a-1", continuing deletion flow. `+
					markFinalizerGone), Requeue(short))},
				{Rows: rows("X9"), Want: want(Gone(), Calls())},
			},
		},
		createFails("create-resource-exhausted", "A2", codes.ResourceExhausted, long),
		createFails("create-unavailable", "A3", codes.Unavailable, short),
		{
			// The instance is made, its answer names no node: MCM records
			// nothing and asks again later, when its lookup finds it.
			Name: "create-without-node-name", Rows: rows("A6", "B1"),
			World: World{Machine: newMachine()},
			Steps: []Step{{Do: do(WithholdNodeName()), Rows: rows("A6", "B1"), Want: want(Calls(mGet, mCreate), Phase(""),
				ProviderIDIs(""), NoWrites("machine "), Requeue(medium))}},
		},
		createFails("create-internal", "A4", codes.Internal, medium),
		{
			Name: "create-undecodable", Rows: rows("A4"),
			World: World{Machine: newMachine()},
			Steps: []Step{{Do: do(undecodable(mCreate)), Rows: rows("A4"), Want: want(Calls(mGet, mCreate), Phase(crashLoop),
				Op(opCreate, stFailed), Desc("Cloud provider message - the provider broke down"), ErrorCode("Unknown"), Requeue(medium))}},
		}, {
			Name: "create-fails-after-timeout", Rows: rows("A4"),
			World: World{Machine: newMachine()},
			Steps: []Step{{Do: do(Advance(21*time.Minute), FailNext(mCreate, codes.Internal)), Rows: rows("A4"),
				Want: want(Calls(mGet, mCreate), Phase(failed), Op(opCreate, stFailed), ErrorCode("Internal"))}},
		}, {
			Name: "create-stale-node", Rows: rows("A5"),
			World: staleWorld,
			Steps: []Step{{Rows: rows("A5"), Want: want(Calls(mGet, mCreate, mDelete), CallWith(mDelete, ProviderID(1)), Phase(failed),
				Op(opCreate, stFailed), Desc("VM using old node obj"), ErrorCode(""), ProviderIDIs(""), Requeue(short))}},
			Deviations: []Deviation{{Step: 0, Heading: "The stale-node check compares providerIDs", Test: "TestCreationRowsPhaseA"}},
		}, {
			Name: "adopt-providerid-not-found", Rows: rows("A7", "B2", "B7", "B8"),
			World: World{Machine: adoptNotFound},
			Steps: []Step{
				{Rows: rows("A7", "B2", "B7"), Want: want(Calls(mGet), Phase(""), ProviderIDIs(ProviderID(9)),
					Wrote("machine worker-a-1: metadata.annotations.machinepriority.machine.sapcloud.io: +\"3\""), Requeue(short))},
				{Rows: rows("A7", "B8"), Want: want(Calls(mGet), Phase(pending), Desc("Creating machine on cloud provider"), Requeue(short))},
			},
		}, {
			Name: "adopt-uninitialized", Rows: rows("A8", "B2", "B6", "A10", "B8"),
			World: uninit,
			Steps: []Step{
				{Rows: rows("A8", "B2", "B6"), Want: want(Calls(mGet, mInit), Phase(""), ProviderIDIs(ProviderID(1)), Requeue(short))},
				{Rows: rows("A10", "B8"), Want: want(Calls(mGet), Phase(pending), Requeue(short))},
			},
		}, {
			Name: "lookup-internal", Rows: rows("A9"),
			World: World{Machine: newMachine()},
			Steps: []Step{{Do: do(FailNext(mGet, codes.Internal)), Rows: rows("A9"), Want: want(Calls(mGet), Phase(crashLoop),
				Op(opCreate, stFailed), ErrorCode("Internal"), Requeue(medium))}},
		}, {
			Name: "lookup-undecodable", Rows: rows("A1"),
			World: World{Machine: newMachine()},
			Steps: []Step{{Do: do(undecodable(mGet)), Rows: rows("A1"), Want: want(Calls(mGet), Phase(""), NoWrites("machine "),
				Requeue(medium))}},
		}, {
			Name: "adopt-found-instance", Rows: rows("A10", "B2", "B7", "B8"),
			World: world(newMachine(), 1),
			Steps: []Step{
				{Rows: rows("A10", "B2", "B7"), Want: want(Calls(mGet), Phase(""), ProviderIDIs(ProviderID(1)), NodeLabel(NodeName(1)),
					Requeue(short), ErrHas("labels/annotations update is successful"))},
				{Rows: rows("A10", "B8"), Want: want(Calls(mGet), Phase(pending), Requeue(short))},
			},
		}, {
			Name: "init-undecodable", Rows: rows("A6", "B2", "B4"),
			World: initFails,
			Steps: []Step{{Do: do(undecodable(mInit)), Rows: rows("A6", "B2", "B4"), Want: want(Calls(mGet, mCreate, mInit), Phase(""),
				ProviderIDIs(ProviderID(1)), Requeue(long))}},
		}, {
			Name: "init-fails", Rows: rows("A6", "B2", "B5", "A8", "B6", "A10", "B8"),
			World: initFails,
			Steps: []Step{
				{Do: do(FailNext(mInit, codes.Internal)), Rows: rows("A6", "B2", "B5"), Want: want(Calls(mGet, mCreate, mInit),
					Phase(crashLoop), Op(opCreate, stFailed), DescHas("Provider error: ", "Initialize VM Instance"), ErrorCode("Internal"),
					Requeue(short))},
				{Do: do(Advance(short)), Rows: rows("A8", "B6"), Want: want(Calls(mGet, mInit), Phase(crashLoop), Requeue(short))},
				{Rows: rows("A10", "B8"), Want: want(Calls(mGet), Phase(pending), Requeue(short))},
			},
		}, {
			Name: "init-not-found", Rows: rows("A6", "B2", "B5"),
			World: initFails,
			Steps: []Step{{Do: do(FailNext(mInit, codes.NotFound)), Rows: rows("A6", "B2", "B5"), Want: want(Calls(mGet, mCreate, mInit),
				Phase(crashLoop), ErrorCode("NotFound"), Requeue(short))}},
		}}
}

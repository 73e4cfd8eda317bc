package lifecycle_test

import (
	"fmt"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// exampleRunning is a Running machine with its instance recorded and its
// node healthy, for the examples.
func exampleRunning() lifecycle.Input {
	created := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	now := created.Add(time.Hour)
	node := lifecycle.Node{Name: "node-a", ProviderID: "mem:///vm-a", MachineName: "machine-a",
		Conditions: []lifecycle.Condition{{Type: "Ready", Status: lifecycle.ConditionTrue}}}
	return lifecycle.Input{
		Now: now,
		Object: lifecycle.Object{Name: "machine-a", UID: "uid-a", CreationTime: created, Finalizer: true,
			NodeLabel: "node-a", ProviderID: "mem:///vm-a", Priority: "3"},
		Status: lifecycle.Status{Phase: phase.Running, PhaseSince: lifecycle.StampOf(created.Add(3 * time.Minute)),
			ProviderID: "mem:///vm-a", NodeName: "node-a", OwnerUID: "uid-a", Conditions: node.Conditions,
			MetadataObserved: lifecycle.StampOf(now),
			LastOp:           lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateSuccessful, Desc: lastop.DescJoined}},
		Node: node,
	}
}

// feed returns in with d's status and d's outcome: every effect ran, the
// driver call (if any) answered r.
func feed(in lifecycle.Input, d lifecycle.Decision, r driverapi.Result) lifecycle.Input {
	in.Status = d.Status
	r.Method = d.Call.Method
	in.Outcome = &lifecycle.Outcome{OpID: d.OpID, Ran: d.Effects.Len(), Result: r}
	return in
}

// Initialization: InitializeMachine fails; the machine goes to
// CrashLoopBackOff with the stage kept, so the next pass initializes again.
func ExampleStep_initialization() {
	cfg := lifecycle.DefaultConfig()
	in := exampleRunning()
	in.Now = in.Object.CreationTime.Add(time.Minute)
	in.Status = lifecycle.Status{Stage: lifecycle.StageInitializing, ProviderID: "mem:///vm-a", NodeName: "node-a"}
	d := lifecycle.Step(cfg, in) // every pass looks the instance up first
	d = lifecycle.Step(cfg, feed(in, d, driverapi.Result{ProviderID: "mem:///vm-a", NodeName: "node-a", OwnerUID: "uid-a"}))
	fmt.Println(d.Rule, d.Lines())
	d = lifecycle.Step(cfg, feed(in, d, driverapi.ResultOf(driverapi.MethodInitialize,
		driverapi.Error(driverapi.Internal, "ENI not attached"))))
	fmt.Println(d.Rule, d.Status.Phase, d.Status.Stage, d.Requeue)
	fmt.Println(lifecycle.Describe(&d.Status, "machine-a"))
	// Output:
	// create.adopted [call InitializeMachine machine-a providerID=mem:///vm-a uid=uid-a]
	// create.init-failed CrashLoopBackOff initializing 5s
	// Provider error: machine codes error: code = [Internal] message = [ENI not attached]. Initialize VM Instance
}

// Health: the node turns NotReady; the Running machine becomes Unknown and
// is looked at again until the health timeout.
func ExampleStep_health() {
	in := exampleRunning()
	in.Node.Conditions = []lifecycle.Condition{{Type: "Ready", Status: lifecycle.ConditionFalse}}
	d := lifecycle.Step(lifecycle.DefaultConfig(), in)
	fmt.Println(d.Rule, d.Status.Phase, d.Wait.For, d.Requeue)
	// Output:
	// health.unhealthy Unknown recovery 1m0s
}

// Deletion: a Running machine's deletion is requested; the first decision
// makes it Terminating, the next cordons and drains its node.
func ExampleStep_deletion() {
	cfg := lifecycle.DefaultConfig()
	in := exampleRunning()
	in.Object.DeletionTime = in.Now
	d := lifecycle.Step(cfg, in)
	fmt.Println(d.Rule, d.Status.Phase, d.Status.Stage)
	d = lifecycle.Step(cfg, feed(in, d, driverapi.Result{}))
	fmt.Println(d.Rule)
	for _, l := range d.Lines() {
		fmt.Println(" ", l)
	}
	// Output:
	// delete.begins Terminating get-vm-status
	// delete.node-known
	//   set-node-condition node-a Terminating=True reason=ScaleDown
	//   cordon node-a
	//   drain node-a
}

// Hot update: the spec asks generation 2; UpdateMachine applies it.
func ExampleStep_hotUpdate() {
	cfg := lifecycle.DefaultConfig()
	in := exampleRunning()
	in.Object.UpdateGeneration = 2
	d := lifecycle.Step(cfg, in)
	fmt.Println(d.Rule, d.Lines())
	d = lifecycle.Step(cfg, feed(in, d, driverapi.Result{Generation: 2}))
	fmt.Println(d.Rule, d.Status.AppliedGeneration, lifecycle.Describe(&d.Status, "machine-a"))
	// Output:
	// update.apply [call UpdateMachine machine-a providerID=mem:///vm-a uid=uid-a generation=2]
	// update.applied 2 Machine machine-a hot update applied
}

// Metadata: the spec asks a new key; one UpdateMetadata carries it, and the
// machine is in sync only once GetMachineStatus shows it.
func ExampleStep_metadata() {
	cfg := lifecycle.DefaultConfig()
	in := exampleRunning()
	in.Object.Metadata = map[string]string{"team": "a"}
	d := lifecycle.Step(cfg, in)
	fmt.Println(d.Rule, d.Lines())
	d = lifecycle.Step(cfg, feed(in, d, driverapi.Result{}))
	fmt.Println(d.Rule, d.Lines())
	next := feed(in, d, driverapi.Result{ProviderID: "mem:///vm-a", OwnerUID: "uid-a",
		Metadata: map[string]string{"team": "a"}})
	d = lifecycle.Step(cfg, next)
	fmt.Println(d.Rule, lifecycle.Describe(&d.Status, "machine-a"))
	// Output:
	// metadata.patch [call UpdateMetadata machine-a providerID=mem:///vm-a uid=uid-a set team=a]
	// metadata.patched [call GetMachineStatus machine-a providerID=mem:///vm-a uid=uid-a key=uid-a/0]
	// metadata.synced Machine machine-a instance metadata in sync
}

// The fleet limiter grants one replacement per owner at a time: of two
// machines Unknown past their health timeout, the one Unknown longer.
func ExampleLimit() {
	cfg := lifecycle.DefaultConfig()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	// A fleet pass makes a member of each machine's saved status.
	memberOf := func(name string, p phase.Phase, since time.Duration) lifecycle.Member {
		in := lifecycle.Input{
			Object: lifecycle.Object{Name: name, UID: "uid-" + name, Owner: "ms-1"},
			Status: lifecycle.Status{Phase: p, PhaseSince: lifecycle.StampOf(now.Add(-since))},
		}
		return lifecycle.MemberOf(&cfg, &in)
	}
	fleet := []lifecycle.Member{
		memberOf("a", phase.Unknown, 12*time.Minute),
		memberOf("b", phase.Unknown, 15*time.Minute),
		memberOf("c", phase.Running, time.Hour),
	}
	for i, g := range lifecycle.Limit(nil, &cfg, now, lifecycle.Observer{}, fleet) {
		fmt.Println(i, g.Fail)
	}
	// Output:
	// 0 false
	// 1 true
	// 2 false
}

// Orphans: an instance no machine records, older than the creation
// timeout, is deleted; one whose machine is still being created is not.
func ExampleOrphans() {
	cfg := lifecycle.DefaultConfig()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	a := lifecycle.Input{Object: lifecycle.Object{Name: "a", UID: "uid-a"},
		Status: lifecycle.Status{Phase: phase.Running, ProviderID: "p-a"}}
	b := lifecycle.Input{Object: lifecycle.Object{Name: "b", UID: "uid-b"},
		Status: lifecycle.Status{Phase: phase.CrashLoopBackOff}}
	fleet := []lifecycle.Member{lifecycle.MemberOf(&cfg, &a), lifecycle.MemberOf(&cfg, &b)}
	instances := []driverapi.Instance{
		{ProviderID: "p-a", MachineName: "a", OwnerUID: "uid-a"},
		{ProviderID: "p-b", MachineName: "b", OwnerUID: "uid-b", Created: now.Add(-time.Hour)},
		{ProviderID: "p-x", MachineName: "x", OwnerUID: "uid-x", Created: now.Add(-time.Hour)},
	}
	for _, c := range lifecycle.Orphans(nil, &cfg, now, fleet, instances) {
		fmt.Println(c.Method, c.Machine.ProviderID)
	}
	// Output:
	// DeleteMachine p-x
}

// Summarize counts a fleet for metrics.
func ExampleSummarize() {
	cfg := lifecycle.DefaultConfig()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	a := lifecycle.Input{Object: lifecycle.Object{Name: "a"}, Status: lifecycle.Status{Phase: phase.Running}}
	b := lifecycle.Input{Object: lifecycle.Object{Name: "b", CreationTime: now.Add(-30 * time.Minute)},
		Status: lifecycle.Status{Phase: phase.Pending, PhaseSince: lifecycle.StampOf(now.Add(-25 * time.Minute))}}
	fleet := []lifecycle.Member{lifecycle.MemberOf(&cfg, &a), lifecycle.MemberOf(&cfg, &b)}
	s := lifecycle.Summarize(&cfg, now, fleet, 0)
	fmt.Println(s.ByPhase[phase.Running], s.ByPhase[phase.Pending], s.PastDeadline, s.OldestWait[phase.Pending])
	// Output:
	// 1 1 1 25m0s
}

package lifecycle_test

import (
	"fmt"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// A fresh machine: the first decision adds the finalizer and asks the
// provider whether the instance exists; the outcome NotFound leads to the
// creation, whose intent is saved before CreateMachine is asked.
func ExampleStep() {
	cfg := lifecycle.DefaultConfig()
	created := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	in := lifecycle.Input{
		Now:    created.Add(time.Second),
		Object: lifecycle.Object{Name: "machine-a", UID: "uid-a", CreationTime: created},
	}
	d := lifecycle.Step(cfg, in)
	fmt.Println(d.Rule, d.Lines())

	// The shell carried out both effects; the driver said NotFound.
	in.Object.Finalizer = true
	in.Status = d.Status
	in.Outcome = &lifecycle.Outcome{OpID: d.OpID, Ran: d.Effects.Len(),
		Result: driverapi.ResultOf(driverapi.MethodGetStatus, driverapi.Error(driverapi.NotFound, "no such vm"))}
	d = lifecycle.Step(cfg, in)
	fmt.Println(d.Rule, "changed:", d.Changed, "stage:", d.Status.Stage)
	for _, l := range d.Lines() {
		fmt.Println(" ", l)
	}
	// Output:
	// create.lookup [ensure-finalizer machine.sapcloud.io/machine-controller-manager call GetMachineStatus machine-a uid=uid-a key=uid-a/0]
	// create.vm-not-found changed: true stage: creating
	//   ensure-bootstrap-token machine-a expires 2026-11-22T09:20:01Z
	//   call CreateMachine machine-a uid=uid-a key=uid-a/0
}

// A Pending machine whose node joined and is healthy becomes Running; the
// startup taint and the bootstrap token go in the same decision.
func ExampleStep_join() {
	cfg := lifecycle.DefaultConfig()
	created := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	in := lifecycle.Input{
		Now: created.Add(3 * time.Minute),
		Object: lifecycle.Object{Name: "machine-a", UID: "uid-a", CreationTime: created, Finalizer: true,
			NodeLabel: "node-a", ProviderID: "mem:///vm-a", Priority: "3"},
		Node: lifecycle.Node{Name: "node-a", ProviderID: "mem:///vm-a", MachineName: "machine-a",
			Taints:     lifecycle.InstanceNotReady,
			Conditions: []lifecycle.Condition{{Type: "Ready", Status: lifecycle.ConditionTrue}}},
		TokenExists: true,
	}
	in.Status.Phase = phase.Pending
	in.Status.LastOp = lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateProcessing, Desc: lastop.DescCreating}
	in.Status.ProviderID, in.Status.NodeName = "mem:///vm-a", "node-a"
	d := lifecycle.Step(cfg, in)
	fmt.Println(d.Rule, d.Status.Phase)
	fmt.Println(lifecycle.Describe(&d.Status, "machine-a"))
	for _, l := range d.Lines() {
		fmt.Println(" ", l)
	}
	// Output:
	// health.joined Running
	// Machine machine-a successfully joined the cluster in 3m0s
	//   event Normal MachineRunning (health.joined)
	//   remove-taint node-a node.machine.sapcloud.io/instance-not-ready
	//   delete-bootstrap-token machine-a
}

// A controller checks its configuration once, when it starts, and steps
// every machine with the checked copy; later changes to the Config do not
// reach it.
func ExampleConfig_Check() {
	cfg := lifecycle.DefaultConfig()
	cfg.HealthTimeout = 15 * time.Minute
	checked, err := cfg.Check()
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg.HealthTimeout = 0 // too late: checked holds its own copy

	in := lifecycle.Input{
		Now:    time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC),
		Object: lifecycle.Object{Name: "machine-a", UID: "uid-a", Owner: "set-a"},
	}
	var d lifecycle.Decision // a worker's scratch, reused from machine to machine
	lifecycle.StepInto(&d, &checked, &in)
	c := checked.Config()
	fmt.Println(d.Rule, c.HealthTimeout)

	_, err = cfg.Check()
	fmt.Println(err)
	// Output:
	// create.lookup 15m0s
	// lifecycle: invalid config: HealthTimeout must be positive, got 0s
}

// Config.Validate lists every problem at once.
func ExampleConfig_Validate() {
	cfg := lifecycle.DefaultConfig()
	cfg.HealthTimeout = 0
	cfg.MaxEvictRetries = -1
	fmt.Println(cfg.Validate())
	// Output:
	// lifecycle: invalid config: HealthTimeout must be positive, got 0s
	// lifecycle: invalid config: MaxEvictRetries must not be negative, got -1
}

// A pass with one Decision reused from step to step: StepInto overwrites
// it, and each step after the first decides from the status the previous
// one left (saved by the shell when it changed).
func ExampleStepInto() {
	checked, err := lifecycle.DefaultConfig().Check()
	if err != nil {
		fmt.Println(err)
		return
	}
	in := lifecycle.Input{
		Now:    time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC),
		Object: lifecycle.Object{Name: "machine-a", UID: "uid-a", Owner: "set-a", Finalizer: true},
	}
	var d lifecycle.Decision
	for range 2 {
		lifecycle.StepInto(&d, &checked, &in)
		fmt.Println(d.Rule, "|", lifecycle.CallString(d.Call))
		in.Status = d.Status // as saved
		// The shell saves d.Status when d.Changed, carries out the effects
		// and feeds their outcome back: the provider has no instance.
		in.Outcome = &lifecycle.Outcome{OpID: d.OpID, Ran: d.Effects.Len(),
			Result: driverapi.ResultOf(d.Call.Method, driverapi.Error(driverapi.NotFound, "no instance"))}
	}
	// Output:
	// create.lookup | GetMachineStatus machine-a uid=uid-a key=uid-a/0
	// create.vm-not-found | CreateMachine machine-a uid=uid-a key=uid-a/0
}

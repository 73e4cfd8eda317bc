package lifecycletest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
	"github.com/purelifecycle/machine/lifecycle/pass"
)

// Check every decision against the safety promises [Check] lists. In a
// property test, draw the inputs with rapid.Check(t, ...) and
// lifecycletest.Inputs(cfg).Draw(t, "input"); here Example draws fixed ones,
// so the output is stable.
func ExampleCheck() {
	cfg := lifecycle.DefaultConfig()
	broken := 0
	for i := range 200 {
		in := lifecycletest.Inputs(cfg).Example(i)
		d := lifecycle.Step(cfg, in)
		if err := lifecycletest.Check(&cfg, &in, &d); err != nil {
			broken++
			fmt.Println(err)
		}
	}
	fmt.Printf("200 random decisions, %d broken promises\n", broken)
	// Output:
	// 200 random decisions, 0 broken promises
}

// exampleShell is one machine, its object and saved status, as a
// pass.Shell over the provider p; as the pass's Observer it checks every
// decision with Check and prints its rule.
type exampleShell struct {
	obj    lifecycle.Object
	status lifecycle.Status
	p      *lifecycletest.Provider
	cfg    lifecycle.Config
	pass   int
}

func (s *exampleShell) Observe(_ context.Context, now time.Time, in *lifecycle.Input) error {
	*in = lifecycle.Input{Now: now, Object: s.obj, Status: s.status}
	return nil
}

func (s *exampleShell) Save(_ context.Context, st *lifecycle.Status) lifecycle.Write {
	s.status = *st
	return lifecycle.WriteOK
}

// Apply writes the object effects as the API server would return them.
func (s *exampleShell) Apply(_ context.Context, e *lifecycle.Effect) (lifecycle.Write, string) {
	lifecycletest.ApplyToObject(&s.obj, e)
	return lifecycle.WriteOK, ""
}

func (s *exampleShell) Invoke(ctx context.Context, c *driverapi.Call, res *driverapi.Result) {
	*res = driverapi.Invoke(ctx, s.p, *c, driverapi.Class{})
}

func (s *exampleShell) Node(context.Context, string) lifecycle.Node { return lifecycle.Node{} }

func (s *exampleShell) Decided(in *lifecycle.Input, d *lifecycle.Decision) {
	if err := lifecycletest.Check(&s.cfg, in, d); err != nil {
		fmt.Println(err)
	}
	fmt.Printf("pass %d: %s\n", s.pass, d.Rule)
}

// Drive a machine against the fault-injecting provider with pass.Run:
// CreateMachine fails once with Unavailable, and the creation is retried
// with the same idempotency key.
func ExampleProvider() {
	now := lifecycletest.Epoch
	p := lifecycletest.NewProvider()
	p.Now = func() time.Time { return now }
	failed := false
	p.Fault = func(m driverapi.Method) lifecycletest.Fault {
		if m == driverapi.MethodCreate && !failed {
			failed = true
			return lifecycletest.Fault{Code: driverapi.Unavailable}
		}
		return lifecycletest.Fault{}
	}
	cfg := lifecycle.DefaultConfig()
	checked, err := cfg.Check()
	if err != nil {
		fmt.Println(err)
		return
	}
	sh := &exampleShell{obj: lifecycle.Object{Name: "m-1", UID: "u-1", CreationTime: now, Finalizer: true}, p: p, cfg: cfg}
	var s pass.Scratch
	for sh.pass = 1; sh.pass <= 2; sh.pass++ {
		r := pass.Run(context.Background(), &checked, sh, now, &s, sh)
		now = now.Add(r.Requeue)
	}
	fmt.Printf("instances: %d, CreateMachine calls: %d\n", len(p.Instances()), p.Calls[driverapi.MethodCreate])
	// Output:
	// pass 1: create.lookup
	// pass 1: create.vm-not-found
	// pass 1: create.transient-error
	// pass 1: create.backoff
	// pass 2: create.lookup
	// pass 2: create.vm-not-found
	// pass 2: create.created
	// pass 2: create.pending
	// pass 2: health.waiting-for-node
	// instances: 1, CreateMachine calls: 2
}

// Explore one machine's small world exhaustively: every outcome of every
// decision and the events chosen, from a Running machine.
func ExampleExplore() {
	r, err := lifecycletest.Explore(lifecycletest.Exploration{
		Name:   "node health",
		Events: lifecycletest.EventsFair | lifecycletest.EventNodeHealth,
		Starts: []lifecycletest.Start{lifecycletest.StartRunning},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	rules := map[lifecycle.Rule]bool{}
	for _, e := range r.Edges {
		rules[e.Rule] = true
	}
	fmt.Printf("%s: %d states, %d transitions, %d rules, %d stuck\n", r.Name, r.States, r.Transitions, len(rules), r.Stuck)
	// Output:
	// node health: 123 states, 493 transitions, 12 rules, 0 stuck
}

// Script the provider's faults and watch what each call does: the first
// InitializeMachine fails, a repeated CreateMachine finds its instance by
// its idempotency key, and an UpdateMetadata silently drops one key.
func ExampleProvider_FailNext() {
	p := lifecycletest.NewProvider()
	p.Log = func(note string) { fmt.Println("  provider:", note) }
	p.FailNext(driverapi.MethodInitialize, lifecycletest.Fault{Code: driverapi.Internal, Message: "no network yet"}, 1)
	p.DropNext("pool")
	ref := driverapi.MachineRef{Name: "m-1", UID: "u-1"}
	for _, c := range []driverapi.Call{
		{Method: driverapi.MethodCreate, Machine: ref},
		{Method: driverapi.MethodCreate, Machine: ref},
		{Method: driverapi.MethodInitialize, Machine: driverapi.MachineRef{ProviderID: "test:///vm-1"}},
		{Method: driverapi.MethodInitialize, Machine: driverapi.MachineRef{ProviderID: "test:///vm-1"}},
		{Method: driverapi.MethodUpdateMetadata, Machine: driverapi.MachineRef{ProviderID: "test:///vm-1", UID: "u-1"},
			Metadata: map[string]string{"team": "a", "pool": "web"}},
		{Method: driverapi.MethodGetStatus, Machine: ref},
	} {
		r := p.Invoke(&c)
		fmt.Printf("%s: %s %s %v\n", c.Method, r.Code, r.ProviderID, r.Metadata)
	}
	// Output:
	//   provider: created test:///vm-1
	// CreateMachine: OK test:///vm-1 map[]
	//   provider: same key u-1/0: returned the existing test:///vm-1
	// CreateMachine: OK test:///vm-1 map[]
	//   provider: scripted failure, 0 left
	// InitializeMachine: Internal  map[]
	//   provider: initialized test:///vm-1
	// InitializeMachine: OK test:///vm-1 map[]
	//   provider: metadata now {team=a} (silently dropped pool)
	// UpdateMetadata: OK  map[]
	// GetMachineStatus: OK test:///vm-1 map[team:a]
}

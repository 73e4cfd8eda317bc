package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/looplab/fsm"
	"github.com/qmuntal/stateless"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// The scenarios of doc/performance.md ("What is measured"). Sub-benchmarks are
// named impl=<name>, in the same order everywhere, so `benchstat -col /impl`
// lines them up with the library first:
//
//	lifecycle           lifecycle.Step, Config and Input by value, Decision returned
//	lifecycle-into      lifecycle.StepInto into a caller-owned Decision
//	looplab             github.com/looplab/fsm, no callbacks
//	stateless           github.com/qmuntal/stateless, FiringImmediate, no guards
//	pure-value          PureValue, the floor of Step's shape
//	pure-into           PureInto, the floor of StepInto's shape
//	pure-into-zeroing   PureIntoZeroing, PureInto clearing the Decision first

// reuse returns the first input of the Reuse scenario: the Running machine
// whose node turned unhealthy.
func (f *Fixture) reuse(i int) lifecycle.Input {
	in := f.In[Running]
	if i%2 == 1 {
		in = f.In[Unknown]
	}
	in.Node.Conditions = f.conds(i)
	return in
}

// conds returns the node conditions of step i of an alternation that starts
// at a Running machine: unhealthy, then healthy, and so on.
func (f *Fixture) conds(i int) []lifecycle.Condition {
	if i%2 == 0 {
		return f.Unhealthy.Conditions
	}
	return f.Healthy.Conditions
}

// fresh returns the input of the Fresh and Rehydrate scenarios: the Pending
// machine whose node just registered, healthy, with its startup taint.
func (f *Fixture) fresh() lifecycle.Input {
	in := f.In[Pending]
	in.Now = in.Now.Add(time.Minute)
	in.Node = f.Joining
	return in
}

// reuseTriggers are the events of the alternation, boxed once as a
// controller's constants would be.
var reuseEvents = [2]Event{Unhealthy, Healthy}

var reuseTriggers = [2]stateless.Trigger{Unhealthy, Healthy}

var reusePhases = [2]phase.Phase{phase.Unknown, phase.Running}

// BenchmarkReuse: one transition on a long-lived instance, alternating
// Running -unhealthy-> Unknown and Unknown -healthy-> Running. The library
// feeds each decision's status into the next input.
func BenchmarkReuse(b *testing.B) {
	f := fixture(b)
	ctx := context.Background()
	b.Run("impl=lifecycle", func(b *testing.B) {
		in := f.reuse(0)
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			in.Node.Conditions = f.conds(i)
			d := lifecycle.Step(f.Config, in)
			if d.Status.Phase != reusePhases[i&1] || d.Effects.Len() != 1 {
				b.Fatalf("step %d: %s", i, d.String())
			}
			in.Status = d.Status
			i++
		}
	})
	b.Run("impl=lifecycle-into", func(b *testing.B) {
		in := f.reuse(0)
		var d lifecycle.Decision
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			in.Node.Conditions = f.conds(i)
			lifecycle.StepInto(&d, &f.Checked, &in)
			if d.Status.Phase != reusePhases[i&1] || d.Effects.Len() != 1 {
				b.Fatalf("step %d: %s", i, d.String())
			}
			in.Status = d.Status
			i++
		}
	})
	b.Run("impl=looplab", func(b *testing.B) {
		m := NewLooplab(Running)
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			if err := m.Event(ctx, string(reuseEvents[i&1])); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("impl=stateless", func(b *testing.B) {
		m := NewStateless(Running)
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			if err := m.FireCtx(ctx, reuseTriggers[i&1]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("impl=pure-value", func(b *testing.B) {
		in := f.reuse(0)
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			in.Node.Conditions = f.conds(i)
			d := PureValue(f.Config, in)
			if d.Status.Phase != reusePhases[i&1] || d.Effects.N != 1 {
				b.Fatalf("step %d: %v", i, d.Status.Phase)
			}
			in.Status = d.Status
			i++
		}
	})
	b.Run("impl=pure-into", func(b *testing.B) {
		benchPureInto(b, f, PureInto)
	})
	b.Run("impl=pure-into-zeroing", func(b *testing.B) {
		benchPureInto(b, f, PureIntoZeroing)
	})
}

func benchPureInto(b *testing.B, f *Fixture, step func(*PureDecision, *lifecycle.Config, *lifecycle.Input)) {
	in := f.reuse(0)
	var d PureDecision
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		in.Node.Conditions = f.conds(i)
		step(&d, &f.Config, &in)
		if d.Status.Phase != reusePhases[i&1] || d.Effects.N != 1 {
			b.Fatalf("step %d: %v", i, d.Status.Phase)
		}
		in.Status = d.Status
		i++
	}
}

// BenchmarkFresh: a reconcile from the stored phase, Pending -healthy->
// Running, with nothing kept between reconciles. The peers construct (and
// configure) an FSM at the stored phase and fire; the library gets an Input
// assembled from the object's fields and decides (the first join: four
// effects).
func BenchmarkFresh(b *testing.B) {
	f := fixture(b)
	ctx := context.Background()
	src := f.fresh() // the machine and its node, as the controller's cache holds them
	check := func(b *testing.B, p phase.Phase, effects, want int) {
		if p != phase.Running || effects != want {
			b.Fatalf("fresh: %s with %d effects", p.Label(), effects)
		}
	}
	b.Run("impl=lifecycle", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			in := lifecycle.Input{Now: src.Now, Object: src.Object, Status: src.Status, Node: src.Node,
				TokenExists: src.TokenExists}
			d := lifecycle.Step(f.Config, in)
			check(b, d.Status.Phase, d.Effects.Len(), 4)
		}
	})
	b.Run("impl=lifecycle-into", func(b *testing.B) {
		// The worker's scratch Decision and Input, reused from machine to
		// machine as StepInto's doc intends; they keep no machine's state:
		// assemble overwrites every field of the Input.
		var d lifecycle.Decision
		var in lifecycle.Input
		b.ReportAllocs()
		for b.Loop() {
			assemble(&in, &src)
			lifecycle.StepInto(&d, &f.Checked, &in)
			check(b, d.Status.Phase, d.Effects.Len(), 4)
		}
	})
	b.Run("impl=looplab", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m := NewLooplab(Pending)
			if err := m.Event(ctx, string(Healthy)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=stateless", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m := NewStateless(Pending)
			if err := m.FireCtx(ctx, Healthy); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=looplab-phases", func(b *testing.B) {
		ev := string(PhaseEvent(phase.Running))
		b.ReportAllocs()
		for b.Loop() {
			m := NewLooplabPhases(Pending)
			if err := m.Event(ctx, ev); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=stateless-phases", func(b *testing.B) {
		var tr stateless.Trigger = PhaseEvent(phase.Running)
		b.ReportAllocs()
		for b.Loop() {
			m := NewStatelessPhases(Pending)
			if err := m.FireCtx(ctx, tr); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=pure-value", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			in := lifecycle.Input{Now: src.Now, Object: src.Object, Status: src.Status, Node: src.Node,
				TokenExists: src.TokenExists}
			d := PureValue(f.Config, in)
			check(b, d.Status.Phase, int(d.Effects.N), 1)
		}
	})
	b.Run("impl=pure-into", func(b *testing.B) {
		var d PureDecision // a worker's scratch, as for lifecycle-into
		var in lifecycle.Input
		b.ReportAllocs()
		for b.Loop() {
			assemble(&in, &src)
			PureInto(&d, &f.Config, &in)
			check(b, d.Status.Phase, int(d.Effects.N), 1)
		}
	})
}

// assemble fills a worker's Input with what a controller reads from its
// cache for the machine, every field of it, as a shell's observe does.
// Each field is written once: clearing the whole Input first and then
// copying the machine's fields in would write 1,256 bytes instead of 664
// (a step is bound by its stores), and assigning a composite literal to an
// Input whose address is taken builds the literal in a temporary and
// copies it (Go 1.26). TestAssembleSetsEveryField keeps it complete.
func assemble(in, src *lifecycle.Input) {
	in.Status = src.Status
	in.Now = src.Now
	in.Object = src.Object
	in.Node = src.Node
	in.NodeReadFailed = false
	in.VolumeAttachments = 0
	in.TokenExists = src.TokenExists
	in.Observer = lifecycle.Observer{}
	in.Problem = lifecycle.ProblemNone
	in.Grant = lifecycle.Grant{}
	in.PredecessorTerminating = false
	in.Outcome = nil
}

// BenchmarkRehydrate: the same reconcile with one long-lived instance that
// is loaded with the stored phase first (looplab SetState, stateless
// external storage); the library copies the stored status into its input.
func BenchmarkRehydrate(b *testing.B) {
	f := fixture(b)
	ctx := context.Background()
	in := f.fresh()
	stored := in.Status
	b.Run("impl=lifecycle", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			in.Status = stored
			d := lifecycle.Step(f.Config, in)
			if d.Status.Phase != phase.Running {
				b.Fatal(d.String())
			}
		}
	})
	b.Run("impl=lifecycle-into", func(b *testing.B) {
		var d lifecycle.Decision
		b.ReportAllocs()
		for b.Loop() {
			in.Status = stored
			lifecycle.StepInto(&d, &f.Checked, &in)
			if d.Status.Phase != phase.Running {
				b.Fatal(d.String())
			}
		}
	})
	b.Run("impl=looplab", func(b *testing.B) {
		m := NewLooplab(Pending)
		b.ReportAllocs()
		for b.Loop() {
			m.SetState(string(Pending))
			if err := m.Event(ctx, string(Healthy)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=stateless", func(b *testing.B) {
		var st State
		m := NewStatelessStored(&st)
		b.ReportAllocs()
		for b.Loop() {
			st = Pending
			if err := m.FireCtx(ctx, Healthy); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=pure-value", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			in.Status = stored
			if d := PureValue(f.Config, in); d.Status.Phase != phase.Running {
				b.Fatal(d.Status.Phase)
			}
		}
	})
	b.Run("impl=pure-into", func(b *testing.B) {
		var d PureDecision
		b.ReportAllocs()
		for b.Loop() {
			in.Status = stored
			if PureInto(&d, &f.Config, &in); d.Status.Phase != phase.Running {
				b.Fatal(d.Status.Phase)
			}
		}
	})
}

// The simulation: simMachines machines, simSteps alternating steps per op.
const (
	simMachines = 10_000
	simSteps    = 10
)

// simInputs returns the Running inputs of n distinct machines, each with
// its own name, UID, providerID and node, as decoded from their objects.
func simInputs(f *Fixture, n int) []lifecycle.Input {
	ins := make([]lifecycle.Input, n)
	for i := range ins {
		in := f.In[Running]
		name := fmt.Sprintf("shoot--garden--prod-worker-z1-7d9c4-%05d", i)
		uid := fmt.Sprintf("5f1c7a2e-9b3d-4c61-8e0f-%012x", i)
		pid := func() string { return fmt.Sprintf("aws:///eu-west-1a/i-0abc123def%07x", i) }
		nodeName := func() string { return fmt.Sprintf("ip-10-250-%d-%d.eu-west-1.compute.internal", i/250, i%250) }
		in.Object.Name, in.Object.UID = name, uid
		in.Object.ProviderID, in.Object.NodeLabel = pid(), nodeName()
		in.Status.ProviderID, in.Status.NodeName = pid(), nodeName()
		in.Node.Name, in.Node.ProviderID, in.Node.MachineName = nodeName(), pid(), fmt.Sprint(name)
		ins[i] = in
	}
	return ins
}

// simulate runs simSteps steps over every machine with step, which
// decides for one input and returns the number of effects; the input's
// status is the decision's afterwards.
func simulate(b *testing.B, f *Fixture, ins []lifecycle.Input, step func(in *lifecycle.Input) int) {
	now := ins[0].Now
	b.ReportAllocs()
	for b.Loop() {
		effects := 0
		for s := range simSteps {
			now = now.Add(time.Second)
			conds := f.conds(s)
			for i := range ins {
				in := &ins[i]
				in.Now = now
				in.Node.Conditions = conds
				effects += step(in)
			}
		}
		if effects != simMachines*simSteps || ins[0].Status.Phase != phase.Running {
			b.Fatalf("simulation: %d effects, machine 0 %s", effects, ins[0].Status.Phase.Label())
		}
	}
	reportMachineSteps(b)
}

func reportMachineSteps(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*simMachines*simSteps), "ns/machine-step")
}

// BenchmarkSim: 10,000 machines x 10 alternating steps per op (100,000
// machine-steps), starting Running; now advances a second per step. The
// peers hold one FSM per machine, built before the timer starts.
func BenchmarkSim(b *testing.B) {
	f := fixture(b)
	ctx := context.Background()
	b.Run("impl=lifecycle", func(b *testing.B) {
		simulate(b, f, simInputs(f, simMachines), func(in *lifecycle.Input) int {
			d := lifecycle.Step(f.Config, *in)
			in.Status = d.Status
			return d.Effects.Len()
		})
	})
	b.Run("impl=lifecycle-into", func(b *testing.B) {
		var d lifecycle.Decision
		simulate(b, f, simInputs(f, simMachines), func(in *lifecycle.Input) int {
			lifecycle.StepInto(&d, &f.Checked, in)
			in.Status = d.Status
			return d.Effects.Len()
		})
	})
	b.Run("impl=looplab", func(b *testing.B) {
		ms := make([]*fsm.FSM, simMachines)
		for i := range ms {
			ms[i] = NewLooplab(Running)
		}
		b.ReportAllocs()
		for b.Loop() {
			for s := range simSteps {
				ev := string(reuseEvents[s&1])
				for _, m := range ms {
					if err := m.Event(ctx, ev); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
		reportMachineSteps(b)
	})
	b.Run("impl=stateless", func(b *testing.B) {
		ms := make([]*stateless.StateMachine, simMachines)
		for i := range ms {
			ms[i] = NewStateless(Running)
		}
		b.ReportAllocs()
		for b.Loop() {
			for s := range simSteps {
				tr := reuseTriggers[s&1]
				for _, m := range ms {
					if err := m.FireCtx(ctx, tr); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
		reportMachineSteps(b)
	})
	b.Run("impl=pure-value", func(b *testing.B) {
		simulate(b, f, simInputs(f, simMachines), func(in *lifecycle.Input) int {
			d := PureValue(f.Config, *in)
			in.Status = d.Status
			return int(d.Effects.N)
		})
	})
	b.Run("impl=pure-into", func(b *testing.B) {
		var d PureDecision
		simulate(b, f, simInputs(f, simMachines), func(in *lifecycle.Input) int {
			PureInto(&d, &f.Config, in)
			in.Status = d.Status
			return int(d.Effects.N)
		})
	})
}

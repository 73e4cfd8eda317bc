package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/pass"
)

// The identity of the measured machine, with the lengths real ones have: a
// Gardener worker machine's name, a Kubernetes UID (36 bytes, the key of the
// deterministic jitter), an AWS providerID and node name. Short fixture
// strings such as "uid-1" would understate what hashing and comparing them
// costs.
const (
	MachineName = "shoot--garden--prod-worker-z1-7d9c4-xk2pq"
	MachineUID  = "5f1c7a2e-9b3d-4c61-8e0f-2a7d9c4b1e36"
	OwnerUID    = "0b6c3f5e-1d2a-4e7b-9c8d-3f4a5b6c7d8e"
	ProviderID  = "aws:///eu-west-1a/i-0abc123def4567890"
	NodeName    = "ip-10-250-12-34.eu-west-1.compute.internal"
)

// T0 is the creation time of every measured machine.
var T0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

// healthyConditions are the five conditions a kubelet reports for a healthy
// node, with their real reasons and messages.
func healthyConditions(since time.Time) []lifecycle.Condition {
	s := lifecycle.StampOf(since)
	return []lifecycle.Condition{
		{Type: "Ready", Status: lifecycle.ConditionTrue, Since: s, Reason: "KubeletReady", Message: "kubelet is posting ready status"},
		{Type: "MemoryPressure", Status: lifecycle.ConditionFalse, Since: s, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: "DiskPressure", Status: lifecycle.ConditionFalse, Since: s, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: "PIDPressure", Status: lifecycle.ConditionFalse, Since: s, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		{Type: "NetworkUnavailable", Status: lifecycle.ConditionFalse, Since: s, Reason: "CalicoIsUp", Message: "Calico is running on this node"},
	}
}

// unhealthyConditions are healthyConditions with Ready turned False.
func unhealthyConditions(since time.Time) []lifecycle.Condition {
	c := healthyConditions(since)
	c[0] = lifecycle.Condition{Type: "Ready", Status: lifecycle.ConditionFalse, Since: lifecycle.StampOf(since),
		Reason: "KubeletNotReady", Message: "container runtime network not ready: NetworkReady=false"}
	return c
}

// node returns the machine's node with the given conditions.
func node(conds []lifecycle.Condition) lifecycle.Node {
	return lifecycle.Node{Name: NodeName, ProviderID: ProviderID, MachineName: MachineName, Conditions: conds}
}

// NewInput returns the input of a machine object just created by its
// owner: no finalizer yet, no status, no node.
func NewInput(name, uid string) lifecycle.Input {
	return lifecycle.Input{
		Now:    T0.Add(time.Second),
		Object: lifecycle.Object{Name: name, UID: uid, Owner: OwnerUID, CreationTime: T0},
	}
}

// Fixture holds what the measurements share: the configuration, the nodes
// as a controller's cache holds them (built once, shared read-only), and
// for every phase of Table the input of a machine that rests in it, reached
// by driving the library through its own flows.
type Fixture struct {
	Config lifecycle.Config
	// Checked is Config checked once, for StepInto, as a controller does
	// when it starts.
	Checked lifecycle.Checked
	// Healthy and Unhealthy are the machine's node, Ready and not Ready.
	Healthy, Unhealthy lifecycle.Node
	// Joining is the node as it first registers: healthy, with the startup
	// taint and without the machine-name label.
	Joining lifecycle.Node
	// In holds the input of a machine resting in each phase of Table: its
	// status saved, no outcome, nothing left to do.
	In map[State]lifecycle.Input
}

// NewFixture builds the fixture. It creates the machine through the
// library's creation flow, lets its node join, turn unhealthy and time out.
func NewFixture() (*Fixture, error) {
	f := &Fixture{
		Config:    lifecycle.DefaultConfig(),
		Healthy:   node(healthyConditions(T0.Add(2 * time.Minute))),
		Unhealthy: node(unhealthyConditions(T0.Add(3 * time.Minute))),
		In:        map[State]lifecycle.Input{},
	}
	var err error
	if f.Checked, err = f.Config.Check(); err != nil {
		return nil, err
	}
	f.Joining = f.Healthy
	f.Joining.Taints = lifecycle.InstanceNotReady
	f.Joining.MachineName = ""

	w := &Provider{}
	in, err := w.Settle(&f.Config, NewInput(MachineName, MachineUID), nil)
	if err != nil {
		return nil, err
	}
	if err := f.rest(Pending, in); err != nil {
		return nil, err
	}
	steps := []struct {
		to    State
		apply func(*lifecycle.Input)
	}{
		{Running, func(in *lifecycle.Input) { in.Node = f.Joining }},
		{Unknown, func(in *lifecycle.Input) { in.Node = f.Unhealthy }},
		{Failed, func(in *lifecycle.Input) {
			in.Now = in.Now.Add(time.Hour)
			in.Grant.Fail = true
		}},
	}
	for _, s := range steps {
		s.apply(&in)
		in.Now = in.Now.Add(time.Minute)
		if in, err = w.Settle(&f.Config, in, nil); err != nil {
			return nil, err
		}
		in.Grant = lifecycle.Grant{}
		if err := f.rest(s.to, in); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (f *Fixture) rest(s State, in lifecycle.Input) error {
	if got := in.Status.Phase; got != PhaseOf(s) {
		return fmt.Errorf("fixture: expected %s, the library is in %s", s, got.Label())
	}
	d := lifecycle.Step(f.Config, in)
	if !d.Done() {
		return fmt.Errorf("fixture: a machine resting in %s still has work: %s", s, d.String())
	}
	f.In[s] = in
	return nil
}

// Observe returns the input of the machine resting in phase s after event
// e: a minute later, with the node observed as e says.
func (f *Fixture) Observe(s State, e Event) lifecycle.Input {
	in := f.In[s]
	in.Now = in.Now.Add(time.Minute)
	switch e {
	case Healthy:
		in.Node = f.Healthy
	case Unhealthy:
		in.Node = f.Unhealthy
	case Timeout:
		in.Now = in.Now.Add(time.Hour)
		in.Grant.Fail = true
		switch s {
		case Running:
			in.Node = f.Healthy
		case Pending:
			in.Node = lifecycle.Node{}
		default:
			in.Node = f.Unhealthy
		}
	}
	return in
}

// Provider is a minimal simulated provider and shell: it answers driver
// calls for one machine and carries out the effects of decisions on the
// input's object, node and token, as examples/inmemory does for real.
type Provider struct {
	// Exists reports whether the provider holds the machine's instance.
	Exists bool
	// Generation is the hot-update generation the instance is at.
	Generation int64
}

// Answer carries out a driver call.
func (p *Provider) Answer(c driverapi.Call) driverapi.Result {
	r := driverapi.Result{Method: c.Method}
	switch c.Method {
	case driverapi.MethodCreate:
		p.Exists = true
	case driverapi.MethodDelete:
		p.Exists = false
		return r
	case driverapi.MethodUpdate:
		p.Generation = c.Generation
	case driverapi.MethodGetStatus:
		if !p.Exists {
			return driverapi.ResultOf(c.Method, driverapi.Error(driverapi.NotFound, "instance not found"))
		}
	}
	r.ProviderID, r.NodeName, r.OwnerUID, r.Generation = ProviderID, NodeName, c.Machine.UID, p.Generation
	return r
}

// Pass runs one reconcile pass with pass.Run over the provider and the
// input (every write succeeds; the effects are carried out on the input's
// object, node and token). It returns the input of the next pass (status
// saved, no outcome) and the last decision, and appends the input of every
// step to *trace when trace is not nil. An invalid configuration gives the
// decision that says so.
func (p *Provider) Pass(cfg *lifecycle.Config, in lifecycle.Input, trace *[]lifecycle.Input) (lifecycle.Input, lifecycle.Decision) {
	in.Outcome = nil
	checked, err := cfg.Check()
	if err != nil {
		return in, lifecycle.Step(*cfg, in)
	}
	sh := &inputShell{p: p, in: in, trace: trace}
	var s pass.Scratch
	pass.Run(context.Background(), &checked, sh, in.Now, &s, sh)
	sh.in.Outcome = nil
	return sh.in, s.Decision
}

// inputShell is a Provider and the input it carries effects out on as a
// pass.Shell, and the pass's Observer, which records the input of every
// step in trace.
type inputShell struct {
	p     *Provider
	in    lifecycle.Input
	trace *[]lifecycle.Input
}

func (s *inputShell) Observe(_ context.Context, _ time.Time, in *lifecycle.Input) error {
	*in = s.in
	return nil
}

func (s *inputShell) Decided(in *lifecycle.Input, _ *lifecycle.Decision) {
	if s.trace == nil {
		return
	}
	c := *in
	if in.Outcome != nil {
		o := *in.Outcome // the pass reuses its outcome from step to step
		c.Outcome = &o
	}
	*s.trace = append(*s.trace, c)
}

func (s *inputShell) Save(_ context.Context, st *lifecycle.Status) lifecycle.Write {
	s.in.Status = *st
	return lifecycle.WriteOK
}

func (s *inputShell) Apply(_ context.Context, e *lifecycle.Effect) (lifecycle.Write, string) {
	apply(&s.in, e)
	return lifecycle.WriteOK, ""
}

func (s *inputShell) Invoke(_ context.Context, c *driverapi.Call, res *driverapi.Result) {
	*res = s.p.Answer(*c)
}

func (s *inputShell) Node(context.Context, string) lifecycle.Node { return lifecycle.Node{} }

// Settle runs passes, a second apart, until one ends without changing
// anything, and returns the input of the next pass.
func (p *Provider) Settle(cfg *lifecycle.Config, in lifecycle.Input, trace *[]lifecycle.Input) (lifecycle.Input, error) {
	for range 20 {
		seq := in.Status.Seq
		var d lifecycle.Decision
		in, d = p.Pass(cfg, in, trace)
		if d.Rule == lifecycle.RuleDeleteDone {
			in.Object = lifecycle.Object{} // the API server removed it
			return in, nil
		}
		if in.Status.Seq == seq && d.Done() {
			return in, nil
		}
		in.Now = in.Now.Add(time.Second)
	}
	d := lifecycle.Step(*cfg, in)
	return in, fmt.Errorf("the machine did not settle: %s", d.String())
}

// apply carries out an effect other than the driver call on the input's
// object, node and token.
func apply(in *lifecycle.Input, e *lifecycle.Effect) {
	switch e.Kind {
	case lifecycle.KindEnsureFinalizer:
		in.Object.Finalizer = true
	case lifecycle.KindRemoveFinalizer:
		in.Object.Finalizer = false
	case lifecycle.KindEnsureNodeLabel:
		in.Object.NodeLabel = e.Value
	case lifecycle.KindEnsureProviderID:
		in.Object.ProviderID = e.Value
	case lifecycle.KindEnsurePriority:
		in.Object.Priority = e.Value
	case lifecycle.KindLabelNode:
		in.Node.MachineName = e.Value
	case lifecycle.KindRemoveTaint:
		in.Node.Taints &^= lifecycle.InstanceNotReady
	case lifecycle.KindEnsureBootstrapToken:
		in.TokenExists = true
	case lifecycle.KindDeleteBootstrapToken:
		in.TokenExists = false
	case lifecycle.KindDeleteVolumeAttachments:
		in.VolumeAttachments = 0
	case lifecycle.KindDeleteNode:
		in.Node = lifecycle.Node{}
	}
}

package mcm

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
	"github.com/purelifecycle/machine/lifecycle/pass"
	"github.com/purelifecycle/machine/phase"
)

// world is the cooperative world of one adopted machine: the provider,
// which answers every call as asked; the cluster, whose node registers
// healthy with the instance's providerID; the fleet limiter, which grants;
// and the machine object as the API server keeps it.
type world struct {
	driverapi.UnimplementedDriver
	cfg     lifecycle.Config
	machine *v1alpha1.Machine // nil once the API server deleted it
	// saved is the status of the last pass's last decision, which the next
	// pass must read back from the machine.
	saved *lifecycle.Status
	vm    bool         // the instance exists
	node  *corev1.Node // nil when there is none
	joins bool         // a node registers at the next pass
	token bool         // the bootstrap token secret exists
	now   time.Time
	// nodeUnproven: the node exists, its instance is gone, and nothing of
	// the machine names it (no node label, no providerID): it may be an
	// earlier incarnation's, and a deletion leaves it alone, as MCM does
	// (S5a); orphan collection deals with it.
	nodeUnproven bool
	// calls counts driver calls; creates and deletes count instances
	// created and deleted; failed counts changes to Failed.
	calls, creates, deletes, failed int
}

func newWorld(c adoptionCase, m *v1alpha1.Machine) *world {
	w := &world{cfg: c.config(), machine: m, vm: c.vmExists(), now: adoptedAt,
		token:        !c.noTargetCluster() && (c.phase == pPending || c.phase == pNone || c.phase == pCrashLoop),
		nodeUnproven: c.nodeExists() && !c.vmExists() && !c.pid && !c.label}
	if c.nodeExists() {
		w.node = healthyNode()
	}
	return w
}

// healthyNode is the instance's node, as its kubelet registered it.
func healthyNode() *corev1.Node {
	n := readyNode() // named xNode
	n.Labels[lifecycle.MachineNameLabel] = xName
	n.Spec.ProviderID = xPID
	return n
}

// GetMachineStatus implements driverapi.Driver.
func (w *world) GetMachineStatus(_ context.Context, req *driverapi.GetMachineStatusRequest) (*driverapi.GetMachineStatusResponse, error) {
	if !w.vm || (req.Machine.ProviderID != "" && req.Machine.ProviderID != xPID) {
		return nil, driverapi.Error(driverapi.NotFound, "no such instance")
	}
	return &driverapi.GetMachineStatusResponse{ProviderID: xPID, NodeName: xNode, OwnerUID: xUID}, nil
}

// CreateMachine implements driverapi.Driver.
func (w *world) CreateMachine(context.Context, *driverapi.CreateMachineRequest) (*driverapi.CreateMachineResponse, error) {
	if !w.vm {
		w.vm, w.joins = true, !w.cfg.NoTargetCluster
		w.creates++
	}
	return &driverapi.CreateMachineResponse{ProviderID: xPID, NodeName: xNode}, nil
}

// InitializeMachine implements driverapi.Driver.
func (w *world) InitializeMachine(context.Context, *driverapi.InitializeMachineRequest) (*driverapi.InitializeMachineResponse, error) {
	return &driverapi.InitializeMachineResponse{ProviderID: xPID, NodeName: xNode}, nil
}

// DeleteMachine implements driverapi.Driver.
func (w *world) DeleteMachine(context.Context, *driverapi.DeleteMachineRequest) (*driverapi.DeleteMachineResponse, error) {
	if w.vm {
		w.vm = false
		w.deletes++
	}
	return &driverapi.DeleteMachineResponse{}, nil
}

// UpdateMetadata implements driverapi.Driver.
func (w *world) UpdateMetadata(context.Context, *driverapi.UpdateMetadataRequest) (*driverapi.UpdateMetadataResponse, error) {
	return &driverapi.UpdateMetadataResponse{}, nil
}

// observe reads the world into an input, as a shell does at every step.
func (w *world) observe() lifecycle.Input {
	in := lifecycle.Input{Now: w.now, Object: ObjectFrom(w.machine), Node: NodeFrom(w.node), TokenExists: w.token,
		Grant: lifecycle.Grant{Fail: true}}
	return in
}

// apply carries out one effect other than the driver call.
func (w *world) apply(e lifecycle.Effect) (lifecycle.Write, error) {
	m := w.machine
	switch e.Kind {
	case lifecycle.KindEnsureFinalizer, lifecycle.KindRemoveFinalizer, lifecycle.KindEnsureNodeLabel,
		lifecycle.KindEnsureProviderID, lifecycle.KindEnsurePriority:
		if m == nil {
			return lifecycle.WriteNotFound, fmt.Errorf("machine %s not found", xName)
		}
	}
	switch e.Kind {
	case lifecycle.KindEnsureFinalizer:
		if !slices.Contains(m.Finalizers, e.Key) {
			m.Finalizers = append(m.Finalizers, e.Key)
		}
	case lifecycle.KindRemoveFinalizer:
		m.Finalizers = slices.DeleteFunc(m.Finalizers, func(f string) bool { return f == lifecycle.Finalizer })
		if m.DeletionTimestamp != nil && len(m.Finalizers) == 0 {
			w.machine = nil
		}
	case lifecycle.KindEnsureNodeLabel:
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		m.Labels[e.Key] = e.Value
	case lifecycle.KindEnsureProviderID:
		m.Spec.ProviderID = e.Value
	case lifecycle.KindEnsurePriority:
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[e.Key] = e.Value
	case lifecycle.KindLabelNode:
		if w.node == nil || w.node.Name != e.Node {
			return lifecycle.WriteNotFound, fmt.Errorf("node %q not found", e.Node)
		}
		w.node.Labels[e.Key] = e.Value
	case lifecycle.KindRemoveTaint, lifecycle.KindSetNodeCondition, lifecycle.KindDrain,
		lifecycle.KindDeleteVolumeAttachments, lifecycle.KindEvent:
	case lifecycle.KindCordon:
		if w.node != nil && w.node.Name == e.Node {
			w.node.Spec.Unschedulable = true
		}
	case lifecycle.KindRemoveNodeFinalizer:
		if w.node != nil && w.node.Name == e.Node {
			w.node.Finalizers = slices.DeleteFunc(w.node.Finalizers, func(f string) bool { return f == e.Key })
		}
	case lifecycle.KindDeleteNode:
		if w.node == nil || w.node.Name != e.Node {
			return lifecycle.WriteNotFound, fmt.Errorf("node %q not found", e.Node)
		}
		if len(w.node.Finalizers) > 0 {
			return lifecycle.WriteFailed, fmt.Errorf("node %q keeps its finalizers %v", e.Node, w.node.Finalizers)
		}
		w.node = nil
	case lifecycle.KindEnsureBootstrapToken:
		w.token = true
	case lifecycle.KindDeleteBootstrapToken:
		w.token = false
	default:
		return lifecycle.WriteFailed, fmt.Errorf("unexpected effect %s", e)
	}
	return lifecycle.WriteOK, nil
}

// passResult is one reconcile pass.
type passResult struct {
	decisions []lifecycle.Decision
	requeue   time.Duration
	// gone reports that the machine object was deleted by the pass.
	gone bool
	// err is the first promise broken, or a failure of the adapter.
	err error
}

// rules lists the rules of the pass's decisions, a repeated one once.
func (p *passResult) rules() []string {
	var out []string
	for i := range p.decisions {
		r := p.decisions[i].Rule.String()
		if len(out) == 0 || out[len(out)-1] != r {
			out = append(out, r)
		}
	}
	return out
}

// last returns the pass's last decision.
func (p *passResult) last() *lifecycle.Decision { return &p.decisions[len(p.decisions)-1] }

// pass runs one reconcile pass with pass.Run over the world (worldShell):
// it reads the machine as the API server returns it (StatusFrom through
// the API's JSON), persists every changed status with ApplyStatus, and
// checks every decision with lifecycletest.Check. A step that panics is a
// broken promise.
func (w *world) pass() (p passResult) {
	if w.joins && w.vm && w.node == nil {
		w.node, w.joins = healthyNode(), false
	}
	if w.machine == nil {
		p.err = fmt.Errorf("no machine")
		return p
	}
	st, err := StatusFrom(viaJSON(panicT{}, w.machine))
	if err != nil {
		p.err = err
		return p
	}
	if w.saved != nil && !sameStatus(*w.saved, st) {
		p.err = fmt.Errorf("the saved status does not read back:\nsaved %+v\nread  %+v", *w.saved, st)
		return p
	}
	cfg, err := w.cfg.Check()
	if err != nil {
		p.err = err
		return p
	}
	defer func() {
		if r := recover(); r != nil {
			p.err = fmt.Errorf("Step panicked: %v", r)
			return
		}
		w.saved, p.gone = &p.last().Status, w.machine == nil
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sh := &worldShell{w: w, status: st, p: &p, cancel: cancel}
	var s pass.Scratch
	p.requeue = pass.Run(ctx, &cfg, sh, w.now, &s, sh).Requeue
	return p
}

// worldShell is the world as the pass.Shell of one pass, and its
// Observer. Once a decision broke a promise, nothing more reaches the
// world.
type worldShell struct {
	w      *world
	status lifecycle.Status // read back from the machine at the start of the pass
	p      *passResult
	cancel context.CancelFunc
}

// errBroken ends a pass once a decision broke a promise.
var errBroken = errors.New("a promise was broken")

func (s *worldShell) Observe(_ context.Context, _ time.Time, in *lifecycle.Input) error {
	if s.p.err != nil {
		return errBroken
	}
	*in = s.w.observe()
	in.Status = s.status
	return nil
}

// Decided records and checks every decision, and counts the changes to
// Failed.
func (s *worldShell) Decided(in *lifecycle.Input, d *lifecycle.Decision) {
	if s.p.err != nil {
		return
	}
	s.p.decisions = append(s.p.decisions, *d)
	if err := lifecycletest.Check(&s.w.cfg, in, d); err != nil {
		s.p.err = fmt.Errorf("%w\n%s", err, d.String())
		s.cancel()
		return
	}
	if d.Status.Phase == phase.Failed && in.Status.Phase != phase.Failed {
		s.w.failed++
	}
}

func (s *worldShell) Save(_ context.Context, st *lifecycle.Status) lifecycle.Write {
	if s.p.err != nil {
		return lifecycle.WriteFailed
	}
	if s.w.machine == nil {
		return lifecycle.WriteNotFound
	}
	ApplyStatus(*st, s.w.machine, s.w.now)
	return lifecycle.WriteOK
}

func (s *worldShell) Apply(_ context.Context, e *lifecycle.Effect) (lifecycle.Write, string) {
	if s.p.err != nil {
		return lifecycle.WriteFailed, errBroken.Error()
	}
	if wr, err := s.w.apply(*e); wr != lifecycle.WriteOK {
		return wr, err.Error()
	}
	return lifecycle.WriteOK, ""
}

func (s *worldShell) Invoke(ctx context.Context, c *driverapi.Call, res *driverapi.Result) {
	if s.p.err != nil {
		*res = driverapi.ResultOf(c.Method, errBroken)
		return
	}
	s.w.calls++
	*res = driverapi.Invoke(ctx, s.w, *c, driverapi.Class{})
}

// Node returns the node a CreateMachine answer names, if it is the
// world's.
func (s *worldShell) Node(_ context.Context, name string) lifecycle.Node {
	if n := s.w.node; n != nil && n.Name == name {
		return NodeFrom(n)
	}
	return lifecycle.Node{}
}

// sameStatus reports whether a status read back is the one saved: equal,
// but for empty slices and maps, which read back as nil.
func sameStatus(saved, read lifecycle.Status) bool {
	for _, st := range []*lifecycle.Status{&saved, &read} {
		if len(st.Addresses) == 0 {
			st.Addresses = nil
		}
		if len(st.Conditions) == 0 {
			st.Conditions = nil
		}
		if len(st.Metadata) == 0 {
			st.Metadata = nil
		}
	}
	return reflect.DeepEqual(saved, read)
}

// panicT fails by panicking, for helpers that take a require.TestingT
// outside a test's goroutine.
type panicT struct{}

func (panicT) Errorf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (panicT) FailNow()                          { panic("FailNow") }

// adoption is the run of one case through its passes.
type adoption struct {
	c      adoptionCase
	w      *world
	passes []passResult
	// reached is the pass (1-based) at whose end the machine first was
	// where expectedEnd says; 0 when it never was.
	reached int
	// err is the first promise broken, or a failure of the adapter: a
	// status that StatusFrom refused or that did not read back as saved.
	err error
	// endErr says how the machine did not end where expectedEnd says, or
	// took a wrong turn on the way (a timeout fired, an instance was
	// created for a machine that had one).
	endErr error
}

// maxPasses bounds the passes of one adoption.
const maxPasses = 12

// holdPasses are the passes run after the end is reached, which must keep
// the machine there.
const holdPasses = 2

// drive adopts one case in its cooperative world and runs passes until the
// machine ends where expectedEnd says, and holdPasses more (or maxPasses in
// all), advancing the clock by each pass's requeue. It stops at the first
// promise broken.
func drive(c adoptionCase) (a adoption) {
	a.c = c
	m, err := c.machine()
	if err != nil {
		a.err = fmt.Errorf("building the machine: %w", err)
		return a
	}
	a.w = newWorld(c, m)
	want := c.expectedEnd()
	for n := 1; n <= maxPasses; n++ {
		p := a.w.pass()
		a.passes = append(a.passes, p)
		if p.err != nil {
			a.err = fmt.Errorf("pass %d: %w", n, p.err)
			return a
		}
		if err := a.w.at(want, p.last()); err != nil {
			if a.reached > 0 && a.endErr == nil {
				a.endErr = fmt.Errorf("pass %d: left the end reached at pass %d: %w", n, a.reached, err)
			}
		} else if a.reached == 0 {
			a.reached = n
		}
		if a.reached > 0 && n >= a.reached+holdPasses || a.w.machine == nil {
			break
		}
		a.w.now = a.w.now.Add(p.requeue)
	}
	switch {
	case a.endErr != nil:
	case a.reached == 0:
		a.endErr = fmt.Errorf("not %s after %d passes: %v", want, len(a.passes), a.w.at(want, a.passes[len(a.passes)-1].last()))
	case a.w.failed > 0:
		a.endErr = fmt.Errorf("a timeout fired: the machine was made Failed")
	case c.vmExists() && a.w.creates > 0:
		a.endErr = fmt.Errorf("an instance was created for a machine that had one")
	case a.w.creates > 1:
		a.endErr = fmt.Errorf("%d instances were created", a.w.creates)
	case want == endFailed && a.w.creates > 0:
		a.endErr = fmt.Errorf("an instance was created for a Failed machine")
	case want == endLeft && (a.w.calls > 0 || a.w.node != nil && a.w.node.Spec.Unschedulable):
		a.endErr = fmt.Errorf("a machine whose deletion has not arrived was acted on: %d driver calls", a.w.calls)
	}
	return a
}

// at reports why the world, after a pass ending with d, is not at end e;
// nil when it is.
func (w *world) at(e end, d *lifecycle.Decision) error {
	st := &d.Status
	if e == endGone {
		if w.machine != nil {
			return fmt.Errorf("the machine is %s at stage %s", st.Phase.Label(), st.Stage)
		}
		if w.vm {
			return fmt.Errorf("the machine is gone, its instance is left")
		}
		if w.node != nil && !w.nodeUnproven {
			return fmt.Errorf("the machine is gone, its node is left")
		}
		if w.node != nil && w.node.Spec.Unschedulable {
			return fmt.Errorf("the machine is gone, and cordoned a node it did not prove its own")
		}
		if w.token {
			return fmt.Errorf("the machine is gone, its bootstrap token is left")
		}
		return nil
	}
	if w.machine == nil {
		return fmt.Errorf("the machine was deleted")
	}
	want := map[end]phase.Phase{endRunning: phase.Running, endAvailable: phase.Available, endFailed: phase.Failed,
		endLeft: phase.Terminating}[e]
	switch {
	case st.Phase != want:
		return fmt.Errorf("phase %s, stage %s (rule %s)", st.Phase.Label(), st.Stage, d.Rule)
	case st.Stage != lifecycle.StageNone && e != endLeft:
		return fmt.Errorf("still at stage %s", st.Stage)
	case e == endRunning || e == endAvailable:
		if !w.vm || st.ProviderID != xPID {
			return fmt.Errorf("instance %v, recorded %q", w.vm, st.ProviderID)
		}
		if w.machine.Spec.ProviderID != xPID {
			return fmt.Errorf("spec.providerID %q", w.machine.Spec.ProviderID)
		}
		if e == endRunning && w.machine.Labels[lifecycle.NodeLabel] != xNode {
			return fmt.Errorf("node label %q", w.machine.Labels[lifecycle.NodeLabel])
		}
		if w.token {
			return fmt.Errorf("its bootstrap token is left")
		}
	}
	return nil
}

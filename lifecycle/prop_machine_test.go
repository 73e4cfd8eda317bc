package lifecycle_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
	"github.com/purelifecycle/machine/lifecycle/pass"
	"github.com/purelifecycle/machine/phase"
)

// machineWorld is one machine, its node, its token and a fault-injecting
// provider, driven by a shell that carries decisions out as the caller's
// obligations say, except when the test makes it crash or lose a write.
type machineWorld struct {
	t   *rapid.T
	cfg lifecycle.Config
	now time.Time

	obj   lifecycle.Object
	saved lifecycle.Status // the persisted status
	gone  bool
	token bool

	node       lifecycle.Node // Name "" when no node
	nodeHealth lifecycle.ConditionStatus

	observer lifecycle.Observer
	grant    bool
	prov     *lifecycletest.Provider

	faults bool // faults, crashes and lost writes are drawn
	steps  int
}

func newMachineWorld(t *rapid.T) *machineWorld {
	w := &machineWorld{t: t, cfg: lifecycle.DefaultConfig(), now: t0, prov: lifecycletest.NewProvider(),
		faults: true, nodeHealth: lifecycle.ConditionTrue}
	w.cfg.CreationTimeout = 20 * time.Minute
	w.obj = lifecycle.Object{Name: machineName, UID: machineUID, Owner: "ms", CreationTime: t0}
	w.prov.Now = func() time.Time { return w.now }
	w.prov.Fault = func(m driverapi.Method) lifecycletest.Fault {
		if !w.faults {
			return lifecycletest.Fault{}
		}
		switch rapid.IntRange(0, 9).Draw(t, "fault "+m.String()) {
		case 0:
			return lifecycletest.Fault{Code: rapid.SampledFrom([]driverapi.Code{driverapi.Unavailable,
				driverapi.ResourceExhausted, driverapi.Internal, driverapi.DeadlineExceeded}).Draw(t, "code"),
				After: rapid.Bool().Draw(t, "after")}
		case 1:
			return lifecycletest.Fault{Undecodable: true}
		}
		return lifecycletest.Fault{}
	}
	w.prov.Drop = func(string) bool { return w.faults && rapid.IntRange(0, 3).Draw(t, "drop") == 0 }
	return w
}

// input is what the shell observes now.
func (w *machineWorld) input() lifecycle.Input {
	in := lifecycle.Input{Now: w.now, Object: w.obj, Status: w.saved, TokenExists: w.token,
		Observer: w.observer, Grant: lifecycle.Grant{Fail: w.grant}}
	if w.gone {
		in.Object = lifecycle.Object{}
	}
	if w.node.Found() {
		in.Node = w.node
		in.Node.Conditions = []lifecycle.Condition{{Type: lifecycle.ConditionReady, Status: w.nodeHealth,
			Since: lifecycle.StampOf(t0)}}
	}
	return in
}

// pass runs one reconcile pass with pass.Run over the world (worldShell)
// and checks every decision's promises.
func (w *machineWorld) pass() {
	checked, err := w.cfg.Check()
	if err != nil {
		w.t.Fatalf("%v", err)
	}
	sh := &worldShell{w: w}
	var s pass.Scratch
	pass.Run(context.Background(), &checked, sh, w.now, &s, sh)
}

// worldShell is a machineWorld as a pass.Shell, and the pass's Observer,
// which checks every decision with lifecycletest.Check. With the faults on,
// a status write is lost (a conflict) one time in twenty, and the
// controller dies after an effect one time in fifteen: then nothing more
// reaches the world.
type worldShell struct {
	w       *machineWorld
	crashed bool
}

// errCrashed ends a pass whose controller died.
var errCrashed = errors.New("the controller died")

func (s *worldShell) Observe(_ context.Context, _ time.Time, in *lifecycle.Input) error {
	if s.crashed {
		return errCrashed
	}
	*in = s.w.input()
	return nil
}

func (s *worldShell) Decided(in *lifecycle.Input, d *lifecycle.Decision) {
	w := s.w
	w.steps++
	if err := lifecycletest.Check(&w.cfg, in, d); err != nil {
		w.t.Fatalf("%v\n%s", err, d.String())
	}
}

func (s *worldShell) Save(_ context.Context, st *lifecycle.Status) lifecycle.Write {
	w := s.w
	if s.crashed {
		return lifecycle.WriteFailed
	}
	if w.faults && rapid.IntRange(0, 19).Draw(w.t, "lost status write") == 0 {
		return lifecycle.WriteConflict
	}
	w.saved = *st
	return lifecycle.WriteOK
}

func (s *worldShell) Apply(_ context.Context, e *lifecycle.Effect) (lifecycle.Write, string) {
	if s.crashed {
		return lifecycle.WriteFailed, errCrashed.Error()
	}
	if wr := s.w.apply(*e); wr != lifecycle.WriteOK {
		return wr, "injected"
	}
	s.carriedOut()
	return lifecycle.WriteOK, ""
}

func (s *worldShell) Invoke(ctx context.Context, c *driverapi.Call, res *driverapi.Result) {
	if s.crashed {
		*res = driverapi.ResultOf(c.Method, errCrashed)
		return
	}
	*res = driverapi.Invoke(ctx, s.w.prov, *c, driverapi.Class{})
	s.carriedOut()
}

// carriedOut follows an effect carried out: the controller may die there.
func (s *worldShell) carriedOut() {
	if s.w.faults && rapid.IntRange(0, 14).Draw(s.w.t, "crash") == 0 {
		s.crashed = true
	}
}

// Node returns the machine's node when it has that name.
func (s *worldShell) Node(_ context.Context, name string) lifecycle.Node {
	if in := s.w.input(); !s.crashed && in.Node.Found() && in.Node.Name == name {
		return in.Node
	}
	return lifecycle.Node{}
}

// apply carries out one effect that is not a driver call.
func (w *machineWorld) apply(e lifecycle.Effect) lifecycle.Write {
	if w.faults && e.Kind != lifecycle.KindEvent && rapid.IntRange(0, 19).Draw(w.t, "write fails "+e.Kind.String()) == 0 {
		return lifecycle.WriteFailed
	}
	if applied, gone := lifecycletest.ApplyToObject(&w.obj, &e); applied {
		w.gone = w.gone || gone
		return lifecycle.WriteOK
	}
	switch e.Kind {
	case lifecycle.KindRemoveTaint:
		w.node.Taints &^= lifecycle.InstanceNotReady
	case lifecycle.KindLabelNode:
		w.node.MachineName = e.Value
	case lifecycle.KindEnsureBootstrapToken:
		w.token = true
	case lifecycle.KindDeleteBootstrapToken:
		w.token = false
	case lifecycle.KindDeleteNode:
		if !w.node.Found() || w.node.Name != e.Node {
			return lifecycle.WriteNotFound
		}
		w.node = lifecycle.Node{}
	}
	return lifecycle.WriteOK
}

// tick advances time and lets the provider's instance register its node.
func (w *machineWorld) tick(d time.Duration) {
	w.now = w.now.Add(d)
	if w.node.Found() {
		return
	}
	for _, pid := range w.prov.OwnedBy(machineUID) {
		i := w.prov.At(w.prov.Lookup(pid))
		if i.Initialized && w.now.Sub(i.Created) > 90*time.Second {
			w.node = lifecycle.Node{Name: i.NodeName, ProviderID: pid, Taints: lifecycle.InstanceNotReady}
			return
		}
	}
}

// invariants are the promises across steps: one instance per incarnation,
// and none left once the machine is gone.
func (w *machineWorld) invariants() {
	owned := w.prov.OwnedBy(machineUID)
	if len(owned) > 1 {
		w.t.Fatalf("double create: %v", owned)
	}
	if w.gone && len(owned) > 0 {
		w.t.Fatalf("the machine is gone, its instance %v is left", owned)
	}
	if !w.saved.Phase.Valid() {
		w.t.Fatalf("invalid phase %v", w.saved.Phase)
	}
}

// endState reports whether the machine reached one of its end states: gone,
// Failed, or Running with its update applied (or refused) and its metadata
// in sync.
func (w *machineWorld) endState() bool {
	st := &w.saved
	m := lifecycle.MemberOf(&w.cfg, &lifecycle.Input{Object: w.obj, Status: *st})
	switch {
	case w.gone:
		return true
	case !w.obj.DeletionTime.IsZero():
		return false
	case st.Phase == phase.Failed:
		return true
	case st.Phase == phase.Running:
		return (!m.UpdatePending() || st.Flags.Has(lifecycle.FlagNeedsReplacement)) && m.MetadataInSync()
	}
	return false
}

// Random sequences of driver faults, node events, taints, time, deletion,
// hot-update generations and metadata changes, observer outages, lost status
// writes and crashes after any effect: every decision keeps the safety
// promises of lifecycletest.Check, no instance is created twice or left
// behind, and once the faults stop the machine reaches an end state.
func TestPropertyMachineLifecycle(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := newMachineWorld(t)
		t.Repeat(map[string]func(*rapid.T){
			"reconcile":       func(t *rapid.T) { w.pass() },
			"reconcile again": func(t *rapid.T) { w.pass() },
			"time passes": func(t *rapid.T) {
				w.tick(time.Duration(rapid.IntRange(1, 1200).Draw(t, "seconds")) * time.Second)
			},
			"node health": func(t *rapid.T) {
				w.nodeHealth = rapid.SampledFrom([]lifecycle.ConditionStatus{lifecycle.ConditionTrue,
					lifecycle.ConditionFalse, lifecycle.ConditionUnknown}).Draw(t, "ready")
			},
			"node gone": func(t *rapid.T) {
				if rapid.IntRange(0, 3).Draw(t, "really") == 0 {
					w.node = lifecycle.Node{}
				}
			},
			"critical taint": func(t *rapid.T) { w.node.Taints ^= lifecycle.CriticalComponentsNotReady },
			"instance vanishes": func(t *rapid.T) {
				// Deleted out of band (by hand, or a spot instance
				// reclaimed): the provider answers NotFound from now on.
				if pids := w.prov.OwnedBy(w.obj.UID); len(pids) > 0 && rapid.IntRange(0, 3).Draw(t, "really") == 0 {
					pid := rapid.SampledFrom(pids).Draw(t, "instance")
					w.prov.Remove(w.prov.Lookup(pid))
					if w.node.ProviderID == pid {
						w.node = lifecycle.Node{} // its kubelet went with it
					}
				}
			},
			"delete": func(t *rapid.T) {
				if w.obj.DeletionTime.IsZero() {
					w.obj.DeletionTime = w.now
					// The API server removes an object without finalizers.
					w.gone = !w.obj.Finalizer
				}
			},
			"force deletion": func(t *rapid.T) { w.obj.ForceDeletion = true },
			"hot update":     func(t *rapid.T) { w.obj.UpdateGeneration++ },
			"metadata": func(t *rapid.T) {
				w.obj.Metadata = rapid.MapOfN(rapid.SampledFrom([]string{"team", "pool"}),
					rapid.SampledFrom([]string{"a", "b"}), 0, 2).Draw(t, "metadata")
			},
			"observer": func(t *rapid.T) {
				degraded := rapid.Bool().Draw(t, "degraded")
				if degraded != w.observer.Degraded {
					w.observer = lifecycle.Observer{Degraded: degraded, Since: w.now}
				}
			},
			"grant": func(t *rapid.T) { w.grant = rapid.Bool().Draw(t, "grant") },
			"":      func(t *rapid.T) { w.invariants() },
		})
		// Every fault stops: the machine reaches an end state.
		w.faults, w.grant = false, true
		w.nodeHealth = lifecycle.ConditionTrue
		if w.observer.Degraded {
			w.observer = lifecycle.Observer{Since: w.now}
		}
		for i := 0; i < 200 && !w.endState(); i++ {
			w.pass()
			w.invariants()
			w.tick(time.Minute)
		}
		if !w.endState() {
			t.Fatalf("no end state after the faults stopped: phase %s stage %s flags %b rule %v, instances %v, node %+v",
				w.saved.Phase.Label(), w.saved.Stage, w.saved.Flags, lifecycle.Step(w.cfg, w.input()).Rule,
				w.prov, w.node)
		}
	})
}

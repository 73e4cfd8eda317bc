package lifecycle_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
	"github.com/purelifecycle/machine/phase"
)

// An exhaustive bounded model check of one machine (issue 5, part 2). The
// state of the machine, its object, node, token, observer, grant and the
// provider's instances is explored breadth first from a new machine; each
// transition is a decision with every outcome of its effects (driver codes
// by class, failed writes, a lost status write, a crash before the outcome
// is fed back), or an event of the world (time passing a deadline, the node
// registering, turning unhealthy or going, deletion, a spec change, the
// observer degrading or recovering, the limiter's grant). States are
// abstracted: times become "before or after each deadline", counters
// "zero, one, more". Every transition must keep the promises of DESIGN
// section 6 (lifecycletest.Check, one instance per incarnation, none left
// when gone), and from every reachable state a fault-free path must reach
// an end state: gone, Running in sync, Available, or Failed awaiting
// replacement.

// mInstance is the provider's view of one instance.
type mInstance struct {
	exists, initialized bool
	generation          int64
	meta                string // "" or the one metadata value "team=a"
	owner               string
	node                string
}

// mState is a concrete state of the model.
type mState struct {
	now      time.Time
	obj      lifecycle.Object
	st       lifecycle.Status
	gone     bool
	token    bool
	inst     mInstance // this incarnation's instance
	oldInst  bool      // an instance of an older incarnation of the name
	node     int       // 0 none, 1 own, 2 foreign (another instance, same name as recorded)
	healthy  bool
	taint    bool
	degraded bool
	obsSince time.Time
	grant    bool
	outcome  *lifecycle.Outcome // fed to the next step; nil between passes
	steps    int                // steps in the current pass
}

var mCfg = func() lifecycle.Config {
	c := lifecycle.DefaultConfig()
	c.CreationTimeout = 20 * time.Minute
	c.HealthTimeout = 10 * time.Minute
	c.DrainTimeout = 30 * time.Minute
	return c
}()

const mPID = "test:///vm-1"

func (s *mState) input() lifecycle.Input {
	in := lifecycle.Input{Now: s.now, Object: s.obj, Status: s.st, TokenExists: s.token,
		Grant: lifecycle.Grant{Fail: s.grant}, Outcome: s.outcome}
	if s.gone {
		in.Object = lifecycle.Object{}
	}
	if s.degraded {
		in.Observer = lifecycle.Observer{Degraded: true, Since: s.obsSince}
	} else {
		in.Observer = lifecycle.Observer{Since: s.obsSince}
	}
	ready := lifecycle.ConditionFalse
	if s.healthy {
		ready = lifecycle.ConditionTrue
	}
	switch s.node {
	case 1:
		in.Node = lifecycle.Node{Name: s.inst.node, ProviderID: mPID, MachineName: machineName,
			Conditions: []lifecycle.Condition{{Type: "Ready", Status: ready, Since: lifecycle.StampOf(t0)}}}
		if s.taint {
			in.Node.Taints = lifecycle.InstanceNotReady
		}
	case 2:
		in.Node = lifecycle.Node{Name: s.inst.node, ProviderID: "test:///vm-other",
			Conditions: []lifecycle.Condition{{Type: "Ready", Status: lifecycle.ConditionTrue}}}
	}
	return in
}

// key abstracts a state: what decisions can tell apart, with times turned
// into "past this deadline or not".
func (s *mState) key() string {
	st, o := &s.st, &s.obj
	n := lifecycle.StampOf(s.now)
	after := func(since lifecycle.Stamp, d time.Duration) bool { return since != 0 && n.Sub(since) > d }
	obs := lifecycle.StampOf(s.obsSince)
	base := func(x lifecycle.Stamp) lifecycle.Stamp {
		if obs > x {
			return obs
		}
		return x
	}
	nz := func(x uint8) bool { return x > 0 }
	var out string
	if s.outcome != nil {
		o := s.outcome
		class := "ok"
		switch {
		case o.Result.Undecodable:
			class = "undecodable"
		case o.Result.Code != driverapi.OK:
			class = o.Result.Code.String()
		}
		out = fmt.Sprintf("%s/%v/%v/%s/%s/%v", o.OpID.Rule(), o.Ran == o.OpID.Effects(), o.Stopped, o.Result.Method,
			class, o.Persist)
		if o.OpID.Seq() != st.Seq {
			out += "/stale"
		}
	}
	in := s.inst
	return fmt.Sprintf("p%d s%d f%x fl%v%v%v%v%v a%d pid%v node%v own%v gen%v%v ms%v%v%v create%v|"+
		"fin%v del%v force%v lab%v spid%v pri%v ug%d meta%v gone%v tok%v|inst%v%v%v%v%v old%v node%d h%v t%v deg%v grant%v|"+
		"creat%v hlth%v drain%v retry%v obs%v steps%v|%s",
		st.Phase, st.Stage, st.Flags, nz(st.Failures.Create), nz(st.Failures.Health), nz(st.Failures.Delete),
		nz(st.Failures.Update), nz(st.Failures.Metadata), st.Attempt, st.ProviderID != "", st.NodeName != "",
		st.OwnerUID == o.UID, st.AppliedGeneration == o.UpdateGeneration, st.RejectedGeneration == o.UpdateGeneration,
		len(st.Metadata) > 0, st.MetadataObserved != 0, after(st.MetadataObserved, 10*time.Minute-time.Second),
		st.LastOp.Type == lastop.TypeCreate && st.LastOp.State != lastop.StateSuccessful,
		o.Finalizer, !o.DeletionTime.IsZero(), o.ForceDeletion, o.NodeLabel != "", o.ProviderID != "", o.Priority != "",
		o.UpdateGeneration, len(o.Metadata) > 0, s.gone, s.token,
		in.exists, in.initialized, in.generation == o.UpdateGeneration, in.meta == metaString(o.Metadata), in.owner == o.UID,
		s.oldInst, s.node, s.healthy, s.taint, s.degraded, s.grant,
		n.Sub(base(lifecycle.StampOf(o.CreationTime))) > mCfg.CreationTimeout,
		after(base(st.PhaseSince), mCfg.HealthTimeout),
		!o.DeletionTime.IsZero() && n.Sub(lifecycle.StampOf(o.DeletionTime)) > mCfg.DrainTimeout,
		st.RetryAfter > n, obs != 0, s.steps > 0, out)
}

// results gives the driver results a call may get: the fault-free answer
// first, then the faults of its method. Each comes with the instance after
// the call.
func (s *mState) results(c driverapi.Call) []mResult {
	inst := s.inst
	ok := func(r driverapi.Result, i mInstance) mResult { return mResult{r, i, true} }
	errR := func(code driverapi.Code) driverapi.Result {
		return driverapi.Result{Method: c.Method, Code: code, Message: "x", Text: "x"}
	}
	undecodable := driverapi.Result{Method: c.Method, Code: driverapi.Unknown, Undecodable: true, Message: "x", Text: "x"}
	found := func(i mInstance) driverapi.Result {
		return driverapi.Result{Method: c.Method, ProviderID: mPID, NodeName: i.node, OwnerUID: i.owner,
			Generation: i.generation, Metadata: metaMap(i.meta)}
	}
	var out []mResult
	switch c.Method {
	case driverapi.MethodGetStatus:
		switch {
		case inst.exists && (c.Machine.ProviderID == mPID || c.Machine.ProviderID == ""):
			r := found(inst)
			if !inst.initialized {
				r.Code, r.Message, r.Text = driverapi.Uninitialized, "x", "x"
			}
			out = append(out, ok(r, inst))
		case s.oldInst && c.Machine.ProviderID == "":
			r := found(mInstance{owner: "uid-0", node: "node-old"})
			r.ProviderID = "test:///vm-old"
			out = append(out, ok(r, inst))
		default:
			out = append(out, ok(errR(driverapi.NotFound), inst))
		}
		out = append(out, mResult{errR(driverapi.Unavailable), inst, false}, mResult{undecodable, inst, false})
	case driverapi.MethodCreate:
		made := inst
		if !made.exists {
			made = mInstance{exists: true, generation: c.Generation, meta: metaString(c.Metadata), owner: c.Machine.UID,
				node: "node-1"}
		}
		r := driverapi.Result{Method: c.Method, ProviderID: mPID, NodeName: "node-1"}
		out = append(out, ok(r, made), mResult{errR(driverapi.Unavailable), made, false},
			mResult{errR(driverapi.ResourceExhausted), inst, false}, mResult{errR(driverapi.Internal), inst, false},
			mResult{undecodable, inst, false})
	case driverapi.MethodInitialize:
		if !inst.exists {
			return []mResult{ok(errR(driverapi.NotFound), inst)}
		}
		done := inst
		done.initialized = true
		out = append(out, ok(driverapi.Result{Method: c.Method}, done), mResult{errR(driverapi.Unimplemented), done, false},
			mResult{errR(driverapi.Internal), inst, false}, mResult{undecodable, inst, false})
	case driverapi.MethodDelete:
		if c.Machine.ProviderID == "test:///vm-old" || c.Machine.UID == "uid-0" {
			out = append(out, mResult{driverapi.Result{Method: c.Method}, inst, true})
			break
		}
		gone := mInstance{}
		if inst.exists {
			out = append(out, ok(driverapi.Result{Method: c.Method}, gone))
		} else {
			out = append(out, ok(errR(driverapi.NotFound), gone))
		}
		out = append(out, mResult{errR(driverapi.Unavailable), inst, false}, mResult{errR(driverapi.Internal), inst, false})
	case driverapi.MethodUpdate:
		up := inst
		up.generation = c.Generation
		out = append(out, ok(driverapi.Result{Method: c.Method, Generation: c.Generation}, up),
			mResult{errR(driverapi.FailedPrecondition), inst, false}, mResult{errR(driverapi.Unavailable), inst, false})
	case driverapi.MethodUpdateMetadata:
		set := inst
		set.meta = metaString(c.Metadata)
		if len(c.Remove) > 0 {
			set.meta = ""
		}
		set.owner = c.Machine.UID
		out = append(out, ok(driverapi.Result{Method: c.Method}, set),
			mResult{driverapi.Result{Method: c.Method}, inst, false}, // OK, every change dropped
			mResult{errR(driverapi.Unavailable), inst, false})
	default:
		panic("unexpected call " + c.Method.String())
	}
	return out
}

type mResult struct {
	r         driverapi.Result
	inst      mInstance
	faultFree bool
}

func metaMap(m string) map[string]string {
	if m == "" {
		return nil
	}
	return map[string]string{"team": "a"}
}

func metaString(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	return "team=a"
}

// applyWrites carries out the decision's effects that are not a driver
// call on the state, up to (not including) index stop.
func (s *mState) applyWrites(d *lifecycle.Decision, stop int) {
	for i, e := range d.Effects.Slice() {
		if i >= stop {
			return
		}
		switch e.Kind {
		case lifecycle.KindEnsureFinalizer:
			s.obj.Finalizer = true
		case lifecycle.KindRemoveFinalizer:
			s.obj.Finalizer = false
			if !s.obj.DeletionTime.IsZero() {
				s.gone = true
			}
		case lifecycle.KindEnsureNodeLabel:
			s.obj.NodeLabel = e.Value
		case lifecycle.KindEnsurePriority:
			s.obj.Priority = e.Value
		case lifecycle.KindEnsureProviderID:
			s.obj.ProviderID = e.Value
		case lifecycle.KindRemoveTaint:
			s.taint = false
		case lifecycle.KindEnsureBootstrapToken:
			s.token = true
		case lifecycle.KindDeleteBootstrapToken:
			s.token = false
		case lifecycle.KindDeleteNode:
			if s.node == 1 {
				s.node = 0
			}
		}
	}
}

// transition is one edge of the model.
type transition struct {
	next      mState
	faultFree bool
	label     string
}

// steps returns the successors of a step of the lifecycle, after checking
// the decision's promises.
func (s *mState) stepSuccessors(t *testing.T) ([]transition, lifecycle.Decision) {
	in := s.input()
	d := lifecycle.Step(mCfg, in)
	if err := lifecycletest.Check(&mCfg, &in, &d); err != nil {
		t.Fatalf("%v\nstate %s\n%s", err, s.key(), d.String())
	}
	base := *s
	base.outcome = nil
	base.steps++
	if d.Rule == lifecycle.RuleDeleteDone || d.Rule == lifecycle.RuleNoMachine {
		base.steps = 0
		return []transition{{base, true, "gone"}}, d
	}
	var out []transition
	saved := base
	if d.Changed {
		saved.st = d.Status
		// A lost status write: nothing is carried out, Step hears of it.
		lost := base
		lost.outcome = &lifecycle.Outcome{OpID: d.OpID, Persist: lifecycle.WriteConflict}
		out = append(out, transition{lost, false, "persist-lost"})
	}
	if d.Done() || base.steps >= lifecycle.MaxStepsPerPass {
		saved.steps = 0
		saved.now = saved.now.Add(d.Requeue)
		out = append(out, transition{saved, true, "requeue"})
		return out, d
	}
	n := d.Effects.Len()
	writes := n
	if d.HasCall() {
		writes = n - 1
	}
	// A write fails at each index that is not an event.
	for i, e := range d.Effects.Slice()[:writes] {
		if e.Kind == lifecycle.KindEvent {
			continue
		}
		f := saved
		f.applyWrites(&d, i)
		stopped := lifecycle.WriteFailed
		if e.Kind == lifecycle.KindDeleteNode {
			stopped = lifecycle.WriteNotFound
			f.node = 0
		}
		f.outcome = &lifecycle.Outcome{OpID: d.OpID, Ran: i, Stopped: stopped, Error: "x"}
		out = append(out, transition{f, false, "write-fails"})
	}
	done := saved
	done.applyWrites(&d, writes)
	if !d.HasCall() {
		ok := done
		ok.outcome = &lifecycle.Outcome{OpID: d.OpID, Ran: n}
		crash := done
		crash.steps, crash.now = 0, crash.now.Add(10*time.Second)
		return append(out, transition{ok, true, "effects"}, transition{crash, false, "crash"}), d
	}
	for _, r := range done.results(d.Call) {
		next := done
		next.inst = r.inst
		if r.inst.exists && next.node == 0 && !r.inst.exists {
			next.node = 0
		}
		if !r.inst.exists && next.node == 1 {
			next.node = 0 // the instance is gone, its node with it
		}
		if d.Call.Method == driverapi.MethodDelete && d.Call.Machine.ProviderID == "test:///vm-old" {
			next.oldInst = false
		}
		crash := next
		crash.steps, crash.now = 0, crash.now.Add(10*time.Second)
		next.outcome = &lifecycle.Outcome{OpID: d.OpID, Ran: n, Result: r.r}
		out = append(out, transition{next, r.faultFree, "call " + d.Call.Method.String()}, transition{crash, false, "crash"})
	}
	return out, d
}

// events returns the world's events between passes; fair ones (time,
// healing) are fault free.
func (s *mState) events(allowed map[string]bool) []transition {
	var out []transition
	add := func(label string, fair bool, f func(n *mState)) {
		if !allowed[label] && !(fair && allowed["fair"]) {
			return
		}
		n := *s
		f(&n)
		out = append(out, transition{n, fair, label})
	}
	for _, d := range []time.Duration{6 * time.Minute, 11 * time.Minute, 31 * time.Minute} {
		add("time", true, func(n *mState) { n.now = n.now.Add(d) })
	}
	if s.inst.exists && s.inst.initialized && s.node == 0 {
		add("node registers", true, func(n *mState) { n.node, n.healthy, n.taint = 1, true, true })
	}
	if s.node == 1 {
		add("node health", s.healthy == false, func(n *mState) { n.healthy = !n.healthy })
		add("node gone", false, func(n *mState) { n.node = 0 })
	}
	if s.node == 0 && s.st.NodeName != "" {
		add("foreign node of the same name", false, func(n *mState) { n.node = 2 })
	}
	if s.node == 2 {
		add("foreign node goes", true, func(n *mState) { n.node = 0 })
	}
	if s.obj.DeletionTime.IsZero() && !s.gone {
		add("delete", false, func(n *mState) {
			n.obj.DeletionTime = n.now
			n.gone = !n.obj.Finalizer
		})
	}
	if !s.obj.ForceDeletion && !s.obj.DeletionTime.IsZero() {
		add("force deletion", false, func(n *mState) { n.obj.ForceDeletion = true })
	}
	if s.obj.UpdateGeneration == 0 {
		add("hot update", false, func(n *mState) { n.obj.UpdateGeneration = 1 })
	}
	if len(s.obj.Metadata) == 0 {
		add("metadata", false, func(n *mState) { n.obj.Metadata = map[string]string{"team": "a"} })
	}
	add("observer", s.degraded, func(n *mState) { n.degraded, n.obsSince = !n.degraded, n.now })
	add("grant", !s.grant, func(n *mState) { n.grant = !n.grant })
	return out
}

// end reports whether the state is an end state of DESIGN section 6.
func (s *mState) end() bool {
	st := &s.st
	switch {
	case s.gone:
		return true
	case !s.obj.DeletionTime.IsZero():
		return false
	case st.Phase == phase.Failed, st.Phase == phase.Available:
		return true
	case st.Phase == phase.Running:
		m := lifecycle.MemberOf(&mCfg, &s.obj, st)
		return (!m.UpdatePending || st.Flags.Has(lifecycle.FlagNeedsReplacement)) && m.MetadataInSync
	}
	return false
}

func (s *mState) invariants(t *testing.T) {
	if s.inst.exists && s.inst.owner != machineUID && s.inst.owner != "" {
		t.Fatalf("an instance of another owner was made: %+v", s.inst)
	}
	if s.gone && s.inst.exists {
		t.Fatalf("the machine is gone, its instance is left: %s", s.key())
	}
}

// mRun is one bounded exploration: the events the world may produce, and
// where it starts.
type mRun struct {
	name   string
	events []string
	starts func() []mState
}

func mStart(old bool) mState {
	return mState{now: t0.Add(time.Minute), obj: lifecycle.Object{Name: machineName, UID: machineUID, Owner: "ms",
		CreationTime: t0}, oldInst: old, grant: true}
}

// mRunning is a machine Running and in sync, at t0+1h.
func mRunning() mState {
	s := mStart(false)
	s.now = t0.Add(time.Hour)
	s.obj.Finalizer, s.obj.NodeLabel, s.obj.ProviderID, s.obj.Priority = true, "node-1", mPID, "3"
	s.st = lifecycle.Status{Phase: phase.Running, PhaseSince: lifecycle.StampOf(t0.Add(3 * time.Minute)), ProviderID: mPID,
		NodeName: "node-1", OwnerUID: machineUID, MetadataObserved: lifecycle.StampOf(s.now),
		LastOp: lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateSuccessful, Desc: lastop.DescJoined}}
	s.inst = mInstance{exists: true, initialized: true, owner: machineUID, node: "node-1"}
	s.node, s.healthy = 1, true
	return s
}

func TestModelCheck(t *testing.T) {
	if testing.Short() || raceOn {
		t.Skip("exhaustive: run without -short and without the race detector")
	}
	runs := []mRun{
		{"creation, health and the limiter", []string{"fair", "node health", "node gone", "observer", "grant"},
			func() []mState { return []mState{mStart(false), mStart(true)} }},
		{"deletion at any point", []string{"fair", "delete", "force deletion", "node gone", "foreign node of the same name"},
			func() []mState { return []mState{mStart(false), mRunning()} }},
		{"hot update and metadata", []string{"fair", "hot update", "metadata", "node health", "delete"},
			func() []mState { return []mState{mRunning()} }},
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) { modelCheck(t, r) })
	}
}

func modelCheck(t *testing.T, run mRun) {
	allowed := map[string]bool{}
	for _, e := range run.events {
		allowed[e] = true
	}
	type node struct {
		s     mState
		edges []int // fault-free successors, by index
	}
	index := map[string]int{}
	var nodes []node
	var queue []int
	visit := func(s mState) int {
		k := s.key()
		if i, ok := index[k]; ok {
			return i
		}
		s.invariants(t)
		index[k] = len(nodes)
		nodes = append(nodes, node{s: s})
		queue = append(queue, len(nodes)-1)
		return len(nodes) - 1
	}
	for _, s := range run.starts() {
		visit(s)
	}
	transitions := 0
	const limit = 400_000
	for len(queue) > 0 && len(nodes) < limit {
		i := queue[0]
		queue = queue[1:]
		s := nodes[i].s
		succ, _ := s.stepSuccessors(t)
		if s.outcome == nil && s.steps == 0 {
			succ = append(succ, s.events(allowed)...)
		}
		for _, tr := range succ {
			transitions++
			j := visit(tr.next)
			if tr.faultFree {
				nodes[i].edges = append(nodes[i].edges, j)
			}
		}
	}
	if len(nodes) >= limit {
		t.Fatalf("the state space exceeds %d states", limit)
	}
	// Liveness: every state reaches an end state along fault-free edges.
	good := make([]bool, len(nodes))
	for i := range nodes {
		good[i] = nodes[i].s.end()
	}
	for changed := true; changed; {
		changed = false
		for i := range nodes {
			if good[i] {
				continue
			}
			for _, j := range nodes[i].edges {
				if good[j] {
					good[i], changed = true, true
					break
				}
			}
		}
	}
	stuck := 0
	for i := range nodes {
		if !good[i] {
			if stuck < 3 {
				d := lifecycle.Step(mCfg, nodes[i].s.input())
				t.Errorf("no fault-free path to an end state from %s\n%s", nodes[i].s.key(), d.String())
			}
			stuck++
		}
	}
	t.Logf("%s: %d states, %d transitions explored, %d without a way out", run.name, len(nodes), transitions, stuck)
}

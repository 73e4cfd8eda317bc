package lifecycletest

import (
	"fmt"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// The bounded world of [Explore]: one machine "machine-1" (UID "uid-1",
// owner "ms", created at Epoch), its object, node, bootstrap token,
// observer, limiter grant and the provider's instances. This file holds the
// concrete states, their abstraction and their successors; explore.go holds
// the search.

// The identity of the explored machine and of its instance.
const (
	wName = "machine-1"
	wUID  = "uid-1"
	wPID  = "test:///vm-1"
)

// wCfg is the configuration every exploration decides with: MCM's defaults
// with a 30-minute drain timeout, so that every deadline is within the
// world's time steps (6, 11 and 31 minutes).
var wCfg = func() lifecycle.Config {
	c := lifecycle.DefaultConfig()
	c.CreationTimeout = 20 * time.Minute
	c.HealthTimeout = 10 * time.Minute
	c.DrainTimeout = 30 * time.Minute
	return c
}()

// wInstance is the provider's view of one instance.
type wInstance struct {
	exists, initialized bool
	generation          int64
	meta                string // "" or the one metadata value "team=a"
	owner               string
	node                string
}

// wState is a concrete state of the world.
type wState struct {
	now      time.Time
	obj      lifecycle.Object
	st       lifecycle.Status
	gone     bool
	token    bool
	inst     wInstance // this incarnation's instance
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

// input is what the shell would pass to Step in this state.
func (s *wState) input() lifecycle.Input {
	in := lifecycle.Input{Now: s.now, Object: s.obj, Status: s.st, TokenExists: s.token,
		Grant: lifecycle.Grant{Fail: s.grant}, Outcome: s.outcome}
	if s.gone {
		in.Object = lifecycle.Object{}
	}
	in.Observer = lifecycle.Observer{Degraded: s.degraded, Since: s.obsSince}
	ready := lifecycle.ConditionFalse
	if s.healthy {
		ready = lifecycle.ConditionTrue
	}
	switch s.node {
	case 1:
		in.Node = lifecycle.Node{Name: s.inst.node, ProviderID: wPID, MachineName: wName,
			Conditions: []lifecycle.Condition{{Type: "Ready", Status: ready, Since: lifecycle.StampOf(Epoch)}}}
		if s.taint {
			in.Node.Taints = lifecycle.InstanceNotReady
		}
	case 2:
		in.Node = lifecycle.Node{Name: s.inst.node, ProviderID: "test:///vm-other",
			Conditions: []lifecycle.Condition{{Type: "Ready", Status: lifecycle.ConditionTrue}}}
	}
	return in
}

// wKey is the abstraction of a state: what decisions can tell apart, with
// times turned into "past this deadline or not" and counters into "zero or
// more". Two states with the same key are explored once. Its fields are
// ordered widest first so that it has no padding and hashes as one block.
type wKey struct {
	updateGeneration int64 // the object's desired generation
	attempt          uint32
	flags            lifecycle.Flags
	phase            phase.Phase
	stage            lifecycle.Stage
	node             uint8 // 0 none, 1 own, 2 foreign

	failCreate, failHealth, failDelete, failUpdate, failMetadata bool
	providerID, nodeName, ownerIsUID, applied, rejected          bool
	metadata, observed, observedStale, creating                  bool

	finalizer, deleting, force, nodeLabel, specPID, priority, desiredMeta, gone, token bool

	instExists, instInitialized, instAtGeneration, instMetaDesired, instOwned bool
	oldInst, healthy, taint, degraded, grant                                  bool

	pastCreation, pastHealth, pastDrain, retryWait, observerSince, midPass bool

	out wOutcomeKey
}

// wOutcomeKey abstracts the outcome fed to the next step.
type wOutcomeKey struct {
	rule    lifecycle.Rule
	class   int16 // -2 none, -1 undecodable, else the code
	present bool
	allRan  bool
	stopped lifecycle.Write
	method  driverapi.Method
	persist lifecycle.Write
	stale   bool
}

func (s *wState) key() wKey {
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
	in := &s.inst
	k := wKey{
		updateGeneration: o.UpdateGeneration, attempt: st.Attempt, flags: st.Flags, phase: st.Phase, stage: st.Stage,
		node:       uint8(s.node),
		failCreate: st.Failures.Create > 0, failHealth: st.Failures.Health > 0, failDelete: st.Failures.Delete > 0,
		failUpdate: st.Failures.Update > 0, failMetadata: st.Failures.Metadata > 0,
		providerID: st.ProviderID != "", nodeName: st.NodeName != "", ownerIsUID: st.OwnerUID == o.UID,
		applied: st.AppliedGeneration == o.UpdateGeneration, rejected: st.RejectedGeneration == o.UpdateGeneration,
		metadata: len(st.Metadata) > 0, observed: st.MetadataObserved != 0,
		observedStale: after(st.MetadataObserved, 10*time.Minute-time.Second),
		creating:      st.LastOp.Type == lastop.TypeCreate && st.LastOp.State != lastop.StateSuccessful,
		finalizer:     o.Finalizer, deleting: !o.DeletionTime.IsZero(), force: o.ForceDeletion, nodeLabel: o.NodeLabel != "",
		specPID: o.ProviderID != "", priority: o.Priority != "", desiredMeta: len(o.Metadata) > 0, gone: s.gone,
		token: s.token, instExists: in.exists, instInitialized: in.initialized,
		instAtGeneration: in.generation == o.UpdateGeneration, instMetaDesired: in.meta == metaString(o.Metadata),
		instOwned: in.owner == o.UID, oldInst: s.oldInst, healthy: s.healthy, taint: s.taint, degraded: s.degraded,
		grant:        s.grant,
		pastCreation: n.Sub(base(lifecycle.StampOf(o.CreationTime))) > wCfg.CreationTimeout,
		pastHealth:   after(base(st.PhaseSince), wCfg.HealthTimeout),
		pastDrain:    !o.DeletionTime.IsZero() && n.Sub(lifecycle.StampOf(o.DeletionTime)) > wCfg.DrainTimeout,
		retryWait:    st.RetryAfter > n, observerSince: obs != 0, midPass: s.steps > 0,
	}
	k.out.class = -2
	if oc := s.outcome; oc != nil {
		k.out = wOutcomeKey{rule: oc.OpID.Rule(), class: int16(oc.Result.Code), present: true,
			allRan: oc.Ran == oc.OpID.Effects(), stopped: oc.Stopped, method: oc.Result.Method, persist: oc.Persist,
			stale: oc.OpID.Seq() != st.Seq}
		if oc.Result.Undecodable {
			k.out.class = -1
		}
	}
	return k
}

// String shows a key for messages.
func (k wKey) String() string {
	type plain wKey
	return fmt.Sprintf("%+v", plain(k))
}

// wResult is a driver result a call may get, with the instance after the
// call.
type wResult struct {
	r         driverapi.Result
	inst      wInstance
	faultFree bool
}

// results gives the driver results a call may get: the fault-free answer
// first, then the faults of its method.
func (s *wState) results(c driverapi.Call) []wResult {
	inst := s.inst
	ok := func(r driverapi.Result, i wInstance) wResult { return wResult{r, i, true} }
	errR := func(code driverapi.Code) driverapi.Result {
		return driverapi.Result{Method: c.Method, Code: code, Message: "x", Text: "x"}
	}
	undecodable := driverapi.Result{Method: c.Method, Code: driverapi.Unknown, Undecodable: true, Message: "x", Text: "x"}
	found := func(i wInstance) driverapi.Result {
		return driverapi.Result{Method: c.Method, ProviderID: wPID, NodeName: i.node, OwnerUID: i.owner,
			Generation: i.generation, Metadata: metaMap(i.meta)}
	}
	var out []wResult
	switch c.Method {
	case driverapi.MethodGetStatus:
		switch {
		case inst.exists && (c.Machine.ProviderID == wPID || c.Machine.ProviderID == ""):
			r := found(inst)
			if !inst.initialized {
				r.Code, r.Message, r.Text = driverapi.Uninitialized, "x", "x"
			}
			out = append(out, ok(r, inst))
		case s.oldInst && c.Machine.ProviderID == "":
			r := found(wInstance{owner: "uid-0", node: "node-old"})
			r.ProviderID = "test:///vm-old"
			out = append(out, ok(r, inst))
		default:
			out = append(out, ok(errR(driverapi.NotFound), inst))
		}
		out = append(out, wResult{errR(driverapi.Unavailable), inst, false}, wResult{undecodable, inst, false})
	case driverapi.MethodCreate:
		made := inst
		if !made.exists {
			made = wInstance{exists: true, generation: c.Generation, meta: metaString(c.Metadata), owner: c.Machine.UID,
				node: "node-1"}
		}
		r := driverapi.Result{Method: c.Method, ProviderID: wPID, NodeName: "node-1"}
		out = append(out, ok(r, made), wResult{errR(driverapi.Unavailable), made, false},
			wResult{errR(driverapi.ResourceExhausted), inst, false}, wResult{errR(driverapi.Internal), inst, false},
			wResult{undecodable, inst, false})
	case driverapi.MethodInitialize:
		if !inst.exists {
			return []wResult{ok(errR(driverapi.NotFound), inst)}
		}
		done := inst
		done.initialized = true
		out = append(out, ok(driverapi.Result{Method: c.Method}, done), wResult{errR(driverapi.Unimplemented), done, false},
			wResult{errR(driverapi.Internal), inst, false}, wResult{undecodable, inst, false})
	case driverapi.MethodDelete:
		if c.Machine.ProviderID == "test:///vm-old" || c.Machine.UID == "uid-0" {
			out = append(out, wResult{driverapi.Result{Method: c.Method}, inst, true})
			break
		}
		gone := wInstance{}
		if inst.exists {
			out = append(out, ok(driverapi.Result{Method: c.Method}, gone))
		} else {
			out = append(out, ok(errR(driverapi.NotFound), gone))
		}
		out = append(out, wResult{errR(driverapi.Unavailable), inst, false}, wResult{errR(driverapi.Internal), inst, false})
	case driverapi.MethodUpdate:
		up := inst
		up.generation = c.Generation
		out = append(out, ok(driverapi.Result{Method: c.Method, Generation: c.Generation}, up),
			wResult{errR(driverapi.FailedPrecondition), inst, false}, wResult{errR(driverapi.Unavailable), inst, false})
	case driverapi.MethodUpdateMetadata:
		set := inst
		set.meta = metaString(c.Metadata)
		if len(c.Remove) > 0 {
			set.meta = ""
		}
		set.owner = c.Machine.UID
		out = append(out, ok(driverapi.Result{Method: c.Method}, set),
			wResult{driverapi.Result{Method: c.Method}, inst, false}, // OK, every change dropped
			wResult{errR(driverapi.Unavailable), inst, false})
	default:
		panic("lifecycletest: the explored world has no answer to " + c.Method.String())
	}
	return out
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
func (s *wState) applyWrites(d *lifecycle.Decision, stop int) {
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

// wTransition is one edge of the world.
type wTransition struct {
	next      wState
	faultFree bool
	label     string
}

// stepSuccessors returns the successors of a step of the lifecycle in
// state s, given the step's input and decision: the status write lost, each
// write failing, every driver result, a crash before the outcome is fed
// back, or the pass ending.
func (s *wState) stepSuccessors(d *lifecycle.Decision) []wTransition {
	base := *s
	base.outcome = nil
	base.steps++
	if d.Rule == lifecycle.RuleDeleteDone || d.Rule == lifecycle.RuleNoMachine {
		base.steps = 0
		return []wTransition{{base, true, "gone"}}
	}
	var out []wTransition
	saved := base
	if d.Changed {
		saved.st = d.Status
		// A lost status write: nothing is carried out, Step hears of it.
		lost := base
		lost.outcome = &lifecycle.Outcome{OpID: d.OpID, Persist: lifecycle.WriteConflict}
		out = append(out, wTransition{lost, false, "persist lost"})
	}
	if d.Done() || base.steps >= lifecycle.MaxStepsPerPass {
		saved.steps = 0
		saved.now = saved.now.Add(d.Requeue)
		return append(out, wTransition{saved, true, "requeue"})
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
		f.applyWrites(d, i)
		stopped := lifecycle.WriteFailed
		if e.Kind == lifecycle.KindDeleteNode {
			stopped = lifecycle.WriteNotFound
			f.node = 0
		}
		f.outcome = &lifecycle.Outcome{OpID: d.OpID, Ran: i, Stopped: stopped, Error: "x"}
		out = append(out, wTransition{f, false, "write " + e.Kind.String() + " fails"})
	}
	done := saved
	done.applyWrites(d, writes)
	if !d.HasCall() {
		ok := done
		ok.outcome = &lifecycle.Outcome{OpID: d.OpID, Ran: n}
		crash := done
		crash.steps, crash.now = 0, crash.now.Add(10*time.Second)
		return append(out, wTransition{ok, true, "effects"}, wTransition{crash, false, "crash"})
	}
	for _, r := range done.results(d.Call) {
		next := done
		next.inst = r.inst
		if !r.inst.exists && next.node == 1 {
			next.node = 0 // the instance is gone, its node with it
		}
		if d.Call.Method == driverapi.MethodDelete && d.Call.Machine.ProviderID == "test:///vm-old" {
			next.oldInst = false
		}
		crash := next
		crash.steps, crash.now = 0, crash.now.Add(10*time.Second)
		next.outcome = &lifecycle.Outcome{OpID: d.OpID, Ran: n, Result: r.r}
		label := d.Call.Method.String() + " " + resultClass(&r.r)
		out = append(out, wTransition{next, r.faultFree, label}, wTransition{crash, false, "crash after " + label})
	}
	return out
}

func resultClass(r *driverapi.Result) string {
	switch {
	case r.Undecodable:
		return "undecodable"
	case r.Code == driverapi.OK:
		return "OK"
	}
	return r.Code.String()
}

// events returns the world's events between passes; fair ones (time,
// healing) are fault free.
func (s *wState) events(allowed Events) []wTransition {
	var out []wTransition
	add := func(e Events, label string, fair bool, f func(n *wState)) {
		if allowed&e == 0 && !(fair && allowed&EventsFair != 0) {
			return
		}
		n := *s
		f(&n)
		out = append(out, wTransition{n, fair, label})
	}
	for _, d := range []time.Duration{6 * time.Minute, 11 * time.Minute, 31 * time.Minute} {
		add(0, "time +"+d.String(), true, func(n *wState) { n.now = n.now.Add(d) })
	}
	if s.inst.exists && s.inst.initialized && s.node == 0 {
		add(0, "node registers", true, func(n *wState) { n.node, n.healthy, n.taint = 1, true, true })
	}
	if s.node == 1 {
		add(EventNodeHealth, "node health flips", !s.healthy, func(n *wState) { n.healthy = !n.healthy })
		add(EventNodeGone, "node gone", false, func(n *wState) { n.node = 0 })
	}
	if s.node == 0 && s.st.NodeName != "" {
		add(EventForeignNode, "foreign node of the same name", false, func(n *wState) { n.node = 2 })
	}
	if s.node == 2 {
		add(0, "foreign node goes", true, func(n *wState) { n.node = 0 })
	}
	if s.obj.DeletionTime.IsZero() && !s.gone {
		add(EventDelete, "delete", false, func(n *wState) {
			n.obj.DeletionTime = n.now
			n.gone = !n.obj.Finalizer
		})
	}
	if !s.obj.ForceDeletion && !s.obj.DeletionTime.IsZero() {
		add(EventForceDeletion, "force deletion", false, func(n *wState) { n.obj.ForceDeletion = true })
	}
	if s.obj.UpdateGeneration == 0 {
		add(EventHotUpdate, "hot update", false, func(n *wState) { n.obj.UpdateGeneration = 1 })
	}
	if len(s.obj.Metadata) == 0 {
		add(EventMetadata, "metadata", false, func(n *wState) { n.obj.Metadata = map[string]string{"team": "a"} })
	}
	add(EventObserver, "observer flips", s.degraded, func(n *wState) { n.degraded, n.obsSince = !n.degraded, n.now })
	add(EventGrant, "grant flips", !s.grant, func(n *wState) { n.grant = !n.grant })
	return out
}

// end reports whether the state is an end state of DESIGN section 6: gone,
// Running with its update applied (or refused) and its metadata in sync,
// Available, or Failed.
func (s *wState) end() bool {
	st := &s.st
	switch {
	case s.gone:
		return true
	case !s.obj.DeletionTime.IsZero():
		return false
	case st.Phase == phase.Failed, st.Phase == phase.Available:
		return true
	case st.Phase == phase.Running:
		m := lifecycle.MemberOf(&wCfg, &s.obj, st)
		return (!m.UpdatePending || st.Flags.Has(lifecycle.FlagNeedsReplacement)) && m.MetadataInSync
	}
	return false
}

// invariant returns what the state breaks of the world's promises: one
// instance per incarnation, never another owner's, none left once gone.
func (s *wState) invariant() string {
	if s.inst.exists && s.inst.owner != wUID && s.inst.owner != "" {
		return fmt.Sprintf("an instance of another owner was made: %+v", s.inst)
	}
	if s.gone && s.inst.exists {
		return "the machine is gone, its instance is left"
	}
	return ""
}

// startState returns the state a [Start] names.
func startState(p Start) wState {
	s := wState{now: Epoch.Add(time.Minute), obj: lifecycle.Object{Name: wName, UID: wUID, Owner: "ms",
		CreationTime: Epoch}, oldInst: p == StartNewOverOldInstance, grant: true}
	if p != StartRunning {
		return s
	}
	s.now = Epoch.Add(time.Hour)
	s.obj.Finalizer, s.obj.NodeLabel, s.obj.ProviderID, s.obj.Priority = true, "node-1", wPID, "3"
	s.st = lifecycle.Status{Phase: phase.Running, PhaseSince: lifecycle.StampOf(Epoch.Add(3 * time.Minute)), ProviderID: wPID,
		NodeName: "node-1", OwnerUID: wUID, MetadataObserved: lifecycle.StampOf(s.now),
		LastOp: lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateSuccessful, Desc: lastop.DescJoined}}
	s.inst = wInstance{exists: true, initialized: true, owner: wUID, node: "node-1"}
	s.node, s.healthy = 1, true
	return s
}

package lifecycletest

import (
	"fmt"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
)

// wTransition is one edge of the world.
type wTransition struct {
	next      wState
	faultFree bool
	kind      wKind
	label     string
}

// wKind is what makes a transition: a step of the lifecycle, time passing,
// or an event of the world. The liveness check treats the step and every
// fair event as fair: a run that could take one of them again and again
// without ever taking it is not a run the world makes.
type wKind uint8

const (
	kindStep             wKind = iota // a step of the lifecycle, with its outcome
	kindTime                          // time passing between passes
	kindNodeRegisters                 // the node registering
	kindNodeHealthy                   // the node turning healthy (unhealthy: a fault)
	kindVolumesDetach                 // the node's volumes detaching
	kindForeignNodeGoes               // another instance's node leaving
	kindPredecessorGone               // the older incarnation finishing
	kindOtherFinalizer                // another controller's finalizer leaving
	kindProblemSolved                 // a problem being solved
	kindNodeReadable                  // the node readable again
	kindObserverRecovers              // the observer recovering
	kindGrant                         // the limiter granting
	kindOwnerSelects                  // the node's owner selecting it for its in-place update
	kindAgentUpdates                  // the node agent updating the node
	kindOwnerFinishes                 // the node's owner finishing its in-place update
	kindFleetRegrants                 // the fleet taking back a grant of auto-preservation no longer due
	kindFault                         // an event that is a fault
	kindCount
)

// kindNames name the kinds, in order.
var kindNames = [kindCount]string{"step", "time", "node registers", "node turns healthy", "volumes detach",
	"foreign node goes", "predecessor gone", "other finalizer goes", "problem solved", "node readable",
	"observer recovers", "grant", "owner selects", "agent updates", "owner finishes", "fleet regrants", "fault"}

// applyWrites carries out the decision's effects that are not a driver
// call on the state, up to (not including) index stop. Removing our
// finalizer from a deleted object deletes it; [wState.stepSuccessors] adds
// the case where another controller's finalizer still holds it.
func (s *wState) applyWrites(d *lifecycle.Decision, stop int) {
	op := d.OpID.Rule()
	if !preserveRule(op) {
		op = d.Rule
	}
	for i, e := range d.Effects.Slice() {
		if i >= stop {
			return
		}
		if applied, gone := ApplyToObject(&s.obj, &e); applied {
			s.gone = s.gone || gone
			continue
		}
		switch e.Kind {
		case lifecycle.KindRemoveTaint:
			s.taint = false
		case lifecycle.KindEnsureBootstrapToken:
			s.token = true
		case lifecycle.KindDeleteBootstrapToken:
			s.token = false
		case lifecycle.KindDeleteVolumeAttachments:
			if s.node == 1 && s.volumes == 1 {
				s.volumes = 2
			}
		case lifecycle.KindDeleteNode:
			if s.node == 1 {
				s.dropNode()
			}
		case lifecycle.KindDrain:
			// A round: evictable pods go, and a forced one's deletion
			// also removes those a budget holds.
			if s.node == 1 && (s.pods == 1 || s.pods == 2 && e.Force) {
				s.pods = 0
			}
			if s.node == 1 && e.Force {
				s.forcedDrain = true
			}
		case lifecycle.KindSetNodeCondition, lifecycle.KindCordon, lifecycle.KindUncordon, lifecycle.KindLabelNode,
			lifecycle.KindRemoveNodeLabel:
			s.applyPreserveWrite(&e, op)
			s.applyNodeWrite(&e)
		case lifecycle.KindRemoveAnnotation, lifecycle.KindAnnotateNode, lifecycle.KindRemoveNodeAnnotation:
			s.applyPreserveWrite(&e, op)
		}
	}
}

// checkDrained judges a DeleteMachine of the recorded instance from the
// world, not from the status: the instance's node, when it exists, has no
// pods left to drain, or a forced drain was attempted on it. (A deletion
// by name and UID alone, after the provider lost sight of the instance,
// cannot prove the node found by its machine-name label is the instance's,
// and does not drain it, as MCM does not.)
func (s *wState) checkDrained(d *lifecycle.Decision) error {
	if d.HasCall() && d.Call.Method == driverapi.MethodDelete && d.Call.Machine.ProviderID == wPID &&
		s.inst.exists && s.node == 1 && s.pods != 0 && !s.forcedDrain {
		return fmt.Errorf("%w: DeleteMachine while the world shows pods on its node that no drain removed and no forced drain was attempted on", ErrExplore)
	}
	return nil
}

// removesFinalizer reports whether the decision removes our finalizer from
// a deleted object.
func (s *wState) removesFinalizer(d *lifecycle.Decision) bool {
	if s.obj.DeletionTime.IsZero() {
		return false
	}
	for _, e := range d.Effects.Slice() {
		if e.Kind == lifecycle.KindRemoveFinalizer {
			return true
		}
	}
	return false
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
		return []wTransition{{base, true, kindStep, "gone"}}
	}
	var out []wTransition
	saved := base
	if d.Changed {
		saved.st = d.Status
		// A lost status write: nothing is carried out, Step hears of it.
		lost := base
		lost.outcome = &lifecycle.Outcome{OpID: d.OpID, Persist: lifecycle.WriteConflict}
		out = append(out, wTransition{lost, false, kindStep, "persist lost"})
	}
	if d.Done() || base.steps >= lifecycle.MaxStepsPerPass {
		saved.steps = 0
		saved.now = saved.now.Add(d.Requeue)
		return append(out, wTransition{saved, true, kindStep, "requeue"})
	}
	n := d.Effects.Len()
	writes := n
	if d.HasCall() {
		writes = n - 1
	}
	// A write fails at each index that is not an event; a node deletion
	// also finds the node gone.
	for i, e := range d.Effects.Slice()[:writes] {
		if e.Kind == lifecycle.KindEvent {
			continue
		}
		f := saved
		f.applyWrites(d, i)
		if e.Kind == lifecycle.KindDrain && e.Force && f.node == 1 {
			// A forced drain that failed was attempted: deletion goes on
			// after it (MCM S2g).
			f.forcedDrain = true
		}
		f.outcome = &lifecycle.Outcome{OpID: d.OpID, Ran: i, Stopped: lifecycle.WriteFailed, Error: "x"}
		what := e.Kind.String()
		switch e.Kind {
		case lifecycle.KindAnnotateNode, lifecycle.KindRemoveNodeAnnotation, lifecycle.KindRemoveAnnotation:
			what += " " + e.Key // which of a decision's annotations
		}
		out = append(out, wTransition{f, false, kindStep, "write " + what + " fails"})
		if e.Kind == lifecycle.KindDeleteNode && f.node == 1 {
			g := f
			g.dropNode()
			g.outcome = &lifecycle.Outcome{OpID: d.OpID, Ran: i, Stopped: lifecycle.WriteNotFound, Error: "x"}
			out = append(out, wTransition{g, false, kindStep, "write " + e.Kind.String() + " finds the node gone"})
		}
	}
	done := saved
	done.applyWrites(d, writes)
	if !d.HasCall() {
		ok := done
		ok.outcome = &lifecycle.Outcome{OpID: d.OpID, Ran: n}
		crash := done
		crash.steps, crash.now = 0, crash.now.Add(10*time.Second)
		out = append(out, wTransition{ok, true, kindStep, "effects"}, wTransition{crash, false, kindStep, "crash"})
		if s.removesFinalizer(d) {
			// Another controller's finalizer holds the object: it stays,
			// without ours.
			ok.gone, ok.held, crash.gone, crash.held = false, true, false, true
			out = append(out, wTransition{ok, true, kindStep, "effects; another finalizer holds the object"},
				wTransition{crash, false, kindStep, "crash; another finalizer holds the object"})
		}
		return out
	}
	for _, r := range done.results(d.Call, d.OpID.Rule()) {
		next := done
		next.inst = r.inst
		if s.inst.exists && !r.inst.exists && next.node == 1 {
			next.healthy = false // the node outlives its instance, NotReady
		}
		if d.Call.Method == driverapi.MethodDelete && d.Call.Machine.ProviderID == "test:///vm-old" {
			next.oldInst = false
		}
		crash := next
		crash.steps, crash.now = 0, crash.now.Add(10*time.Second)
		next.outcome = &lifecycle.Outcome{OpID: d.OpID, Ran: n, Result: r.r}
		label := r.label
		if label == "" {
			label = d.Call.Method.String() + " " + resultClass(&r.r)
		}
		out = append(out, wTransition{next, r.faultFree, kindStep, label}, wTransition{crash, false, kindStep, "crash after " + label})
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

// eventAdder gathers the events of state s that allowed lets happen.
type eventAdder struct {
	s       *wState
	allowed Events
	out     []wTransition
}

// add adds the event of kind k labelled label that f makes of the state,
// when event e is allowed or, fair, when fair events are: fair events are
// fault free.
func (a *eventAdder) add(e Events, label string, fair bool, k wKind, f func(n *wState)) {
	if a.allowed&e == 0 && !(fair && a.allowed&EventsFair != 0) {
		return
	}
	n := *a.s
	f(&n)
	if !fair {
		k = kindFault
	}
	a.out = append(a.out, wTransition{n, fair, k, label})
}

// events returns the world's events between passes; fair ones (time,
// healing) are fault free.
func (s *wState) events(allowed Events, v Variants) []wTransition {
	a := &eventAdder{s: s, allowed: allowed}
	add := a.add
	for _, d := range []time.Duration{6 * time.Minute, 11 * time.Minute, 31 * time.Minute} {
		add(0, "time +"+d.String(), true, kindTime, func(n *wState) { n.now = n.now.Add(d) })
	}
	if s.inst.exists && s.inst.initialized && s.node == 0 && v&VariantNoTargetCluster == 0 {
		add(0, "node registers", true, kindNodeRegisters, func(n *wState) {
			n.node, n.healthy, n.taint, n.volumes = 1, true, true, 1
			if n.obj.DeletionTime.IsZero() {
				// Workloads land on a node only while its machine is not
				// being deleted (a node registering late into a deletion
				// is not given any in this world).
				n.pods = 1
			}
		})
	}
	if s.node == 1 {
		if s.healthy || s.inst.exists {
			// A node without its instance never turns Ready again.
			add(EventNodeHealth, "node health flips", !s.healthy, kindNodeHealthy, func(n *wState) { n.healthy = !n.healthy })
		}
		add(EventNodeGone, "node gone", false, kindFault, func(n *wState) { n.dropNode() })
		if s.pods == 1 || s.pods == 2 {
			add(EventDrainBlocked, "the drain is blocked", false, kindFault, func(n *wState) { n.pods++ })
		}
		if s.volumes == 2 {
			add(0, "volumes detach", true, kindVolumesDetach, func(n *wState) { n.volumes = 0 })
		}
	}
	if s.node == 0 && (s.st.NodeName != "" || (!s.inst.exists && s.st.ProviderID == "")) {
		// Under the name the status records, or, before an instance is
		// made, under the name the provider will give it (MCM A5).
		add(EventForeignNode, "foreign node of the same name", false, kindFault, func(n *wState) { n.node = 2 })
	}
	if s.node == 2 {
		add(0, "foreign node goes", true, kindForeignNodeGoes, func(n *wState) { n.node = 0 })
	}
	if s.predecessor {
		add(0, "the older incarnation finishes terminating", true, kindPredecessorGone, func(n *wState) { n.predecessor, n.oldInst = false, false })
	}
	if s.inst.exists {
		add(EventInstanceGone, "instance vanishes", false, kindFault, func(n *wState) {
			n.inst = wInstance{}
			if n.node == 1 {
				n.healthy = false
			}
		})
	}
	if s.obj.DeletionTime.IsZero() && !s.gone {
		add(EventDelete, "delete", false, kindFault, func(n *wState) {
			n.obj.DeletionTime = n.now
			n.gone = !n.obj.Finalizer
		})
		if !s.obj.Finalizer {
			add(EventDelete, "delete; another finalizer holds the object", false, kindFault, func(n *wState) {
				n.obj.DeletionTime, n.held = n.now, true
			})
		}
	}
	if s.held {
		add(0, "the other finalizer goes", true, kindOtherFinalizer, func(n *wState) { n.gone = true })
	}
	if !s.obj.ForceDeletion && !s.obj.DeletionTime.IsZero() {
		add(EventForceDeletion, "force deletion", false, kindFault, func(n *wState) { n.obj.ForceDeletion = true })
	}
	if s.obj.UpdateGeneration == 0 {
		add(EventHotUpdate, "hot update", false, kindFault, func(n *wState) { n.obj.UpdateGeneration = 1 })
	}
	switch metaOf(s.obj.Metadata) {
	case 0:
		add(EventMetadata, "metadata", false, kindFault, func(n *wState) { n.obj.Metadata = metaMap(wMetaAll) })
	case wMetaAll:
		add(EventMetadataKeyRemoved, "metadata key removed", false, kindFault, func(n *wState) {
			n.obj.Metadata = metaMap(wMetaTeam)
		})
	}
	if s.problem == lifecycle.ProblemNone {
		for p := lifecycle.ProblemInvalidMachine; p <= lifecycle.ProblemInvalidNodeTemplate; p++ {
			add(EventProblem, "problem "+p.String(), false, kindFault, func(n *wState) { n.problem = p })
		}
	} else {
		add(EventProblem, "problem solved", true, kindProblemSolved, func(n *wState) { n.problem = lifecycle.ProblemNone })
	}
	add(EventNodeUnreadable, "node readable flips", s.nodeReadFailed, kindNodeReadable, func(n *wState) { n.nodeReadFailed = !n.nodeReadFailed })
	add(EventObserver, "observer flips", s.degraded, kindObserverRecovers, func(n *wState) { n.degraded, n.obsSince = !n.degraded, n.now })
	add(EventGrant, "grant flips", !s.grant, kindGrant, func(n *wState) { n.grant = !n.grant })
	s.inPlaceEvents(a, v)
	s.preserveEvents(a)
	return a.out
}

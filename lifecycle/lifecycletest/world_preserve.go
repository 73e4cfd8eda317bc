package lifecycletest

import (
	"fmt"
	"strings"
	"time"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// Preservation in the world of [Explore] (lifecycle/preserve.go,
// autopreserve.go, keepdrain.go). A user asks a machine's preservation with
// the preserve annotation on the machine (eventPreserve) or on its node
// (eventPreserveNode): sets it to now, when-failed or false, or removes
// it; the fleet grants a Failed machine auto-preservation while its owner
// may choose it, or takes the grant back (eventAutoPreserve); an
// administrator cordons the node (eventCordon). All of these are faults;
// a grant no longer due (the machine recovered, its preservation expired)
// is taken back in time (fair), and time passes a preservation's expiry
// (fair, kindTime): the key knows only whether it has. The lifecycle marks
// the node, with the cluster autoscaler's annotations (scale-down-disabled
// and its by-mcm companion, the one the shell reads as
// Node.ScaleDownDisabled) and the Preserved condition, and cordons and
// drains a preserved Failed machine's node first; the world knows who
// cordoned the node: the preservation's drain (the lifecycle's, or MCM's
// for a machine taken over preserved), an administrator, or another party.
//
// The promises (checkPreserve, on every decision): a decision that makes a
// machine Failed whose preservation is asked saves its expiry, so its owner
// never replaces it before; the expiry of a preserved machine whose
// preservation is still asked is not changed before it passed; Preserved
// True is written only while the preservation is asked and, for a Failed
// machine, only of a node without pods a drain must remove and cordoned;
// the lifecycle never lifts an administrator's cordon, and lifts another
// party's only for something else than a preservation (the decision's rule
// a preservation's, or FlagPreserveCordoned or FlagPreserveCordonMarked
// saying it gives back the preservation's cordon). The ends (preserveSettled): a machine preserved
// until its expiry is not at an end; once the expiry passes it ends
// unpreserved, Failed (awaiting replacement) or Running, its node given
// back: no expiry, no preservation drain, neither autoscaler annotation,
// the Preserved condition not True, and no annotation that asks it again;
// a Running machine's node schedulable unless an administrator cordoned
// it (inPlaceSettled).

// The world's knowledge of who cordoned the own node (wState.cordonBy).
const (
	// cordonOther: the in-place update's parties (its drain, MCM), or
	// another controller before the machine was taken over.
	cordonOther uint8 = iota
	// cordonPreserve: the drain of a preserved node (the lifecycle's, or
	// MCM's before the machine was taken over), which found it
	// schedulable.
	cordonPreserve
	// cordonAdmin: an administrator.
	cordonAdmin
)

// The statuses of the node's Preserved condition (wState.presStatus).
const (
	presNone uint8 = iota
	presTrue
	presFalse
)

// presReasons are the reasons of the Preserved condition the key tells
// apart; any other is one more.
var presReasons = [...]string{"", lifecycle.ReasonPreservedByUser, lifecycle.ReasonPreservedByMCM,
	lifecycle.ReasonPreservationStopped}

// presReasonIndex returns the index of reason r in presReasons,
// len(presReasons) for a reason the world does not know.
func presReasonIndex(r string) uint8 {
	for i, x := range presReasons {
		if x == r {
			return uint8(i)
		}
	}
	return uint8(len(presReasons))
}

// presMessage is the message of a Preserved condition that names the
// expiry until, and that the node was drained: MCM's, which the lifecycle
// writes too.
func presMessage(until lifecycle.Stamp, drained bool) string {
	msg := "Machine preserved until " + until.Time().UTC().String() + "."
	if drained {
		msg = "Preserved node drained successfully. " + msg
	}
	return msg
}

// presMessageClass abstracts the Preserved condition's message for the
// key: 1 for the message of the status's expiry, 2 for that message once
// the node was drained, 0 for any other (an older expiry's, none).
func (s *wState) presMessageClass() uint8 {
	until := s.st.PreserveUntil
	switch {
	case s.presStatus == presNone || until == 0:
		return 0
	case s.presMsg == presMessage(until, false):
		return 1
	case s.presMsg == presMessage(until, true):
		return 2
	}
	return 0
}

// preserveNode adds to the own node n what the shell reads of its
// preservation: its annotation, the autoscaler's annotation by MCM, and
// the Preserved condition after the others.
func (s *wState) preserveNode(n *lifecycle.Node) {
	n.Preserve, n.ScaleDownDisabled = s.nodePreserve, s.sdByMCM
	if s.presStatus != presNone {
		status := lifecycle.ConditionTrue
		if s.presStatus == presFalse {
			status = lifecycle.ConditionFalse
		}
		n.Conditions = append(n.Conditions, lifecycle.Condition{Type: lifecycle.ConditionPreserved, Status: status,
			Since: lifecycle.StampOf(Epoch), Reason: s.presReason, Message: s.presMsg})
	}
}

// stPreserved returns the status of the Preserved condition the status
// mirrors, presNone for none.
func stPreserved(st *lifecycle.Status) uint8 {
	for i := range st.Conditions {
		if c := &st.Conditions[i]; c.Type == lifecycle.ConditionPreserved {
			if c.Status == lifecycle.ConditionTrue {
				return presTrue
			}
			return presFalse
		}
	}
	return presNone
}

// preserveRule reports whether rule r is one of preservation's.
func preserveRule(r lifecycle.Rule) bool { return strings.HasPrefix(r.String(), "preserve.") }

// applyPreserveWrite carries out on the machine object and its own node a
// write of preservation: the machine's annotation removed, the node's
// annotations set or removed, its Preserved condition; and it notes who
// cordoned the node when a cordon of the decision whose effects carry rule
// op finds it schedulable. The in-place update's part of a node write is
// applyNodeWrite's.
func (s *wState) applyPreserveWrite(e *lifecycle.Effect, op lifecycle.Rule) {
	if e.Kind == lifecycle.KindRemoveAnnotation {
		if e.Key == lifecycle.PreserveAnnotation {
			s.obj.Preserve = lifecycle.PreserveUnset
		}
		return
	}
	if s.node != 1 {
		return
	}
	switch e.Kind {
	case lifecycle.KindAnnotateNode, lifecycle.KindRemoveNodeAnnotation:
		on := e.Kind == lifecycle.KindAnnotateNode && e.Value == "true"
		switch e.Key {
		case lifecycle.ScaleDownDisabledAnnotation:
			s.sdDisabled = on
		case lifecycle.ScaleDownDisabledByAnnotation:
			s.sdByMCM = on
		case lifecycle.PreserveAnnotation:
			if e.Kind == lifecycle.KindRemoveNodeAnnotation {
				s.nodePreserve = lifecycle.PreserveUnset
			}
		}
	case lifecycle.KindSetNodeCondition:
		if e.Key == lifecycle.ConditionPreserved {
			s.presStatus, s.presReason, s.presMsg = presFalse, e.Value, e.Message
			if e.Status == lifecycle.ConditionTrue {
				s.presStatus = presTrue
			}
		}
	case lifecycle.KindCordon:
		if !s.cordoned {
			s.cordonBy = cordonOther
			if preserveRule(op) {
				s.cordonBy = cordonPreserve
			}
		}
	case lifecycle.KindUncordon:
		s.cordonBy = cordonOther
	}
}

// dropPreserveNode forgets what the own node carried of a preservation:
// a node that registers later is a new object.
func (s *wState) dropPreserveNode() {
	s.nodePreserve, s.sdDisabled, s.sdByMCM, s.cordonBy, s.cordonMark = lifecycle.PreserveUnset, false, false, cordonOther, false
	s.presStatus, s.presReason, s.presMsg = presNone, "", ""
}

// preservationInPlay reports whether anything of a preservation is in
// the state: an expiry, the drain of a preserved node, a preserve
// annotation, the fleet's grant, the marks of a preservation on the node.
func (s *wState) preservationInPlay() bool {
	st := &s.st
	return st.PreserveUntil != 0 || st.Stage == lifecycle.StagePreserveDrain || s.grantPreserve ||
		s.obj.Preserve != lifecycle.PreserveUnset || s.nodePreserve != lifecycle.PreserveUnset ||
		s.sdDisabled || s.sdByMCM || s.presStatus != presNone ||
		st.Flags&(lifecycle.FlagPreserveByNode|lifecycle.FlagPreserveDrained|lifecycle.FlagPreserveCordoned|
			lifecycle.FlagPreserveCordonMarked|lifecycle.FlagAutoPreserved) != 0
}

// autoWindowOpen reports whether the machine may still begin an
// auto-preservation: within one preservation timeout of the start of its
// phase (a preservation that expired does not begin again).
func (s *wState) autoWindowOpen() bool {
	since := s.st.PhaseSince
	return since != 0 && lifecycle.StampOf(s.now) < since.Add(wCfg.PreserveTimeout)
}

// preserveValue is the world's reading of MCM's preservation table
// (P1-P8): the value that decides, and whether an annotation gives it.
// The node's annotation decides once the node carried one, which the
// status records (FlagPreserveByNode, as MCM's last applied value); its
// invalid value decides nothing. Else the machine's (invalid counts as
// none), and a machine no annotation names is auto-preserved with the
// fleet's grant: while the auto-preservation of its spell of Failed lasts
// (FlagAutoPreserved and an expiry), and, when none ended in this spell
// (FlagAutoPreserved stays until the machine leaves Failed), within its
// window, whatever expiry it has (window, for the status's phase or one
// that begins now). The window is one preservation timeout from the start
// of the phase: an expiry set when the machine failed ends with it.
func (s *wState) preserveValue(window bool) (p lifecycle.Preserve, annotated bool) {
	st := &s.st
	if s.node == 1 && (s.nodePreserve != lifecycle.PreserveUnset || st.Flags.Has(lifecycle.FlagPreserveByNode)) {
		if s.nodePreserve == lifecycle.PreserveInvalid {
			return lifecycle.PreserveUnset, false
		}
		return s.nodePreserve, s.nodePreserve != lifecycle.PreserveUnset
	}
	machine := s.obj.Preserve
	if machine == lifecycle.PreserveInvalid {
		machine = lifecycle.PreserveUnset
	}
	auto := window
	if st.Flags.Has(lifecycle.FlagAutoPreserved) {
		auto = st.PreserveUntil != 0
	}
	if machine == lifecycle.PreserveUnset && s.grantPreserve && auto {
		return lifecycle.PreserveAutoPreserved, false
	}
	return machine, machine != lifecycle.PreserveUnset
}

// preserveAsked reports whether the world asks the machine's
// preservation while it is in phase p: with now, and, once Failed, with
// when-failed or auto-preserved (window as for preserveValue).
func (s *wState) preserveAsked(p phase.Phase, window bool) bool {
	switch v, _ := s.preserveValue(window); v {
	case lifecycle.PreserveNow:
		return true
	case lifecycle.PreserveWhenFailed, lifecycle.PreserveAutoPreserved:
		return p == phase.Failed
	}
	return false
}

// preserveSettled reports whether the machine's preservation is over, or
// was never asked: no expiry, no drain of a preserved node, the node given
// back (neither autoscaler annotation, the Preserved condition not True),
// and nothing that asks it again: no now, no when-failed or
// auto-preservation of a Failed machine, no auto-preserved annotation
// (which is removed once the machine is not Failed).
func (s *wState) preserveSettled() bool {
	st := &s.st
	if st.PreserveUntil != 0 || st.Stage == lifecycle.StagePreserveDrain ||
		s.node == 1 && (s.sdDisabled || s.sdByMCM || s.presStatus == presTrue) {
		return false
	}
	v, annotated := s.preserveValue(s.autoWindowOpen())
	return !s.preserveAsked(st.Phase, s.autoWindowOpen()) && !(v == lifecycle.PreserveAutoPreserved && annotated)
}

// autoDue reports whether the fleet grants the machine auto-preservation
// (lifecycle.Limit, with a maximum the machine is within): Failed and not
// being deleted, and auto-preserved until an expiry still ahead, or named
// by no annotation, not preserved, not auto-preserved before in this
// spell of Failed, and within its window.
func (s *wState) autoDue() bool {
	st := &s.st
	if !s.obj.DeletionTime.IsZero() || st.Phase != phase.Failed {
		return false
	}
	if st.Flags.Has(lifecycle.FlagAutoPreserved) && st.PreserveUntil > lifecycle.StampOf(s.now) {
		return true
	}
	named := s.obj.Preserve != lifecycle.PreserveUnset && s.obj.Preserve != lifecycle.PreserveInvalid ||
		s.node == 1 && s.nodePreserve != lifecycle.PreserveUnset || st.Flags.Has(lifecycle.FlagPreserveByNode)
	return !named && st.PreserveUntil == 0 && !st.Flags.Has(lifecycle.FlagAutoPreserved) && s.autoWindowOpen()
}

// preserveWanted returns the end some fault-free path from s must reach
// because of its preservation: Failed for a Failed machine between passes
// whose preservation is not over, unless its node is healthy (the health
// flow makes it Running first); 0 for any other state. Time passes its
// expiry, and the machine ends Failed, unpreserved, awaiting replacement.
func (s *wState) preserveWanted() uint8 {
	if !s.betweenPasses() || s.gone || !s.obj.DeletionTime.IsZero() || s.st.Phase != phase.Failed ||
		s.node == 1 && s.healthy || s.preserveSettled() {
		return 0
	}
	return endFailed
}

// preserveEvents adds the events of preservation to a: time passing the
// expiry, the users' annotations, the fleet's grant, an administrator's
// cordon. None happens to a machine being deleted: deletion ends its
// preservation, and the key forgets it.
func (s *wState) preserveEvents(a *eventAdder) {
	if s.gone || !s.obj.DeletionTime.IsZero() {
		return
	}
	if until := s.st.PreserveUntil; until > lifecycle.StampOf(s.now) {
		a.add(0, "time passes the preservation's expiry", true, kindTime, func(n *wState) { n.now = until.Time() })
	}
	values := [...]lifecycle.Preserve{lifecycle.PreserveNow, lifecycle.PreserveWhenFailed, lifecycle.PreserveFalse}
	for _, v := range values {
		if s.obj.Preserve != v {
			a.add(eventPreserve, "a user annotates the machine preserve="+v.String(), false, kindFault,
				func(n *wState) { n.obj.Preserve = v })
		}
	}
	if s.obj.Preserve != lifecycle.PreserveUnset {
		a.add(eventPreserve, "a user removes the machine's preserve annotation", false, kindFault,
			func(n *wState) { n.obj.Preserve = lifecycle.PreserveUnset })
	}
	if s.node == 1 {
		for _, v := range values {
			if s.nodePreserve != v {
				a.add(eventPreserveNode, "a user annotates the node preserve="+v.String(), false, kindFault,
					func(n *wState) { n.nodePreserve = v })
			}
		}
		if s.nodePreserve != lifecycle.PreserveUnset {
			a.add(eventPreserveNode, "a user removes the node's preserve annotation", false, kindFault,
				func(n *wState) { n.nodePreserve = lifecycle.PreserveUnset })
		}
		if !s.cordoned {
			a.add(eventCordon, "an administrator cordons the node", false, kindFault,
				func(n *wState) { n.cordoned, n.cordonBy = true, cordonAdmin })
		}
	}
	due := s.autoDue()
	switch {
	case !s.grantPreserve && due:
		a.add(eventAutoPreserve, "the fleet grants auto-preservation", false, kindFault, func(n *wState) { n.grantPreserve = true })
	case s.grantPreserve && due:
		a.add(eventAutoPreserve, "the fleet takes auto-preservation back", false, kindFault, func(n *wState) { n.grantPreserve = false })
	case s.grantPreserve:
		a.add(eventAutoPreserve, "the fleet takes back a grant no longer due", true, kindFleetRegrants,
			func(n *wState) { n.grantPreserve = false })
	}
}

// checkPreserve judges decision d, made from input in in state s, by the
// promises of preservation, from what the world knows (the annotations,
// the grant, the pods, who cordoned the node); it returns an error
// wrapping [ErrExplore] naming the first one broken. The effects are
// judged in order, each against the node as the ones before it left it.
func (s *wState) checkPreserve(in *lifecycle.Input, d *lifecycle.Decision) error {
	if s.gone || !s.obj.DeletionTime.IsZero() {
		return nil // deletion ends the preservation
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrExplore, fmt.Sprintf(format, a...))
	}
	was, st := &in.Status, &d.Status
	now := lifecycle.StampOf(s.now)
	if st.Phase == phase.Failed && was.Phase != phase.Failed && s.preserveAsked(phase.Failed, true) && st.PreserveUntil <= now {
		v, _ := s.preserveValue(true)
		return fail("made Failed without an expiry ahead (%v) although its preservation is asked (%s): its owner may "+
			"replace it at once", st.PreserveUntil, v)
	}
	if was.Phase == st.Phase && was.PreserveUntil > now && st.PreserveUntil != was.PreserveUntil &&
		s.preserveAsked(was.Phase, s.autoWindowOpen()) {
		return fail("the expiry of a %s machine whose preservation is asked moved from %v to %v before it passed",
			was.Phase.Label(), was.PreserveUntil, st.PreserveUntil)
	}
	if s.node != 1 {
		return nil
	}
	cordoned, by, pods := s.cordoned, s.cordonBy, s.pods
	preserving := preserveRule(d.Rule) || preserveRule(d.OpID.Rule()) ||
		was.Flags&(lifecycle.FlagPreserveCordoned|lifecycle.FlagPreserveCordonMarked) != 0
	for _, e := range d.Effects.Slice() {
		if e.Node != wNode {
			continue
		}
		switch e.Kind {
		case lifecycle.KindSetNodeCondition:
			if e.Key != lifecycle.ConditionPreserved || e.Status != lifecycle.ConditionTrue {
				break
			}
			switch {
			case !s.preserveAsked(was.Phase, s.autoWindowOpen()) || st.PreserveUntil <= now:
				return fail("Preserved True written to the node of a %s machine whose preservation is not asked or "+
					"has no expiry ahead (%v)", was.Phase.Label(), st.PreserveUntil)
			case was.Phase == phase.Failed && (pods != 0 || !cordoned):
				return fail("Preserved True written to a Failed machine's node while pods a drain must remove are on "+
					"it (%d) or while it is not cordoned (%v)", pods, cordoned)
			}
		case lifecycle.KindCordon:
			if !cordoned {
				cordoned, by = true, cordonOther
				if preserving {
					by = cordonPreserve
				}
			}
		case lifecycle.KindUncordon:
			switch {
			case cordoned && by == cordonAdmin:
				return fail("the node uncordoned although an administrator cordoned it (rule %s)", d.Rule)
			case preserving && cordoned && by == cordonOther:
				return fail("the node uncordoned for a preservation although its cordon is not the preservation's " +
					"(the in-place update's or another controller's)")
			}
			cordoned = false
		case lifecycle.KindDrain:
			if pods == 1 || pods == 2 && e.Force {
				pods = 0
			}
		}
	}
	return nil
}

// preservePastExpiry reports whether time passed the status's expiry.
func preservePastExpiry(st *lifecycle.Status, now time.Time) bool {
	return st.PreserveUntil != 0 && lifecycle.StampOf(now) >= st.PreserveUntil
}

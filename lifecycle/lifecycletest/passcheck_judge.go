package lifecycletest

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/pass"
	"github.com/purelifecycle/machine/phase"
)

// This file judges a ShellCheck's run from the world's truth: the shell's
// contract at each call, the world's safety after each call, and the ends
// the machine reaches.

// checkObserved checks an observation against the pass's time and the
// world's truth: the stored status, and the object as the shell's own
// writes left it (its deletionTimestamp may lag: another writer set it).
func (r *shellRun) checkObserved(now time.Time, in *lifecycle.Input) {
	t := r.world.Truth()
	switch {
	case !in.Now.Equal(now):
		r.violation(fmt.Sprintf("Observe returned Now %s, not the pass's time %s", in.Now, now), "")
	case in.Outcome != nil:
		r.violation("Observe returned an outcome: Run sets it", "")
	case t.Object.Name == "" && in.Object.Name != "":
		r.violation("Observe returned the object of a machine that is gone", "observed:\n"+describeInput(in))
	case t.Object.Name == "":
		return
	case in.Object.Name != t.Object.Name || in.Object.UID != t.Object.UID:
		r.violation(fmt.Sprintf("Observe returned machine %s (UID %s), the world holds %s (UID %s)", in.Object.Name,
			in.Object.UID, t.Object.Name, t.Object.UID), "")
	}
	o, w := &in.Object, &t.Object
	if o.Finalizer != w.Finalizer || o.NodeLabel != w.NodeLabel || o.ProviderID != w.ProviderID || o.Priority != w.Priority {
		r.violation("Observe returned the object older than the shell's own writes left it: "+objectLine(o)+
			"; the world holds "+objectLine(w), "")
	}
	if !sameStatus(&in.Status, &t.Status) {
		r.violation("Observe returned a status other than the one stored: "+statusLine(&in.Status)+
			"; the world holds "+statusLine(&t.Status), "")
	}
}

// leftOver marks what leaveOver leaves in an input: values no world
// observes.
const (
	leftOver            = "\x00left over from the previous observation"
	leftOverAttachments = -7
	leftOverProblem     = lifecycle.Problem(251)
)

// leftOverSince is the observer's Since leaveOver leaves.
var leftOverSince = time.Date(1999, 12, 31, 23, 59, 58, 7, time.UTC)

// leaveOver fills in with values no world observes, as if it held an
// earlier observation: within a pass, pass.Run hands Observe the previous
// step's input.
func leaveOver(in *lifecycle.Input) {
	*in = lifecycle.Input{
		Now:               leftOverSince,
		Object:            lifecycle.Object{Name: leftOver, UID: leftOver, ProviderID: leftOver, NodeLabel: leftOver},
		Status:            lifecycle.Status{ProviderID: leftOver, NodeName: leftOver},
		Node:              lifecycle.Node{Name: leftOver, ProviderID: leftOver, MachineName: leftOver},
		VolumeAttachments: leftOverAttachments,
		Observer:          lifecycle.Observer{Degraded: true, Since: leftOverSince},
		Problem:           leftOverProblem,
	}
}

// checkSetEveryField checks that the shell's Observe set every field of
// the input leaveOver filled.
func (r *shellRun) checkSetEveryField(in *lifecycle.Input) {
	var left string
	switch {
	case in.Object.Name == leftOver || in.Object.UID == leftOver || in.Object.ProviderID == leftOver ||
		in.Object.NodeLabel == leftOver:
		left = "Object"
	case in.Status.ProviderID == leftOver || in.Status.NodeName == leftOver:
		left = "Status"
	case in.Node.Name == leftOver || in.Node.ProviderID == leftOver || in.Node.MachineName == leftOver:
		left = "Node"
	case in.VolumeAttachments == leftOverAttachments:
		left = "VolumeAttachments"
	case in.Observer.Since.Equal(leftOverSince):
		left = "Observer"
	case in.Problem == leftOverProblem:
		left = "Problem"
	default:
		return
	}
	r.violation("Observe left Input."+left+" as the previous observation had it: within a pass the input "+
		"holds the previous step's observation, so Observe must set every field (the zero value for what is absent)", "")
}

// checkSaved checks a status save the shell answered w: one reported ok
// is the status the world holds, and one the world refused is not
// reported ok.
func (r *shellRun) checkSaved(st *lifecycle.Status, w lifecycle.Write, refused bool) {
	if w != lifecycle.WriteOK {
		return
	}
	if refused {
		r.violation("the world refused a status save, and the shell reported it ok", "")
	}
	if t := r.world.Truth(); !sameStatus(st, &t.Status) {
		r.violation("the shell reported a status saved that the world does not hold: saved "+statusLine(st)+
			"; the world holds "+statusLine(&t.Status), "")
	}
}

// checkApplied checks an effect the shell reported ok: the world shows
// it, where the truth can.
func (r *shellRun) checkApplied(e *lifecycle.Effect, w lifecycle.Write, before *WorldTruth) {
	if w != lifecycle.WriteOK {
		return
	}
	if e.Node != "" && before.node(e.Node) != nil {
		r.linked[e.Node] = true
	}
	t := r.world.Truth()
	o, n := &t.Object, t.node(e.Node)
	gone := o.Name == ""
	var shown bool
	switch e.Kind {
	case lifecycle.KindEnsureFinalizer:
		shown = !gone && o.Finalizer
	case lifecycle.KindRemoveFinalizer:
		shown = gone || !o.Finalizer
	case lifecycle.KindEnsureNodeLabel:
		shown = !gone && o.NodeLabel == e.Value
	case lifecycle.KindEnsureProviderID:
		shown = !gone && o.ProviderID == e.Value
	case lifecycle.KindEnsurePriority:
		shown = !gone && o.Priority == e.Value
	case lifecycle.KindEnsureBootstrapToken:
		shown = t.Token
	case lifecycle.KindDeleteBootstrapToken:
		shown = !t.Token
	case lifecycle.KindLabelNode:
		shown = n != nil && (e.Key != lifecycle.MachineNameLabel || n.MachineName == e.Value)
	case lifecycle.KindRemoveTaint:
		shown = n == nil || e.Key != lifecycle.TaintInstanceNotReady || !n.Taints.Has(lifecycle.InstanceNotReady)
	case lifecycle.KindDeleteNode:
		shown = n == nil
	case lifecycle.KindDrain:
		shown = n == nil || e.Force || n.VolumesAttached == 0
	default:
		shown = true
	}
	if e.Kind == lifecycle.KindDeleteNode && before.node(e.Node) == nil {
		r.violation(fmt.Sprintf("the shell reported effect %s ok for a node that does not exist, not %s", e,
			lifecycle.WriteNotFound), "")
	}
	if !shown {
		r.violation(fmt.Sprintf("the shell reported effect %s ok, and the world does not show it", e),
			"the world before:\n"+indent(before.String()))
	}
}

// checkNodeTarget checks that a node effect acts only on a node that
// runs an instance of the machine, or on none.
func (r *shellRun) checkNodeTarget(e *lifecycle.Effect) {
	if e.Node == "" {
		return
	}
	t := r.world.Truth()
	if n := t.node(e.Node); n != nil && !r.ours[n.ProviderID] {
		r.violation(fmt.Sprintf("effect %s on node %s, which runs instance %q, not one of this machine's", e,
			n.Name, n.ProviderID), "")
	}
}

// checkNode checks what Node returned for name: that node, whose
// providerID the world's node of that name carries. A cache may lag: it
// may not show a node just registered, or show one just deleted.
func (r *shellRun) checkNode(name string, n *lifecycle.Node) {
	if n.Name == "" {
		return
	}
	t := r.world.Truth()
	if w := t.node(name); n.Name != name || w != nil && w.ProviderID != n.ProviderID {
		r.violation(fmt.Sprintf("Node(%q) returned node %s with providerID %q", name, n.Name, n.ProviderID), "")
	}
}

// afterCall judges the world after a call the shell carried out.
func (r *shellRun) afterCall() {
	if v := r.observeInstances(r.world.Truth()); v != "" {
		r.violation(v, "")
	}
}

// observeInstances records the machine's live instances in t and returns
// the safety promise t breaks, "" for none: at most one live instance of
// the machine and at most one ever made, none deleted while the machine
// is not being deleted, and none live once its finalizer is removed.
func (r *shellRun) observeInstances(t WorldTruth) string {
	me := &r.spec.Object
	r.linked[t.Object.NodeLabel], r.linked[t.Status.NodeName] = true, true
	var live []string
	for k := range t.Instances {
		i := &t.Instances[k]
		if i.MachineName == me.Name && ownInstance(i, me) {
			r.ours[i.ProviderID] = true
		}
		if r.ours[i.ProviderID] {
			live = append(live, i.ProviderID)
		}
	}
	before := r.live
	r.live = live
	if len(live) > 1 {
		return fmt.Sprintf("instances %s of the machine live at once: all but one leak", strings.Join(live, ", "))
	}
	for _, id := range live {
		if !slices.Contains(r.everLive, id) {
			r.everLive = append(r.everLive, id)
		}
	}
	if len(r.everLive) > 1 {
		return fmt.Sprintf("instance %s was made for the machine after %s: one machine, one instance",
			r.everLive[len(r.everLive)-1], strings.Join(r.everLive[:len(r.everLive)-1], ", "))
	}
	o := &t.Object
	for _, id := range before {
		if !slices.Contains(live, id) && o.Name != "" && o.DeletionTime.IsZero() {
			return fmt.Sprintf("instance %s of the machine was deleted while the machine is not being deleted", id)
		}
	}
	if len(live) > 0 && (o.Name == "" || !o.DeletionTime.IsZero() && !o.Finalizer) {
		return fmt.Sprintf("the machine's finalizer was removed while its instance %s lives", live[0])
	}
	return ""
}

// reached reports whether the pass that made rep found the machine at one
// of the ends it is to reach now, settled (no decision of the pass changed
// the status or asked more than GetMachineStatus), or gone, and judges the
// world there.
func (r *shellRun) reached(rep pass.Report) bool {
	t := r.world.Truth()
	if r.want == endsGone {
		if t.Object.Name != "" || rep.End != pass.EndGone {
			return false
		}
		r.judgeGone(&t)
		return true
	}
	ph := t.Status.Phase
	if rep.End != pass.EndDone || r.passActive || !(ph == phase.Running && r.want&endsRunning != 0 || ph == phase.Failed && r.want&endsFailed != 0) {
		return false
	}
	if ph == phase.Running {
		r.judgeRunning(&t)
	}
	return true
}

// judgeRunning checks a machine that ended Running: one initialized
// instance, which its status and spec name, and its own node, registered,
// healthy, labelled with the machine's name and without the startup
// taint, which its node label and status name.
func (r *shellRun) judgeRunning(t *WorldTruth) {
	o, st := &t.Object, &t.Status
	if len(r.live) != 1 {
		r.fail(fmt.Sprintf("the machine is Running with %d live instances", len(r.live)), "")
		return
	}
	id := r.live[0]
	i := t.instance(id)
	var node *lifecycle.Node
	for k := range t.Nodes {
		if t.Nodes[k].ProviderID == id {
			node = &t.Nodes[k]
		}
	}
	var why string
	switch {
	case i == nil || !i.Initialized:
		why = "its instance " + id + " is not initialized"
	case st.ProviderID != id || o.ProviderID != id:
		why = fmt.Sprintf("its status names instance %q and its spec %q, not %s", st.ProviderID, o.ProviderID, id)
	case !o.Finalizer:
		why = "its object has no finalizer"
	case node == nil:
		why = "its instance has no node"
	case !Healthy(r.raw, o, node):
		why = "its node " + node.Name + " is not healthy"
	case node.Taints.Has(lifecycle.InstanceNotReady):
		why = "its node " + node.Name + " keeps the startup taint"
	case node.MachineName != o.Name:
		why = fmt.Sprintf("its node %s is labelled with machine %q", node.Name, node.MachineName)
	case o.NodeLabel != node.Name || st.NodeName != node.Name:
		why = fmt.Sprintf("its node label %q and status name node %q, not %s", o.NodeLabel, st.NodeName, node.Name)
	default:
		return
	}
	r.fail("the machine ended Running, but "+why, "")
}

// judgeGone checks a machine that is gone: nothing of it is left, but a
// node that neither the machine's node label nor its status ever named
// and no effect wrote: MCM leaves such a node behind (doc/mcm-rows.md,
// S5a), and so may the lifecycle, which cannot tell it from a node of an
// earlier machine of the same name.
func (r *shellRun) judgeGone(t *WorldTruth) {
	for _, n := range t.Nodes {
		if r.ours[n.ProviderID] && r.linked[n.Name] {
			r.fail(fmt.Sprintf("the machine is gone, its node %s is left", n.Name), "")
			return
		}
	}
	if t.Token {
		r.fail("the machine is gone, its bootstrap token is left", "")
	}
}

// sameStatus reports whether two statuses are equal, an empty slice or
// map being equal to nil.
func sameStatus(a, b *lifecycle.Status) bool {
	na, nb := *a, *b
	for _, s := range []*lifecycle.Status{&na, &nb} {
		if len(s.Conditions) == 0 {
			s.Conditions = nil
		}
		if len(s.Addresses) == 0 {
			s.Addresses = nil
		}
		if len(s.Metadata) == 0 {
			s.Metadata = nil
		}
	}
	return reflect.DeepEqual(na, nb)
}

// copyInput copies an input with the slices it holds, so that a later
// change of the shell's own copy does not show in it.
func copyInput(in *lifecycle.Input) lifecycle.Input {
	out := *in
	out.Node.Conditions = slices.Clone(in.Node.Conditions)
	out.Status.Conditions = slices.Clone(in.Status.Conditions)
	out.Status.Addresses = slices.Clone(in.Status.Addresses)
	out.Object.Overrides.NodeConditions = slices.Clone(in.Object.Overrides.NodeConditions)
	out.Outcome = nil
	return out
}

// objectLine renders the fields of an object the shell's writes set.
func objectLine(o *lifecycle.Object) string {
	s := fmt.Sprintf("finalizer=%t providerID=%q node-label=%q priority=%q", o.Finalizer, o.ProviderID, o.NodeLabel, o.Priority)
	if !o.DeletionTime.IsZero() {
		s += " deleting"
	}
	return s
}

// statusLine renders a status in one line.
func statusLine(st *lifecycle.Status) string {
	s := fmt.Sprintf("phase=%s stage=%s seq=%d attempt=%d", st.Phase.Label(), st.Stage, st.Seq, st.Attempt)
	if st.ProviderID != "" || st.NodeName != "" {
		s += fmt.Sprintf(" providerID=%q node=%q", st.ProviderID, st.NodeName)
	}
	if f := st.Flags.String(); f != "" {
		s += " flags=" + f
	}
	return s
}

// nodeLine renders a node in one line, "none" for the zero Node.
func nodeLine(n *lifecycle.Node) string {
	if !n.Found() {
		return "none"
	}
	return fmt.Sprintf("%s providerID=%q machine=%q ready=%t taints=%d volumes=%d", n.Name, n.ProviderID,
		n.MachineName, readyNode(n), n.Taints, n.VolumesAttached)
}

// observedLine renders an observation in one line.
func observedLine(in *lifecycle.Input) string {
	if in.Object.Name == "" {
		return "the machine is gone"
	}
	s := objectLine(&in.Object) + "; " + statusLine(&in.Status) + "; node " + nodeLine(&in.Node)
	if in.NodeReadFailed {
		s += " (unreadable)"
	}
	return s + fmt.Sprintf("; token=%t", in.TokenExists)
}

// describeInput renders an input over a few lines.
func describeInput(in *lifecycle.Input) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  now: %s\n", in.Now.Sub(Epoch))
	if in.Object.Name == "" {
		b.WriteString("  object: gone\n")
	} else {
		fmt.Fprintf(&b, "  object: %s uid=%s %s\n", in.Object.Name, in.Object.UID, objectLine(&in.Object))
	}
	fmt.Fprintf(&b, "  status: %s\n  node: %s", statusLine(&in.Status), nodeLine(&in.Node))
	if in.NodeReadFailed {
		b.WriteString(" (could not be read)")
	}
	fmt.Fprintf(&b, "\n  token=%t volume-attachments=%d predecessor-terminating=%t grant=%t", in.TokenExists,
		in.VolumeAttachments, in.PredecessorTerminating, in.Grant.Fail)
	if o := in.Outcome; o != nil {
		fmt.Fprintf(&b, "\n  outcome: op=%#x persist=%s ran=%d stopped=%s", uint64(o.OpID), o.Persist, o.Ran, o.Stopped)
		if o.Result.Method != driverapi.MethodNone {
			b.WriteString(" result: " + o.Result.Method.String() + " " + resultLine(&o.Result))
		}
	}
	return b.String()
}

// decisionLine renders a decision in one line: its rule, phase and stage,
// whether it changed the status, and its effects.
func decisionLine(d *lifecycle.Decision) string {
	s := fmt.Sprintf("%s: phase=%s stage=%s", d.Rule, d.Status.Phase.Label(), d.Status.Stage)
	if d.Changed {
		s += " (changed)"
	}
	if d.Effects.Len() > 0 {
		s += "; " + strings.Join(d.Lines(), ", ")
	}
	return s
}

// resultLine renders a driver result in one line.
func resultLine(res *driverapi.Result) string {
	s := "OK"
	switch {
	case res.Undecodable:
		s = fmt.Sprintf("undecodable %q", res.Message)
	case res.Code != driverapi.OK:
		s = fmt.Sprintf("%s %q", res.Code, res.Message)
	}
	if res.ProviderID != "" {
		s += " providerID=" + res.ProviderID
	}
	if res.NodeName != "" {
		s += " node=" + res.NodeName
	}
	return s
}

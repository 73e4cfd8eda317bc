package fleetsim

import (
	"fmt"
	"strings"
	"time"

	"github.com/purelifecycle/machine/lifecycle"
)

// Traces cost nothing in a run: a run is deterministic, so the shard of a
// machine with a violation is replayed with a tracer for that machine,
// which keeps a bounded ring of its last decisions and events, rendered as
// text, and stops at the violation.

// tracer records the trace of one machine during a replay.
type tracer struct {
	mi   int32 // the machine traced
	stop int   // the shard's violation number to stop at
	ring []string
	next int
	size int
	done bool
}

func newTracer(v Violation, size int) *tracer {
	return &tracer{mi: v.index, stop: v.seq, size: size}
}

func (t *tracer) add(s string) {
	if len(t.ring) < t.size {
		t.ring = append(t.ring, s)
		return
	}
	t.ring[t.next] = s
	t.next = (t.next + 1) % t.size
}

// lines returns the ring, oldest first.
func (t *tracer) lines() []string {
	out := make([]string, 0, len(t.ring))
	out = append(out, t.ring[t.next:]...)
	return append(out, t.ring[:t.next]...)
}

// tracing reports whether events of machine mi (-1: of the fleet) are traced.
func (w *shard) tracing(mi int32) bool { return w.tr != nil && (mi < 0 || w.tr.mi == mi) }

// note traces an event; call it behind tracing, which keeps the text from
// being built in a run.
func (w *shard) note(_ int32, what string) {
	w.tr.add(fmt.Sprintf("+%s event: %s", time.Duration(w.now-epoch), what))
}

func (w *shard) tracePass(mi int32, in *lifecycle.Input) {
	m := &w.machines[mi]
	var b strings.Builder
	fmt.Fprintf(&b, "+%s pass of %s (uid %s): phase=%s stage=%s", time.Duration(w.now-epoch), m.obj.Name, m.obj.UID,
		in.Status.Phase.Label(), in.Status.Stage)
	if !in.Object.DeletionTime.IsZero() {
		fmt.Fprintf(&b, " deleting since +%s", time.Duration(in.Object.DeletionTime.UnixNano()-epoch))
	}
	if in.Status.ProviderID != "" {
		fmt.Fprintf(&b, " instance=%s", in.Status.ProviderID)
	}
	switch {
	case in.NodeReadFailed:
		b.WriteString(" node=unreadable")
	case in.Node.Found():
		fmt.Fprintf(&b, " node=%s(providerID %s", in.Node.Name, in.Node.ProviderID)
		for _, c := range in.Node.Conditions {
			fmt.Fprintf(&b, " %s=%s", c.Type, c.Status)
		}
		if in.Node.Taints != 0 {
			fmt.Fprintf(&b, " taints=%d", in.Node.Taints)
		}
		traceNodeFlows(&b, &in.Node)
		b.WriteString(")")
	default:
		b.WriteString(" node=none")
	}
	if in.Grant.Fail {
		b.WriteString(" granted")
	}
	if in.Grant.Preserve {
		b.WriteString(" granted-preservation")
	}
	if in.Observer.Degraded {
		b.WriteString(" observer=degraded")
	}
	if in.Problem != lifecycle.ProblemNone {
		b.WriteString(" problem=" + in.Problem.String())
	}
	if in.Object.ForceDeletion {
		b.WriteString(" force-deletion")
	}
	fmt.Fprintf(&b, " desired: generation %d metadata %v", in.Object.UpdateGeneration, in.Object.Metadata)
	if in.Object.InPlaceGeneration != 0 || in.Status.InPlaceGeneration != 0 {
		fmt.Fprintf(&b, " in-place generation %d (at %d)", in.Object.InPlaceGeneration, in.Status.InPlaceGeneration)
	}
	if in.Object.Preserve != lifecycle.PreserveUnset {
		b.WriteString(" preserve=" + in.Object.Preserve.String())
	}
	if in.Status.PreserveUntil != 0 {
		fmt.Fprintf(&b, " preserved until +%s", time.Duration(int64(in.Status.PreserveUntil)-epoch))
	}
	w.tr.add(b.String())
}

// traceNodeFlows renders what node n shows of the in-place update and
// the preservation, nothing when it shows none.
func traceNodeFlows(b *strings.Builder, n *lifecycle.Node) {
	for _, c := range n.Conditions {
		if c.Type != lifecycle.ConditionReady {
			fmt.Fprintf(b, " %s.reason=%q", c.Type, c.Reason)
		}
	}
	if n.Update != 0 {
		fmt.Fprintf(b, " in-place-labels=%d", n.Update)
	}
	if n.Unschedulable {
		b.WriteString(" cordoned")
	}
	if n.Pods > 0 {
		fmt.Fprintf(b, " pods=%d", n.Pods)
	}
	if n.Preserve != lifecycle.PreserveUnset {
		b.WriteString(" preserve=" + n.Preserve.String())
	}
	if n.ScaleDownDisabled {
		b.WriteString(" scale-down-disabled")
	}
}

func (w *shard) traceDecision(step int, in *lifecycle.Input, d *lifecycle.Decision) {
	s := fmt.Sprintf("  step %d at +%s: %s", step+1, time.Duration(in.Now.UnixNano()-epoch),
		strings.ReplaceAll(d.String(), "\n", "\n    "))
	if d.Changed {
		s += "\n    last operation: " + lifecycle.Describe(&d.Status, in.Object.Name)
	}
	w.tr.add(s)
}

func (w *shard) traceOutcome(out *lifecycle.Outcome) {
	s := fmt.Sprintf("  outcome: ran %d of %d", out.Ran, out.OpID.Effects())
	if out.Stopped != lifecycle.WriteOK {
		s += fmt.Sprintf(", stopped: %s %q", out.Stopped, out.Error)
	}
	if r := &out.Result; r.Method != 0 {
		s += fmt.Sprintf(", %s answered %s", r.Method, r.Code)
		if r.Undecodable {
			s += " (undecodable)"
		}
		if r.ProviderID != "" {
			s += " providerID=" + r.ProviderID
		}
		if r.OwnerUID != "" {
			s += " owner=" + r.OwnerUID
		}
		if r.Metadata != nil {
			s += fmt.Sprintf(" metadata=%v", r.Metadata)
		}
		if r.Generation != 0 {
			s += fmt.Sprintf(" generation=%d", r.Generation)
		}
	}
	w.tr.add(s)
}

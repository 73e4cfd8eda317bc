package v1alpha1

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// ConditionReady is the type of the condition that is True while the
// machine is Running or Available and not being deleted.
const ConditionReady = "Ready"

// conditionsOf returns the machine's conditions as decision d leaves it
// with status st: Ready, and one condition per thing the machine waits or
// has waited for, True for what it waits for now and False for the rest.
// Conditions of other types, which others may have set, are kept, but for
// those of a type of the node's conditions st mirrors: an earlier version
// of the controller kept the node's conditions in status.conditions, and
// they are dropped once they are mirrored in status.nodeConditions.
func conditionsOf(m *Machine, st *lifecycle.Status, d Decided, now time.Time) []metav1.Condition {
	conds := slices.DeleteFunc(slices.Clone(m.Status.Conditions), func(c metav1.Condition) bool {
		return c.Type != ConditionReady && !strings.HasPrefix(c.Type, "WaitingFor") &&
			slices.ContainsFunc(st.Conditions, func(n lifecycle.Condition) bool { return n.Type == c.Type })
	})
	set := func(typ string, status metav1.ConditionStatus, message string) {
		meta.SetStatusCondition(&conds, metav1.Condition{Type: typ, Status: status, ObservedGeneration: m.Generation,
			LastTransitionTime: metav1.NewTime(now), Reason: ReasonOf(d.Rule), Message: message})
	}
	desc := Description(st, m.Name)
	ready := metav1.ConditionFalse
	if (st.Phase == phase.Running || st.Phase == phase.Available) && m.DeletionTimestamp == nil {
		ready = metav1.ConditionTrue
	}
	set(ConditionReady, ready, sentences(d.Rule.Text(), d.Detail, desc))

	current := WaitCondition(d.Wait.For)
	for i := range conds {
		c := &conds[i]
		if c.Type == current || !strings.HasPrefix(c.Type, "WaitingFor") {
			continue
		}
		if c.Status == metav1.ConditionFalse {
			// Ended earlier: its reason and message say how.
			c.ObservedGeneration = m.Generation
			continue
		}
		set(c.Type, metav1.ConditionFalse, sentences("no longer waiting", d.Rule.Text()))
	}
	if current != "" {
		set(current, metav1.ConditionTrue, waitMessage(d))
	}
	return conds
}

// waitMessage says what the machine waits for, by which rule, why when
// known, and until when.
func waitMessage(d Decided) string {
	msg := sentences(d.Rule.Text(), d.Detail)
	w := d.Wait
	if !w.Until.IsZero() {
		msg += " The wait ends at " + w.Until.Time().Format(time.RFC3339)
		if !w.Since.IsZero() && w.Until > w.Since {
			msg += ", " + RoundDuration(w.Until.Sub(w.Since)) + " after it began"
		}
		msg += "."
	}
	return msg
}

// waitOf returns the status' wait for decision d; nil when the machine
// waits for nothing.
func waitOf(d Decided) *Wait {
	if d.Wait.For == lifecycle.WaitNone {
		return nil
	}
	return &Wait{For: d.Wait.For.String(), Since: timeOf(d.Wait.Since), Until: timeOf(d.Wait.Until), Rule: d.Rule.String(),
		Detail: d.Detail}
}

func timeOf(s lifecycle.Stamp) *metav1.Time {
	if s.IsZero() {
		return nil
	}
	t := metav1.NewTime(s.Time().Truncate(time.Second))
	return &t
}

// Description returns the status' last operation for people: MCM's
// description of it, with the node conditions it names listed as
// "Type=Status (Reason)" instead of MCM's dump of Go structs, and the
// duration it names rounded to the second.
func Description(st *lifecycle.Status, machine string) string {
	op := st.LastOp
	op.Elapsed = op.Elapsed.Round(time.Second)
	args := lastop.Args{Machine: machine, Node: st.NodeName}
	if strings.Contains(op.Desc.Format(), "<conditions>") {
		args.Conditions = ConditionList(st.Conditions)
	}
	return op.Describe(args)
}

// ConditionList lists node conditions for people: "Ready=False
// (KubeletNotReady), MemoryPressure=False"; "none" for none.
func ConditionList(cs []lifecycle.Condition) string {
	if len(cs) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.Type + "=" + c.Status.String())
		if c.Reason != "" {
			b.WriteString(" (" + c.Reason + ")")
		}
	}
	return b.String()
}

// sentences joins texts as sentences: each starts with a capital letter
// and ends with a full stop; empty texts are left out.
func sentences(texts ...string) string {
	var out []string
	for _, t := range texts {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		t = strings.ToUpper(t[:1]) + t[1:]
		if !strings.HasSuffix(t, ".") {
			t += "."
		}
		out = append(out, t)
	}
	return strings.Join(out, " ")
}

// SameView reports whether s and o tell a person the same: the same
// observed generation, the same wait (what for, until when, and its
// detail) and the same conditions by type and status. A controller that
// decided without changing the lifecycle's status writes the status anyway
// when the view it would write is not the same as the stored one.
func SameView(s, o *MachineStatus) bool {
	if s.ObservedGeneration != o.ObservedGeneration || !sameWait(s.Wait, o.Wait) || len(s.Conditions) != len(o.Conditions) {
		return false
	}
	for _, c := range s.Conditions {
		oc := meta.FindStatusCondition(o.Conditions, c.Type)
		if oc == nil || oc.Status != c.Status {
			return false
		}
	}
	return true
}

func sameWait(a, b *Wait) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.For == b.For && sameTime(a.Until, b.Until) && a.Detail == b.Detail
}

// sameTime compares two optional times to the second, as the API keeps
// them.
func sameTime(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Unix() == b.Unix()
}

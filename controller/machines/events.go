package machines

import (
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/kubeshell"
	"github.com/purelifecycle/machine/lifecycle"
)

// What a machine's events and logs tell, and how often.
//
// Every rule that declares an event reason (lifecycle.Rule.Event) has it
// recorded on the machine when a decision of the rule is made:
//
//   - from the decision's KindEvent effect, for a decision that changes the
//     machine's status: the lifecycle emits one for every such decision
//     under a rule that declares an event (a phase change, a created
//     instance, a failed drain, a failed DeleteMachine, a foreign instance,
//     the end of a hot update, ...); the effect is carried out after the
//     status is saved, like every effect, and is the only record of it;
//   - by the reconciler, when it sees a decision that changes nothing and
//     carries no event (a problem with the machine or its class that
//     persists, pass after pass): at most once per machine and reason per
//     repeatInterval, so the problem is told without repeating it at every
//     requeue.
//
// Anomalies and refused inputs are recorded as Warning events too (see
// anomalies.go), at most once per machine and reason per repeatInterval.
// What a machine waits for at the end of a pass is logged at most once per
// machine and wait per repeatInterval, with the rule that decided it, so a
// log says why a machine does not move without repeating it at every
// requeue.
//
// Event notes are sentences: the rule's text and the status' last operation
// as v1alpha1.Description renders it (node conditions listed, not dumped
// as Go structs), cut to the events API's limit.

// repeatInterval is how often a repeated report of one machine (the same
// event reason of a decision that changed nothing, the same anomaly, the
// same wait) is recorded or logged at most.
const repeatInterval = 10 * time.Minute

// eventType returns the event type of rule r's event: Warning when the
// rule says the machine needs attention (lifecycle.Rule.Warning).
func eventType(r lifecycle.Rule) string {
	if r.Warning() {
		return corev1.EventTypeWarning
	}
	return corev1.EventTypeNormal
}

// event records a decision's KindEvent effect on the machine: reason
// Rule.Event(), note the rule's text and the description of st, the status
// the decision saved.
func (r *Reconciler) event(p *pass, st *lifecycle.Status, e lifecycle.Effect) {
	reason := e.Rule.Event()
	if reason == "" || p.gone {
		return
	}
	typ := corev1.EventTypeNormal
	if e.Warning {
		typ = corev1.EventTypeWarning
	}
	r.record(p, typ, reason, e.Rule, st)
}

// record records an event of the rule about the machine, with what keeps
// the machine from going on (problemDetail) and st's description in its
// note.
func (r *Reconciler) record(p *pass, typ, reason string, rule lifecycle.Rule, st *lifecycle.Status) {
	parts := []string{kubeshell.Sentence(rule.Text()), kubeshell.Sentence(problemDetail(p, rule)), kubeshell.Sentence(v1alpha1.Description(st, p.m.Name))}
	note := strings.Join(slices.DeleteFunc(parts, func(s string) bool { return s == "" }), " ")
	r.recorder.Eventf(p.m, nil, typ, reason, rule.String(), "%s", kubeshell.CutNote(note))
}

// problemDetail says, for a rule of a problem with the machine or its class,
// which one: the class or Secret that is missing or unreadable, the
// node template's fault, the class reference refused, the machine of
// another namespace that holds the name, or the machine that holds the
// instance or node it names. The rules' own texts ("the machine
// class or its secret is unavailable", "the machine failed validation") name
// none of them. "" for other rules.
func problemDetail(p *pass, rule lifecycle.Rule) string {
	switch rule {
	case lifecycle.RuleClassUnavailable, lifecycle.RuleClassNotReady, lifecycle.RuleInvalidNodeTemplate, lifecycle.RuleInvalidMachine:
	default:
		return ""
	}
	if rule == lifecycle.RuleInvalidMachine && p.nameHolder != "" {
		return "its name is held by the machine " + p.nameHolder + " of another namespace"
	}
	if rule == lifecycle.RuleInvalidMachine && p.instanceHolder != "" {
		return "the " + p.instanceWhat + " it names is held by the machine " + p.instanceHolder
	}
	if p.class != nil && p.class.err != nil {
		return p.class.err.Error()
	}
	return ""
}

// ruleEvent records the event of decision d's rule when d changes nothing
// and carries no event effect for it, at most once per machine and reason
// per repeatInterval (see the comment at the top). A decision that changes
// the status is told by the lifecycle's own event effect, or by none: it
// is never recorded here, so no event is recorded twice.
func (r *Reconciler) ruleEvent(p *pass, d *lifecycle.Decision) {
	reason := d.Rule.Event()
	if reason == "" || d.Changed || refusesInput(d.Rule) || carriesEvent(d, reason) {
		return
	}
	if (p.nameHolder != "" || p.instanceHolder != "") && (d.Rule == lifecycle.RuleInvalidMachine || d.Rule == lifecycle.RuleDeleteProblem) {
		// The machine waits for its name, or for the instance or node it
		// names: NameInUse or InstanceInUse says so (names.go), where the
		// rule's own text would call it invalid.
		return
	}
	if !r.repeats.allow(string(p.m.UID)+"/event/"+reason, r.now()) {
		return
	}
	r.record(p, eventType(d.Rule), reason, d.Rule, &d.Status)
}

// carriesEvent reports whether d has an event effect with that reason.
func carriesEvent(d *lifecycle.Decision, reason string) bool {
	for _, e := range d.Effects.Slice() {
		if e.Kind == lifecycle.KindEvent && e.Rule.Event() == reason {
			return true
		}
	}
	return false
}

// logWait logs what the machine waits for after decision d, and why, at
// most once per machine and wait per repeatInterval: only for a decision
// that ends its pass (lifecycle.Decision.Done), as the machine then waits
// until its requeue; a decision with effects is acting, not waiting.
func (r *Reconciler) logWait(p *pass, d *lifecycle.Decision) {
	w := d.Wait
	if w.For == lifecycle.WaitNone || !d.Done() || !r.repeats.allow(string(p.m.UID)+"/wait/"+w.For.String(), r.now()) {
		return
	}
	kv := []any{"waitingFor", w.For.String(), "rule", d.Rule.String(), "phase", d.Status.Phase.String()}
	if !w.Since.IsZero() {
		kv = append(kv, "since", w.Since.Time().Format(time.RFC3339))
	}
	if !w.Until.IsZero() {
		kv = append(kv, "until", w.Until.Time().Format(time.RFC3339))
	}
	p.log.Info("machine waits: "+d.Rule.Text(), kv...)
}

// repeatLimiter remembers when each key was last allowed, so a report is
// repeated at most once per repeatInterval. The zero value is ready; it is
// safe for concurrent use. Keys whose interval has passed are forgotten as
// the map grows, so it holds about the keys of the last interval.
type repeatLimiter struct {
	mu      sync.Mutex
	last    map[string]time.Time
	sweepAt int
}

// allow reports whether the key may be reported at now, and if so
// remembers now for it. A clock that went back allows it.
func (l *repeatLimiter) allow(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.last[key]; ok && !now.Before(t) && now.Sub(t) < repeatInterval {
		return false
	}
	if l.last == nil {
		l.last = map[string]time.Time{}
	}
	l.last[key] = now
	if len(l.last) > l.sweepAt {
		for k, t := range l.last {
			if now.Sub(t) >= repeatInterval {
				delete(l.last, k)
			}
		}
		l.sweepAt = max(1024, 2*len(l.last))
	}
	return true
}

package machines

import (
	"math/bits"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/purelifecycle/machine/lifecycle"
)

// Operators see every irregular input the lifecycle tolerated or refused.
// For each anomaly bit of a decision (lifecycle.Anomalies) the reconciler
// records a Warning event on the machine, with the reason anomalyReport
// names; for a decision whose rule refused the input (an "input." rule) it
// records a Warning event with the rule's own reason, or InputRefused for
// a rule without one. Each is recorded at most once per pass, and at most
// once per machine and reason per repeatInterval (events.go). The metrics
// count the same things without de-duplication: every anomaly bit of every
// decision in purelifecycle_anomalies_total, and every refused input in
// purelifecycle_decisions_total under its input rule.

// ReasonInputRefused is the reason of the event recorded when a decision's
// rule refused the input (a rule whose identifier starts with "input.")
// and declares no event reason of its own.
const ReasonInputRefused = "InputRefused"

// reasonUnknownAnomaly is the reason of the event recorded for an anomaly
// bit this controller does not know yet.
const reasonUnknownAnomaly = "LifecycleAnomaly"

// anomalyBits is how many bits lifecycle.Anomalies holds.
const anomalyBits = 16

// anomalyReport returns the event reason that reports the single anomaly
// bit a, and a short sentence saying what the lifecycle did about it.
func anomalyReport(a lifecycle.Anomalies) (reason, text string) {
	switch a {
	case lifecycle.AnomalyClockBehind:
		return "ClockBehind", "the clock is before a time the decision measures from; the elapsed time was taken as zero"
	case lifecycle.AnomalyStaleOutcome:
		return "StaleOutcomeRefused", "a late or duplicate outcome was refused"
	case lifecycle.AnomalyBadOutcome:
		return "OutcomeRefused", "an outcome that contradicts the operation it reports on was refused"
	case lifecycle.AnomalyUnknownCode:
		return "UnknownDriverCode", "the driver answered with an unknown code; it was treated as undecodable"
	case lifecycle.AnomalyEmptyIdentity:
		return "DriverIdentityEmpty", "the driver answered OK without a providerID or node name"
	case lifecycle.AnomalyEffectsFull:
		return "EffectsDeferred", "an effect did not fit in the decision; it is emitted again on the next pass"
	case lifecycle.AnomalyUndeclaredTransition:
		return "TransitionRefused", "a phase change the phase table does not declare was refused"
	case lifecycle.AnomalyForeignNode:
		return "ForeignNodeIgnored", "the node found for the machine carries another instance's providerID; it was ignored"
	case lifecycle.AnomalyMissingStamp:
		return "StatusStampMissing", "the status lacked the time its phase began; it was set to now"
	case lifecycle.AnomalyStampClamped:
		return "StatusStampClamped", "a time of the status lay after now; it was set to now and saved"
	case lifecycle.AnomalyAdopted:
		return "StatusAdopted", "the status lacked the lifecycle's own record; the machine was taken over from its status and object"
	}
	return reasonUnknownAnomaly, "the lifecycle tolerated an irregular input"
}

// anomalyName returns the name of the single anomaly bit a, as
// lifecycle.Anomalies.String gives it, or "bit-N" for a bit it does not
// name.
func anomalyName(a lifecycle.Anomalies) string {
	if s := a.String(); s != "" {
		return s
	}
	return "bit-" + strconv.Itoa(bits.TrailingZeros16(uint16(a)))
}

// forEachAnomaly calls fn with each bit set in a, lowest first.
func forEachAnomaly(a lifecycle.Anomalies, fn func(bit lifecycle.Anomalies)) {
	for ; a != 0; a &= a - 1 {
		fn(a & -a)
	}
}

// refusesInput reports whether rule r refused the input: its identifier
// starts with "input.".
func refusesInput(r lifecycle.Rule) bool { return strings.HasPrefix(r.String(), "input.") }

// report records what decision d tells about the machine: the Warning
// events of its anomalies and of a refused input, the event of its rule
// when the decision carries none (events.go), and what the machine waits
// for in the log.
func (r *Reconciler) report(p *pass, d *lifecycle.Decision) {
	if p.gone {
		return
	}
	uid := string(p.m.UID)
	forEachAnomaly(d.Anomalies&^p.reported, func(bit lifecycle.Anomalies) {
		p.reported |= bit
		reason, text := anomalyReport(bit)
		if !r.repeats.allow(uid+"/anomaly/"+reason, r.now()) {
			return
		}
		r.recorder.Eventf(p.m, nil, corev1.EventTypeWarning, reason, d.Rule.String(),
			"%s: %s (rule %s: %s)", anomalyName(bit), text, d.Rule.String(), d.Rule.Text())
	})
	if refusesInput(d.Rule) && !p.refused {
		p.refused = true
		reason := d.Rule.Event()
		if reason == "" {
			reason = ReasonInputRefused
		}
		if r.repeats.allow(uid+"/refused/"+reason, r.now()) {
			r.recorder.Eventf(p.m, nil, corev1.EventTypeWarning, reason, d.Rule.String(),
				"rule %s: %s; nothing was done", d.Rule.String(), d.Rule.Text())
		}
	}
	r.ruleEvent(p, d)
	r.logWait(p, d)
}

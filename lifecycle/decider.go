package lifecycle

import (
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// The decider's bookkeeping: every flow changes the status, emits effects
// and sets requeues through these methods, so phase edges, stamps, the
// sequence number, op IDs and waits are kept in one place.

// rule names the rule that decided, unless an outcome's row was pinned.
func (x *decider) rule(r Rule) {
	if x.row == RuleNone {
		x.d.Rule = r
	}
}

// pin names the row an outcome decided, or the change preservation made
// before the phase's flow; the decision may go on with the next stages or
// the flow, whose rules then only name the op (act). The first pin of a
// decision wins.
func (x *decider) pin(r Rule) {
	if x.row == RuleNone {
		x.d.Rule = r
		x.row = r
	}
}

// act names the rule whose effects the decision carries.
func (x *decider) act(r Rule) {
	x.opRule = r
	x.rule(r)
}

func (x *decider) anomaly(a Anomalies) { x.d.Anomalies |= a }

// The requeue is the earliest wake-up any part of the decision asks for:
// each asks with wake (or one of the helpers below), and the seal writes
// the earliest into the decision, with the period it was derived from.

// wake asks to be stepped again after delay, which derives from period
// (the same, or period with backoff or jitter); the earliest ask wins. A
// delay that is not positive asks nothing.
func (x *decider) wake(delay, period time.Duration) {
	if delay > 0 && (x.wakeIn == 0 || delay < x.wakeIn) {
		x.wakeIn, x.wakePeriod = delay, period
	}
}

// requeue asks to be stepped again after exactly period.
func (x *decider) requeue(period time.Duration) { x.wake(period, period) }

// backoff asks to be stepped again after the n-th consecutive failure of a
// sub-flow whose base period is base: exactly base for the first failure,
// then bounded exponential backoff with the machine's deterministic jitter.
// It returns the delay, which the failure's retry time records
// (retryLater).
func (x *decider) backoff(base time.Duration, failures uint8) time.Duration {
	return x.backoffTo(base, 0, failures)
}

// backoffTo is backoff bounded by limit (0 for the retry policy's bound).
func (x *decider) backoffTo(base, limit time.Duration, failures uint8) time.Duration {
	delay := x.cfg.Retry.Backoff(base, limit, uint32(failures), x.in.Object.UID)
	x.wake(delay, base)
	return delay
}

// resync asks for the Long requeue of a machine with nothing to do, spread
// by the machine's deterministic jitter so a fleet does not resync at once.
func (x *decider) resync() {
	x.wake(x.uidHash().Resync(x.cfg.Retry.JitterPercent), retry.Long)
}

// uidHash returns the machine's UID hashed for its jitter: as the status
// keeps it, or hashed now when it keeps none.
func (x *decider) uidHash() retry.KeyHash {
	if h := x.st.UIDHash; h != 0 {
		return h
	}
	return retry.HashKey(x.in.Object.UID)
}

// keepUIDHash records the UID's hash in a status the decision changes and
// saves anyway, so the steps after it need not hash the UID.
func (x *decider) keepUIDHash() {
	if x.st.UIDHash == 0 && x.flowed {
		x.st.UIDHash = retry.HashKey(x.in.Object.UID)
	}
}

// put appends an effect of kind k and returns it, for the caller to set
// its other fields: put zeroes the slot, which may still hold an effect of
// the previous decision (see Decision.reset). Filling the slot in place,
// rather than passing an Effect by value, spares copying 80 bytes twice
// per effect. When the list is full, put records AnomalyEffectsFull
// and returns a scratch effect that is dropped (allocated: no decision of
// the flows comes near the limit, and a scratch slot in the decider would
// be zeroed at every step).
func (x *decider) put(k Kind) *Effect {
	e := &x.d.Effects
	if int(e.n) >= MaxEffects {
		x.anomaly(AnomalyEffectsFull)
		return new(Effect)
	}
	p := &e.list[e.n]
	e.n++
	*p = Effect{Kind: k} // the slot may hold an effect of the previous decision
	return p
}

// nodeEffect appends an effect on a node.
func (x *decider) nodeEffect(k Kind, node, key, value string) {
	e := x.put(k)
	e.Node, e.Key, e.Value = node, key, value
}

// drainEffect appends a round of the drain of node.
func (x *decider) drainEffect(node string, force bool) {
	e := x.put(KindDrain)
	e.Node, e.Force = node, force
}

// event reports a change of the machine as a Kubernetes event. Only
// decisions that change the status emit events: a decision whose effects
// ran is followed by a fresh one, which must not repeat them. A decision
// that changes the status under a rule that declares an event and emitted
// none reports it at the seal (ruleEvent).
func (x *decider) event(r Rule, warning bool) {
	e := x.put(KindEvent)
	e.Rule, e.Warning = r, warning
	x.evented = true
}

// ruleEvent reports the decision's rule as an event when the rule declares
// one, the decision changes the status and reported no event of its own;
// it comes first among the effects, so a driver call stays the last. The
// common decision, which changes nothing or reported its event, costs no
// call: ruleEvent inlines, and reportRule decides the rest.
func (x *decider) ruleEvent() {
	if x.changed && !x.evented {
		x.reportRule()
	}
}

// reportRule reports the decision's rule as the event of a decision that
// changes the status and reported none, when the rule declares one.
func (x *decider) reportRule() {
	r := x.d.Rule
	if !r.Valid() || ruleSpecs[r].event == "" {
		return
	}
	ev := [1]Effect{{Kind: KindEvent, Rule: r, Warning: ruleSpecs[r].warn}}
	if !x.d.Effects.prepend(ev[:]) {
		x.anomaly(AnomalyEffectsFull)
	}
}

// call emits the driver call; it is always the last effect.
func (x *decider) call(c driverapi.Call) {
	x.d.Call = c
	x.put(KindCallDriver)
}

// ref names the machine and its recorded instance for a driver call.
func (x *decider) ref() driverapi.MachineRef {
	o, st := &x.in.Object, x.st
	pid := st.ProviderID
	if pid == "" {
		pid = o.ProviderID
	}
	return driverapi.MachineRef{Name: o.Name, UID: o.UID, ProviderID: pid, NodeName: st.NodeName}
}

// become moves the machine to phase p, recording op as its LastOperation
// and reporting the change as an event with rule r's reason: a warning for
// a phase that needs attention (CrashLoopBackOff, Unknown, Failed,
// InPlaceUpdateFailed). What a
// phase entails besides is written here once: a Failed or Terminating
// machine's bootstrap token is deleted, a machine becoming Failed whose
// preservation is asked is preserved, and the drain of a kept node ends
// with the phase it belongs to. It reports false, changing
// nothing, when the phase table refuses the change (setPhase); staying in
// the phase records op and reports it again.
func (x *decider) become(p phase.Phase, r Rule, op *lastop.Operation) bool {
	from := x.st.Phase
	if !x.setPhase(p) {
		return false
	}
	if from != p {
		x.st.LastOp = *op // the phase change is a change already
	} else {
		x.setOp(*op)
	}
	x.event(r, warnPhases>>p&1 != 0)
	if p == phase.Failed || p == phase.Terminating {
		x.dropToken()
		if p == phase.Failed {
			x.preserveOnFailure()
		}
	} else if from == phase.Failed {
		// A new spell of Failed may be auto-preserved again, and its
		// node is drained again.
		set(x, &x.st.Flags, x.st.Flags&^(FlagAutoPreserved|FlagPreserveDrained))
	}
	if s := x.st.Stage; s >= StageInPlaceDrain && (s == StageInPlaceDrain && p != phase.Running || s == StagePreserveDrain && p != phase.Failed) {
		// The drain before an in-place update belongs to a Running
		// machine, the drain of a preserved node to a Failed one: it is
		// over, done or abandoned.
		x.endKeepDrain()
	}
	return true
}

// warnPhases are the phases that need attention, whose changes are
// reported as warnings, as bits by phase.
const warnPhases = 1<<phase.CrashLoopBackOff | 1<<phase.Unknown | 1<<phase.Failed | 1<<phase.InPlaceUpdateFailed

// setPhase moves the machine to phase p if the phase table declares the
// change; an undeclared change is refused and reported. Only become calls
// it.
func (x *decider) setPhase(p phase.Phase) bool {
	st := x.st
	if st.Phase == p {
		return true
	}
	if !phase.Allowed(st.Phase, p) {
		x.anomaly(AnomalyUndeclaredTransition)
		return false
	}
	st.Phase = p
	st.PhaseSince = x.now
	x.changed = true
	return true
}

// setStage moves the program counter; a new stage starts without a retry
// time.
func (x *decider) setStage(s Stage) {
	if x.st.Stage != s {
		x.st.Stage = s
		x.st.StageSince = x.now
		x.st.RetryAfter = 0
		x.changed = true
	}
}

// setOp records the last operation. A detail from outside (a provider's
// message, a write's error) is bounded by its caller with boundDetail.
func (x *decider) setOp(op lastop.Operation) {
	if x.st.LastOp != op {
		x.st.LastOp = op
		x.changed = true
	}
}

// set writes v into a status field, recording a change when it differs.
func set[T comparable](x *decider, field *T, v T) {
	if *field != v {
		*field = v
		x.changed = true
	}
}

// holdRetry reports whether the current stage must wait for its retry time
// (Status.RetryAfter), and if so decides the wait under rule r. A retry time
// further ahead than any backoff could set means the clock went back; it is
// then ignored.
func (x *decider) holdRetry(r Rule) bool {
	at := x.st.RetryAfter
	if at == 0 || at <= x.now {
		return false
	}
	left := at.Sub(x.now)
	if left > x.maxBackoff() {
		x.anomaly(AnomalyClockBehind)
		return false
	}
	x.rule(r)
	x.requeue(left)
	return true
}

// maxBackoff bounds any retry time a failure sets: twice the longest period
// the retry policy can give, which covers its jitter.
func (x *decider) maxBackoff() time.Duration {
	p := x.cfg.Retry
	m := retry.Long
	if p.MaxBackoff > m {
		m = p.MaxBackoff
	}
	if p.ResourceExhausted > m {
		m = p.ResourceExhausted
	}
	return 2 * m
}

// retryLater records a failure's retry time, delay from now (what backoff
// returned).
func (x *decider) retryLater(delay time.Duration) {
	set(x, &x.st.RetryAfter, x.now.Add(delay))
}

// node returns the observed node when it is this machine's. A node that
// carries the providerID of another instance (a leftover of an earlier
// machine with the same name, found by its machine-name label) is not, and
// is neither joined, drained nor deleted.
func (x *decider) node() *Node {
	n := &x.in.Node
	if n.Name == "" { // !n.Found(), without copying the Node
		return nil
	}
	if n.ProviderID != x.st.ProviderID && n.ProviderID != "" && x.st.ProviderID != "" {
		x.anomaly(AnomalyForeignNode)
		return nil
	}
	return n
}

// dropToken deletes the bootstrap token of a machine that will never join
// (Failed, or being deleted) while it still exists; MCM leaves it until it
// expires.
func (x *decider) dropToken() {
	if x.in.TokenExists && !x.cfg.NoTargetCluster {
		x.put(KindDeleteBootstrapToken).Value = x.in.Object.Name
	}
}

// elapsed returns now - since, clamped at zero for a clock behind since.
func (x *decider) elapsed(since Stamp) time.Duration {
	if since == 0 {
		return 0
	}
	e := x.now.Sub(since)
	if e < 0 {
		x.anomaly(AnomalyClockBehind)
		return 0
	}
	return e
}

// deadlineBase is when a timeout measured from since starts counting: never
// before the observer was last healthy again (MCM issues 680 and 679,
// https://github.com/gardener/machine-controller-manager/issues/680 and
// https://github.com/gardener/machine-controller-manager/issues/679).
func (x *decider) deadlineBase(since Stamp) Stamp {
	if ob := &x.in.Observer; !ob.Degraded {
		return later(since, x.observed)
	}
	return since
}

// expired reports whether a timeout counted from since has passed: from
// the instant it ends (MCM compares strictly, a nanosecond later), so a
// reconcile requeued to a deadline notices it. Never while the observer is
// degraded.
func (x *decider) expired(since Stamp, timeout time.Duration) bool {
	if x.in.Observer.Degraded {
		return false
	}
	return x.elapsed(x.deadlineBase(since)) >= timeout
}

// classify turns a driver result into its code and retry class, treating a
// code outside 0..17 as undecodable.
func (x *decider) classify(res *driverapi.Result) (driverapi.Code, retry.Class) {
	code := res.Code
	if !code.Valid() {
		x.anomaly(AnomalyUnknownCode)
		return driverapi.Unknown, retry.ClassUndecodable
	}
	switch {
	case res.Undecodable:
		return driverapi.Unknown, retry.ClassUndecodable
	case code == driverapi.OK:
		return code, retry.ClassNone
	case code == driverapi.ResourceExhausted:
		return code, retry.ClassExhausted
	case code.Transient():
		return code, retry.ClassTransient
	}
	return code, retry.ClassPermanent
}

package lifecycle

import (
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// Step decides what to do next for one machine: a pure function of the
// configuration and the input. It never reads a clock, performs I/O, panics
// or changes its input; the same input gives the same decision, bit for bit.
// The package doc lists what the caller must do with the decision.
//
// Step allocates nothing on the common paths. [StepInto] is the same
// function writing into a caller-owned Decision, for callers that step many
// machines and want to avoid copying the values in and out.
func Step(cfg Config, in Input) (d Decision) {
	// d starts as the zero Decision, so only the status needs setting.
	d.Status = in.Status
	pre := derive(&cfg)
	decide(&d, &cfg, &in, &pre)
	return d
}

// StepInto is [Step] writing its decision into d, with a configuration
// checked once beforehand ([Config.Check]). It overwrites d entirely: d may
// hold the zero Decision or the decision of a previous step, and the caller
// may reuse one Decision for many machines (it may change the decision's
// Requeue, as examples/shell does, but not its effects or call). It reads
// cfg and in and never writes them; d must not alias in. StepInto(&d, &k,
// &in) leaves in d what Step(k.Config(), in) returns.
//
// StepInto is the cheaper of the two: it neither copies the values in and
// out nor clears the whole Decision, and it does not validate the
// configuration again at every step.
func StepInto(d *Decision, cfg *Checked, in *Input) {
	used := d.reset(&in.Status)
	decide(d, &cfg.cfg, in, &cfg.pre)
	d.Effects.clearFrom(used)
}

// reset makes d the zero Decision holding *st, but
// for the effect slots the previous decision used: it returns their number,
// and the caller clears those the new decision did not overwrite
// (Effects.clearFrom). Slots past them are zero already: Effects' storage
// is only ever written through put and prepend, below its length, and put
// writes a whole slot.
func (d *Decision) reset(st *Status) (used int) {
	used = int(d.Effects.n)
	d.Effects.n = 0
	d.Status = *st
	d.Changed = false
	if d.Call.Method != driverapi.MethodNone {
		// Every call a step writes has a method (see decider.call), so a
		// Call without one is zero already.
		d.Call = driverapi.Call{}
	}
	d.OpID = 0
	d.Requeue, d.Period = 0, 0
	d.Rule = RuleNone
	d.Wait = Wait{}
	d.Anomalies = 0
	return used
}

// decide runs one step on d, which holds the zero Decision but for its
// Status, a copy of in.Status. pre is what derive(cfg) returns.
func decide(d *Decision, cfg *Config, in *Input, pre *derived) {
	// Field by field: a composite literal is built in a temporary and
	// copied, and reading it back in 16-byte pieces right after writing
	// it in 8-byte ones stalls store forwarding (about a tenth of a step).
	var x decider
	x.cfg, x.in, x.o, x.d, x.st = cfg, in, &in.Object, d, &d.Status
	x.pre = pre
	// The input's times, read once: stampIn converts those within the
	// years a Stamp holds, exactly and cheaply; the zero time and the rest
	// go through edge, which flags those out of range.
	var ok bool
	if x.now, ok = stampIn(in.Now); !ok {
		x.now = x.edge(in.Now)
	}
	if x.created, ok = stampIn(in.Object.CreationTime); !ok {
		x.created = x.edge(in.Object.CreationTime)
	}
	if !in.Object.DeletionTime.IsZero() { // usually zero
		if x.deleted, ok = stampIn(in.Object.DeletionTime); !ok {
			x.deleted = x.edge(in.Object.DeletionTime)
		}
		if x.deleted == 0 { // the Unix epoch itself: still deleting
			x.deleted = 1
		}
	}
	if !in.Observer.Since.IsZero() {
		if x.observed, ok = stampIn(in.Observer.Since); !ok {
			x.observed = x.edge(in.Observer.Since)
		}
	}
	x.creationFlow = d.Status.Phase == phase.None || d.Status.Phase == phase.CrashLoopBackOff

	// Validate the input, decide from the outcome (absorb, dispatch) or
	// afresh, and seal.
	o, st := &in.Object, &d.Status
	switch {
	case o.Name == "" && o.UID == "":
		x.gone = true
		x.rule(RuleNoMachine)
	case o.Name == "" || o.UID == "":
		x.rule(RuleInvalidObject)
		x.requeue(retry.Long)
	case !pre.valid:
		x.rule(RuleInvalidConfig)
		x.requeue(retry.Long)
	case x.now == 0:
		x.rule(RuleZeroNow)
		x.requeue(retry.Short)
	case !st.Phase.Valid() || !st.Stage.Valid() || st.Flags&^flagsKnown != 0:
		x.rule(RuleInvalidStatus)
		x.requeue(retry.Long)
	case x.outOfRange():
		x.rule(RuleInputOutOfRange)
		x.requeue(retry.Long)
	default:
		x.flowed = true
		x.clampStamps()
		if in.Outcome != nil {
			x.dispatch(x.absorb())
		} else {
			x.decideFresh()
		}
	}

	x.seal()
}

// seal finishes the decision: the object ensure-effects first, the
// sequence number, the op ID, a positive requeue, and what the machine
// waits for.
func (x *decider) seal() {
	d, st := x.d, x.st
	if x.ensures() {
		if needs := x.objectNeeds(); needs != 0 {
			x.ensureObject(needs)
		}
	}
	x.ruleEvent()
	if x.changed {
		d.Status.Seq++
		d.Changed = true
		x.keepUIDHash()
	}
	if n := d.Effects.Len(); n > 0 {
		r := x.opRule
		if r == RuleNone {
			r = d.Rule
		}
		d.OpID = newOpID(d.Status.Seq, r, n)
	}
	if x.gone {
		return
	}
	if x.wakeIn <= 0 {
		// Every pass ends with a positive requeue; a path that forgot one
		// gets the short period rather than being forgotten.
		x.requeue(retry.Short)
	}
	if x.flowed && !waitsForNothing(st.Phase, st.Stage, x.deleted != 0, st.RetryAfter, x.now, x.in.Observer.Degraded, x.in.Problem) {
		x.decideWait()
	}
	d.Requeue, d.Period = x.wakeIn, x.wakePeriod
}

// decider holds one step's inputs and the decision being built. Every
// transition of every flow goes through its methods, so the bookkeeping
// (phase table, stamps, sequence, op IDs, requeue) lives in one place.
type decider struct {
	// waitFacts holds the status (st), the object (o), the input (in) and
	// the stamps of the object's creation and deletion times and of the
	// observer's Since (created, deleted, observed), read once; the wait
	// rule reads them where they are.
	waitFacts
	cfg     *Config
	d       *Decision
	now     Stamp
	changed bool
	gone    bool
	// row is the row an outcome decided (pin), which names the decision;
	// rules named after it name only the action the decision goes on with
	// (opRule). RuleNone while no row is pinned.
	row Rule
	// opRule is the rule whose effects the decision carries; the outcome
	// that reports them is handled by it.
	opRule Rule
	// wakeIn is the earliest requeue the decision asked for (0: none yet),
	// wakePeriod the period it derives from (see wake).
	wakeIn, wakePeriod time.Duration
	// becameRunning: this decision made the machine Running.
	becameRunning bool
	// evented: the decision reports an event of its own.
	evented bool
	// creationFlow: the step ran the creation flow, the machine having no
	// phase or being in CrashLoopBackOff when it began. MCM writes the
	// priority annotation there only.
	creationFlow bool
	// badTime: a time of the input lies outside the years a Stamp holds.
	badTime bool
	// flowed: the input was valid and the flows decided.
	flowed bool
	// unsaved: the outcome reports that the previous decision's status or
	// writes failed; the next decision, made from the saved status, ensures
	// the object.
	unsaved bool
	// pre is derived from cfg: by Step at every step, by Config.Check once
	// for StepInto.
	pre *derived
}

// edge is StampOf of a time stampIn could not convert exactly: the zero
// time, one of the extreme seconds, or one out of range, which it flags.
func (x *decider) edge(t time.Time) Stamp {
	s := stampOfEdge(t)
	if s == minStamp || s == maxStamp {
		x.badTime = true
	}
	return s
}

// outOfRange reports whether a time of the input lies outside the years a
// Stamp holds (StampOf saturated it), or the machine watches more than
// MaxNodeConditions condition types.
func (x *decider) outOfRange() bool {
	// A per-machine timeout that is not positive means the Config's, and
	// one above MaxTimeout only puts its deadline far ahead (stamps
	// saturate): neither is refused.
	return x.badTime || len(x.in.Object.Overrides.NodeConditions) > MaxNodeConditions
}

// clampStamps sets every stamp of the status that lies after Now to Now
// (AnomalyStampClamped). Only a clock can put a stamp there: a step whose
// clock was ahead wrote it, or this step's clock is behind. Left alone, a
// stamp hours ahead would hold every deadline counted from it until the
// clock caught up; clamped and saved, the deadline counts from Now. A retry
// time lies ahead by design, so only one further ahead than any backoff
// sets is clamped, and so does CreationFrom while the machine waits for its
// predecessor, so only one beyond that wait's bound is.
func (x *decider) clampStamps() {
	st, now := x.st, x.now
	if st.PhaseSince <= now && st.StageSince <= now && st.MetadataObserved <= now && st.MetadataSince <= now &&
		st.RetryAfter <= now && st.CreationFrom <= now {
		return // the common case: every stamp at or before Now
	}
	clamp := func(s *Stamp) {
		if *s > now {
			*s = now
			x.changed = true
			x.anomaly(AnomalyStampClamped)
		}
	}
	clamp(&st.PhaseSince)
	clamp(&st.StageSince)
	clamp(&st.MetadataObserved)
	clamp(&st.MetadataSince)
	if st.RetryAfter > now && st.RetryAfter.Sub(now) > x.maxBackoff() {
		clamp(&st.RetryAfter)
	}
	if st.CreationFrom > now && st.CreationFrom > x.predecessorBound(x.cfg) {
		// While a machine waits for its predecessor, CreationFrom is the
		// wait's bound, ahead by design; beyond it, only a clock put it.
		clamp(&st.CreationFrom)
	}
}

// dispatch decides what the machine does next after an outcome: the action
// the outcome's row leads to (goOn, absorb.go), or a fresh decision from
// the status (nextFresh, decideFresh), as for a step without an outcome.
func (x *decider) dispatch(n next) {
	switch n.action() {
	case nextDone:
	case nextFresh:
		x.decideFresh()
	default:
		x.goOn(n)
	}
}

// decideFresh is the top of a fresh decision (MCM's dispatch rows D1-D10,
// doc/mcm-rows.md): deletion, checked here once; for a machine not being
// deleted, the freeze, problems, then the flow of the machine's phase.
func (x *decider) decideFresh() {
	if x.deleting() {
		x.delete()
		return
	}
	if x.in.Observer.Degraded {
		x.rule(RuleFrozen)
		x.requeue(retry.Long)
		return
	}
	if x.in.Problem != ProblemNone {
		x.problem()
		return
	}
	st := x.st
	if st.Flags.Has(FlagStaleInstance) && st.ProviderID == "" {
		// Nothing names the stale instance any more: the flag is void.
		set(x, &st.Flags, st.Flags&^FlagStaleInstance)
	}
	if st.PhaseSince == 0 && st.Phase != phase.None {
		// A clock every deadline of the phase counts from; a status without
		// it (adopted, or damaged) starts it now rather than never or at
		// once.
		x.anomaly(AnomalyMissingStamp)
		set(x, &st.PhaseSince, x.now)
	}
	if st.Stage.ofCreation() && !x.inCreation() && st.Phase != phase.Failed {
		// Only a machine being created (or Failed by its creation timeout)
		// has a creation stage; anything else is void.
		x.setStage(StageNone)
	}
	if x.inCreation() && st.Stage == StageNone && st.ProviderID != "" {
		// Being created, its instance named, no stage: MCM's machine after
		// its first creation pass or a failed initialization, or the
		// lifecycle's own after a lost write of its stage. The lookup
		// moves it on (an instance found settles it, one not initialized
		// is initialized); after a failed initialization it is
		// initialized again, whatever the lookup says, as the lifecycle's
		// own machines are from their stage.
		x.anomaly(AnomalyAdopted)
		if st.Phase == phase.CrashLoopBackOff && st.LastOp.Desc == lastop.DescInitFailed {
			x.setStage(StageInitializing)
		}
	}
	if x.mayPreserve() && x.preservation() {
		return
	}
	switch {
	case st.Flags.Has(FlagStaleInstance):
		x.discardStale()
	case st.Phase == phase.Failed:
		x.health()
	case st.Phase == phase.None, st.Phase == phase.CrashLoopBackOff:
		x.create()
	case st.Phase == phase.Available && st.ProviderID != "", st.Phase == phase.Terminating:
		// Available has no node to watch (D10). Terminating without a
		// deletion time is a machine its owner is about to delete.
		x.idle()
	case st.ProviderID == "":
		// A machine past creation without a recorded instance, adopted
		// from elsewhere (D9).
		x.lookUpIdentity()
	default:
		x.health()
	}
}

// lookUpIdentity records the instance of a machine past creation whose
// status names none: from spec.providerID, else from its node, and goes on
// with health. Only when neither names one is the provider asked (D9, A7,
// A10); a machine past creation is never created again.
func (x *decider) lookUpIdentity() {
	o, st := &x.in.Object, x.st
	pid, node := o.ProviderID, o.NodeLabel
	if pid == "" && x.in.Node.Found() && x.in.Node.ProviderID != "" {
		pid, node = x.in.Node.ProviderID, x.in.Node.Name
	}
	if pid == "" {
		if at := st.RetryAfter; at > x.now && at.Sub(x.now) <= x.maxBackoff() {
			// Looked up lately: health decides until the next lookup.
			x.pastCreation()
			return
		}
		x.create()
		return
	}
	x.anomaly(AnomalyAdopted)
	x.pin(RuleCreateRecorded)
	set(x, &st.ProviderID, pid)
	if st.NodeName == "" {
		set(x, &st.NodeName, node)
	}
	x.pastCreation()
}

// pastCreation decides for a machine past creation once its instance is
// settled: health, or, for an Available machine, which has no node to
// watch, nothing until the next resync (D10).
func (x *decider) pastCreation() {
	if x.st.Phase == phase.Available {
		x.idle()
		return
	}
	x.health()
}

// problem decides for a machine not being deleted whose shell found a
// problem: it waits, by the problem's rule and period (D5, D6).
func (x *decider) problem() {
	switch x.in.Problem {
	case ProblemInvalidMachine:
		x.rule(RuleInvalidMachine)
	case ProblemClassNotReady:
		x.rule(RuleClassNotReady)
	case ProblemInvalidNodeTemplate:
		x.rule(RuleInvalidNodeTemplate)
	default:
		x.rule(RuleClassUnavailable)
	}
	x.requeue(problemPeriod(x.in.Problem))
}

// idle ends a pass with nothing to do until the next resync (D10).
func (x *decider) idle() {
	x.rule(RuleIdle)
	x.resync()
}

// deleting reports whether deletion was requested.
func (x *decider) deleting() bool { return x.deleted != 0 }

// ensures reports whether the decision carries the object ensure-effects
// (ensureObject): every decision of a flow for a machine not being deleted,
// but one that reports that the previous decision's status or writes
// failed, which the next decision, made from the saved status, ensures.
func (x *decider) ensures() bool {
	return x.flowed && !x.deleting() && !x.unsaved
}

// objectNeeds is a set of the object ensure-effects: one bit per kind.
type objectNeeds uint8

const (
	needFinalizer objectNeeds = 1 << iota
	needNodeLabel
	needPriority
	needProviderID
)

// objectNeeds returns the ensure-effects the object needs for the status
// the decision leaves: the finalizer, and once an instance is recorded the
// node label, the priority annotation (in the creation flow) and
// spec.providerID (MCM D2 and B2). It is small enough to inline into the
// seal; the node label's comparison comes first, as it usually settles its
// condition.
func (x *decider) objectNeeds() (n objectNeeds) {
	o, st := x.o, x.st
	if !o.Finalizer {
		n = needFinalizer
	}
	if st.ProviderID != "" && !st.Flags.Has(FlagStaleInstance) {
		if o.NodeLabel != st.NodeName && st.NodeName != "" && !x.cfg.NoTargetCluster {
			n |= needNodeLabel
		}
		if o.Priority == "" && x.creationFlow {
			// B2: the creation flow writes it, as MCM does, and nothing
			// else (a machine past creation keeps whatever it has).
			n |= needPriority
		}
		if o.ProviderID != st.ProviderID {
			n |= needProviderID
		}
	}
	return n
}

// ensureObject puts the ensure-effects needs names in front of the
// decision's other effects. Computed last, from the status the decision
// leaves, they are complete and first, so the provider sees the object
// written before any call.
func (x *decider) ensureObject(needs objectNeeds) {
	st := x.st
	var buf [4]Effect
	n := 0
	if needs&needFinalizer != 0 {
		buf[n] = Effect{Kind: KindEnsureFinalizer, Key: Finalizer}
		n++
	}
	if needs&needNodeLabel != 0 {
		buf[n] = Effect{Kind: KindEnsureNodeLabel, Key: NodeLabel, Value: st.NodeName}
		n++
	}
	if needs&needPriority != 0 {
		buf[n] = Effect{Kind: KindEnsurePriority, Key: PriorityAnnotation, Value: DefaultPriority}
		n++
	}
	if needs&needProviderID != 0 {
		buf[n] = Effect{Kind: KindEnsureProviderID, Value: st.ProviderID}
		n++
	}
	if !x.d.Effects.prepend(buf[:n]) {
		x.anomaly(AnomalyEffectsFull)
	}
}

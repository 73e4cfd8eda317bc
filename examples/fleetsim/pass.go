package fleetsim

import (
	"math/bits"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// pass is one reconcile of machine mi: the caller's obligations of package
// lifecycle, as examples/shell carries them out, with the faults of the
// run and without allocating. Persist first; carry out the effects in
// order, stopping at the first failed write; feed the outcome back; repeat
// until a decision is done, at most MaxStepsPerPass steps; then requeue.
// Driver calls take simulated time, so later steps of the pass see a later
// clock.
func (w *shard) pass(mi int32) {
	now := w.now
	in, d, out := &w.in, &w.d, &w.out
	w.observe(mi, now, in, true)
	w.base = in.Status.Seq
	lagged := false
	if b := w.machines[mi].bits; b&(mLagged|mStaleOut) != 0 && in.Object.UID != "" {
		if b&mLagged != 0 {
			lagged = w.lagRead(mi, in)
		}
		if b&mStaleOut != 0 {
			w.injectOutcome(mi, in)
		}
	}
	w.stats.Passes++
	if w.tr != nil && w.tr.mi == mi {
		w.tracePass(mi, in)
	}
	// The StaleOutcome fault keeps outcomes of this pass for the next;
	// the ObserverBlip fault degrades the observer after the first step.
	keep, blip := w.occurs(&w.cdStaleOutcome), w.occurs(&w.cdBlip)
	w.nkept = 0
	crashed := false
	w.clock = now + w.offset
	for step := 0; step < lifecycle.MaxStepsPerPass; step++ {
		w.stepNow = now
		at := now + w.offset // the controller's clock
		if w.occurs(&w.cdJump) {
			// The controller's clock is off for this step.
			at += w.rng.Int64N(2*int64(w.o.ClockJumpMax)+1) - int64(w.o.ClockJumpMax)
			w.stats.ClockJumps++
		}
		in.Now = tm(at)
		w.clock = max(w.clock, at)
		lifecycle.StepInto(d, &w.checked, in)
		w.decided(mi, step, in, d)
		w.injecting = false
		*out = lifecycle.Outcome{OpID: d.OpID}
		// 1. Persist first: the status is the write-ahead record.
		if d.Changed {
			if w.base != w.machines[mi].st.Seq || w.occurs(&w.cdLostWrite) {
				w.saveFails(mi, step, now)
				break
			}
			w.save(mi, &d.Status, now)
			w.base = d.Status.Seq
		}
		if w.crashes() {
			crashed = true
			break
		}
		if d.Done() {
			break
		}
		if step == lifecycle.MaxStepsPerPass-1 {
			// No step is left to feed this decision's outcome back: carry
			// out nothing and come back soon, as examples/shell does.
			d.Requeue = retry.Short
			break
		}
		// 2. The effects in order, stopping at the first failed write.
		effects := d.Effects.Slice()
		for k := range effects {
			e := &effects[k]
			if e.Kind == lifecycle.KindCallDriver {
				now += w.invoke(&out.Result, mi, &d.Call, now)
			} else if wr, msg := w.apply(mi, e, now); wr != lifecycle.WriteOK && e.Kind != lifecycle.KindEvent {
				out.Stopped, out.Error = wr, msg
				break
			}
			out.Ran++
			if w.crashes() {
				crashed = true
				break
			}
		}
		if crashed {
			break
		}
		if blip {
			blip = false
			w.blip()
		}
		if w.tr != nil && w.tr.mi == mi {
			w.traceOutcome(out)
		}
		// 3. Feed the outcome back, with the object as the last write left it.
		w.observe(mi, now, in, false)
		in.Status = d.Status
		in.Outcome = out
		if d.Call.Method == driverapi.MethodCreate && out.Ran == len(effects) && out.Result.NodeName != "" {
			if i := w.nodeNamed(out.Result.NodeName); i >= 0 {
				out.CreatedNode = w.nodeView(i)
			}
		}
		if keep {
			w.keepOutcome(out)
		}
	}
	if blip {
		w.blip()
	}
	m := &w.machines[mi]
	m.busy = now
	if keep && !m.gone() {
		w.staleOutcome(mi)
	}
	if lagged {
		// The metadata verdicts of this pass were of the older copy.
		m.more |= mMetaDirty
	}
	switch {
	case m.gone():
	case crashed:
		// The controller restarts and reconciles the machine from its last
		// persisted status.
		w.stats.Crashes++
		if w.tracing(mi) {
			w.note(mi, "the controller crashes; the machine is reconciled after the restart")
		}
		w.enqueue(mi, now+w.between(5*time.Second, time.Minute))
	case d.Requeue <= 0:
		w.violation(mi, "the pass ended without a positive requeue (rule "+d.Rule.String()+"): the machine would be forgotten")
		w.enqueue(mi, now+int64(retry.Long))
	default:
		w.enqueue(mi, now+int64(d.Requeue))
	}
}

// saveFails is a status save of machine mi's pass that fails, at its step
// at time now: refused because the pass started from a copy older than the
// saved status (a lagging cache: the API server refuses a write of an
// older resource version), or lost (a conflict, a failure, or a failure
// although it took effect). The lifecycle is told, and the pass ends.
func (w *shard) saveFails(mi int32, step int, now int64) {
	in, d, out := &w.in, &w.d, &w.out
	failed := lifecycle.WriteConflict
	if w.base != w.machines[mi].st.Seq {
		w.stats.LagConflicts++
	} else {
		k := w.rng.IntN(3)
		w.stats.LostWrites[k]++
		if k == 2 {
			w.save(mi, &d.Status, now) // it took effect; the client saw a timeout
		}
		if k != 0 {
			failed = lifecycle.WriteFailed
		}
	}
	out.Persist = failed
	in.Outcome = out
	in.Now = tm(now + w.offset)
	lifecycle.StepInto(d, &w.checked, in)
	// The saved status is not the one the last metadata verdict was of.
	w.machines[mi].more |= mMetaDirty
	w.decided(mi, step+1, in, d)
}

func (w *shard) crashes() bool {
	return w.occurs(&w.cdCrash)
}

// decided counts and checks a decision.
func (w *shard) decided(mi int32, step int, in *lifecycle.Input, d *lifecycle.Decision) {
	w.stats.Decisions++
	if int(d.Rule) < len(w.stats.Rules) {
		w.stats.Rules[d.Rule]++
	}
	if r := d.OpID.Rule(); r != d.Rule && int(r) < len(w.stats.Ops) {
		w.stats.Ops[r]++
	}
	if d.Anomalies != 0 {
		w.countAnomalies(d.Anomalies)
	}
	w.check(mi, in, d)
	// The metadata verdict depends on the decision's status, the desired
	// metadata and the instance's: a decision that changed no status while
	// neither of the others changed has the verdict of the last one checked.
	if m := &w.machines[mi]; d.Changed || m.more&mMetaDirty != 0 {
		m.more &^= mMetaDirty
		w.checkMetadata(mi, d)
	}
	if w.tr != nil && w.tr.mi == mi {
		w.traceDecision(step, in, d)
	}
}

func (w *shard) countAnomalies(a lifecycle.Anomalies) {
	for ; a != 0; a &= a - 1 {
		w.stats.Anomalies[bits.TrailingZeros16(uint16(a))]++
	}
}

// save persists a status: the write-ahead record. Metadata maps are
// replaced by the run's shared equal ones, as a status read back from the
// API server holds its own copy.
//
// The world judges what is saved: a machine saved Failed by the health
// timeout must have been unhealthy that long as the world saw it, and a
// grant saved must keep its owner's replacements in flight within the
// limit.
func (w *shard) save(mi int32, st *lifecycle.Status, now int64) {
	w.account(mi, -1)
	m := &w.machines[mi]
	from := m.st.Phase
	granted := st.Flags&^m.st.Flags&lifecycle.FlagGranted != 0
	if st.ProviderID != m.st.ProviderID {
		m.ip = w.instByPID(st.ProviderID) + 1
	}
	m.st = *st
	if st.Metadata != nil {
		if c, ok := codeOf(st.Metadata); ok {
			m.st.Metadata = w.t.meta.of(c)
		}
	}
	if from != st.Phase {
		w.transition(mi, from, now)
	}
	w.account(mi, 1)
	w.stats.Saves++
	if granted {
		w.checkReplacements(mi)
	}
}

// transition counts and judges the phase change of machine mi from from
// to its saved phase, at time now.
func (w *shard) transition(mi int32, from phase.Phase, now int64) {
	m := &w.machines[mi]
	to := m.st.Phase
	if !from.Valid() || !to.Valid() {
		return
	}
	w.stats.Transitions[from][to]++
	switch to {
	case phase.Running, phase.Available:
		if m.bits&mRan == 0 {
			m.bits |= mRan
			w.ttr = append(w.ttr, time.Duration(now-m.obj.CreationTime.UnixNano()))
		}
		m.bits &^= mHealthFailed
		m.more &^= mReplaces
	case phase.Failed:
		if (from == phase.Unknown || from == phase.InPlaceUpdateFailed) && !m.st.Flags.Has(lifecycle.FlagStaleInstance) {
			w.checkHealthFailed(mi, now)
			m.bits |= mHealthFailed
		}
	}
}

package fleetsim

import (
	"context"
	"errors"
	"math/bits"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/pass"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// pass is one reconcile of machine mi: pass.Run over the machine's
// machineShell, which draws the faults of the run at the points the
// caller's obligations give. It allocates nothing: the shell and the
// pass's Scratch are the shard's.
func (w *shard) pass(mi int32) {
	sh := &w.sh
	*sh = machineShell{w: w, mi: mi, now: w.now}
	// The shell's Observe sets each step's clock itself: Run's time goes
	// unused, and is not converted for it.
	r := pass.Run(context.Background(), &w.checked, sh, time.Time{}, &w.scratch, sh)
	if sh.blip {
		w.blip()
	}
	now := sh.now
	m := &w.machines[mi]
	m.busy = now
	if sh.keep && !m.gone() {
		w.staleOutcome(mi)
	}
	if sh.lagged {
		// The metadata verdicts of this pass were of the older copy.
		m.more |= mMetaDirty
	}
	switch {
	case m.gone():
	case sh.crashed:
		// The controller restarts and reconciles the machine from its last
		// persisted status.
		w.stats.Crashes++
		if w.tracing(mi) {
			w.note(mi, "the controller crashes; the machine is reconciled after the restart")
		}
		w.enqueue(mi, now+w.between(5*time.Second, time.Minute))
	case r.Requeue <= 0:
		w.violation(mi, "the pass ended without a positive requeue (rule "+w.scratch.Decision.Rule.String()+"): the machine would be forgotten")
		w.enqueue(mi, now+int64(retry.Long))
	default:
		w.enqueue(mi, now+int64(r.Requeue))
	}
}

// machineShell is the pass.Shell, and the pass.Observer, of the pass of
// one machine of a shard: the shard's world with the faults of the run,
// drawn where the pass meets them. Its controller's clock is off by the
// shard's offset and, for a step, by a clock jump; driver calls take
// simulated time, so later steps of a pass see a later clock. Its Observe
// sets Input.Now to that clock, not to the time Run was given.
type machineShell struct {
	w     *shard
	mi    int32
	now   int64 // the real time of the pass: its start, later after each driver call
	steps int   // the decisions of the pass so far
	// keep and blip are the StaleOutcome and ObserverBlip faults of the
	// pass: keep its outcomes for the next pass, degrade the observer
	// after its first step's effects. lagged: the pass read a lagging
	// cache.
	keep, blip, lagged bool
	// crashed: the controller crashed; nothing is read, written or called
	// any more. saveFailed: a save failed, so the next decision is the
	// lifecycle's answer to it.
	crashed, saveFailed bool
}

// errCrashed ends a pass whose controller crashed.
var errCrashed = errors.New("the controller crashed")

// Observe implements pass.Shell: the machine as the controller reads it
// before a step, at the step's clock. The first observation of a pass
// reads a gone machine as the zero object, and draws the faults of the
// pass.
func (s *machineShell) Observe(_ context.Context, _ time.Time, in *lifecycle.Input) error {
	if s.crashed {
		return errCrashed
	}
	w, mi := s.w, s.mi
	if s.steps == 0 {
		s.begin(in)
	} else {
		if s.blip {
			s.blip = false
			w.blip()
		}
		w.observe(mi, s.now, in, false)
	}
	w.stepNow = s.now
	at := s.now + w.offset // the controller's clock
	if w.occurs(&w.cdJump) {
		// The controller's clock is off for this step.
		at += w.rng.Int64N(2*int64(w.o.ClockJumpMax)+1) - int64(w.o.ClockJumpMax)
		w.stats.ClockJumps++
	}
	in.Now = tm(at)
	w.clock = max(w.clock, at)
	if in.Outcome != nil {
		s.probe(in)
	}
	return nil
}

// probe steps once from in, the pass's first observation, which the
// StaleOutcome fault gave an outcome of an older decision: the decision is
// counted and checked (the lifecycle must ignore the outcome unless no
// status change followed its decision) but not carried out, as pass.Run
// feeds a pass only the outcomes of its own decisions. The pass then
// starts from the observation without it.
func (s *machineShell) probe(in *lifecycle.Input) {
	w, mi := s.w, s.mi
	lifecycle.StepInto(&w.probed, &w.checked, in)
	w.decided(mi, -1, in, &w.probed)
	w.injecting = false
	in.Outcome = nil
	// The decision's status was not saved: the next decision's metadata
	// verdict is checked again.
	w.machines[mi].more |= mMetaDirty
}

// begin reads the machine at the start of its pass, with the lagging
// cache and the outcome of an older decision when their faults hold it,
// and draws the faults of the pass.
func (s *machineShell) begin(in *lifecycle.Input) {
	w, mi := s.w, s.mi
	w.observe(mi, s.now, in, true)
	w.base = in.Status.Seq
	if b := w.machines[mi].bits; b&(mLagged|mStaleOut) != 0 && in.Object.UID != "" {
		if b&mLagged != 0 {
			s.lagged = w.lagRead(mi, in)
		}
		if b&mStaleOut != 0 {
			w.injectOutcome(mi, in)
		}
	}
	w.stats.Passes++
	if w.tr != nil && w.tr.mi == mi {
		w.tracePass(mi, in)
	}
	s.keep, s.blip = w.occurs(&w.cdStaleOutcome), w.occurs(&w.cdBlip)
	w.nkept = 0
	w.clock = s.now + w.offset
}

// Decided implements pass.Observer: every decision is counted and
// checked; an outcome fed back is traced and, with the StaleOutcome
// fault, kept for the next pass. A decision that changed no status is
// followed by a chance of a crash, as a saved one is (Save).
func (s *machineShell) Decided(in *lifecycle.Input, d *lifecycle.Decision) {
	w, mi := s.w, s.mi
	step := s.steps
	s.steps++
	if s.saveFailed {
		// The lifecycle's answer to the failed save; the saved status is
		// not the one the last metadata verdict was of.
		w.machines[mi].more |= mMetaDirty
		w.decided(mi, step, in, d)
		return
	}
	if step > 0 {
		if w.tr != nil && w.tr.mi == mi {
			w.traceOutcome(in.Outcome)
		}
		if s.keep {
			w.keepOutcome(in.Outcome)
		}
	}
	w.decided(mi, step, in, d)
	w.injecting = false
	if !d.Changed && w.crashes() {
		s.crashed = true
	}
}

// Save implements pass.Shell: the status is saved, unless the API server
// refuses it (the pass started from an older copy) or the LostWrite fault
// loses it; a crash may follow a save.
func (s *machineShell) Save(_ context.Context, st *lifecycle.Status) lifecycle.Write {
	if s.crashed {
		return lifecycle.WriteFailed
	}
	w, mi := s.w, s.mi
	if w.base != w.machines[mi].st.Seq || w.occurs(&w.cdLostWrite) {
		s.saveFailed = true
		return w.saveFails(mi, st, s.now)
	}
	w.save(mi, st, s.now)
	w.base = st.Seq
	if w.crashes() {
		s.crashed = true
	}
	return lifecycle.WriteOK
}

// Apply implements pass.Shell: an effect carried out in the world, with
// the WriteFail fault; a crash may follow one carried out.
func (s *machineShell) Apply(_ context.Context, e *lifecycle.Effect) (lifecycle.Write, string) {
	if s.crashed {
		return lifecycle.WriteFailed, errCrashed.Error()
	}
	wr, msg := s.w.apply(s.mi, e, s.now)
	if (wr == lifecycle.WriteOK || e.Kind == lifecycle.KindEvent) && s.w.crashes() {
		s.crashed = true
	}
	return wr, msg
}

// Invoke implements pass.Shell: the driver call against the shard's
// provider, with its faults and latency; a crash may follow it.
func (s *machineShell) Invoke(_ context.Context, c *driverapi.Call, res *driverapi.Result) {
	if s.crashed {
		*res = driverapi.ResultOf(c.Method, errCrashed)
		return
	}
	s.now += s.w.invoke(res, s.mi, c, s.now)
	if s.w.crashes() {
		s.crashed = true
	}
}

// Node implements pass.Shell: the node of that name, if it exists.
func (s *machineShell) Node(_ context.Context, name string) lifecycle.Node {
	if !s.crashed {
		if i := s.w.nodeNamed(name); i >= 0 {
			return s.w.nodeView(i)
		}
	}
	return lifecycle.Node{}
}

// saveFails is a status save of machine mi's pass that fails at time now:
// refused because the pass started from a copy older than the saved status
// (a lagging cache: the API server refuses a write of an older resource
// version), or lost (a conflict, a failure, or a failure although it took
// effect). It says how the save failed.
func (w *shard) saveFails(mi int32, st *lifecycle.Status, now int64) lifecycle.Write {
	failed := lifecycle.WriteConflict
	if w.base != w.machines[mi].st.Seq {
		w.stats.LagConflicts++
	} else {
		k := w.rng.IntN(3)
		w.stats.LostWrites[k]++
		if k == 2 {
			w.save(mi, st, now) // it took effect; the client saw a timeout
		}
		if k != 0 {
			failed = lifecycle.WriteFailed
		}
	}
	return failed
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
	var prev lifecycle.Status
	if w.flows {
		prev = m.st
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
	if w.flows {
		w.flowSaved(mi, &prev, now)
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
			if from == phase.InPlaceUpdateFailed && w.ip {
				w.checkInPlaceFailed(mi, now)
			} else {
				w.checkHealthFailed(mi, now)
			}
			m.bits |= mHealthFailed
			w.countZoneFailed(mi)
		}
	}
}

package fleetsim

import (
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
	w.stats.Passes++
	if w.tr != nil && w.tr.mi == mi {
		w.tracePass(mi, in)
	}
	crashed := false
	w.clock = now
	for step := 0; step < lifecycle.MaxStepsPerPass; step++ {
		if w.fault(w.o.ClockJump) {
			// The controller's clock is off for this step.
			j := w.rng.Int64N(2*int64(w.o.ClockJumpMax)+1) - int64(w.o.ClockJumpMax)
			in.Now = tm(now + j)
			w.clock = max(w.clock, now+j)
			w.stats.ClockJumps++
		} else {
			in.Now = tm(now)
			w.clock = max(w.clock, now)
		}
		lifecycle.StepInto(d, &w.checked, in)
		w.decided(mi, step, in, d)
		*out = lifecycle.Outcome{OpID: d.OpID}
		// 1. Persist first: the status is the write-ahead record.
		if d.Changed {
			if w.fault(w.o.LostWrite) {
				k := w.rng.IntN(3)
				w.stats.LostWrites[k]++
				if k == 2 {
					w.save(mi, &d.Status, now) // it took effect; the client saw a timeout
				}
				out.Persist = lifecycle.WriteFailed
				if k == 0 {
					out.Persist = lifecycle.WriteConflict
				}
				in.Outcome = out
				in.Now = tm(now)
				lifecycle.StepInto(d, &w.checked, in)
				w.decided(mi, step+1, in, d)
				break
			}
			w.save(mi, &d.Status, now)
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
				r, lat := w.invoke(mi, &d.Call, now)
				out.Result = r
				now += lat
			} else if wr, msg := w.apply(mi, e); wr != lifecycle.WriteOK && e.Kind != lifecycle.KindEvent {
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
	}
	m := &w.machines[mi]
	m.busy = now
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

func (w *shard) crashes() bool {
	return w.fault(w.o.Crash)
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
	w.check(mi, in, d)
	if w.tr != nil && w.tr.mi == mi {
		w.traceDecision(step, in, d)
	}
}

// save persists a status: the write-ahead record. Metadata maps are
// replaced by the run's shared equal ones, as a status read back from the
// API server holds its own copy.
func (w *shard) save(mi int32, st *lifecycle.Status, now int64) {
	w.account(mi, -1)
	m := &w.machines[mi]
	from := m.st.Phase
	m.st = *st
	if st.Metadata != nil {
		if c, ok := codeOf(st.Metadata); ok {
			m.st.Metadata = w.t.meta.of(c)
		}
	}
	if to := st.Phase; from != to && from.Valid() && to.Valid() {
		w.stats.Transitions[from][to]++
		if to == phase.Running && m.bits&mRan == 0 {
			m.bits |= mRan
			w.ttr = append(w.ttr, time.Duration(now-m.obj.CreationTime.UnixNano()))
		}
	}
	w.account(mi, 1)
	w.stats.Saves++
}

package fleetsim

import (
	"strconv"
	"time"

	"github.com/purelifecycle/machine/lifecycle"
)

// The faults of what the controller reads and when: writes that reach its
// informer cache late, outcomes of older decisions fed again (to a step of
// their own before the pass: pass.Run feeds a pass only its own decisions'
// outcomes), the observer degrading in the middle of a pass, problems of
// machines and of their classes, and the force-deletion label.

// lagWrite is called before another party writes machine mi's object at
// time now (its owner requests its deletion, changes its spec, sets the
// force-deletion label): with the CacheLag fault the write reaches the
// controller's cache late, and a pass starting before it arrives reads
// the object as it was before. The watch delivers writes in order, so
// while an earlier write is late, a later one arrives behind it. The
// controller's own writes (its status, its finalizer, labels and
// providerID) it lays over the cached copy, as the lifecycle's contract
// asks of a shell reading a cache: a pass never starts from an older copy
// of them.
func (w *shard) lagWrite(mi int32, now int64) {
	if w.occurs(&w.cdCacheLag) {
		w.lagSnapshot(mi, now)
	}
}

func (w *shard) lagSnapshot(mi int32, now int64) {
	m := &w.machines[mi]
	if m.bits&mLagged != 0 && w.lagged[mi].until > now {
		return
	}
	if w.lagged == nil {
		w.lagged = make(map[int32]lagEntry)
	}
	w.lagged[mi] = lagEntry{obj: m.obj, seq: m.st.Seq, until: now + w.between(time.Millisecond, w.o.CacheLagMax)}
	m.bits |= mLagged
	w.stats.LaggedWrites++
}

// lagRead starts the pass of machine mi from the copy the cache still
// shows, when another party's write of it has not arrived yet, with the
// controller's own writes laid over it, and reports whether it did.
func (w *shard) lagRead(mi int32, in *lifecycle.Input) bool {
	m := &w.machines[mi]
	e, ok := w.lagged[mi]
	if !ok || e.until <= w.now {
		delete(w.lagged, mi)
		m.bits &^= mLagged
		return false
	}
	// What others wrote, as the cache still shows it.
	o := &in.Object
	o.DeletionTime, o.UpdateGeneration, o.Metadata, o.ForceDeletion = e.obj.DeletionTime, e.obj.UpdateGeneration,
		e.obj.Metadata, e.obj.ForceDeletion
	o.InPlaceGeneration, o.Preserve = e.obj.InPlaceGeneration, e.obj.Preserve
	m.more |= mMetaDirty
	w.stats.LaggedPasses++
	if w.tracing(mi) {
		w.note(mi, "the pass reads a lagging cache: the status of sequence "+strconv.Itoa(int(e.seq))+
			", not "+strconv.Itoa(int(m.st.Seq)))
	}
	return true
}

// keepOutcome keeps out, an outcome the current pass feeds back, for the
// StaleOutcome fault: the first and the last of the pass.
func (w *shard) keepOutcome(out *lifecycle.Outcome) {
	if out.Persist != lifecycle.WriteOK || out.OpID == 0 {
		return // only outcomes of effects are matched to their decision
	}
	if w.nkept == 0 {
		w.kept[0] = *out
	}
	w.kept[1] = *out
	w.nkept++
}

// staleOutcome hands one of the outcomes the pass of machine mi kept to
// the machine's next pass: the last (a duplicate of the previous decision's)
// or the first (a late result of an older one).
func (w *shard) staleOutcome(mi int32) {
	if w.nkept == 0 {
		return
	}
	if w.staleOuts == nil {
		w.staleOuts = make(map[int32]lifecycle.Outcome)
	}
	w.staleOuts[mi] = w.kept[w.rng.IntN(2)]
	w.machines[mi].bits |= mStaleOut
}

// injectOutcome gives in, the first observation of machine mi's pass, an
// outcome of an older decision instead of none, for the pass's shell to
// probe the lifecycle with (machineShell.probe).
func (w *shard) injectOutcome(mi int32, in *lifecycle.Input) {
	m := &w.machines[mi]
	m.bits &^= mStaleOut
	o, ok := w.staleOuts[mi]
	delete(w.staleOuts, mi)
	if !ok || m.gone() {
		return
	}
	w.injected = o
	in.Outcome = &w.injected
	w.injecting = true
	w.stats.StaleOutcomes++
	if o.OpID.Seq() == in.Status.Seq {
		w.stats.SameSeqOutcomes++
	}
	if w.tracing(mi) {
		w.note(mi, "a step before the pass is given the outcome of an older decision, op "+strconv.FormatUint(uint64(o.OpID), 16)+
			" of rule "+o.OpID.Rule().String()+" (step 0: checked, not carried out)")
	}
}

// degrade makes the observer degraded, for one more cause; restore ends
// one cause, and the observer recovers when none is left. The observer's
// times are the controller's stamps; recovered is the world's.
func (w *shard) degrade() {
	w.degraded++
	if w.degraded == 1 {
		w.observer = lifecycle.Observer{Degraded: true, Since: tm(w.now + w.offset)}
	}
}

func (w *shard) restore() {
	w.degraded--
	if w.degraded == 0 {
		w.observer = lifecycle.Observer{Since: tm(w.now + w.offset)}
		w.recovered = w.now
		if w.tracing(-1) {
			w.note(-1, "the observer recovers")
		}
		// The shell's informers list the world again once their watches
		// reconnect: every machine is reconciled, spread over a few
		// seconds, as a relist's events would have it. While the observer
		// was degraded each machine waited a Long period, and what
		// happened meanwhile (a node Ready again) is seen only on a pass.
		for mi := range w.machines {
			w.enqueue(int32(mi), w.now+int64(mi%64)*int64(100*time.Millisecond))
		}
	}
}

// blip degrades the observer for 10 seconds to 2 minutes, in the middle of
// a pass (the ObserverBlip fault).
func (w *shard) blip() {
	w.stats.ObserverBlips++
	if w.tracing(-1) {
		w.note(-1, "the observer degrades (a blip)")
	}
	w.degrade()
	w.push(w.now+w.between(10*time.Second, 2*time.Minute), evBlipEnd, 0, 0)
}

// forceLabel is someone setting the force-deletion label on a machine
// being deleted.
func (w *shard) forceLabel(mi int32) {
	m := &w.machines[mi]
	if m.gone() || !m.deleting() || m.obj.ForceDeletion {
		return
	}
	w.lagWrite(mi, w.now)
	m.obj.ForceDeletion = true
	w.stats.ForceDeletions++
	if w.tracing(mi) {
		w.note(mi, "someone sets the force-deletion label")
	}
	w.enqueue(mi, w.now)
}

// problemTok packs a problem of kind, lasting 30 seconds to ProblemMax,
// into an event token: the kind in the low three bits, the seconds above.
func (w *shard) problemTok(kind lifecycle.Problem) uint32 {
	secs := w.between(30*time.Second, w.o.ProblemMax) / int64(time.Second)
	return uint32(secs)<<3 | uint32(kind)
}

// problemEvent starts or ends a machine's or a class's problem. Each start
// and end reconciles the machines concerned, as a watch event on the
// machine or its class would.
func (w *shard) problemEvent(e *event) {
	kind, secs := uint8(e.tok&7), int64(e.tok>>3)
	switch e.kind {
	case evProblem:
		m := &w.machines[e.idx]
		if !w.faulty || m.gone() || m.problem != 0 {
			return
		}
		m.problem = kind
		w.stats.MachineProblems++
		if w.tracing(e.idx) {
			w.note(e.idx, "the machine has a problem: "+lifecycle.Problem(kind).String()+" for "+strconv.FormatInt(secs, 10)+"s")
		}
		w.push(w.now+secs*int64(time.Second), evProblemEnd, e.idx, 0)
		w.enqueue(e.idx, w.now)
	case evProblemEnd:
		w.machines[e.idx].problem = 0
		if w.zoneChecks || w.flows {
			if w.problemEnded == nil {
				w.problemEnded = make(map[int32]int64)
			}
			w.problemEnded[e.idx] = w.now
		}
		if w.tracing(e.idx) {
			w.note(e.idx, "the machine's problem is fixed")
		}
		w.enqueue(e.idx, w.now)
	case evClassProblem, evClassProblemEnd:
		o := &w.owners[e.idx]
		if e.kind == evClassProblem {
			if !w.faulty || o.problem != 0 {
				return
			}
			o.problem = kind
			w.classProblems++
			w.stats.ClassProblems++
			w.push(w.now+secs*int64(time.Second), evClassProblemEnd, e.idx, 0)
		} else {
			o.problem, o.problemEnd = 0, w.now
			w.classProblems--
		}
		for _, mi := range o.list {
			if w.tracing(mi) {
				w.note(mi, "its class's problem: "+lifecycle.Problem(o.problem).String())
			}
			w.enqueue(mi, w.now)
		}
	}
}

package lifecycletest

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
)

// PassFaults is a set of the faults [ShellCheck] injects into a shell's
// passes, as bits. A fault strikes one call into the shell, and the check
// runs it at each call of the fault-free run it could strike, one run
// each, but FaultWriteOutage, which lasts three passes; a thorough check's
// random runs mix them.
type PassFaults uint16

const (
	// FaultCrashBefore: the pass dies at a call into the shell, before the
	// call is made. The next pass starts from what the world kept.
	FaultCrashBefore PassFaults = 1 << iota
	// FaultCrashAfter: the pass dies right after a call into the shell was
	// carried out: its answer is lost.
	FaultCrashAfter
	// FaultWriteConflict: a status save or an effect's write (not an
	// event) is not carried out and reported as a conflict.
	FaultWriteConflict
	// FaultWriteFailed: a write is not carried out and reported failed.
	FaultWriteFailed
	// FaultWriteUnanswered: a write is carried out but reported failed, as
	// one whose answer timed out.
	FaultWriteUnanswered
	// FaultWriteLost: a status save or a write to the machine object is
	// reported ok but not kept, as when a concurrent writer's older copy
	// overwrote it.
	FaultWriteLost
	// FaultWorldRefuses: the world's API refuses a write, for a world that
	// implements [WriteRefuser]: the shell must report the refusal.
	FaultWorldRefuses
	// FaultStaleCache: an observation shows the node, its volume
	// attachments, the token, the older incarnation and the observer as
	// the previous observation did, as an informer cache that lags does;
	// the object and status are the world's.
	FaultStaleCache
	// FaultStaleStatus: the first observation of a pass shows the object
	// and status of the previous pass's first one, as a read from a cache
	// that lags the shell's own writes; the pass's first status save then
	// fails with a conflict, as the API server refuses a write made from
	// a stale resource version.
	FaultStaleStatus
	// FaultNodeUnreadable: an observation could not read the node
	// (lifecycle.Input.NodeReadFailed).
	FaultNodeUnreadable
	// FaultObserveFails: an observation fails: the machine could not be
	// read, and the pass ends.
	FaultObserveFails
	// FaultWriteOutage: every write of the first three passes of a run
	// fails with a conflict, as while the API server is unavailable.
	FaultWriteOutage

	// AllPassFaults holds every fault.
	AllPassFaults = FaultWriteOutage<<1 - 1
)

// passFaultNames name the faults, in bit order.
var passFaultNames = [...]string{"crash before", "crash after", "write conflict", "write failed",
	"write unanswered", "write lost", "world refuses", "stale cache", "stale status", "node unreadable",
	"observe fails", "write outage"}

// String names the faults of f, joined by "|".
func (f PassFaults) String() string {
	var out []string
	for _, k := range f.kinds() {
		out = append(out, passFaultNames[k.index()])
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "|")
}

// kinds returns the faults of f one by one.
func (f PassFaults) kinds() []PassFaults {
	var out []PassFaults
	for k := PassFaults(1); k <= FaultWriteOutage; k <<= 1 {
		if f&k != 0 {
			out = append(out, k)
		}
	}
	return out
}

// index returns the position of the single fault f among the faults, in
// bit order.
func (f PassFaults) index() int { return bits.TrailingZeros16(uint16(f)) }

// Passes of a run with faults that last.
const (
	outagePasses = 3 // FaultWriteOutage
	randomPasses = 6 // random faults
)

// faultPlan is where a run's faults strike: one fault kind at the at-th
// call into the shell it could strike, an outage, or random faults of the
// kinds random holds.
type faultPlan struct {
	kind   PassFaults
	at     int
	random PassFaults
	rng    *rand.Rand
}

// active reports whether the plan may still inject faults in pass n.
func (p *faultPlan) active(n int) bool {
	switch {
	case p.kind == FaultWriteOutage:
		return n <= outagePasses
	case p.random != 0:
		return n <= randomPasses
	}
	return false
}

func (p faultPlan) String() string {
	switch {
	case p.kind == FaultWriteOutage:
		return fmt.Sprintf("every write of the first %d passes fails with a conflict", outagePasses)
	case p.random != 0:
		return fmt.Sprintf("random faults (%s) in the first %d passes", p.random, randomPasses)
	case p.kind != 0:
		return fmt.Sprintf("%s at call %d of those it could strike", p.kind, p.at)
	}
	return "none"
}

// call is what a call into the shell is, for the faults that may strike
// it.
type call struct {
	what        string            // observe, save, apply, invoke or node
	effect      *lifecycle.Effect // the effect applied
	about       string            // the method invoked, the node asked for
	write       bool              // a save or an effect's write, not an event
	objectWrite bool              // a save or a write to the machine object
	observe     bool
}

// pick counts call c among the calls each fault could strike and returns
// the fault that strikes it, 0 for none.
func (r *shellRun) pick(c call) PassFaults {
	applicable := FaultCrashBefore | FaultCrashAfter
	if c.write {
		applicable |= FaultWriteConflict | FaultWriteFailed | FaultWriteUnanswered
		if r.refuser != nil {
			applicable |= FaultWorldRefuses
		}
	}
	if c.objectWrite {
		applicable |= FaultWriteLost
	}
	if c.observe {
		applicable |= FaultNodeUnreadable | FaultObserveFails
		if r.lastObs != nil {
			applicable |= FaultStaleCache // there is an older observation
		}
		if r.passObserves == 0 && r.passStart != nil {
			applicable |= FaultStaleStatus
		}
	}
	for _, k := range applicable.kinds() {
		r.chances[k.index()]++
	}
	p := &r.plan
	var f PassFaults
	switch {
	case p.kind == FaultWriteOutage:
		if c.write && p.active(r.pass) {
			f = FaultWriteConflict
		}
	case p.random != 0:
		if can := (p.random &^ FaultWriteOutage) & applicable; can != 0 && p.active(r.pass) && p.rng.IntN(6) == 0 {
			kinds := can.kinds()
			f = kinds[p.rng.IntN(len(kinds))]
		}
	case p.kind&applicable != 0 && r.chances[p.kind.index()] == p.at:
		f = p.kind
	}
	if f != 0 {
		r.injected++
		r.faultPass = r.pass
		switch {
		case c.effect != nil:
			r.tracef("  !! %s: %s %s", f, c.what, *c.effect)
		case c.about != "":
			r.tracef("  !! %s: %s %s", f, c.what, c.about)
		default:
			r.tracef("  !! %s: %s", f, c.what)
		}
	}
	return f
}

// crash ends the pass at once when f crashes it: before the call, or
// after it when after is set.
func (r *shellRun) crash(f PassFaults, after bool) {
	if f == FaultCrashBefore && !after || f == FaultCrashAfter && after {
		r.tracef("  the pass dies")
		panic(passCrash{})
	}
}

// violation records a violation found during a pass and ends the pass.
func (r *shellRun) violation(what, detail string) {
	r.fail(what, detail)
	panic(stopRun{})
}

// errObserveInjected is the error of an observation FaultObserveFails
// fails.
var errObserveInjected = errors.New("lifecycletest: injected: the machine could not be read")

// faultShell is the pass.Shell a ShellCheck runs the passes over: the
// world's shell with the run's faults injected and every call judged.
type faultShell struct{ r *shellRun }

func (s *faultShell) Observe(ctx context.Context, now time.Time, in *lifecycle.Input) error {
	r := s.r
	f := r.pick(call{what: "observe", observe: true})
	first := r.passObserves == 0
	r.passObserves++
	r.crash(f, false)
	if f == FaultObserveFails {
		return errObserveInjected
	}
	leaveOver(in)
	if err := r.world.Observe(ctx, now, in); err != nil {
		r.tracef("  observe: error %v", err)
		r.crash(f, true)
		return err
	}
	r.checkSetEveryField(in)
	r.checkObserved(now, in)
	fresh := copyInput(in)
	switch f {
	case FaultStaleCache:
		o := r.lastObs
		in.Node, in.NodeReadFailed, in.VolumeAttachments = o.Node, o.NodeReadFailed, o.VolumeAttachments
		in.TokenExists, in.PredecessorTerminating, in.Observer = o.TokenExists, o.PredecessorTerminating, o.Observer
	case FaultNodeUnreadable:
		in.Node, in.NodeReadFailed, in.VolumeAttachments = lifecycle.Node{}, true, 0
	case FaultStaleStatus:
		in.Object, in.Status = r.passStart.Object, r.passStart.Status
		r.staleRead = true
	}
	if first {
		r.passStart = &fresh
	}
	r.lastObs = &fresh
	seen := copyInput(in)
	r.tracef("  observe: %s", lazy(func() string { return observedLine(&seen) }))
	r.crash(f, true)
	return nil
}

func (s *faultShell) Save(ctx context.Context, st *lifecycle.Status) lifecycle.Write {
	r := s.r
	f := r.pick(call{what: "save", write: true, objectWrite: true})
	r.crash(f, false)
	w, ok := r.injectedWrite(f)
	if r.staleRead && !ok {
		// Saved from a stale read: the API server refuses it.
		r.staleRead = false
		w, ok = lifecycle.WriteConflict, true
	}
	if !ok {
		refused := f == FaultWorldRefuses
		if refused {
			r.refuser.RefuseWrites(lifecycle.WriteConflict)
		}
		w = r.world.Save(ctx, st)
		if refused {
			r.refuser.RefuseWrites(lifecycle.WriteOK)
		}
		r.checkSaved(st, w, refused)
		if f == FaultWriteUnanswered {
			w = lifecycle.WriteFailed
		}
	}
	r.tracef("  save phase=%s stage=%s seq=%d: %s", st.Phase.Label(), st.Stage, st.Seq, w)
	r.afterCall()
	r.crash(f, true)
	return w
}

// injectedWrite returns the answer of a write that fault f answers without
// carrying it out, ok false when the write is to be carried out.
func (r *shellRun) injectedWrite(f PassFaults) (lifecycle.Write, bool) {
	switch f {
	case FaultWriteConflict:
		return lifecycle.WriteConflict, true
	case FaultWriteFailed:
		return lifecycle.WriteFailed, true
	case FaultWriteLost:
		return lifecycle.WriteOK, true
	}
	return lifecycle.WriteOK, false
}

func (s *faultShell) Apply(ctx context.Context, e *lifecycle.Effect) (lifecycle.Write, string) {
	r := s.r
	f := r.pick(call{what: "apply", effect: e, write: e.Kind != lifecycle.KindEvent, objectWrite: objectEffect(e.Kind)})
	r.crash(f, false)
	r.checkNodeTarget(e)
	w, msg := lifecycle.WriteOK, ""
	var ok bool
	if w, ok = r.injectedWrite(f); ok {
		if w != lifecycle.WriteOK {
			msg = "injected " + w.String()
		}
	} else {
		refused := f == FaultWorldRefuses
		if refused {
			r.refuser.RefuseWrites(lifecycle.WriteConflict)
		}
		before := r.world.Truth()
		w, msg = r.world.Apply(ctx, e)
		if refused {
			r.refuser.RefuseWrites(lifecycle.WriteOK)
		}
		r.checkApplied(e, w, &before)
		if f == FaultWriteUnanswered {
			w, msg = lifecycle.WriteFailed, "injected: the write's answer was lost"
		}
	}
	if w == lifecycle.WriteOK {
		r.tracef("  apply %s: ok", *e)
	} else {
		r.tracef("  apply %s: %s %q", *e, w, msg)
	}
	r.afterCall()
	r.crash(f, true)
	return w, msg
}

func (s *faultShell) Invoke(ctx context.Context, c *driverapi.Call, res *driverapi.Result) {
	r := s.r
	f := r.pick(call{what: "invoke", about: c.Method.String()})
	r.crash(f, false)
	r.world.Invoke(ctx, c, res)
	called, answer := *c, *res
	r.tracef("  invoke %s => %s", lazy(func() string { return lifecycle.CallString(called) }),
		lazy(func() string { return resultLine(&answer) }))
	if res.Method != c.Method {
		r.violation(fmt.Sprintf("Invoke answered a call of %s with a result of %s", c.Method, res.Method), "")
	}
	r.afterCall()
	r.crash(f, true)
}

func (s *faultShell) Node(ctx context.Context, name string) lifecycle.Node {
	r := s.r
	f := r.pick(call{what: "node", about: name})
	r.crash(f, false)
	n := r.world.Node(ctx, name)
	r.tracef("  node %s: %s", name, lazy(func() string { return nodeLine(&n) }))
	r.checkNode(name, &n)
	r.crash(f, true)
	return n
}

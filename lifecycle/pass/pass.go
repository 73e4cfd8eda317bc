// Package pass runs one reconcile pass of one machine: the loop of the
// caller's obligations that package lifecycle lists, written once. A shell
// implements [Shell] (save the status, carry out an effect, invoke the
// driver, observe the machine again) and calls [Run] with the clock's time;
// Run steps the lifecycle, saves each changed status first, carries out the
// effects in order and stops at the first that fails, reports every
// outcome back, ends the pass when a decision is done, and returns when to
// reconcile again.
//
// Run reads no clock, starts no goroutine, keeps no package state and
// allocates nothing of its own: its working memory is a [Scratch] the
// caller reuses (one per worker).
package pass

import (
	"context"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/retry"
)

// Shell is the world of one machine as a pass acts on it. Each method is
// called from the goroutine that called Run, in the order the lifecycle's
// obligations give.
type Shell interface {
	// Observe fills in with the machine's input as the world is now (see
	// lifecycle.Input): the object as the shell's own last write returned
	// it or newer, never an older cached copy; the persisted status; the
	// node, token, observer and problem; Now = now. It leaves in.Outcome
	// nil; Run sets it. A machine that is gone is a zero Object. An error
	// (the object could not be read at all) ends the pass; a node that
	// could not be read is Input.NodeReadFailed, not an error.
	//
	// Observe sets every field, to its zero value for what is absent (a
	// node deleted by the pass's last effect, a token gone): within a pass
	// in holds the previous step's observation (Run clears it only at a
	// pass's start). Assigning a whole lifecycle.Input does it.
	Observe(ctx context.Context, now time.Time, in *lifecycle.Input) error
	// Save persists st as the machine's status and says how it went.
	Save(ctx context.Context, st *lifecycle.Status) lifecycle.Write
	// Apply carries out one effect that is not a driver call (its Kind's
	// doc says what to do) and says how it went, with the error text when
	// it failed.
	Apply(ctx context.Context, e *lifecycle.Effect) (lifecycle.Write, string)
	// Invoke asks the driver c and writes its answer into res (a driver
	// error is an answer, as driverapi.Invoke returns it).
	Invoke(ctx context.Context, c *driverapi.Call, res *driverapi.Result)
	// Node returns the node of that name, or the zero Node: the node a
	// CreateMachine answer names, for the lifecycle's stale-node check.
	Node(ctx context.Context, name string) lifecycle.Node
}

// Observer is called with every decision of a pass, before any of it is
// carried out, and with the input it was decided from (for checkers, logs
// and metrics). It must not change either.
type Observer interface {
	Decided(in *lifecycle.Input, d *lifecycle.Decision)
}

// Scratch is a pass's working memory. A worker keeps one and passes it to
// every Run, so a pass allocates nothing; Run overwrites it. After Run,
// Decision holds the pass's last decision and Input what it was decided
// from.
type Scratch struct {
	Input    lifecycle.Input
	Decision lifecycle.Decision
	outcome  lifecycle.Outcome
	// called: outcome holds the answer of a driver call, and perhaps the
	// node it names, which the next outcome must not carry.
	called bool
}

// newOutcome readies the outcome of the decision op: nothing carried out
// yet. The driver's answer and the node it names, most of an outcome's
// bytes, are cleared only when a call wrote them.
func (s *Scratch) newOutcome(op lifecycle.OpID) {
	out := &s.outcome
	if s.called {
		*out = lifecycle.Outcome{OpID: op}
		s.called = false
		return
	}
	out.OpID, out.Persist, out.Ran, out.Stopped, out.Error = op, lifecycle.WriteOK, 0, lifecycle.WriteOK, ""
}

// End says why a pass ended.
type End uint8

const (
	// EndDone: a decision neither changed the status nor had effects.
	EndDone End = iota
	// EndGone: the machine is gone (its object, or its finalizer removed
	// after deletion); nothing to requeue.
	EndGone
	// EndSaveFailed: a status could not be saved; the lifecycle decided on
	// that, and the pass ends without carrying anything out.
	EndSaveFailed
	// EndLastStep: the pass made lifecycle.MaxStepsPerPass steps; the last
	// decision's status was saved but its effects were not carried out, as
	// no step is left to report their outcome.
	EndLastStep
	// EndObserveFailed: Shell.Observe returned an error.
	EndObserveFailed
	// EndCanceled: the context was canceled between two steps; what was
	// saved and carried out stays, and the next pass goes on from it.
	EndCanceled
)

// String returns the end's name, such as "save-failed".
func (e End) String() string {
	switch e {
	case EndDone:
		return "done"
	case EndGone:
		return "gone"
	case EndSaveFailed:
		return "save-failed"
	case EndLastStep:
		return "last-step"
	case EndObserveFailed:
		return "observe-failed"
	case EndCanceled:
		return "canceled"
	}
	return "unknown"
}

// Report is what a pass did.
type Report struct {
	// Requeue is when to reconcile the machine again: the last decision's
	// requeue, retry.Short after the last allowed step, an observation
	// that failed or a canceled pass, and 0 when the machine is gone.
	Requeue time.Duration
	// Steps is the number of decisions the pass made.
	Steps int
	// End says why the pass ended.
	End End
	// Err is Observe's error (EndObserveFailed) or the context's
	// (EndCanceled).
	Err error
}

// Run runs one reconcile pass of the machine sh acts on, at time now, with
// the configuration checked once (lifecycle.Config.Check). obs, when not
// nil, sees every decision. now is the time of every step of the pass.
func Run(ctx context.Context, cfg *lifecycle.Checked, sh Shell, now time.Time, s *Scratch, obs Observer) Report {
	in, d, out := &s.Input, &s.Decision, &s.outcome
	*in = lifecycle.Input{}
	if err := sh.Observe(ctx, now, in); err != nil {
		return Report{Requeue: retry.Short, End: EndObserveFailed, Err: err}
	}
	in.Outcome = nil
	var r Report
	for {
		r.Steps++
		decide(cfg, in, d, obs)
		if d.Requeue == 0 {
			// Only the decision for a machine that is gone has no requeue:
			// there is nothing left to save or to carry out.
			r.End = EndGone
			return r
		}
		s.newOutcome(d.OpID)
		if d.Changed {
			if w := sh.Save(ctx, &d.Status); w != lifecycle.WriteOK {
				// Nothing is carried out: the lifecycle decides on the
				// failed save from the status as it was.
				out.Persist = w
				in.Outcome = out
				r.Steps++
				decide(cfg, in, d, obs)
				r.Requeue, r.End = d.Requeue, EndSaveFailed
				return r
			}
		}
		if d.Done() {
			r.Requeue, r.End = d.Requeue, EndDone
			return r
		}
		if r.Steps == lifecycle.MaxStepsPerPass {
			r.Requeue, r.End = retry.Short, EndLastStep
			return r
		}
		if err := ctx.Err(); err != nil {
			return Report{Requeue: retry.Short, Steps: r.Steps, End: EndCanceled, Err: err}
		}
		carryOut(ctx, sh, d, s)
		// The next step decides from the object as the last write left it,
		// the status just saved (Observe does not touch the decision) and
		// the outcome.
		if err := sh.Observe(ctx, now, in); err != nil {
			return Report{Requeue: retry.Short, Steps: r.Steps, End: EndObserveFailed, Err: err}
		}
		in.Status, in.Outcome = d.Status, out
	}
}

// decide steps the lifecycle into d and shows the decision to obs.
func decide(cfg *lifecycle.Checked, in *lifecycle.Input, d *lifecycle.Decision, obs Observer) {
	lifecycle.StepInto(d, cfg, in)
	if obs != nil {
		obs.Decided(in, d)
	}
}

// carryOut carries out d's effects in order, stopping at the first write
// that fails (a failed event stops nothing), and records in s's outcome
// how far they went, the driver's answer and the node a CreateMachine
// answer names.
func carryOut(ctx context.Context, sh Shell, d *lifecycle.Decision, s *Scratch) {
	out := &s.outcome
	effects := d.Effects.Slice()
	for i := range effects {
		e := &effects[i]
		if e.Kind == lifecycle.KindCallDriver {
			s.called = true
			sh.Invoke(ctx, &d.Call, &out.Result)
			if res := &out.Result; res.Method == driverapi.MethodCreate && res.NodeName != "" {
				out.CreatedNode = sh.Node(ctx, res.NodeName)
			}
		} else if w, msg := sh.Apply(ctx, e); w != lifecycle.WriteOK && e.Kind != lifecycle.KindEvent {
			out.Stopped, out.Error = w, msg
			return
		}
		out.Ran++
	}
}

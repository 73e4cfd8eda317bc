// Package shell carries out lifecycle decisions exactly as the caller's
// obligations of package lifecycle say, once, for every example that embeds
// the core: persist the status first, carry out the effects in order and
// stop at the first failure, feed the outcome back, repeat until a decision
// has no effects, then requeue.
//
// The pass ends at a decision that neither changes the status nor has
// effects (lifecycle.Decision.Done).
//
// A World is where the machine, its node and its token live (an in-memory
// cluster here, a Kubernetes API server in a real controller); the driver is
// any driverapi.Driver.
package shell

import (
	"context"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/retry"
)

// World reads and writes what the lifecycle of one machine touches outside
// the provider.
type World interface {
	// Observe returns the machine's input as the world is now: the object as
	// last written, its persisted status, its node, token and observer
	// state. Outcome is nil. A machine that is gone gives a zero Object.
	Observe(now time.Time) lifecycle.Input
	// SaveStatus persists the status of the machine.
	SaveStatus(st lifecycle.Status) lifecycle.Write
	// Apply carries out one effect that is not a driver call, and says how
	// it went, with the error when it failed.
	Apply(e lifecycle.Effect) (lifecycle.Write, error)
	// NodeNamed returns the node of that name, or the zero Node (the
	// stale-node check after CreateMachine).
	NodeNamed(name string) lifecycle.Node
}

// Hooks let a caller watch a pass or break it.
type Hooks struct {
	// Decided is called with every decision, before it is carried out.
	Decided func(step int, d *lifecycle.Decision)
	// CrashAfter, when it returns true for (step, effects carried out so
	// far), ends the pass at once, as if the controller died there: no
	// outcome is fed back and no requeue is returned. The status saved so
	// far is all the next pass knows.
	CrashAfter func(step, ran int) bool
}

// Pass is what one reconcile pass did.
type Pass struct {
	// Decisions are the decisions of the pass, in order.
	Decisions []lifecycle.Decision
	// Requeue is when to reconcile again; 0 when the machine is gone or the
	// pass crashed.
	Requeue time.Duration
	// Crashed reports that a hook ended the pass.
	Crashed bool
}

// Reconcile runs one pass for the machine of w at time now, with the
// configuration the controller checked once when it started.
func Reconcile(ctx context.Context, cfg *lifecycle.Checked, w World, drv driverapi.Driver, class driverapi.Class,
	now time.Time, hooks Hooks) Pass {
	var pass Pass
	in := w.Observe(now)
	var d lifecycle.Decision
	for step := 0; step < lifecycle.MaxStepsPerPass; step++ {
		lifecycle.StepInto(&d, cfg, &in)
		pass.Decisions = append(pass.Decisions, d)
		if hooks.Decided != nil {
			hooks.Decided(step, &d)
		}
		out := &lifecycle.Outcome{OpID: d.OpID}
		// 1. Persist first: the status is the write-ahead record.
		if d.Changed {
			if w := w.SaveStatus(d.Status); w != lifecycle.WriteOK {
				out.Persist = w
				in.Outcome = out
				lifecycle.StepInto(&d, cfg, &in)
				pass.Decisions = append(pass.Decisions, d)
				if hooks.Decided != nil {
					hooks.Decided(step+1, &d)
				}
				break
			}
		}
		if hooks.CrashAfter != nil && hooks.CrashAfter(step, 0) {
			pass.Crashed = true
			return pass
		}
		if d.Done() {
			break
		}
		if step == lifecycle.MaxStepsPerPass-1 {
			// No step is left to feed this decision's outcome back: carry
			// out nothing (its status, if changed, is saved and will be
			// acted on next pass) and come back soon.
			d.Requeue = retry.Short
			break
		}
		// 2. Effects in order, stopping at the first failure.
		for _, e := range d.Effects.Slice() {
			if e.Kind == lifecycle.KindCallDriver {
				out.Result = driverapi.Invoke(ctx, drv, d.Call, class)
			} else if wr, err := w.Apply(e); wr != lifecycle.WriteOK && e.Kind != lifecycle.KindEvent {
				out.Stopped = wr
				if err != nil {
					out.Error = err.Error()
				}
				break
			}
			out.Ran++
			if hooks.CrashAfter != nil && hooks.CrashAfter(step, out.Ran) {
				pass.Crashed = true
				return pass
			}
		}
		// 3. Feed the outcome back, with the object as the last write left it.
		status := d.Status
		in = w.Observe(now)
		in.Status = status
		in.Outcome = out
		if d.Call.Method == driverapi.MethodCreate && out.Ran == d.Effects.Len() && out.Result.NodeName != "" {
			out.CreatedNode = w.NodeNamed(out.Result.NodeName)
		}
	}
	// 4. Requeue after the last decision's period.
	pass.Requeue = d.Requeue
	return pass
}

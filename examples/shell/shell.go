// Package shell binds the examples' in-memory worlds onto pass.Shell, so
// that every example's reconcile pass is lifecycle/pass.Run and keeps the
// caller's obligations of package lifecycle as Run keeps them.
//
// A World is where the machine, its node and its token live (an in-memory
// cluster here, examples/memworld; a Kubernetes API server in a real
// controller); [Shell] makes a pass.Shell of a World and a driver. [Crash]
// wraps a pass.Shell to end a pass at a chosen point, as a controller that
// dies there.
package shell

import (
	"context"
	"errors"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/pass"
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

// Shell is a World and a driver as the pass.Shell of one machine.
type Shell struct {
	// World holds the machine, its node and its token.
	World World
	// Driver answers the driver calls, with Class as the machine's class.
	Driver driverapi.Driver
	Class  driverapi.Class
}

// Observe implements pass.Shell: the world's input at now.
func (s *Shell) Observe(_ context.Context, now time.Time, in *lifecycle.Input) error {
	*in = s.World.Observe(now)
	return nil
}

// Save implements pass.Shell with World.SaveStatus.
func (s *Shell) Save(_ context.Context, st *lifecycle.Status) lifecycle.Write {
	return s.World.SaveStatus(*st)
}

// Apply implements pass.Shell with World.Apply.
func (s *Shell) Apply(_ context.Context, e *lifecycle.Effect) (lifecycle.Write, string) {
	w, err := s.World.Apply(*e)
	if err != nil {
		return w, err.Error()
	}
	return w, ""
}

// Invoke implements pass.Shell: driverapi.Invoke against Driver.
func (s *Shell) Invoke(ctx context.Context, c *driverapi.Call, res *driverapi.Result) {
	*res = driverapi.Invoke(ctx, s.Driver, *c, s.Class)
}

// Node implements pass.Shell with World.NodeNamed.
func (s *Shell) Node(_ context.Context, name string) lifecycle.Node { return s.World.NodeNamed(name) }

// ErrCrashed is what Crash's Observe returns once the pass crashed.
var ErrCrashed = errors.New("the controller crashed")

// Crash is a pass.Shell that ends a pass at a crash point, as if the
// controller died there: from that point on, every call fails without
// touching the world (Observe returns ErrCrashed) and Cancel cancels the
// pass's context, so pass.Run returns having carried out nothing more.
// What was saved before the crash is all the next pass knows.
//
// Give Crash to Run as the pass's Observer too: it counts the pass's
// decisions, and shows each to Observer.
type Crash struct {
	pass.Shell
	// Observer, when set, sees every decision of the pass.
	Observer pass.Observer
	// At says whether the controller dies after the changed status of the
	// pass's step-th decision d (from 0) was saved (ran 0), or after ran of
	// d's effects were carried out.
	At func(step, ran int, d *lifecycle.Decision) bool
	// Cancel, when set, is called at the crash: the cancel function of the
	// context given to Run.
	Cancel context.CancelFunc
	// Crashed reports that the pass crashed.
	Crashed bool

	steps int                 // the decisions seen
	d     *lifecycle.Decision // the last one
	ran   int                 // its effects carried out
}

// Decided implements pass.Observer.
func (c *Crash) Decided(in *lifecycle.Input, d *lifecycle.Decision) {
	c.steps++
	c.d, c.ran = d, 0
	if c.Observer != nil {
		c.Observer.Decided(in, d)
	}
}

// point asks At whether the controller dies now, and crashes if so.
func (c *Crash) point() {
	if c.d != nil && c.At != nil && c.At(c.steps-1, c.ran, c.d) {
		c.Crashed = true
		if c.Cancel != nil {
			c.Cancel()
		}
	}
}

// Observe implements pass.Shell.
func (c *Crash) Observe(ctx context.Context, now time.Time, in *lifecycle.Input) error {
	if c.Crashed {
		return ErrCrashed
	}
	return c.Shell.Observe(ctx, now, in)
}

// Save implements pass.Shell; a crash point follows a save that succeeded.
func (c *Crash) Save(ctx context.Context, st *lifecycle.Status) lifecycle.Write {
	if c.Crashed {
		return lifecycle.WriteFailed
	}
	w := c.Shell.Save(ctx, st)
	if w == lifecycle.WriteOK {
		c.point()
	}
	return w
}

// Apply implements pass.Shell; a crash point follows an effect carried
// out (a failed event counts as carried out, as the lifecycle counts it).
func (c *Crash) Apply(ctx context.Context, e *lifecycle.Effect) (lifecycle.Write, string) {
	if c.Crashed {
		return lifecycle.WriteFailed, ErrCrashed.Error()
	}
	w, msg := c.Shell.Apply(ctx, e)
	if w == lifecycle.WriteOK || e.Kind == lifecycle.KindEvent {
		c.ran++
		c.point()
	}
	return w, msg
}

// Invoke implements pass.Shell; a crash point follows the call's answer.
// After the crash the driver is not asked, and the answer is an error.
func (c *Crash) Invoke(ctx context.Context, call *driverapi.Call, res *driverapi.Result) {
	if c.Crashed {
		*res = driverapi.ResultOf(call.Method, ErrCrashed)
		return
	}
	c.Shell.Invoke(ctx, call, res)
	c.ran++
	c.point()
}

// Node implements pass.Shell: the zero Node after the crash.
func (c *Crash) Node(ctx context.Context, name string) lifecycle.Node {
	if c.Crashed {
		return lifecycle.Node{}
	}
	return c.Shell.Node(ctx, name)
}

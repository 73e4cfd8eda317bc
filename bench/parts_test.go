package bench

import (
	"testing"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/retry"
)

// BenchmarkPart measures, in isolation, the pieces a profile of StepInto
// points at, so doc/performance.md can say where the library's time goes.
func BenchmarkPart(b *testing.B) {
	f := fixture(b)
	pol := retry.DefaultPolicy()
	in := f.In[Running]
	var d lifecycle.Decision
	b.Run("part=spread-uid36", func(b *testing.B) {
		// The Long requeue of every healthy machine: the jitter hash of the UID.
		for b.Loop() {
			_ = pol.Spread(retry.Long, MachineUID)
		}
	})
	b.Run("part=spread-uid5", func(b *testing.B) {
		for b.Loop() {
			_ = pol.Spread(retry.Long, "uid-1")
		}
	})
	b.Run("part=reset-decision", func(b *testing.B) {
		// StepInto's first line: *d = Decision{Status: in.Status}.
		for b.Loop() {
			resetDecision(&d, &in)
		}
	})
	b.Run("part=copy-input", func(b *testing.B) {
		// Passing the Input by value to a function that is not inlined.
		for b.Loop() {
			takeInput(in)
		}
	})
	b.Run("part=copy-decision", func(b *testing.B) {
		// Returning a Decision by value from a function that is not inlined.
		for b.Loop() {
			d = returnDecision(&d)
		}
	})
	b.Run("part=config-valid", func(b *testing.B) {
		// Step validates its Config on every call (valid, unexported; the
		// exported Validate does the same checks when nothing is wrong);
		// StepInto takes a Config checked once (Config.Check).
		for b.Loop() {
			_ = f.Config.Validate()
		}
	})
}

//go:noinline
func resetDecision(d *lifecycle.Decision, in *lifecycle.Input) {
	*d = lifecycle.Decision{Status: in.Status}
}

//go:noinline
func takeInput(in lifecycle.Input) {
	_ = in
}

//go:noinline
func returnDecision(d *lifecycle.Decision) lifecycle.Decision {
	return *d
}

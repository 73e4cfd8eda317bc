package lifecycle_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// A new incarnation of a name waits while an older one is still
// terminating: its lookup by name would find the older incarnation's
// instance and delete it while the older machine's deletion may still be
// draining its node. The wait is bounded (by default by the drain
// timeout), no creation timeout passes during it, and the creation
// timeout counts from its end.
func TestNewIncarnationWaitsForItsPredecessor(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	waiting := func(now time.Duration) lifecycle.Input {
		in := newInput()
		in.Now = t0.Add(now)
		in.PredecessorTerminating = true
		return in
	}
	t.Run("no lookup while the predecessor terminates", func(t *testing.T) {
		d := step(t, cfg, waiting(time.Minute))
		require.Equal(t, driverapi.MethodNone, d.Call.Method, d.String())
		require.Equal(t, lifecycle.RuleCreateAwaitPredecessor, d.Rule)
		require.Equal(t, lifecycle.WaitPredecessor, d.Wait.For)
		require.Equal(t, lifecycle.StampOf(t0.Add(cfg.DrainTimeout)), d.Wait.Until)
		require.LessOrEqual(t, d.Requeue, cfg.WaitCheck)
	})
	t.Run("no creation timeout while waiting", func(t *testing.T) {
		in := waiting(time.Minute)
		d := step(t, cfg, in)
		in.Status, in.Now = d.Status, t0.Add(90*time.Minute)
		d = step(t, cfg, in)
		require.Equal(t, phase.None, d.Status.Phase, d.String())
		require.Equal(t, lifecycle.RuleCreateAwaitPredecessor, d.Rule)
	})
	t.Run("once it is gone, the lookup; the creation timeout counts from then", func(t *testing.T) {
		in := waiting(time.Minute)
		d := step(t, cfg, in)
		in.Status, in.Now = d.Status, t0.Add(time.Hour)
		in.PredecessorTerminating = false
		d = step(t, cfg, in)
		require.Equal(t, driverapi.MethodGetStatus, d.Call.Method, d.String())
		in.Status, in.Outcome = d.Status, nil
		in.Now = t0.Add(time.Hour + 19*time.Minute)
		d = step(t, cfg, in)
		require.Equal(t, phase.None, d.Status.Phase, "the creation timeout counts from the end of the wait")
		in.Now = t0.Add(time.Hour + cfg.CreationTimeout)
		d = step(t, cfg, in)
		require.Equal(t, phase.Failed, d.Status.Phase, d.String())
	})
	t.Run("the wait is bounded", func(t *testing.T) {
		bounded := cfg
		bounded.PredecessorWait = 90 * time.Minute
		for _, c := range []lifecycle.Config{cfg, bounded} {
			wait := c.PredecessorWait
			if wait == 0 {
				wait = c.DrainTimeout
			}
			in := waiting(time.Minute)
			d := step(t, c, in)
			require.Equal(t, lifecycle.RuleCreateAwaitPredecessor, d.Rule)
			in.Status, in.Now = d.Status, t0.Add(wait)
			d = step(t, c, in)
			require.Equal(t, driverapi.MethodGetStatus, d.Call.Method, "at %v: %s", wait, d.String())
		}
	})
	t.Run("a machine whose instance is recorded does not wait", func(t *testing.T) {
		in := adoptedCreating(phase.None, lastop.Operation{}, true)
		in.PredecessorTerminating = true
		d := step(t, cfg, in)
		require.Equal(t, driverapi.MethodGetStatus, d.Call.Method, d.String())
	})
}

package lifecycle_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// Tests of the wait rule (wait.go): deadlines fire on time, and a machine
// waiting for the limiter's grant backs off.

// passUntil plays passes of in, each at the previous pass's requeue, the
// world unchanged but for the drivers' answers (answer) and writes (which
// fail when failWrites), until done reports true of a decision or the
// clock passes limit. It returns the time of the deciding step.
func passUntil(t *testing.T, cfg lifecycle.Config, in lifecycle.Input, limit time.Time, failWrites bool,
	answer func(driverapi.Call) driverapi.Result, done func(lifecycle.Decision) bool) time.Time {
	t.Helper()
	for in.Now.Before(limit) {
		requeue, decided := playPass(t, cfg, &in, answer, failWrites, done)
		if decided {
			return in.Now
		}
		in.Now = in.Now.Add(requeue)
	}
	t.Fatalf("nothing decided by %v", limit)
	return time.Time{}
}

// Deadlines fire when they pass, not one re-check later: a machine waiting
// for a deadline is requeued to it at the latest, and a timeout counts as
// passed from the instant it ends.
func TestDeadlinesFireOnTime(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	none := func(driverapi.Call) driverapi.Result { return driverapi.Result{} }
	t.Run("the creation timeout of a Pending machine", func(t *testing.T) {
		in := withIdentity(newInput(), phase.Pending)
		in.Status.LastOp = lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateProcessing, Desc: lastop.DescCreating}
		in.Now = t0.Add(17*time.Minute + 31*time.Second)
		at := passUntil(t, cfg, in, t0.Add(time.Hour), false, none,
			func(d lifecycle.Decision) bool { return d.Status.Phase == phase.Failed })
		require.Equal(t, t0.Add(cfg.CreationTimeout), at)
	})
	t.Run("the health timeout of an Unknown machine", func(t *testing.T) {
		in := unknownInput()
		in.Now = t0.Add(52*time.Minute + 7*time.Second)
		in.Status.MetadataObserved = lifecycle.StampOf(t0.Add(49 * time.Minute))
		in.Grant.Fail = true
		at := passUntil(t, cfg, in, t0.Add(2*time.Hour), false, none,
			func(d lifecycle.Decision) bool { return d.OpID.Rule() == lifecycle.RuleHealthConfirm })
		require.Equal(t, t0.Add(50*time.Minute+cfg.HealthTimeout), at)
	})
	t.Run("the drain timeout of a drain that keeps failing", func(t *testing.T) {
		in := terminating(lifecycle.StageDrain, 0, lastop.DescInitiateDrain)()
		in.Object.Overrides.DrainTimeout = 20 * time.Minute
		at := passUntil(t, cfg, in, in.Object.DeletionTime.Add(time.Hour), true, none,
			func(d lifecycle.Decision) bool { return d.OpID.Rule() == lifecycle.RuleDeleteDrainForce })
		require.Equal(t, in.Object.DeletionTime.Add(20*time.Minute), at)
	})
	t.Run("the creation timeout of a creation that keeps failing", func(t *testing.T) {
		in := newInput()
		exhausted := func(c driverapi.Call) driverapi.Result {
			if c.Method == driverapi.MethodGetStatus {
				return fail(driverapi.NotFound, "no instance")
			}
			return fail(driverapi.ResourceExhausted, "no capacity")
		}
		at := passUntil(t, cfg, in, t0.Add(time.Hour), false, exhausted,
			func(d lifecycle.Decision) bool { return d.Status.Phase == phase.Failed })
		require.Equal(t, t0.Add(cfg.CreationTimeout), at)
	})
}

// A machine past its health timeout that the limiter does not grant polls
// for the grant, backing off from Short towards Medium: it does not ask
// every five seconds for hours.
func TestGrantWaitersBackOff(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := unknownInput()
	in.Grant.Fail = false
	deadline := t0.Add(50*time.Minute + cfg.HealthTimeout)
	in.Now = deadline
	var requeues []time.Duration
	for in.Now.Before(deadline.Add(2 * time.Hour)) {
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleHealthAwaitGrant, d.Rule)
		require.False(t, d.Changed, "nothing is written while waiting")
		requeues = append(requeues, d.Requeue)
		in.Now = in.Now.Add(d.Requeue)
	}
	require.Less(t, len(requeues), 120, "polls in two hours, the first %v", requeues[:min(len(requeues), 8)])
	require.Equal(t, retry.Short, requeues[0], "the first poll comes soon")
	for i, r := range requeues {
		require.GreaterOrEqual(t, r, retry.Short)
		require.LessOrEqual(t, r, retry.Medium, "poll %d", i)
		if i > 0 {
			require.GreaterOrEqual(t, r, requeues[i-1], "the polls do not speed up")
		}
	}
	require.Equal(t, retry.Medium, requeues[len(requeues)-1], "at most Medium")
}

// A machine whose older incarnation is still terminating, stepped on an
// outcome (the deletion of an instance made on a stale node object) rather
// than by the creation flow, has not begun its wait for the predecessor:
// its creation timeout still counts from its creation time, and the wait's
// deadline and the requeue are that timeout when it comes first.
func TestPredecessorWaitNeverOutlastsTheCreationTimeout(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	cfg.CreationTimeout, cfg.DrainTimeout = time.Minute, 2*time.Minute
	in := newInput()
	in.Now = t0
	in.PredecessorTerminating = true
	in.Status.Flags = lifecycle.FlagStaleInstance
	in.Status.ProviderID = providerID
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleCreateStaleNode, d.Rule)
	require.Equal(t, driverapi.MethodDelete, d.Call.Method)
	d = step(t, cfg, then(in, d, driverapi.Result{}))
	require.Equal(t, lifecycle.RuleCreateStaleDeleted, d.Rule, d.String())
	require.Equal(t, lifecycle.WaitPredecessor, d.Wait.For, d.String())
	require.Equal(t, lifecycle.StampOf(t0.Add(time.Minute)), d.Wait.Until, d.String())
	require.LessOrEqual(t, d.Requeue, time.Minute, d.String())
}

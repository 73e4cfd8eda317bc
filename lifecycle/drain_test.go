package lifecycle_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/retry"
)

// Tests of the drain under way (drain.go): the drain effect begins the
// evictions and returns; the pods left (Node.Pods) and when the drain began
// (StageSince, with FlagDraining) decide the later passes. No decision
// waits for pods inside an effect, so no machine's drain holds up another.

// drainBegun is a machine whose drain began ago, with pods left on its
// node; deleted is how long ago its deletion was requested.
func drainBegun(pods int, ago, deleted time.Duration, flags lifecycle.Flags) lifecycle.Input {
	in := terminating(lifecycle.StageDrain, lifecycle.FlagDraining|flags, lastop.DescInitiateDrain)()
	in.Object.DeletionTime = in.Now.Add(-deleted)
	in.Status.StageSince = lifecycle.StampOf(in.Now.Add(-ago))
	in.Node.Pods = pods
	return in
}

// The op that begins a drain succeeds with pods still on the node: the
// drain is recorded as under way from now, and the pass ends waiting for
// the pods instead of blocking in the effect.
func TestDrainBeginsAndWaitsForThePods(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := terminating(lifecycle.StageDrain, 0, lastop.DescInitiateDrain)()
	in.Node.Pods = 3
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleDeleteDrain, d.Rule)
	require.Equal(t, []string{nodeCondition, cordonNode, drainNormal}, d.Lines())

	after := then(in, d, okResult())
	began := step(t, cfg, after)
	require.True(t, began.Changed, "the drain under way is recorded")
	require.True(t, began.Status.Flags.Has(lifecycle.FlagDraining))
	require.False(t, began.Status.Flags.Has(lifecycle.FlagDeletingPods))
	require.Equal(t, lifecycle.StampOf(in.Now), began.Status.StageSince, "the drain began now")
	require.Zero(t, began.Effects.Len(), "no second round in the pass that began the drain")

	after.Status, after.Outcome = began.Status, nil
	wait := step(t, cfg, after)
	require.Equal(t, lifecycle.RuleDeleteDraining, wait.Rule)
	require.False(t, wait.Changed)
	require.True(t, wait.Done(), "the pass ends")
	require.Equal(t, cfg.EvictRetryInterval, wait.Requeue, "the next round after EvictRetryInterval")
	require.Equal(t, lifecycle.WaitDrain, wait.Wait.For)
	require.Equal(t, lifecycle.StampOf(in.Object.DeletionTime.Add(cfg.DrainTimeout)), wait.Wait.Until,
		"an unforced drain waits until its drain timeout forces it")
}

// Rounds: every EvictRetryInterval a round asks again for the pods left;
// its outcome with pods left ends the pass without a status write.
func TestDrainRoundsAskAgainWithoutWritingTheStatus(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := drainBegun(2, cfg.EvictRetryInterval, time.Minute, 0)
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleDeleteDrainRound, d.Rule)
	require.False(t, d.Changed, "a round writes no status")
	require.Equal(t, []string{drainNormal}, d.Lines())

	out := step(t, cfg, then(in, d, okResult()))
	require.Equal(t, lifecycle.RuleDeleteDraining, out.Rule)
	require.False(t, out.Changed)
	require.True(t, out.Done())
	require.Equal(t, cfg.EvictRetryInterval, out.Requeue)
}

// S2f, S2e: the drain is done when the world shows no pods left, after a
// round or on a later pass.
func TestDrainEndsWhenTheNodeHasNoPodsLeft(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	t.Run("S2f a later pass sees the pods gone", func(t *testing.T) {
		d := step(t, cfg, drainBegun(0, time.Second, time.Minute, 0))
		require.Equal(t, lifecycle.RuleDeleteDrained, d.Rule)
		require.True(t, d.Status.Flags.Has(lifecycle.FlagDrainSucceeded))
		require.Zero(t, d.Status.Flags&(lifecycle.FlagDraining|lifecycle.FlagDeletingPods), "no drain under way any more")
		require.Equal(t, lifecycle.StageDeleteVM, d.Status.Stage)
	})
	t.Run("S2f the pods go with a round", func(t *testing.T) {
		in := drainBegun(1, time.Minute, 2*time.Minute, 0)
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleDeleteDrainRound, d.Rule)
		after := then(in, d, okResult())
		after.Node.Pods = 0
		out := step(t, cfg, after)
		require.Equal(t, lifecycle.RuleDeleteDrained, out.Rule)
		require.Equal(t, []string{deleteVMCall}, out.Lines())
	})
	t.Run("S2e a forced drain sees the pods gone", func(t *testing.T) {
		in := drainBegun(0, time.Second, time.Minute, lifecycle.FlagDeletingPods)
		in.VolumeAttachments = 1
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleDeleteForceDrained, d.Rule)
		require.Equal(t, lifecycle.StageVolumes, d.Status.Stage)
		require.True(t, d.Status.Flags.Has(lifecycle.FlagDrainForced))
	})
	t.Run("the node is gone", func(t *testing.T) {
		in := drainBegun(2, time.Second, time.Minute, 0)
		in.Node = lifecycle.Node{}
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleDeleteDrained, d.Rule)
	})
	t.Run("the node cannot be read: it waits, nothing is done to it", func(t *testing.T) {
		in := drainBegun(2, time.Minute, time.Minute, 0)
		in.Node, in.NodeReadFailed = lifecycle.Node{}, true
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleDeleteNodeUnreadable, d.Rule)
		require.Zero(t, d.Effects.Len())
		require.False(t, d.Changed)
	})
}

// The drain timeout, counted from the deletion time as in MCM, forces a
// drain under way: the pods left are deleted, and the forced drain's own
// timeout counts from then.
func TestDrainTimeoutForcesTheDrainUnderWay(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := drainBegun(2, time.Hour, cfg.DrainTimeout, 0)
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleDeleteDrainForce, d.Rule)
	require.Equal(t, []string{drainForced}, d.Lines(), "only the pods are deleted: the node is cordoned already")

	forced := step(t, cfg, then(in, d, okResult()))
	require.True(t, forced.Status.Flags.Has(lifecycle.FlagDraining|lifecycle.FlagDeletingPods))
	require.Equal(t, lifecycle.StampOf(in.Now), forced.Status.StageSince)
	require.Equal(t, lifecycle.WaitDrain, forced.Wait.For)
	require.Equal(t, lifecycle.StampOf(in.Now.Add(cfg.ForcedDrainTimeout)), forced.Wait.Until)
}

// S2g: pods a forced drain deleted and that are still there after
// ForcedDrainTimeout are left behind; deletion goes on.
func TestForcedDrainGoesOnAfterItsTimeout(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := drainBegun(1, cfg.ForcedDrainTimeout, 3*time.Hour, lifecycle.FlagDeletingPods)
	in.VolumeAttachments = 1
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleDeleteDrainForcedOn, d.Rule)
	require.Equal(t, lifecycle.StageVolumes, d.Status.Stage)
	require.True(t, d.Status.Flags.Has(lifecycle.FlagDrainForced))
	require.Zero(t, d.Status.Flags&(lifecycle.FlagDraining|lifecycle.FlagDeletingPods))
	require.Equal(t, "Drain failed due to - 1 pod left on the node. However, since it's a force deletion shall continue deletion of VM. Delete Volume Attachments",
		lifecycle.Describe(&d.Status, machineName))

	early := step(t, cfg, drainBegun(1, cfg.ForcedDrainTimeout-time.Second, 3*time.Hour, lifecycle.FlagDeletingPods))
	require.NotEqual(t, lifecycle.RuleDeleteDrainForcedOn, early.Rule)
	require.LessOrEqual(t, early.Requeue, time.Second, "woken when the forced drain's timeout passes")
}

// S2h: an unforced drain with pods left after MaxEvictRetries rounds
// failed; it begins again, condition, cordon and all, after a backoff.
func TestUnforcedDrainFailsAfterItsEvictionRounds(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	cfg.MaxEvictRetries = 3
	rounds := 3 * cfg.EvictRetryInterval
	d := step(t, cfg, drainBegun(2, rounds, rounds+time.Minute, 0))
	require.Equal(t, lifecycle.RuleDeleteDrainFailed, d.Rule)
	require.Equal(t, lastop.StateFailed, d.Status.LastOp.State)
	require.Equal(t, "Drain failed due to - 2 pods left on the node. Will retry in next sync. Initiate node drain",
		lifecycle.Describe(&d.Status, machineName))
	require.Zero(t, d.Status.Flags&lifecycle.FlagDraining, "the next attempt begins afresh")
	require.Equal(t, retry.Short, d.Requeue)
	require.Equal(t, []string{"event Warning DrainFailed (delete.drain-failed)"}, eventLines(d))

	again := drainBegun(2, 0, rounds+time.Minute+retry.Short, 0)
	again.Status = d.Status
	again.Now = again.Now.Add(retry.Short)
	next := step(t, cfg, again)
	require.Equal(t, lifecycle.RuleDeleteDrain, next.Rule)
	require.Equal(t, []string{nodeCondition, cordonNode, drainNormal}, next.Lines())

	early := step(t, cfg, drainBegun(2, rounds-time.Second, rounds+time.Minute, 0))
	require.NotEqual(t, lifecycle.RuleDeleteDrainFailed, early.Rule)
}

// A round that cannot be carried out is the drain's failure: an unforced
// one begins again after a backoff (S2h), a forced one goes on (S2g).
func TestDrainRoundThatFails(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := drainBegun(2, time.Minute, 2*time.Minute, 0)
	failed := writeStopped(in, 0, lifecycle.WriteFailed, "the server is unavailable")
	d := step(t, cfg, failed)
	require.Equal(t, lifecycle.RuleDeleteDrainFailed, d.Rule)
	require.Zero(t, d.Status.Flags&lifecycle.FlagDraining)

	forcedIn := drainBegun(2, time.Second*30, 2*time.Minute, lifecycle.FlagDeletingPods)
	forcedIn.VolumeAttachments = 1
	forcedFailed := writeStopped(forcedIn, 0, lifecycle.WriteFailed, "the server is unavailable")
	f := step(t, cfg, forcedFailed)
	require.Equal(t, lifecycle.RuleDeleteDrainForcedOn, f.Rule)
	require.Equal(t, lifecycle.StageVolumes, f.Status.Stage)
}

// A lost write of the drain under way: the status says the drain has not
// begun, so it begins again (the condition, cordon and evictions are
// idempotent) and the forcing still counts from the deletion time.
func TestDrainAfterALostWriteBeginsAgain(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := terminating(lifecycle.StageDrain, 0, lastop.DescInitiateDrain)()
	in.Node.Pods = 2
	in.Object.DeletionTime = in.Now.Add(-cfg.DrainTimeout)
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleDeleteDrainForce, d.Rule, "past the drain timeout it begins forced")
	require.Equal(t, []string{nodeCondition, cordonNode, drainForced}, d.Lines())
}

func okResult() driverapi.Result { return driverapi.Result{} }

// eventLines are the decision's event effects.
func eventLines(d lifecycle.Decision) []string {
	var out []string
	for _, l := range d.Lines() {
		if len(l) > 6 && l[:6] == "event " {
			out = append(out, l)
		}
	}
	return out
}

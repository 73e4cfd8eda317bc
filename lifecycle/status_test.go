package lifecycle_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/retry"
)

// Every stage reads back from its name; the empty text is StageNone, and
// anything else is refused.
func TestParseStage(t *testing.T) {
	for s := lifecycle.StageNone; s.Valid(); s++ {
		got, err := lifecycle.ParseStage(s.String())
		require.NoError(t, err)
		require.Equal(t, s, got)
	}
	got, err := lifecycle.ParseStage("")
	require.NoError(t, err)
	require.Equal(t, lifecycle.StageNone, got)
	for _, bad := range []string{"unknown-stage", "Drain", " drain", "drain "} {
		_, err := lifecycle.ParseStage(bad)
		require.Error(t, err, bad)
	}
}

// A step that changes the status records the UID's hash in it; a step that
// changes nothing leaves it unset, so no status is written for the hash
// alone. The resync requeue is the machine's jitter whether the status
// holds the hash or not, and a step that reads it does not hash the UID.
func TestStatusKeepsTheUIDHash(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	want := retry.HashKey(machineUID)

	in := runningInput()
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleHealthy, d.Rule)
	require.False(t, d.Changed)
	require.Zero(t, d.Status.UIDHash, "not recorded without a change")
	require.Equal(t, retry.Resync(machineUID, cfg.Retry.JitterPercent), d.Requeue)

	in.Status.UIDHash = want
	kept := step(t, cfg, in)
	require.False(t, kept.Changed)
	require.Equal(t, d.Requeue, kept.Requeue)
	require.Equal(t, want, kept.Status.UIDHash)

	// The hash the status holds is read, not the UID hashed again.
	in.Status.UIDHash = retry.HashKey("another-uid")
	require.Equal(t, retry.Resync("another-uid", cfg.Retry.JitterPercent), step(t, cfg, in).Requeue)

	// A change records the hash the status lacked, and keeps one it holds.
	in = runningInput()
	in.Node.Conditions = []lifecycle.Condition{{Type: "Ready", Status: lifecycle.ConditionFalse}}
	d = step(t, cfg, in)
	require.True(t, d.Changed)
	require.Equal(t, want, d.Status.UIDHash)
	in.Status.UIDHash = retry.HashKey("another-uid")
	require.Equal(t, in.Status.UIDHash, step(t, cfg, in).Status.UIDHash)
}

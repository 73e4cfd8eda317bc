package lifecycle_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// A step whose clock was hours ahead stamps the status in the future; the
// next step, with the clock right, finds those stamps later than Now. They
// are set to Now and saved (AnomalyStampClamped), so every deadline counts
// from Now at the latest instead of waiting for real time to catch up
// with the jumped clock.
func TestStampsAfterNowAreClamped(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	ahead := func(in lifecycle.Input) lifecycle.Stamp { return lifecycle.StampOf(in.Now.Add(6 * time.Hour)) }

	t.Run("an Unknown machine whose phase began in the future", func(t *testing.T) {
		in := unknownInput()
		in.Status.PhaseSince = ahead(in)
		d := step(t, cfg, in)
		require.True(t, d.Anomalies.Has(lifecycle.AnomalyStampClamped), d.String())
		require.Equal(t, lifecycle.StampOf(in.Now), d.Status.PhaseSince)
		require.True(t, d.Changed, "the clamped stamp is saved")
		require.Equal(t, lifecycle.RuleHealthWaitUnknown, d.Rule)
		require.Equal(t, lifecycle.StampOf(in.Now.Add(cfg.HealthTimeout)), d.Wait.Until, "the deadline counts from now")

		// Just past ten minutes later by the right clock, the timeout has
		// passed.
		in.Status, in.Now, in.Grant.Fail = d.Status, in.Now.Add(cfg.HealthTimeout+time.Second), true
		d = step(t, cfg, in)
		require.Equal(t, lifecycle.RuleHealthConfirm, d.OpID.Rule(), d.String())
	})
	t.Run("every stamp of the status", func(t *testing.T) {
		in := withIdentity(newInput(), phase.Running)
		in.Node = healthyNode()
		in.Status.Conditions = in.Node.Conditions
		in.Status.PhaseSince = ahead(in)
		in.Status.StageSince = ahead(in)
		in.Status.MetadataObserved = ahead(in)
		in.Status.MetadataSince = ahead(in)
		in.Status.RetryAfter = ahead(in)
		d := step(t, cfg, in)
		require.True(t, d.Anomalies.Has(lifecycle.AnomalyStampClamped), d.String())
		now := lifecycle.StampOf(in.Now)
		for name, s := range map[string]lifecycle.Stamp{"PhaseSince": d.Status.PhaseSince, "StageSince": d.Status.StageSince,
			"MetadataObserved": d.Status.MetadataObserved, "MetadataSince": d.Status.MetadataSince,
			"RetryAfter (further ahead than any backoff)": d.Status.RetryAfter} {
			require.LessOrEqual(t, s, now, name)
		}
	})
	t.Run("stamps at or before now are left alone", func(t *testing.T) {
		in := unknownInput()
		d := step(t, cfg, in)
		require.False(t, d.Anomalies.Has(lifecycle.AnomalyStampClamped))
		require.Equal(t, in.Status.PhaseSince, d.Status.PhaseSince)
	})
}

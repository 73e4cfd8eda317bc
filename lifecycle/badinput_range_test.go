package lifecycle_test

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// Input values out of the range the lifecycle can represent or work with
// are refused with a rule, never wrapped or let through to overflow.
func TestBadInputOutOfRange(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	year := func(y int) time.Time { return time.Date(y, 6, 1, 0, 0, 0, 0, time.UTC) }
	for _, tc := range []struct {
		name string
		in   func() lifecycle.Input
	}{
		{"Now in the year 1600", func() lifecycle.Input { in := withIdentity(newInput(), phase.Pending); in.Now = year(1600); return in }},
		{"Now in the year 3000", func() lifecycle.Input { in := withIdentity(newInput(), phase.Pending); in.Now = year(3000); return in }},
		{"a creation time in the year 1600", func() lifecycle.Input { in := newInput(); in.Object.CreationTime = year(1600); return in }},
		{"a deletion time in the year 9999", func() lifecycle.Input { in := deletingInput(); in.Object.DeletionTime = year(9999); return in }},
		{"the observer's since in the year 1", func() lifecycle.Input {
			in := unknownInput()
			in.Observer.Since = time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC)
			return in
		}},
		{"a node-condition list of a thousand types", func() lifecycle.Input {
			in := runningInput()
			for i := range 1000 {
				in.Object.Overrides.NodeConditions = append(in.Object.Overrides.NodeConditions, "C"+strconv.Itoa(i))
			}
			return in
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in()
			d := step(t, cfg, in)
			require.Equal(t, lifecycle.RuleInputOutOfRange, d.Rule, d.String())
			require.False(t, d.Changed, "the status is kept")
			require.Zero(t, d.Effects.Len())
		})
	}
	t.Run("StampOf saturates", func(t *testing.T) {
		require.Equal(t, lifecycle.Stamp(math.MaxInt64), lifecycle.StampOf(year(3000)))
		require.Equal(t, lifecycle.Stamp(math.MinInt64), lifecycle.StampOf(year(1600)))
		require.True(t, lifecycle.InStampRange(year(2026)))
		require.True(t, lifecycle.InStampRange(time.Time{}), "the zero time is the unset stamp")
		require.False(t, lifecycle.InStampRange(year(1600)))
		require.False(t, lifecycle.InStampRange(year(2263)))
	})
}

// Retry periods near the limit of a duration overflow when doubled or
// added to a time: a Config with them is refused.
func TestConfigRefusesHugePeriods(t *testing.T) {
	for _, set := range []func(*lifecycle.Config){
		func(c *lifecycle.Config) { c.Retry.MaxBackoff = math.MaxInt64 - 1 },
		func(c *lifecycle.Config) { c.Retry.ResourceExhausted = math.MaxInt64 / 2 },
		func(c *lifecycle.Config) { c.HealthTimeout = math.MaxInt64 },
		func(c *lifecycle.Config) { c.NodeConditions = make([]string, 1000) },
	} {
		cfg := lifecycle.DefaultConfig()
		set(&cfg)
		require.Error(t, cfg.Validate())
		require.Equal(t, lifecycle.RuleInvalidConfig, lifecycle.Step(cfg, unknownInput()).Rule)
	}
}

// A LastOperation detail is bounded: a patch of 200,000 metadata keys
// names the first keys and how many more, within 1 KiB; a provider error
// of a megabyte is cut.
func TestLastOperationDetailIsBounded(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := runningInput()
	in.Object.Metadata = map[string]string{}
	for i := range 200_000 {
		in.Object.Metadata["key-"+strconv.Itoa(i)] = "v"
	}
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleMetadataPatch, d.OpID.Rule(), d.Rule)
	require.LessOrEqual(t, len(d.Status.LastOp.Detail), 1024)
	require.Contains(t, d.Status.LastOp.Detail, "and 19")
	require.True(t, strings.HasPrefix(d.Status.LastOp.Detail, "key-0, key-1, "), d.Status.LastOp.Detail[:40])

	in = unknownInput()
	in.Grant.Fail = true
	d = step(t, cfg, in)
	big := fail(driverapi.Unavailable, strings.Repeat("x", 1<<20))
	d = step(t, cfg, then(in, d, big))
	require.Equal(t, lifecycle.RuleHealthConfirmFailed, d.Rule)
	in = then(in, d, driverapi.Result{})
	in.Now = in.Now.Add(time.Hour)
	in.Outcome = nil
	d = step(t, cfg, in)
	d = step(t, cfg, then(in, d, fail(driverapi.NotFound, strings.Repeat("y", 1<<20))))
	require.Equal(t, lifecycle.RuleHealthTimeout, d.Rule)
	require.LessOrEqual(t, len(d.Status.LastOp.Detail), 1024)
	require.Less(t, len(lifecycle.Describe(&d.Status, machineName)), 4096)
}

// A deletion time at the Unix epoch is the zero stamp, which elsewhere
// means unset; the machine is deleted all the same, and its decision waits
// for the deletion like any other.
func TestDeletionAtTheUnixEpochIsADeletion(t *testing.T) {
	in := deletingInput()
	in.Object.DeletionTime = time.Unix(0, 0)
	d := step(t, lifecycle.DefaultConfig(), in)
	require.Equal(t, phase.Terminating, d.Status.Phase, d.String())
	require.Equal(t, lifecycle.WaitDeletion, d.Wait.For, d.String())
}

package lifecycle_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// Tests of the limiter's meltdown protection per failure domain
// (Config.ZoneOutage): a zone that looks down as a whole has its machines
// held back until the hold ends, while the owner's other zones are
// replaced as usual.

// zoneConfig turns the protection on: three unhealthy machines of an owner
// in one zone, and half of them, hold it for 30 minutes past the health
// timeout; five replacements may be in flight.
func zoneConfig() lifecycle.Config {
	cfg := lifecycle.DefaultConfig()
	cfg.Replacements = lifecycle.ReplacementLimit{Count: 5}
	cfg.ZoneOutage = lifecycle.ZoneOutage{Count: 3, Percent: 50, Hold: 30 * time.Minute}
	return cfg
}

// unknownIn is an Unknown machine of owner ms-1 in zone z since minute
// sinceMinute (its health timeout of 10 minutes passed at limiterNow for
// sinceMinute <= 20).
func unknownIn(name, z string, sinceMinute int) lifecycle.Input {
	in := machine(name, "ms-1", phase.Unknown, sinceMinute)
	in.Node = lifecycle.Node{Name: "node-" + name, Zone: z}
	return in
}

func zoneLimit(cfg lifecycle.Config, now time.Time, ins ...lifecycle.Input) []lifecycle.Grant {
	fleet := make([]lifecycle.Member, len(ins))
	for i := range ins {
		fleet[i] = lifecycle.MemberOf(&cfg, &ins[i])
	}
	return lifecycle.Limit(nil, &cfg, now, lifecycle.Observer{}, fleet)
}

func TestZoneOutageHoldsTheZoneAndReplacesTheOthers(t *testing.T) {
	cfg := zoneConfig()
	fleet := []lifecycle.Input{
		unknownIn("a-1", "zone-a", 5), unknownIn("a-2", "zone-a", 6), unknownIn("a-3", "zone-a", 7),
		unknownIn("b-1", "zone-b", 5), unknownIn("x-1", "", 5),
	}
	out := zoneLimit(cfg, limiterNow, fleet...)
	for i, name := range []string{"a-1", "a-2", "a-3"} {
		require.False(t, out[i].Fail, name)
		want := t0.Add(time.Duration(5+i)*time.Minute + cfg.HealthTimeout + cfg.ZoneOutage.Hold)
		require.True(t, out[i].Held.Equal(want), "%s held until %v, want %v", name, out[i].Held, want)
	}
	require.True(t, out[3].Fail, "a machine of a healthy zone is replaced")
	require.True(t, out[4].Fail, "a machine of no known zone is replaced")
	require.True(t, out[3].Held.IsZero() && out[4].Held.IsZero())

	// Once a machine's hold ends, the normal limit applies to it.
	later := t0.Add(6*time.Minute + cfg.HealthTimeout + cfg.ZoneOutage.Hold)
	out = zoneLimit(cfg, later, fleet...)
	require.Equal(t, []bool{true, true, false}, []bool{out[0].Fail, out[1].Fail, out[2].Fail})
	require.True(t, out[2].Held.After(later))
}

// Both thresholds must be met, among the unhealthy machines of one owner:
// other owners' machines in the zone, and healthy ones, do not count.
func TestZoneOutageThresholds(t *testing.T) {
	cfg := zoneConfig()
	twoInA := []lifecycle.Input{unknownIn("a-1", "zone-a", 5), unknownIn("a-2", "zone-a", 5)}
	other := unknownIn("o-1", "zone-a", 5)
	other.Object.Owner = "ms-2"
	running := machine("r-1", "ms-1", phase.Running, 0)
	running.Node.Zone = "zone-a"
	out := zoneLimit(cfg, limiterNow, append(twoInA, other, running)...)
	require.Equal(t, []int{0, 1, 2}, granted(out), "two of ms-1 in zone-a are below the count")

	// Three in zone-a but four elsewhere: below half.
	three := append(twoInA, unknownIn("a-3", "zone-a", 5), unknownIn("b-1", "zone-b", 5), unknownIn("b-2", "zone-b", 5),
		unknownIn("c-1", "zone-c", 5), unknownIn("c-2", "zone-c", 5))
	cfg.Replacements = lifecycle.ReplacementLimit{Count: 10}
	require.Equal(t, []int{0, 1, 2, 3, 4, 5, 6}, granted(zoneLimit(cfg, limiterNow, three...)))
	// Three of six: half, held.
	require.Equal(t, []int{3, 4, 5}, granted(zoneLimit(cfg, limiterNow, three[:6]...)))

	// Off, nothing is held.
	cfg.ZoneOutage = lifecycle.ZoneOutage{}
	for _, g := range zoneLimit(cfg, limiterNow, three[:6]...) {
		require.True(t, g.Fail && g.Held.IsZero())
	}
}

// A machine granted before its zone went down keeps its grant, and while
// the observer is degraded nothing is granted or held.
func TestZoneOutageKeepsGrantsAndWaitsForTheObserver(t *testing.T) {
	cfg := zoneConfig()
	fleet := []lifecycle.Input{unknownIn("a-1", "zone-a", 5), unknownIn("a-2", "zone-a", 5), unknownIn("a-3", "zone-a", 5)}
	fleet[0].Status.Flags |= lifecycle.FlagGranted
	out := zoneLimit(cfg, limiterNow, fleet...)
	require.True(t, out[0].Fail && out[0].Held.IsZero())
	require.False(t, out[1].Fail || out[1].Held.IsZero())

	members := make([]lifecycle.Member, len(fleet))
	for i := range fleet {
		members[i] = lifecycle.MemberOf(&cfg, &fleet[i])
	}
	for i, g := range lifecycle.Limit(nil, &cfg, limiterNow, lifecycle.Observer{Degraded: true, Since: t0}, members) {
		require.True(t, g.Held.IsZero(), "machine %d held while the observer is degraded", i)
		require.False(t, g.Fail && i > 0)
	}
}

// A held machine's step waits for its zone's outage, until the hold its
// grant carries, never later than the Config's hold past its deadline, and
// is requeued by then; the summary counts it so.
func TestZoneOutageWait(t *testing.T) {
	cfg := zoneConfig()
	in := unknownInput() // its health timeout passed a minute ago
	deadline := t0.Add(60 * time.Minute)
	in.Grant = lifecycle.Grant{Held: deadline.Add(20 * time.Minute)}
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleHealthAwaitGrant, d.Rule)
	require.Equal(t, lifecycle.WaitZoneOutage, d.Wait.For)
	require.Equal(t, lifecycle.StampOf(deadline.Add(20*time.Minute)), d.Wait.Until)
	require.LessOrEqual(t, d.Requeue, deadline.Add(20*time.Minute).Sub(in.Now))
	s := lifecycle.Summarize(&cfg, in.Now, []lifecycle.Member{lifecycle.MemberOf(&cfg, &in)}, 0)
	require.Equal(t, 1, s.ByWait[lifecycle.WaitZoneOutage])

	// A hold beyond the Config's is cut to it; a hold that ended, or a
	// Config with the protection off, waits for the grant.
	in.Grant.Held = deadline.Add(10 * time.Hour)
	require.Equal(t, lifecycle.StampOf(deadline.Add(cfg.ZoneOutage.Hold)), step(t, cfg, in).Wait.Until)
	in.Grant.Held = in.Now.Add(-time.Second)
	require.Equal(t, lifecycle.WaitGrant, step(t, cfg, in).Wait.For)
	in.Grant.Held = deadline.Add(20 * time.Minute)
	require.Equal(t, lifecycle.WaitGrant, step(t, lifecycle.DefaultConfig(), in).Wait.For)
}

func TestZoneOutageConfig(t *testing.T) {
	for _, z := range []lifecycle.ZoneOutage{
		{Count: -1}, {Count: 1}, {Count: 1, Hold: time.Hour, Percent: 101}, {Count: 1, Hold: -time.Second},
		{Percent: 50}, {Hold: time.Hour}, {Count: 1, Hold: lifecycle.MaxTimeout + 1},
	} {
		cfg := lifecycle.DefaultConfig()
		cfg.ZoneOutage = z
		require.Error(t, cfg.Validate(), "%+v", z)
	}
	cfg := zoneConfig()
	require.NoError(t, cfg.Validate())
}

// Property: no machine of a zone over both thresholds is granted before its
// hold ends, and every other machine is granted exactly as the limiter
// without the protection grants it in the fleet where the held machines
// may not be granted yet.
func TestPropertyZoneOutage(t *testing.T) {
	zones := rapid.SampledFrom([]string{"", "zone-a", "zone-a", "zone-b", "zone-c"})
	owners := rapid.SampledFrom([]string{"ms-1", "ms-2"})
	phases := rapid.SampledFrom([]phase.Phase{phase.Unknown, phase.Unknown, phase.Unknown, phase.Running,
		phase.InPlaceUpdateFailed, phase.Pending, phase.Failed})
	rapid.Check(t, func(t *rapid.T) {
		cfg := lifecycle.DefaultConfig()
		cfg.Replacements = lifecycle.ReplacementLimit{Count: rapid.IntRange(1, 6).Draw(t, "replacements")}
		cfg.ZoneOutage = lifecycle.ZoneOutage{Count: rapid.IntRange(1, 4).Draw(t, "count"),
			Percent: rapid.IntRange(0, 100).Draw(t, "percent"),
			Hold:    time.Duration(rapid.IntRange(1, 40).Draw(t, "hold minutes")) * time.Minute}
		now := limiterNow.Add(time.Duration(rapid.IntRange(0, 40).Draw(t, "now minutes")) * time.Minute)
		n := rapid.IntRange(0, 20).Draw(t, "machines")
		fleet := make([]lifecycle.Input, n)
		for i := range fleet {
			in := machine(fmt.Sprintf("m-%02d", i), owners.Draw(t, "owner"), phases.Draw(t, "phase"),
				rapid.IntRange(0, 25).Draw(t, "since minute"))
			in.Node.Zone = zones.Draw(t, "zone")
			if rapid.IntRange(0, 5).Draw(t, "granted") == 0 {
				in.Status.Flags |= lifecycle.FlagGranted
			}
			fleet[i] = in
		}
		out := zoneLimit(cfg, now, fleet...)
		// The zones down, per owner, from the fleet itself.
		unhealthy, inZone := map[string]int{}, map[[2]string]int{}
		for _, in := range fleet {
			if in.Status.Phase == phase.Unknown || in.Status.Phase == phase.InPlaceUpdateFailed {
				unhealthy[in.Object.Owner]++
				if in.Node.Zone != "" {
					inZone[[2]string{in.Object.Owner, in.Node.Zone}]++
				}
			}
		}
		down := func(in *lifecycle.Input) bool {
			k := inZone[[2]string{in.Object.Owner, in.Node.Zone}]
			return in.Node.Zone != "" && k >= cfg.ZoneOutage.Count && k*100 >= cfg.ZoneOutage.Percent*unhealthy[in.Object.Owner]
		}
		// The reference: without the protection, the held machines may
		// not be granted yet (their health timeout is turned off).
		ref := cfg
		ref.ZoneOutage = lifecycle.ZoneOutage{}
		without := make([]lifecycle.Input, n)
		copy(without, fleet)
		for i := range out {
			in := &fleet[i]
			if !out[i].Held.IsZero() {
				require.True(t, down(in), "%s held outside a zone that is down", in.Object.Name)
				require.False(t, out[i].Fail)
				require.True(t, out[i].Held.After(now))
				without[i].Object.Overrides.DisableHealthTimeout = true
			}
			if out[i].Fail && !in.Status.Flags.Has(lifecycle.FlagGranted) && down(in) {
				until := in.Status.PhaseSince.Time().Add(cfg.HealthTimeout + cfg.ZoneOutage.Hold)
				require.False(t, now.Before(until), "%s of a zone that is down granted before its hold ends", in.Object.Name)
			}
		}
		refOut := zoneLimit(ref, now, without...)
		for i := range out {
			if out[i].Held.IsZero() {
				require.Equal(t, refOut[i].Fail, out[i].Fail, "%s", fleet[i].Object.Name)
			}
		}
	})
}

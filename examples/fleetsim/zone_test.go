package fleetsim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// zoneOutage returns the default options for n machines with one zone down
// for an hour, longer than the health timeout and the hold, and the
// limiter's zone protection on.
func zoneOutage(n int) Options {
	o := small(n)
	o.ZoneOutage = time.Hour
	o.Config.ZoneOutage = DefaultZoneProtection()
	return o
}

// One zone down for an hour while the other faults go on: the limiter
// holds the zone's machines back, replaces the unhealthy machines of the
// other zones meanwhile, and the zone's own once their hold is over; every
// check holds, the world's checks of the limiter by zone among them.
func TestZoneOutageHoldsTheZoneAndReplacesTheOthers(t *testing.T) {
	o := zoneOutage(3000)
	o.Dead = 0.05 // machines of the other zones to replace during the outage
	r := run(t, o)
	require.True(t, r.OK(), r.Report())
	s := &r.Stats
	require.NotEmpty(t, r.OutageZone)
	require.Positive(t, s.ZoneNotReady)
	require.Positive(t, s.ZoneHeld, "machines held back for their zone")
	require.Positive(t, s.ZoneFailedOthers, "machines of the other zones replaced during the outage")
	require.Positive(t, s.ZoneFailedDown, "machines of the zone down replaced once their hold was over")
	require.Zero(t, r.Summary.PastDeadline)
	require.Contains(t, r.Report(), r.OutageZone+" down at +")
}

// A limiter without its zone protection replaces the zone's machines one
// by one as soon as their health timeout passes: the world's check of the
// hold catches it.
func TestZoneOutageWithoutProtectionIsCaught(t *testing.T) {
	o := zoneOutage(2000)
	o.broken.noZoneProtection = true
	caught(t, o, "the limiter grants its replacement")
}

// A limiter that holds every zone with an unhealthy machine, for ten
// hours: the machines of zones that are up, and those of the zone down
// past its hold, wait for a replacement that does not come, which the
// world's check catches.
func TestZoneHeldPastItsHoldIsCaught(t *testing.T) {
	o := zoneOutage(2000)
	o.broken.holdEveryZone = true
	caught(t, o, "not granted its replacement")
}

// Each owner spreads its machines over the zones in turn, and each node
// carries its machine's zone label, which the shell reads into the
// lifecycle's view of the node and into the limiter's fleet view.
func TestNodesCarryTheirZone(t *testing.T) {
	o := DefaultOptions()
	o.Machines, o.PerOwner, o.Faults, o.Update, o.Metadata, o.ScaleDown = 30, 10, false, 0, 0, 0
	tab, err := newTables(&o, epoch)
	require.NoError(t, err)
	w := newShard(&o, tab, 0, nil)
	w.run()
	require.Empty(t, w.viol)
	perZone := map[[2]string]int{}
	for mi := range w.machines {
		m := &w.machines[mi]
		require.Equal(t, phase.Running, m.st.Phase)
		i := w.findNode(m)
		require.GreaterOrEqual(t, i, int32(0))
		require.Equal(t, zoneName(m.zone), w.nodeView(i).Zone)
		require.Equal(t, zoneName(m.zone), w.shellZone(m))
		perZone[[2]string{m.obj.Owner, zoneName(m.zone)}]++
	}
	for _, owner := range []string{"ms-0", "ms-1", "ms-2"} {
		require.Equal(t, []int{4, 3, 3}, []int{perZone[[2]string{owner, "zone-a"}],
			perZone[[2]string{owner, "zone-b"}], perZone[[2]string{owner, "zone-c"}]}, owner)
	}
}

// The world judges a zone down, or up, only with a margin for what the
// lifecycle has not caught up with: a zone's settled machines less the
// unsure ones against one more than every unhealthy machine; and a zone's
// machines, one more and the unsure ones, against the count or the
// settled machines less the unsure ones.
func TestCensusMargins(t *testing.T) {
	p := &lifecycle.ZoneOutage{Count: 3, Percent: 50, Hold: time.Hour}
	var c census
	c.unhealthy[1], c.settled[1] = 4, 3
	c.unhealthy[2], c.settled[2] = 1, 1
	c.all, c.allSettled = 5, 4
	require.True(t, c.down(p, 1), "3 settled of 5+1")
	require.False(t, c.down(p, 2))
	require.False(t, c.up(p, 1))
	require.True(t, c.up(p, 2), "1+1 is below the count")
	c.unsure = 1
	require.False(t, c.down(p, 1), "3-1 settled is below the count")
	require.False(t, c.up(p, 2), "1+1+1 reaches the count, and 3 of 4-1 the share")
	require.True(t, c.up(p, 0), "a machine of no zone is never held")
	require.False(t, c.down(&lifecycle.ZoneOutage{}, 1), "no protection, no zone down")
	require.True(t, c.up(&lifecycle.ZoneOutage{}, 1))
}

func TestZoneOptionsValidate(t *testing.T) {
	for name, change := range map[string]func(*Options){
		"negative zones":         func(o *Options) { o.Zones = -1 },
		"too many zones":         func(o *Options) { o.Zones = len(zoneNames) + 1 },
		"an outage of no zone":   func(o *Options) { o.Zones, o.ZoneOutage = 0, time.Hour },
		"an outage past active":  func(o *Options) { o.ZoneOutage = o.Active + time.Second },
		"a negative outage":      func(o *Options) { o.ZoneOutage = -time.Second },
		"an invalid protection":  func(o *Options) { o.Config.ZoneOutage = lifecycle.ZoneOutage{Count: 3} },
		"a protection past 100%": func(o *Options) { o.Config.ZoneOutage = lifecycle.ZoneOutage{Count: 3, Percent: 101, Hold: 1} },
	} {
		t.Run(name, func(t *testing.T) {
			o := zoneOutage(100)
			change(&o)
			require.Error(t, o.Validate())
		})
	}
	o := zoneOutage(100)
	require.NoError(t, o.Validate())
	o.Zones = 0
	o.ZoneOutage = 0
	require.NoError(t, o.Validate(), "no zones, no outage")
}

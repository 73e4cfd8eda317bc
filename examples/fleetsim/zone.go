package fleetsim

import (
	"fmt"
	"time"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// Zones and the zone outage. Each owner spreads its machines over
// Options.Zones zones, round robin, as a MachineSet spread over a region's
// zones does; an instance runs in its machine's zone, and its node carries
// the zone in its lifecycle.ZoneLabel label from its registration on. The
// shell reads that label into lifecycle.Node.Zone, for the steps and for
// the limiter's fleet view. With Options.ZoneOutage one zone goes down for
// a while: every node in it turns NotReady, while the other faults go on
// making machines of every zone unhealthy.
//
// The world judges the limiter's grants against the protection the
// options ask for (Options.Config.ZoneOutage, also when a test hook runs
// the lifecycle without it), from its own census of each owner's
// machines: those that ran, are not being deleted, and whose instance's
// node it sees NotReady or gone, by the zone the instance runs in. The
// limiter counts the machines the lifecycle has marked Unknown, which
// follow the world a little behind, so the world judges a zone down, or
// up, only with a margin (census.down, census.up).

// zoneNames are the names of the zones, in order.
var zoneNames = func() (names [26]string) {
	for i := range names {
		names[i] = "zone-" + string(rune('a'+i))
	}
	return names
}()

// zoneName returns the name of zone z+1 (a machine's, an instance's or a
// node's zone field), "" for 0: no zone.
func zoneName(z uint8) string {
	if z == 0 {
		return ""
	}
	return zoneNames[z-1]
}

// zoneSettle is how long the world gives the lifecycle to notice that a
// node turned unhealthy (to mark its machine Unknown) before it counts the
// machine as the limiter must count it.
const zoneSettle = 2 * time.Minute

// DefaultZoneProtection is the limiter's zone protection the command turns
// on with -zone-outage: a zone holding at least three of an owner's
// unhealthy machines, and at least half of them, is held back for up to 30
// minutes past the health timeout.
func DefaultZoneProtection() lifecycle.ZoneOutage {
	return lifecycle.ZoneOutage{Count: 3, Percent: 50, Hold: 30 * time.Minute}
}

// zoneSetup applies the test hooks to the lifecycle's protection and
// decides whether the world checks the limiter by zone: in a run with a
// zone outage or with the protection asked for.
func (w *shard) zoneSetup() {
	switch {
	case w.o.broken.noZoneProtection:
		w.cfg.ZoneOutage = lifecycle.ZoneOutage{}
	case w.o.broken.holdEveryZone:
		w.cfg.ZoneOutage = lifecycle.ZoneOutage{Count: 1, Hold: 10 * time.Hour}
	}
	w.zoneChecks = w.o.Faults && w.o.ZoneOutage > 0 || w.o.Config.ZoneOutage.Count > 0
}

// placeZone returns the zone (+1, 0 none) of the next machine owner o
// creates: its zones in turn.
func (w *shard) placeZone(o *owner) uint8 {
	if w.o.Zones == 0 {
		return 0
	}
	z := o.nextZone
	o.nextZone = uint8((int(z) + 1) % w.o.Zones)
	return z + 1
}

// zoneOutageBegins takes the outage zone down: every registered node of
// an instance in it turns NotReady (a node whose object is deleted for now
// registers again NotReady).
func (w *shard) zoneOutageBegins() {
	w.zoneDown = true
	if w.tracing(-1) {
		w.note(-1, "zone outage begins: "+zoneName(w.t.outageZone)+" is down")
	}
	for i := range w.inst {
		if x := &w.inst[i]; x.zone == w.t.outageZone && x.node.registered && w.alive(int32(i)) {
			w.zoneNodeDown(int32(i))
		}
	}
}

// zoneNodeDown keeps the node of instance i NotReady until the zone
// outage ends.
func (w *shard) zoneNodeDown(i int32) {
	w.inst[i].node.down++
	w.zoneNodes = append(w.zoneNodes, i)
	w.stats.ZoneNotReady++
	w.refreshNode(i)
}

// registersInZone is called as the kubelet of instance i registers its
// node: the node carries its zone label, and registers NotReady in a zone
// that is down.
func (w *shard) registersInZone(i int32) {
	n := &w.inst[i].node
	n.zone = w.inst[i].zone
	if w.zoneDown && n.zone == w.t.outageZone {
		n.down++
		w.zoneNodes = append(w.zoneNodes, i)
		w.stats.ZoneNotReady++
	}
}

// zoneOutageEnds brings the zone back: its nodes recover within two
// minutes.
func (w *shard) zoneOutageEnds() {
	w.zoneDown = false
	if w.tracing(-1) {
		w.note(-1, "zone outage ends: "+zoneName(w.t.outageZone)+" is back")
	}
	for _, i := range w.zoneNodes {
		w.push(w.now+w.between(0, 2*time.Minute), evRecover, i, 0)
	}
	w.zoneNodes = nil
}

// shellZone returns the zone of machine m as a shell's fleet pass reads
// it: the zone label of the node it finds for the machine, "" without one.
func (w *shard) shellZone(m *machine) string {
	if w.o.Zones == 0 {
		return ""
	}
	if i := w.findNode(m); i >= 0 {
		return zoneName(w.inst[i].node.zone)
	}
	return ""
}

// hold records what the limiter's grant says of machine mi's zone: held
// until a time (Grant.Held), which the machine's steps are given, or not
// held (the zero time).
func (w *shard) hold(mi int32, until time.Time) {
	if until.IsZero() {
		delete(w.held, mi)
		return
	}
	if w.held == nil {
		w.held = make(map[int32]int64)
	}
	if _, ok := w.held[mi]; !ok {
		w.stats.ZoneHeld++
		if w.tracing(mi) {
			w.note(mi, "the fleet limiter holds it back for its zone's outage until "+until.Format(time.TimeOnly))
		}
	}
	w.held[mi] = until.UnixNano()
}

// heldUntil returns until when the limiter holds machine mi back, the zero
// time when it does not.
func (w *shard) heldUntil(mi int32) time.Time {
	if h, ok := w.held[mi]; ok {
		return tm(h)
	}
	return time.Time{}
}

// countZoneFailed counts machine mi, saved Failed by the health timeout,
// by its zone while the zone outage lasts.
func (w *shard) countZoneFailed(mi int32) {
	if !w.zoneDown {
		return
	}
	if i := w.machines[mi].ip - 1; i >= 0 && w.inst[i].zone == w.t.outageZone {
		w.stats.ZoneFailedDown++
	} else {
		w.stats.ZoneFailedOthers++
	}
}

// sickSince returns the zone (+1) of the node of machine mi's instance,
// 0 when the node object is gone (nobody can read its zone label then, and
// the limiter treats the machine as of no known zone), and since when the
// world has seen the machine unhealthy, counted from the observer's last
// recovery at the latest (the lifecycle's health timeout counts from no
// earlier). ok is false when the world does not judge the machine
// unhealthy: it is gone or being deleted, never ran, records no instance,
// or its instance is alive with a Ready node.
func (w *shard) sickSince(mi int32) (zone uint8, since int64, ok bool) {
	x := &w.machines[mi]
	if x.gone() || x.deleting() || x.bits&mRan == 0 || x.ip == 0 {
		return 0, 0, false
	}
	i := x.ip - 1
	n := &w.inst[i].node
	if w.alive(i) && n.exists && n.ready == lifecycle.ConditionTrue {
		return 0, 0, false
	}
	since = n.badSince
	if since == 0 {
		since = w.vm(i).Created.UnixNano()
	}
	since = max(since, w.recovered)
	if n.exists {
		zone = n.zone
	}
	return zone, since, true
}

// noticed returns since when the lifecycle has surely been counting machine
// mi unhealthy, given since, when the world began to see it so: no earlier
// than the end of a problem of the machine or of its owner's class, during
// which the machine is not stepped and may not have been marked Unknown.
func (w *shard) noticed(mi int32, since int64) int64 {
	return max(since, w.owners[w.machines[mi].owner].problemEnd, w.problemEnded[mi])
}

// census is the world's count of one owner's unhealthy machines
// (sickSince), by zone (+1; 0: no zone): all of them, and those settled,
// unhealthy for at least zoneSettle.
type census struct {
	unhealthy, settled [len(zoneNames) + 1]int
	all, allSettled    int
	// unsure counts the owner's machines with a problem now, which the
	// lifecycle may count either way.
	unsure int
}

// takeCensus counts owner o's unhealthy machines into c; false when the
// owner's class has a problem now or had one within zoneSettle (the
// lifecycle is not stepping its machines, or catching up).
func (w *shard) takeCensus(o *owner, c *census) bool {
	*c = census{}
	if o.problem != 0 || w.now-o.problemEnd < int64(zoneSettle) {
		return false
	}
	for _, mi := range o.list {
		if x := &w.machines[mi]; !x.gone() && !x.deleting() && x.problem != 0 {
			c.unsure++
		}
		z, since, ok := w.sickSince(mi)
		if !ok {
			continue
		}
		c.unhealthy[z]++
		c.all++
		if w.now-w.noticed(mi, since) >= int64(zoneSettle) {
			c.settled[z]++
			c.allSettled++
		}
	}
	return true
}

// down reports whether zone z is down for the owner under protection p,
// surely so whatever the lifecycle has not caught up with: counting only
// its settled machines, less the unsure ones, against every unhealthy
// machine of the owner, one more, and the unsure ones.
func (c *census) down(p *lifecycle.ZoneOutage, z uint8) bool {
	if p.Count == 0 || z == 0 {
		return false
	}
	n := c.settled[z] - c.unsure
	return n >= p.Count && n*100 >= p.Percent*(c.all+1+c.unsure)
}

// up reports whether zone z is surely not down for the owner under
// protection p: with its unhealthy machines, one more and the unsure ones,
// it stays below the count or below the share of the owner's settled
// unhealthy machines less the unsure ones. A machine of no zone is never
// held.
func (c *census) up(p *lifecycle.ZoneOutage, z uint8) bool {
	if p.Count == 0 || z == 0 {
		return true
	}
	n := c.unhealthy[z] + 1 + c.unsure
	return n < p.Count || n*100 < p.Percent*max(0, c.allSettled-c.unsure)
}

// checkZoneGrant: the limiter grants machine mi its replacement (the grant
// it must hold to be marked Failed by the health timeout) only once its
// zone's hold is over, while the world sees its zone down for its owner:
// unhealthy for its health timeout and the hold, as the world saw it,
// less the tolerance of the clock faults.
func (w *shard) checkZoneGrant(mi int32, c *census) {
	p := &w.o.Config.ZoneOutage
	z, since, ok := w.sickSince(mi)
	if !ok || !c.down(p, z) {
		return
	}
	m := &w.machines[mi]
	ht := w.healthTimeout(&m.obj)
	if spent := time.Duration(w.now - since); spent < ht+p.Hold-time.Duration(w.tolerance) {
		w.violation(mi, fmt.Sprintf("the limiter grants its replacement %s after the world saw it unhealthy, within its health timeout %s and the zone hold %s, while its zone %s is down for its owner (%d of %d unhealthy machines)",
			spent, ht, p.Hold, zoneName(z), c.unhealthy[z], c.all))
	}
}

// checkZoneLiveness: after the limiter's grants for owner o, whose fleet
// view held total machines (lag: how far it lagged), every machine the
// world has seen unhealthy past its health timeout, and past the zone hold
// too unless its zone is surely up, holds a grant, or the owner's
// replacements in flight are at its limit. The count of those in flight is
// one the limiter's reaches at most: machines being deleted (or gone
// within the lag), holding a grant, or in a phase other than Running,
// Available, Unknown and InPlaceUpdateFailed. The world allows the
// tolerance of the clock faults, a fleet pass and zoneSettle for the
// lifecycle to notice.
func (w *shard) checkZoneLiveness(o *owner, c *census, total int, lag int64) {
	if w.observer.Degraded {
		return // the limiter grants nothing new now
	}
	inFlight := 0
	for _, mi := range o.list {
		x := &w.machines[mi]
		switch {
		case x.gone():
			if lag > 0 && x.goneAt > w.now-lag {
				inFlight++
			}
		case x.deleting() || x.bits&mGrant != 0 || x.st.Flags.Has(lifecycle.FlagGranted):
			inFlight++
		case x.st.Phase != phase.Running && x.st.Phase != phase.Available && x.st.Phase != phase.Unknown &&
			x.st.Phase != phase.InPlaceUpdateFailed:
			inFlight++
		}
	}
	limit := w.replacementLimit(total)
	if inFlight >= limit {
		return
	}
	p := &w.o.Config.ZoneOutage
	slack := time.Duration(w.tolerance) + w.o.FleetEvery + zoneSettle
	for _, mi := range o.list {
		x := &w.machines[mi]
		if x.problem != 0 || x.bits&mGrant != 0 || x.st.Flags.Has(lifecycle.FlagGranted) {
			continue
		}
		z, since, ok := w.sickSince(mi)
		if !ok {
			continue
		}
		ht := w.healthTimeout(&x.obj)
		need, held := ht+slack, ""
		if !c.up(p, z) {
			need += p.Hold
			held = fmt.Sprintf(" and its zone %s's hold %s", zoneName(z), p.Hold)
		}
		if spent := time.Duration(w.now - w.noticed(mi, since)); spent >= need {
			w.violation(mi, fmt.Sprintf("not granted its replacement though unhealthy for %s as the world saw it (since the lifecycle could notice), past its health timeout %s%s, while its owner %s has %d of %d replacements in flight",
				spent, ht, held, o.uid, inFlight, limit))
			return
		}
	}
}

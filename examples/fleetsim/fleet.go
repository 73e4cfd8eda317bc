package fleetsim

import (
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
	"github.com/purelifecycle/machine/phase"
)

// The fleet's side: owners (MachineSets) deleting and replacing machines,
// the limiter's grants, orphan collection, and the observer outage.

// account adds (sign 1) or removes (sign -1) the machine's share of its
// owner's counters; call it with -1 before a change and +1 after.
func (w *shard) account(mi int32, sign int32) {
	m := &w.machines[mi]
	if m.gone() {
		return
	}
	o := &w.owners[m.owner]
	p := m.st.Phase
	if p == phase.Unknown || p == phase.InPlaceUpdateFailed {
		o.unknown += sign
	}
	if p == phase.Failed && !m.deleting() {
		o.failed += sign
	}
	if p == phase.Running && !m.deleting() && m.st.Flags.Has(lifecycle.FlagNeedsReplacement) {
		o.needsRepl += sign
	}
	if m.bits&mGrant != 0 {
		o.granted += sign
	}
	if m.more&mPreserveGrant != 0 {
		o.preserving += sign
	}
}

// requestDeletion is its owner's delete call: the API server sets the
// deletion time of a machine with its finalizer, and the controller sees it
// at once; a machine without finalizers (one whose first pass crashed
// before its finalizer was written) is deleted at once.
func (w *shard) requestDeletion(mi int32) {
	m := &w.machines[mi]
	if !m.obj.Finalizer {
		if w.tracing(mi) {
			w.note(mi, "deleted at once: it has no finalizer")
		}
		w.setGone(mi)
		return
	}
	w.account(mi, -1)
	w.lagWrite(mi, w.now)
	m.obj.DeletionTime = tm(w.now)
	o := &w.owners[m.owner]
	o.live--
	o.deleting++
	w.account(mi, 1)
	w.enqueue(mi, w.now)
}

// forceRemove is someone removing the finalizer of a deleting machine by
// hand: the object is gone, whatever the lifecycle was doing.
func (w *shard) forceRemove(mi int32) {
	if m := &w.machines[mi]; m.gone() || !m.deleting() {
		return
	}
	w.stats.ForceRemoved++
	if w.tracing(mi) {
		w.note(mi, "someone removes the finalizer by hand: the object is gone")
	}
	w.setGone(mi)
}

// setGone deletes the machine object: its last finalizer was removed while
// it was being deleted, or it was deleted without one.
func (w *shard) setGone(mi int32) {
	w.account(mi, -1)
	m := &w.machines[mi]
	m.bits |= mGone
	m.bits &^= mQueued
	m.goneAt = w.now
	o := &w.owners[m.owner]
	if m.deleting() {
		o.deleting--
	} else {
		o.live--
	}
	o.free = append(o.free, m.slot)
	w.stats.Gone++
}

// fleetPass is the owners' and the limiter's turn: every owner deletes its
// Failed machines (and, while the scenario runs, one machine that needs
// replacement at a time) and creates machines up to its desired count,
// then the limiter's grants are computed for owners with unhealthy
// machines.
func (w *shard) fleetPass() {
	for oi := range w.owners {
		o := &w.owners[oi]
		rollout := w.active && o.needsRepl > 0 && o.deleting == 0
		if o.unknown == 0 && o.granted == 0 && o.failed == 0 && o.preserving == 0 && !rollout && o.live >= o.desired {
			// Nothing to replace and no machine the limiter could grant.
			continue
		}
		w.ownerPass(int32(oi), rollout)
	}
	w.stats.FleetPasses++
}

func (w *shard) ownerPass(oi int32, rollout bool) {
	o := &w.owners[oi]
	autoPreserve := w.cfg.AutoPreserve > 0 && (o.failed > 0 || o.preserving > 0)
	if autoPreserve {
		// As MCM's MachineSet chooses the Failed machines it preserves
		// before it replaces the others, the owner asks the limiter's
		// choice first.
		w.preserveGrants(oi)
	}
	limit := autoPreserve
	list := o.list[:0]
	for _, mi := range o.list {
		m := &w.machines[mi]
		if m.gone() {
			continue
		}
		list = append(list, mi)
		switch {
		case m.deleting():
		case m.st.Phase == phase.Failed && w.ownerKeeps(mi):
		case m.st.Phase == phase.Failed:
			w.stats.Replaced++
			if w.tracing(mi) {
				w.note(mi, "the owner deletes the Failed machine to replace it")
			}
			if m.bits&mHealthFailed != 0 {
				o.healthReplace++
			}
			w.deleteByOwner(mi)
		case rollout && m.st.Phase == phase.Running && m.st.Flags.Has(lifecycle.FlagNeedsReplacement):
			rollout = false
			w.stats.RolledOut++
			if w.tracing(mi) {
				w.note(mi, "the owner replaces the machine that needs replacement")
			}
			w.deleteByOwner(mi)
		}
		limit = limit || w.mayBeGranted(m)
	}
	o.list = list
	// The owner's sync creates the replacements of what it deleted before
	// the limiter's turn, so the limiter counts them in flight.
	for o.live < o.desired {
		w.createMachine(oi, w.now)
		o = &w.owners[oi]
	}
	if limit {
		w.limit(oi)
	}
}

// mayBeGranted reports whether Limit may grant machine m, or must keep or
// take back its grant: it holds one, or it is unhealthy past its health
// timeout, counted from the observer's recovery at the latest (never while
// the observer is degraded), as Limit counts it. For an owner without such
// a machine Limit's answer is known (no grant for anyone), so it is not
// asked.
func (w *shard) mayBeGranted(m *machine) bool {
	if m.bits&mGrant != 0 || m.st.Flags.Has(lifecycle.FlagGranted) {
		return true
	}
	if p := m.st.Phase; p != phase.Unknown && p != phase.InPlaceUpdateFailed || m.deleting() ||
		m.st.PhaseSince == 0 || m.obj.Overrides.DisableHealthTimeout || w.observer.Degraded {
		return false
	}
	since := int64(m.st.PhaseSince)
	if o := w.shellObserver(); !o.Since.IsZero() {
		since = max(since, o.Since.UnixNano())
	}
	return w.now+w.offset-since >= int64(w.healthTimeout(&m.obj))
}

// limit computes the fleet limiter's grants of owner oi's machines and
// hands them to the machines, with the time the limiter holds a machine
// back for its zone's outage. With the FleetLag fault the fleet view lags
// behind the API server by up to FleetLag: a machine created within the
// lag whose status the controller never saved is missing from it, and a
// deletion requested within the lag is not shown. The statuses the
// controller saved are shown as saved, as the limiter's contract asks;
// each machine's zone is its node's zone label. With zoneChecks the world
// judges the grants by zone (checkZoneGrant, checkZoneLiveness).
func (w *shard) limit(oi int32) {
	o := &w.owners[oi]
	lag := w.fleetView(oi)
	members, idxs := w.members, w.idxs
	w.grants = lifecycle.Limit(w.grants[:0], &w.cfg, tm(w.now+w.offset), w.fleetIn.Observer, members)
	w.stats.LimitCalls++
	var c census
	checks := w.zoneChecks && w.takeCensus(o, &c)
	for k, g := range w.grants {
		mi := idxs[k]
		m := &w.machines[mi]
		if w.held != nil || !g.Held.IsZero() {
			w.hold(mi, g.Held)
		}
		if w.pv {
			w.grantPreserve(mi, g.Preserve)
		}
		if g.Fail == (m.bits&mGrant != 0) {
			continue
		}
		w.account(mi, -1)
		if g.Fail {
			if checks && !m.st.Flags.Has(lifecycle.FlagGranted) {
				w.checkZoneGrant(mi, &c)
			}
			m.bits |= mGrant
			w.stats.Grants++
			if lag > 0 {
				if w.grantView == nil {
					w.grantView = make(map[int32]int64)
				}
				w.grantView[mi] = w.now - lag
			}
			if w.tracing(mi) {
				w.note(mi, "the fleet limiter grants its replacement")
			}
			// A new grant is an input that changed: the machine is
			// reconciled now, as a watch event would have it, rather
			// than when its poll for the grant comes.
			w.enqueue(mi, w.now)
		} else {
			m.bits &^= mGrant
			delete(w.grantView, mi)
		}
		w.account(mi, 1)
	}
	if checks {
		w.checkZoneLiveness(o, &c, len(members), lag)
	}
}

// preserveGrants hands owner oi's machines the limiter's preservation
// grants (Grant.Preserve) alone, from the fleet view as limit builds it.
func (w *shard) preserveGrants(oi int32) {
	w.fleetView(oi)
	w.grants = lifecycle.Limit(w.grants[:0], &w.cfg, tm(w.now+w.offset), w.fleetIn.Observer, w.members)
	w.stats.LimitCalls++
	for k, g := range w.grants {
		w.grantPreserve(w.idxs[k], g.Preserve)
	}
}

// fleetView builds the limiter's view of owner oi's machines into
// w.members, their indices into w.idxs, and returns how far it lags.
func (w *shard) fleetView(oi int32) int64 {
	o := &w.owners[oi]
	members, idxs := w.members[:0], w.idxs[:0]
	lag := int64(0)
	if w.faulty && w.o.FleetLag > 0 {
		lag = w.between(0, w.o.FleetLag)
		w.stats.LaggedViews++
	}
	in := &w.fleetIn
	in.Observer = w.shellObserver()
	for _, mi := range o.list {
		m := &w.machines[mi]
		if m.gone() && (lag == 0 || m.goneAt <= w.now-lag) {
			// Removed, and the view shows it: a lagging cache still shows
			// a machine deleted within its lag, as it was.
			continue
		}
		in.Object, in.Status = m.obj, m.st
		in.Node.Zone = w.shellZone(m)
		if w.o.broken.hideInFlight && (m.st.Phase != phase.Unknown || m.deleting()) {
			// Test hook: a view without the controller's own writes.
			in.Status.Phase, in.Status.Flags, in.Object.DeletionTime = phase.Running, 0, time.Time{}
		}
		if lag > 0 {
			if m.st.Seq == 0 && m.obj.CreationTime.UnixNano() > w.now-lag {
				w.stats.LagHidden++
				continue
			}
			if m.deleting() && m.obj.DeletionTime.UnixNano() > w.now-lag {
				in.Object.DeletionTime = time.Time{}
				w.stats.LagHidden++
			}
		}
		members = append(members, lifecycle.MemberOf(&w.cfg, in))
		idxs = append(idxs, mi)
	}
	w.members, w.idxs = members, idxs
	return lag
}

// deleteByOwner is the owner deleting one of its machines; now and then
// someone sets the force-deletion label on it, or cuts the deletion short
// by removing the finalizer by hand.
func (w *shard) deleteByOwner(mi int32) {
	w.requestDeletion(mi)
	if w.fault(w.o.ForceDeletion) {
		if w.rng.IntN(2) == 0 {
			w.forceLabel(mi)
		} else {
			w.push(w.now+w.between(time.Second, time.Minute), evForceLabel, mi, 0)
		}
	}
	if w.fault(w.o.ForceRemove) {
		// At once, before the controller sees the deletion, or a little
		// later, in the middle of it.
		if w.rng.IntN(2) == 0 {
			w.forceRemove(mi)
		} else {
			w.push(w.now+w.between(time.Second, 20*time.Second), evForceRemove, mi, 0)
		}
	}
}

// teardown scales every owner down to zero: each deletes all its machines.
func (w *shard) teardown() {
	if w.tracing(-1) {
		w.note(-1, "teardown: every owner scales down to zero")
	}
	for oi := range w.owners {
		o := &w.owners[oi]
		o.desired = 0
		for _, mi := range o.list {
			if m := &w.machines[mi]; !m.gone() && !m.deleting() {
				w.stats.TornDown++
				w.deleteByOwner(mi)
			}
		}
	}
}

// collectOrphans lists the provider's instances and deletes those
// lifecycle.Orphans names, as a controller's orphan collection does.
func (w *shard) collectOrphans() {
	if w.observer.Degraded {
		return // the cloud API cannot be trusted now
	}
	// The listing is the provider's, into a buffer the shard reuses; its
	// fault is drawn as a call's.
	w.stats.Calls[driverapi.MethodList]++
	if w.driverFault(driverapi.MethodList) != (lifecycletest.Fault{}) {
		return
	}
	w.list = w.p.List(w.list[:0])
	members := w.members[:0]
	in := &w.fleetIn
	in.Observer = w.observer
	for mi := range w.machines {
		if m := &w.machines[mi]; !m.gone() {
			in.Object, in.Status = m.obj, m.st
			members = append(members, lifecycle.MemberOf(&w.cfg, in))
		}
	}
	w.members = members
	w.calls = lifecycle.Orphans(w.calls[:0], &w.cfg, tm(w.now+w.offset), members, w.list)
	for k := range w.calls {
		c := &w.calls[k]
		i := w.instByPID(c.Machine.ProviderID)
		if i >= 0 {
			if owner := w.recorder(i); owner >= 0 {
				w.violation(owner, "orphan collection deletes instance "+c.Machine.ProviderID+", which the machine records")
			}
			if w.tracing(w.inst[i].mi) {
				w.note(w.inst[i].mi, "orphan collection deletes instance "+c.Machine.ProviderID)
			}
		}
		var r driverapi.Result
		if w.invoke(&r, -1, c, w.now); r.OK() {
			w.stats.OrphansDeleted++
		}
	}
}

// recorder returns the live machine that records instance i, -1 if none:
// the one it was created for, or the newest machine of its name (which
// may have adopted it).
func (w *shard) recorder(i int32) int32 {
	in := &w.inst[i]
	for _, mi := range [2]int32{in.mi, w.slotMachine[in.slot]} {
		if m := &w.machines[mi]; !m.gone() && m.st.ProviderID == w.vm(i).ProviderID {
			return mi
		}
	}
	return -1
}

// outageBegins degrades the observer and makes a share of the nodes
// NotReady (their heartbeats do not arrive).
func (w *shard) outageBegins() {
	w.degrade()
	if w.tracing(-1) {
		w.note(-1, "observer outage begins")
	}
	for i := range w.inst {
		n := &w.inst[i].node
		if n.exists && w.alive(int32(i)) && w.chance(w.o.OutageNotReady) {
			n.down++
			w.outageNodes = append(w.outageNodes, int32(i))
			w.stats.OutageNotReady++
			w.refreshNode(int32(i))
		}
	}
}

// outageEnds restores the observer; the nodes recover within two minutes.
func (w *shard) outageEnds() {
	w.restore()
	if w.tracing(-1) {
		w.note(-1, "observer outage ends")
	}
	for _, i := range w.outageNodes {
		w.push(w.now+w.between(0, 2*time.Minute), evRecover, i, 0)
	}
	w.outageNodes = nil
}

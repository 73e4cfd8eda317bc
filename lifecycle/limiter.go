package lifecycle

import (
	"cmp"
	"slices"
	"time"

	"github.com/purelifecycle/machine/phase"
)

// The fleet limiter (MCM's throttled marking as Failed, T1-T4 in
// doc/mcm-rows.md; meltdown protection): an outage that makes many nodes
// unhealthy must not make the controller replace a whole fleet at once. MCM
// keys its limiter on the machine label "name" and hard-codes one replacement
// in flight; machines without the label are not limited at all (MCM issue
// 1077, https://github.com/gardener/machine-controller-manager/issues/1077),
// and the count is taken under a permit with sleeps (MCM design problem d.8).
// Here it is a pure function over the fleet, linear in its size, keyed on the
// owner, with a configurable limit.

// unhealthy reports whether the member is unhealthy (Unknown or
// InPlaceUpdateFailed) and not being deleted.
func (m *Member) unhealthy() bool {
	return !m.deleting && (m.phase == phase.Unknown || m.phase == phase.InPlaceUpdateFailed)
}

// eligible reports whether the member is unhealthy past its health
// timeout (counted from the observer's recovery at the latest) and may be
// marked Failed.
func (m *Member) eligible(cfg *Config, now, healthySince Stamp) bool {
	if !m.unhealthy() || m.disableHealthTimeout || m.phaseSince == 0 {
		return false
	}
	return now.Sub(later(m.phaseSince, healthySince)) >= m.healthTimeoutOf(cfg)
}

// healthTimeoutOf returns the member's health timeout: its own, else the
// Config's.
func (m *Member) healthTimeoutOf(cfg *Config) time.Duration {
	return own(m.healthTimeout, cfg.HealthTimeout)
}

// inFlight reports whether the member counts against its owner's limit: it is
// being created, replaced or deleted (every phase but Running, Available,
// Unknown and InPlaceUpdateFailed, and every deleting machine), or it is
// unhealthy and holds a grant it may still use. Unhealthy machines without a
// grant do not count, so they never block each other (MCM counts an
// InPlaceUpdateFailed machine, which blocks it and its peers, MCM design
// problem d.8 in doc/mcm-rows.md), and each machine counts once (MCM counts a
// Terminating machine twice). A Failed machine preserved at now is kept,
// not replaced, and does not count either, as in MCM.
func (m *Member) inFlight(eligible bool, now Stamp) bool {
	if m.deleting {
		return true
	}
	switch m.phase {
	case phase.Running, phase.Available:
		return false
	case phase.Failed:
		return m.preserveUntil <= now
	case phase.Unknown, phase.InPlaceUpdateFailed:
		return m.flags.Has(FlagGranted) && eligible
	}
	return true
}

// Limit decides, for every machine of the fleet, whether it may be marked
// Failed now: out[i] is the grant of fleet[i]. It groups machines by owner
// (owner-less machines form one group, MCM issue 1077,
// https://github.com/gardener/machine-controller-manager/issues/1077), counts
// those in flight, keeps the grants machines hold while they may still use
// them, and grants Unknown or InPlaceUpdateFailed machines past their health
// timeout, oldest first, until Config.Replacements machines of the owner are
// in flight. While the observer is degraded it grants nothing new. With
// Config.ZoneOutage on, the machines of a zone in an outage are not
// granted until its hold ends: their grants carry the time (Grant.Held).
// With Config.AutoPreserve on, it also grants the preservation of Failed
// machines (Grant.Preserve, autopreserve.go).
//
// The shell computes it once per fleet pass from a fleet that shows every
// status the shell itself has saved (its own writes laid over a cache that
// may lag them: a machine granted and saved Failed must not look Unknown
// without its grant), passes each machine its grant in Input.Grant, and
// serialises the steps of machines of one owner, so two grants of one
// computation are not both used before the status of the first is saved.
// Machines the fleet does not show are not counted: while a cache lags, the
// replacements an owner created within the lag are missing from it, so an
// owner can have more than Config.Replacements in flight, by as many as it
// created in that time.
// A machine waiting for a grant polls for it less and less often (up to
// retry.Medium apart), so the shell reconciles a machine when its grant
// changes, as it would on a watch event.
// Limit is linear in the fleet, plus sorting each owner's machines it may
// grant; out is reused when its capacity suffices.
func Limit(out []Grant, cfg *Config, now time.Time, observer Observer, fleet []Member) []Grant {
	out = slices.Grow(out[:0], len(fleet))[:len(fleet)]
	clear(out)
	n := StampOf(now)
	healthySince := StampOf(observer.Since)
	if observer.Degraded {
		healthySince = n // nothing is past its timeout while degraded
	}
	groups, candidates, zones := tally(out, cfg, n, healthySince, observer.Degraded, fleet)
	if len(candidates) > 0 && cfg.ZoneOutage.on() {
		candidates = holdZones(out, cfg, n, healthySince, fleet, groups, candidates, zones)
	}
	if len(candidates) > 0 {
		grantOldest(out, cfg, fleet, groups, candidates)
	}
	if cfg.AutoPreserve > 0 {
		grantPreservations(out, cfg, n, fleet)
	}
	return out
}

// ownerGroup counts an owner's machines, those of them in flight, and
// (with Config.ZoneOutage on) those unhealthy.
type ownerGroup struct{ total, inFlight, unhealthy int }

// zoneKey names a zone of one owner's group.
type zoneKey struct {
	group int
	zone  string
}

// candidate is a machine past its health timeout that has no grant yet:
// its index in the fleet and its owner's group.
type candidate struct{ i, group int }

// tally groups the fleet by owner, counting each owner's machines and
// those in flight, renews the grant of every machine that holds one and is
// still past its timeout (in out), and returns the groups, the machines
// that ask for a grant (none while the observer is degraded) and, with
// Config.ZoneOutage on, the unhealthy machines of each owner's zones.
func tally(out []Grant, cfg *Config, n, healthySince Stamp, degraded bool, fleet []Member) ([]ownerGroup, []candidate, map[zoneKey]int) {
	index := make(map[string]int)
	var groups []ownerGroup
	var zones map[zoneKey]int
	byZone := cfg.ZoneOutage.on()
	var candidates []candidate
	last, lastGi := "", -1
	for i := range fleet {
		m := &fleet[i]
		gi := lastGi
		if gi < 0 || m.owner != last {
			// A listing sorted by name keeps an owner's machines together,
			// so the map is asked once per run of the same owner.
			var ok bool
			if gi, ok = index[m.owner]; !ok {
				gi = len(groups)
				index[m.owner] = gi
				groups = append(groups, ownerGroup{})
			}
			last, lastGi = m.owner, gi
		}
		eligible := m.eligible(cfg, n, healthySince)
		groups[gi].total++
		if m.inFlight(eligible, n) {
			groups[gi].inFlight++
		}
		if byZone && m.unhealthy() {
			groups[gi].unhealthy++
			if m.zone != "" {
				if zones == nil {
					zones = make(map[zoneKey]int)
				}
				zones[zoneKey{gi, m.zone}]++
			}
		}
		switch {
		case eligible && m.flags.Has(FlagGranted):
			out[i].Fail = true
		case eligible && !degraded:
			candidates = append(candidates, candidate{i, gi})
		}
	}
	return groups, candidates, zones
}

// holdZones holds back the candidates whose zone is in an outage for their
// owner (Config.ZoneOutage) until Hold past their health timeout: their
// grants say until when (Grant.Held), and they are taken out of the
// candidates it returns. A machine already granted keeps its grant.
func holdZones(out []Grant, cfg *Config, n, healthySince Stamp, fleet []Member, groups []ownerGroup,
	candidates []candidate, zones map[zoneKey]int) []candidate {
	z := &cfg.ZoneOutage
	return slices.DeleteFunc(candidates, func(c candidate) bool {
		m := &fleet[c.i]
		if m.zone == "" {
			return false
		}
		down := zones[zoneKey{c.group, m.zone}]
		if down < z.Count || down*100 < z.Percent*groups[c.group].unhealthy {
			return false
		}
		until := later(m.phaseSince, healthySince).Add(m.healthTimeoutOf(cfg) + z.Hold)
		if n >= until {
			return false
		}
		out[c.i].Held = until.Time()
		return true
	})
}

// grantOldest grants the candidates of each owner, oldest first (then by
// name), until the owner's machines in flight reach its limit.
func grantOldest(out []Grant, cfg *Config, fleet []Member, groups []ownerGroup, candidates []candidate) {
	// An owner's grants depend only on its own candidates, so they are
	// ordered per owner: a counting sort by owner, then small sorts,
	// rather than one sort of them all.
	start := make([]int, len(groups)+1)
	for _, c := range candidates {
		start[c.group+1]++
	}
	for g := range groups {
		start[g+1] += start[g]
	}
	byOwner := make([]int, len(candidates))
	next := slices.Clone(start[:len(groups)])
	for _, c := range candidates {
		byOwner[next[c.group]] = c.i
		next[c.group]++
	}
	older := func(a, b int) int {
		ma, mb := &fleet[a], &fleet[b]
		if c := cmp.Compare(ma.phaseSince, mb.phaseSince); c != 0 {
			return c
		}
		return cmp.Compare(ma.name, mb.name)
	}
	for gi := range groups {
		own := byOwner[start[gi]:start[gi+1]]
		if len(own) == 0 {
			continue
		}
		g := &groups[gi]
		limit := cfg.Replacements.max(g.total)
		if g.inFlight >= limit {
			continue
		}
		slices.SortFunc(own, older)
		for _, i := range own {
			if g.inFlight >= limit {
				break
			}
			out[i].Fail = true
			g.inFlight++
		}
	}
}

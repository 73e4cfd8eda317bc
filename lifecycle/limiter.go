package lifecycle

import (
	"cmp"
	"slices"
	"time"

	"github.com/purelifecycle/machine/phase"
)

// The fleet limiter (MCM table b.5, meltdown protection): an outage that
// makes many nodes unhealthy must not make the controller replace a whole
// fleet at once. MCM keys its limiter on the machine label "name" and
// hard-codes one replacement in flight; machines without the label are not
// limited at all (MCM #1077), and the count is taken under a permit with
// sleeps (critique d.8). Here it is a pure function over the fleet, linear
// in its size, keyed on the owner, with a configurable limit.

// inFlight reports whether the member counts against its owner's limit: it
// is being replaced, created or deleted, or holds a grant not yet seen
// Failed. Running, Unknown (without a grant) and Available machines do not.
// Each machine counts once (MCM counts a Terminating machine twice).
func (m *Member) inFlight() bool {
	if m.Deleting {
		return true
	}
	switch m.Phase {
	case phase.Running, phase.Available:
		return false
	case phase.Unknown:
		return m.Flags.Has(FlagGranted)
	}
	return true
}

// Limit decides, for every machine of the fleet, whether it may be marked
// Failed now: out[i] is the grant of fleet[i]. It groups machines by owner
// (owner-less machines form one group, MCM #1077), counts those in flight,
// keeps the grants machines already hold, and grants Unknown or
// InPlaceUpdateFailed machines past their health timeout, oldest first,
// until Config.Replacements machines of the owner are in flight. While the
// observer is degraded it grants nothing new.
//
// The shell computes it once per fleet pass, passes each machine its grant
// in Input.Grant, and serialises the steps of machines of one owner so two
// grants of one computation are not both used before the status of the
// first is saved. Limit is linear in the fleet (plus sorting the machines
// it may grant); out is reused when its capacity suffices.
func Limit(out []Grant, cfg *Config, now time.Time, observer Observer, fleet []Member) []Grant {
	out = slices.Grow(out[:0], len(fleet))[:len(fleet)]
	clear(out)
	type group struct{ total, inFlight int }
	groups := make(map[string]*group)
	for i := range fleet {
		m := &fleet[i]
		g := groups[m.Owner]
		if g == nil {
			g = &group{}
			groups[m.Owner] = g
		}
		g.total++
		if m.inFlight() {
			g.inFlight++
		}
		if m.Flags.Has(FlagGranted) && (m.Phase == phase.Unknown || m.Phase == phase.InPlaceUpdateFailed) && !m.Deleting {
			out[i].Fail = true
		}
	}
	if observer.Degraded {
		return out
	}
	// Candidates: unhealthy past the health timeout, without a grant.
	var candidates []int
	n := StampOf(now)
	healthySince := StampOf(observer.Since)
	for i := range fleet {
		m := &fleet[i]
		if m.Deleting || m.DisableHealthTimeout || m.Flags.Has(FlagGranted) ||
			(m.Phase != phase.Unknown && m.Phase != phase.InPlaceUpdateFailed) || m.PhaseSince == 0 {
			continue
		}
		timeout := cfg.HealthTimeout
		if m.HealthTimeout > 0 {
			timeout = m.HealthTimeout
		}
		if n.Sub(later(m.PhaseSince, healthySince)) > timeout {
			candidates = append(candidates, i)
		}
	}
	slices.SortFunc(candidates, func(a, b int) int {
		ma, mb := &fleet[a], &fleet[b]
		if c := cmp.Compare(ma.PhaseSince, mb.PhaseSince); c != 0 {
			return c
		}
		return cmp.Compare(ma.Name, mb.Name)
	})
	for _, i := range candidates {
		m := &fleet[i]
		g := groups[m.Owner]
		limit := cfg.Replacements.max(g.total)
		// An InPlaceUpdateFailed candidate counts itself as in flight (its
		// phase is not Running or Unknown); it must not block itself, which
		// MCM's count does (critique d.8).
		busy := g.inFlight
		if m.inFlight() {
			busy--
		}
		if busy < limit {
			out[i].Fail = true
			g.inFlight++
			if m.inFlight() {
				g.inFlight-- // already counted
			}
		}
	}
	return out
}

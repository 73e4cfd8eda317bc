package lifecycle

import (
	"cmp"
	"slices"

	"github.com/purelifecycle/machine/phase"
)

// Auto-preservation (MCM's MachineSet with its MachineDeployment's
// autoPreserveFailedMachineMax): of each owner's Failed machines that no
// annotation names, at most Config.AutoPreserve are preserved for
// diagnosis. Limit grants it (Grant.Preserve) in the same fleet pass as the
// replacements, and the step preserves a machine it is granted to
// (preserve.go). Grants stick: a machine auto-preserved keeps its grant
// while it is Failed and preserved, the newest first when the maximum
// drops; the newest Failed machines not preserved yet get the grants left.
// A machine Failed for longer than its preservation timeout is not granted,
// so one whose auto-preservation expired does not begin again.

// autoPreserved reports whether the member is Failed and auto-preserved
// at now.
func (m *Member) autoPreserved(now Stamp) bool {
	return !m.deleting && m.phase == phase.Failed && m.flags.Has(FlagAutoPreserved) && m.preserveUntil > now
}

// autoPreserveCandidate reports whether the member may begin an
// auto-preservation at now: Failed, not being deleted, no annotation
// naming its preservation, not preserved nor auto-preserved before in
// this spell of Failed, and within its preservation timeout.
func (m *Member) autoPreserveCandidate(cfg *Config, now Stamp) bool {
	return !m.deleting && m.phase == phase.Failed && !m.preserveNamed && m.preserveUntil == 0 &&
		!m.flags.Has(FlagAutoPreserved) && autoPreservable(m.phaseSince, now, own(m.preserveTimeout, cfg.PreserveTimeout))
}

// grantPreservations sets Grant.Preserve in out for the machines of fleet
// to keep or begin auto-preserved at now, at most cfg.AutoPreserve per
// owner.
func grantPreservations(out []Grant, cfg *Config, now Stamp, fleet []Member) {
	type pick struct {
		i    int
		kept bool
	}
	byOwner := map[string][]pick{}
	for i := range fleet {
		m := &fleet[i]
		switch {
		case m.autoPreserved(now):
			byOwner[m.owner] = append(byOwner[m.owner], pick{i, true})
		case m.autoPreserveCandidate(cfg, now):
			byOwner[m.owner] = append(byOwner[m.owner], pick{i, false})
		}
	}
	for _, picks := range byOwner {
		// Those kept first, then the newest failures, then by name.
		slices.SortFunc(picks, func(a, b pick) int {
			if a.kept != b.kept {
				if a.kept {
					return -1
				}
				return 1
			}
			ma, mb := &fleet[a.i], &fleet[b.i]
			return cmp.Or(cmp.Compare(mb.phaseSince, ma.phaseSince), cmp.Compare(ma.name, mb.name))
		})
		for k, p := range picks {
			if k >= cfg.AutoPreserve {
				break
			}
			out[p.i].Preserve = true
		}
	}
}

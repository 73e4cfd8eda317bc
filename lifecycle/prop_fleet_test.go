package lifecycle_test

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
	"github.com/purelifecycle/machine/phase"
)

// naiveOrphans is Orphans' documented rule written the plain way: an index
// of the whole fleet by name and a set of recorded providerIDs.
func naiveOrphans(cfg *lifecycle.Config, now time.Time, fleet []lifecycle.Member, instances []driverapi.Instance) []driverapi.Call {
	recorded := map[string]bool{}
	byName := map[string]*lifecycle.Member{}
	for i := range fleet {
		if fleet[i].ProviderID != "" {
			recorded[fleet[i].ProviderID] = true
		}
		byName[fleet[i].Name] = &fleet[i]
	}
	var out []driverapi.Call
	for _, inst := range instances {
		if inst.ProviderID == "" || recorded[inst.ProviderID] {
			continue
		}
		if m := byName[inst.MachineName]; m != nil {
			creating := m.Phase == phase.None || m.Phase == phase.CrashLoopBackOff ||
				m.Stage == lifecycle.StageCreating || m.Stage == lifecycle.StageInitializing
			if (creating || m.ProviderID == "") && (inst.OwnerUID == "" || inst.OwnerUID == m.UID) {
				continue
			}
		}
		if !inst.Created.IsZero() && now.Sub(inst.Created) <= cfg.CreationTimeout {
			continue
		}
		out = append(out, driverapi.Call{Method: driverapi.MethodDelete,
			Machine: driverapi.MachineRef{Name: inst.MachineName, UID: inst.OwnerUID, ProviderID: inst.ProviderID}})
	}
	return out
}

// Orphans, which indexes only the names it needs, agrees with the plain
// rule on fleets whose names, UIDs and providerIDs collide often.
func TestPropertyOrphansMatchesThePlainRule(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	names := rapid.SampledFrom([]string{"", "m-1", "m-2", "m-3", "m-4"})
	uids := rapid.SampledFrom([]string{"", "u-1", "u-2", "u-3"})
	pids := rapid.SampledFrom([]string{"", "p-1", "p-2", "p-3", "p-4", "p-5"})
	phases := rapid.SampledFrom([]phase.Phase{phase.None, phase.Pending, phase.Running, phase.CrashLoopBackOff,
		phase.Failed, phase.Terminating, phase.Unknown})
	stages := rapid.SampledFrom([]lifecycle.Stage{lifecycle.StageNone, lifecycle.StageCreating,
		lifecycle.StageInitializing, lifecycle.StageDrain})
	rapid.Check(t, func(t *rapid.T) {
		fleet := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) lifecycle.Member {
			return lifecycle.Member{Name: names.Draw(t, "name"), UID: uids.Draw(t, "uid"),
				ProviderID: pids.Draw(t, "pid"), Phase: phases.Draw(t, "phase"), Stage: stages.Draw(t, "stage")}
		}), 0, 8).Draw(t, "fleet")
		instances := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) driverapi.Instance {
			age := time.Duration(rapid.IntRange(0, 60).Draw(t, "age minutes")) * time.Minute
			created := fleetNow.Add(-age)
			if rapid.Bool().Draw(t, "no creation time") {
				created = time.Time{}
			}
			return driverapi.Instance{ProviderID: pids.Draw(t, "pid"), MachineName: names.Draw(t, "name"),
				OwnerUID: uids.Draw(t, "owner"), Created: created}
		}), 0, 8).Draw(t, "instances")
		got := lifecycle.Orphans(nil, &cfg, fleetNow, fleet, instances)
		want := naiveOrphans(&cfg, fleetNow, fleet, instances)
		if len(got) != len(want) {
			t.Fatalf("Orphans gave %d calls, the plain rule %d:\n%v\n%v", len(got), len(want), got, want)
		}
		for i := range got {
			if got[i].Machine != want[i].Machine || got[i].Method != want[i].Method {
				t.Fatalf("call %d: %+v, the plain rule %+v", i, got[i], want[i])
			}
		}
	})
}

// Limit decides each owner's grants from that owner's machines alone and
// does not depend on the order of the fleet: the grants of a shuffled
// fleet, and those of each owner's machines given alone, are the same.
func TestPropertyLimitDecidesPerOwner(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	owners := rapid.SampledFrom([]string{"", "ms-a", "ms-b", "ms-c"})
	phases := rapid.SampledFrom([]phase.Phase{phase.Running, phase.Unknown, phase.Unknown, phase.Pending,
		phase.Failed, phase.InPlaceUpdateFailed, phase.Terminating})
	rapid.Check(t, func(t *rapid.T) {
		cfg.Replacements = lifecycle.ReplacementLimit{Count: rapid.IntRange(1, 3).Draw(t, "count")}
		n := rapid.IntRange(0, 24).Draw(t, "machines")
		fleet := make([]lifecycle.Member, n)
		for i := range fleet {
			m := member(fmt.Sprintf("m-%02d", i), owners.Draw(t, "owner"), phases.Draw(t, "phase"),
				rapid.IntRange(0, 25).Draw(t, "since minute"))
			if rapid.IntRange(0, 4).Draw(t, "granted") == 0 {
				m.Flags |= lifecycle.FlagGranted
			}
			m.Deleting = rapid.IntRange(0, 6).Draw(t, "deleting") == 0
			fleet[i] = m
		}
		whole := lifecycle.Limit(nil, &cfg, limiterNow, lifecycle.Observer{}, fleet)
		byName := map[string]bool{}
		for i := range fleet {
			byName[fleet[i].Name] = whole[i].Fail
		}
		perm := rapid.Permutation(fleet).Draw(t, "shuffled")
		shuffled := lifecycle.Limit(nil, &cfg, limiterNow, lifecycle.Observer{}, perm)
		for i := range perm {
			if shuffled[i].Fail != byName[perm[i].Name] {
				t.Fatalf("%s: granted %v in the shuffled fleet, %v in the fleet", perm[i].Name, shuffled[i].Fail, !shuffled[i].Fail)
			}
		}
		for _, owner := range []string{"", "ms-a", "ms-b", "ms-c"} {
			var own []lifecycle.Member
			for _, m := range fleet {
				if m.Owner == owner {
					own = append(own, m)
				}
			}
			alone := lifecycle.Limit(nil, &cfg, limiterNow, lifecycle.Observer{}, own)
			for i := range own {
				if alone[i].Fail != byName[own[i].Name] {
					t.Fatalf("%s of %q: granted %v alone, %v in the fleet", own[i].Name, owner, alone[i].Fail, !alone[i].Fail)
				}
			}
		}
	})
}

// The summary counts a machine under what its last decision says it waits
// for: Summarize over the member of the status a step leaves (the status
// the shell saves and a later fleet pass reads, with the same
// observations) counts it under that step's Wait. The decision without a
// change of status is the last of a pass, and then the member is the
// input's own.
func TestPropertySummaryCountsWhatStepWaitsFor(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := lifecycletest.Configs().Draw(t, "config")
		in := lifecycletest.Inputs(cfg).Draw(t, "input")
		d := lifecycle.Step(cfg, in)
		switch d.Rule {
		case lifecycle.RuleNoMachine, lifecycle.RuleDeleteDone, lifecycle.RuleInvalidObject, lifecycle.RuleInvalidConfig,
			lifecycle.RuleZeroNow, lifecycle.RuleInvalidStatus:
			return // no machine to count, or input Step refuses
		}
		saved := in
		saved.Status, saved.Outcome = d.Status, nil
		m := lifecycle.MemberOf(&cfg, &saved)
		s := lifecycle.Summarize(&cfg, in.Now, []lifecycle.Member{m}, 0)
		if d.Wait.For == lifecycle.WaitNone {
			for w, n := range s.ByWait {
				if n != 0 {
					t.Fatalf("Step waits for nothing, the summary counts %s (rule %s)\n%s", lifecycle.WaitFor(w), d.Rule, d.String())
				}
			}
			return
		}
		if s.ByWait[d.Wait.For] != 1 {
			t.Fatalf("Step waits for %s, the summary counts %v (rule %s)\n%s", d.Wait.For, s.ByWait, d.Rule, d.String())
		}
		if past := d.Wait.Until != 0 && lifecycle.StampOf(in.Now) > d.Wait.Until; past != (s.PastDeadline == 1) {
			t.Fatalf("Step waits until %v, the summary counts %d past the deadline", d.Wait.Until, s.PastDeadline)
		}
	})
}

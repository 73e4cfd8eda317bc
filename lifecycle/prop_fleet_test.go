package lifecycle_test

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
	"github.com/purelifecycle/machine/phase"
)

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
		machines := make([]lifecycle.Input, n)
		for i := range machines {
			in := machine(fmt.Sprintf("m-%02d", i), owners.Draw(t, "owner"), phases.Draw(t, "phase"),
				rapid.IntRange(0, 25).Draw(t, "since minute"))
			if rapid.IntRange(0, 4).Draw(t, "granted") == 0 {
				in.Status.Flags |= lifecycle.FlagGranted
			}
			if rapid.IntRange(0, 6).Draw(t, "deleting") == 0 {
				in.Object.DeletionTime = t0.Add(time.Duration(rapid.IntRange(0, 25).Draw(t, "deleted minute")) * time.Minute)
			}
			machines[i] = in
		}
		whole := lifecycle.Limit(nil, &cfg, limiterNow, lifecycle.Observer{}, membersOf(machines...))
		byName := map[string]bool{}
		for i := range machines {
			byName[machines[i].Object.Name] = whole[i].Fail
		}
		perm := rapid.Permutation(machines).Draw(t, "shuffled")
		shuffled := lifecycle.Limit(nil, &cfg, limiterNow, lifecycle.Observer{}, membersOf(perm...))
		for i := range perm {
			if name := perm[i].Object.Name; shuffled[i].Fail != byName[name] {
				t.Fatalf("%s: granted %v in the shuffled fleet, %v in the fleet", name, shuffled[i].Fail, !shuffled[i].Fail)
			}
		}
		for _, owner := range []string{"", "ms-a", "ms-b", "ms-c"} {
			var own []lifecycle.Input
			for _, in := range machines {
				if in.Object.Owner == owner {
					own = append(own, in)
				}
			}
			alone := lifecycle.Limit(nil, &cfg, limiterNow, lifecycle.Observer{}, membersOf(own...))
			for i := range own {
				if name := own[i].Object.Name; alone[i].Fail != byName[name] {
					t.Fatalf("%s of %q: granted %v alone, %v in the fleet", name, owner, alone[i].Fail, !alone[i].Fail)
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

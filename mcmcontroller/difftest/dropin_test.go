//go:build mcmref

package difftest

import (
	"context"
	"sort"
	"testing"
)

// mcmRuns holds MCM's own run of each scenario, by name, so the tests that
// compare the drop-in and the handovers with it run MCM once per scenario.
var mcmRuns = map[string][]Observation{}

// mcmRun returns MCM's own run of sc, running it the first time.
func mcmRun(t *testing.T, r *Runner, sc *Scenario) []Observation {
	t.Helper()
	if obs, ok := mcmRuns[sc.Name]; ok {
		return obs
	}
	obs, err := r.Run(context.Background(), &mcmController{}, sc)
	must(t, err)
	mcmRuns[sc.Name] = obs
	return obs
}

// Every scenario runs through MCM's own controller and through the
// project's, and after each reconcile the two are compared: a difference
// is accepted only at a step a deviation of the scenario covers, each a
// section of doc/mcm-compat.md that names its test. Where the two end,
// once the machine settled, is compared too (CompareEnds). The log
// reports, per flow (the letter of a scenario's first row), how many
// reconciles the two controllers did alike.
func TestDropInAgainstMCM(t *testing.T) {
	r := newMCMRunner(t)
	alike, reconciles := map[string]int{}, map[string]int{}
	scs := Scenarios()
	for i := range scs {
		sc := &scs[i]
		flow := "?"
		if len(sc.Steps) > 0 && len(sc.Steps[0].Rows) > 0 {
			flow = sc.Steps[0].Rows[0][:1]
		}
		t.Run(sc.Name, func(t *testing.T) {
			ref := mcmRun(t, r, sc)
			under, err := r.Run(context.Background(), &DropIn{}, sc)
			must(t, err)
			for j := range under {
				logObservation(t, sc.step(j), &under[j])
			}
			refused, accepted := Compare(sc, ref, under)
			r2, a2 := CompareEnds(sc, ref, under)
			for _, a := range append(accepted, a2...) {
				t.Logf("accepted: %s", a)
			}
			for _, d := range append(refused, r2...) {
				t.Errorf("a difference from MCM no deviation of the scenario accepts: %s", d)
			}
			for j := range min(len(steps(ref)), len(steps(under))) {
				reconciles[flow]++
				if len(Diff(&ref[j], &under[j])) == 0 {
					alike[flow]++
				}
			}
		})
	}
	var flows []string
	for f := range reconciles {
		flows = append(flows, f)
	}
	sort.Strings(flows)
	for _, f := range flows {
		t.Logf("flow %s: %d of %d reconciles alike", f, alike[f], reconciles[f])
	}
}

// A machine handed over after its first reconcile, from the drop-in to
// MCM's controller and from MCM's to the drop-in, ends where MCM's own run
// ends (CompareHandover): each controller finishes what the other began,
// at every place the scenarios reach, with CreateMachine asked as often.
func TestHandoverBothWays(t *testing.T) {
	r := newMCMRunner(t)
	scs := Scenarios()
	for i := range scs {
		sc := &scs[i]
		t.Run(sc.Name, func(t *testing.T) {
			ref := mcmRun(t, r, sc)
			for _, h := range []*Handover{
				{First: &DropIn{}, Then: &mcmController{}, After: 1},
				{First: &mcmController{}, Then: &DropIn{}, After: 1},
			} {
				obs, err := r.Run(context.Background(), h, sc)
				must(t, err)
				refused, accepted := CompareHandover(sc, ref, obs)
				for _, a := range accepted {
					t.Logf("%s: accepted: %s", h.Name(), a)
				}
				for _, d := range refused {
					for j := range obs {
						logObservation(t, sc.step(j), &obs[j])
					}
					t.Errorf("%s: %s", h.Name(), d)
				}
			}
		})
	}
}

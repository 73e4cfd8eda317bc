//go:build mcmref

package difftest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// update, set by DIFFTEST_UPDATE=1, rewrites
// testdata/dropin-differences.txt with the differences observed.
var update = os.Getenv("DIFFTEST_UPDATE") == "1"

// differencesFile lists, a line each as "scenario<TAB>difference", the
// differences between MCM's controller and the project's that no
// deviation of their scenario accepts yet.
var differencesFile = filepath.Join("testdata", "dropin-differences.txt")

// Every scenario runs through MCM's own controller and through the
// project's, and after each reconcile the two are compared: a difference
// is accepted at a step a deviation of the scenario covers. Where the two
// end, once the machine settled, is compared too (CompareEnds). Those not
// yet accepted are the lines of testdata/dropin-differences.txt, a ratchet: a
// difference not listed there fails the test, and so does a listed one no
// longer seen (DIFFTEST_UPDATE=1 rewrites the list). The log
// reports, per flow (the letter of a scenario's first row), how many
// reconciles the two controllers did alike.
func TestDropInAgainstMCM(t *testing.T) {
	r := newMCMRunner(t)
	alike, reconciles := map[string]int{}, map[string]int{}
	var seen []string
	scs := Scenarios()
	for i := range scs {
		sc := &scs[i]
		flow := "?"
		if len(sc.Steps) > 0 && len(sc.Steps[0].Rows) > 0 {
			flow = sc.Steps[0].Rows[0][:1]
		}
		t.Run(sc.Name, func(t *testing.T) {
			refused, accepted, ref, under, err := r.Differential(context.Background(), &mcmController{}, &DropIn{}, sc)
			must(t, err)
			for j := range under {
				logObservation(t, sc.step(j), &under[j])
			}
			for _, a := range accepted {
				t.Logf("accepted: %s", a)
			}
			for _, d := range refused {
				seen = append(seen, sc.Name+"\t"+oneLine(d))
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
	slices.Sort(seen)
	seen = slices.Compact(seen)
	if update {
		must(t, os.WriteFile(differencesFile, []byte(strings.Join(seen, "\n")+"\n"), 0o644))
		return
	}
	listed := readDifferences(t)
	for _, d := range seen {
		if !listed[d] {
			t.Errorf("a new difference from MCM: %s", d)
		}
		delete(listed, d)
	}
	for d := range listed {
		t.Errorf("a listed difference no longer seen (update %s): %s", differencesFile, d)
	}
}

// oneLine keeps a difference on one line.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", `\n`) }

// readDifferences reads the listed differences.
func readDifferences(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(differencesFile)
	must(t, err)
	out := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" {
			out[l] = true
		}
	}
	return out
}

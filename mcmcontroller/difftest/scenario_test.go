package difftest

import (
	"slices"
	"strings"
	"testing"
)

// Every scenario names rows the rows document defines, and every
// deviation it accepts is a section of the compatibility document that
// names the deviation's test.
func TestScenariosAgainstTheDocs(t *testing.T) {
	problems, err := CheckScenarios(Scenarios(), RowsDoc, CompatDoc)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// The check refuses a row the document does not define, a step row the
// scenario does not list, and deviations that are not documented with
// their test.
func TestCheckScenariosRefusesWhatTheDocsLack(t *testing.T) {
	bad := []Scenario{{
		Name: "bad", Rows: rows("A4", "Z9"),
		Steps: []Step{{Rows: rows("A5")}},
		Deviations: []Deviation{
			{Heading: "No such deviation", Test: "TestX"},
			{Heading: "The stale-node check compares providerIDs", Test: "TestNotNamedThere"},
		},
	}, {Name: "bad", Rows: rows("A4"), Steps: []Step{{}}}}
	problems, err := CheckScenarios(bad, RowsDoc, CompatDoc)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"row Z9 is not in", "exercises row A5", `"No such deviation": no section`,
		`does not name the test "TestNotNamedThere"`, "the name is used twice"} {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("no problem %q in %q", want, problems)
		}
	}
}

// observation returns an observation of a machine with this description.
func observation(desc string) Observation {
	return Observation{Machine: MachineView{Phase: "Pending", Op: OpView{Type: "Create", State: "Processing", Description: desc}},
		Calls:  []CallView{{Method: "GetMachineStatus", Machine: "m", Code: "OK"}},
		Writes: []string{`machine m: status.currentStatus.phase: "" -> "Pending"`}}
}

// A wrong LastOperation text is a difference; a difference is accepted only
// at a step a deviation of the scenario covers.
func TestCompareRefusesAWrongDescription(t *testing.T) {
	sc := &Scenario{Name: "s", Steps: make([]Step, 2)}
	a := []Observation{observation("Creating machine on cloud provider"), observation("x")}
	b := []Observation{observation("Creating machine on cloud provider"), observation("x")}
	if refused, accepted := Compare(sc, a, b); len(refused)+len(accepted) != 0 {
		t.Fatalf("equal observations differ: %q %q", refused, accepted)
	}
	b[1].Machine.Op.Description = "Creating machine on the cloud provider"
	refused, _ := Compare(sc, a, b)
	if len(refused) != 1 || !strings.Contains(refused[0], "lastOperation.description") {
		t.Fatalf("refused %q", refused)
	}
	sc.Deviations = []Deviation{{Step: 0, Heading: "h", Test: "T"}}
	if refused, _ := Compare(sc, a, b); len(refused) != 1 {
		t.Fatalf("a deviation of step 0 accepted a difference at step 1: %q", refused)
	}
	sc.Deviations = []Deviation{{Step: 1, Heading: "h", Test: "T"}}
	if refused, accepted := Compare(sc, a, b); len(refused) != 0 || len(accepted) != 1 {
		t.Fatalf("refused %q accepted %q", refused, accepted)
	}
	if refused, _ := Compare(sc, a, b[:1]); len(refused) != 1 {
		t.Fatalf("a run cut short: refused %q", refused)
	}
}

// A deviation limited to a field accepts only differences of that field;
// one at step End accepts only differences where the runs end, which the
// reconciles that let the machine settle decide.
func TestDeviationsByFieldAndAtTheEnd(t *testing.T) {
	sc := &Scenario{Name: "s", Steps: make([]Step, 1)}
	a := []Observation{observation("x"), observation("y")}
	b := []Observation{observation("x"), observation("z")}
	a[1].Settle, b[1].Settle = true, true
	b[0].Machine.Phase = "Failed"
	b[0].Machine.Op.ErrorCode = "Internal"
	sc.Deviations = []Deviation{{Step: 0, Heading: "h", Test: "T", Only: "phase"}}
	refused, accepted := Compare(sc, a, b)
	if len(refused) != 1 || !strings.Contains(refused[0], "errorCode") || len(accepted) != 1 {
		t.Fatalf("refused %q accepted %q", refused, accepted)
	}
	// The settling reconciles are not compared step by step; the end is.
	if refused, _ := CompareEnds(sc, a, b); len(refused) != 1 || !strings.Contains(refused[0], "s end: lastOperation.description") {
		t.Fatalf("ends: refused %q", refused)
	}
	sc.Deviations = []Deviation{{Step: -1, Heading: "h", Test: "T"}}
	if refused, _ := CompareEnds(sc, a, b); len(refused) != 1 {
		t.Fatalf("a deviation of every step accepted the end: %q", refused)
	}
	sc.Deviations = []Deviation{{Step: End, Heading: "h", Test: "T", Only: "lastOperation.description"}}
	if refused, accepted := CompareEnds(sc, a, b); len(refused) != 0 || len(accepted) != 1 {
		t.Fatalf("ends: refused %q accepted %q", refused, accepted)
	}
	if refused, _ := Compare(sc, a, b); len(refused) != 2 {
		t.Fatalf("a deviation at the end accepted a step: %q", refused)
	}
}

// Diff names every field the test compares.
func TestDiffNamesEachField(t *testing.T) {
	a, b := observation("d"), observation("d")
	b.Machine = MachineView{Gone: true, Phase: "Running", Op: OpView{Type: "Delete", State: "Failed", Description: "e", ErrorCode: "Internal"},
		ProviderID: "p", NodeLabel: "n", Finalizers: []string{"f"}}
	b.Calls = nil
	b.Writes = []string{"node n: deleted"}
	got := strings.Join(Diff(&a, &b), "\n")
	for _, want := range []string{"machine gone", "phase", "lastOperation.type", "lastOperation.state", "lastOperation.description",
		"lastOperation.errorCode", "spec.providerID", "node label", "finalizers", "driver calls",
		"write only by the first: machine m", "write only by the second: node n: deleted"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
}

// The normalizer replaces printed times, the run's namespace and token
// names, and a snapshot leaves out time leaves, but for whether the
// preservation's expiry is set, and ignored annotations.
func TestNormalizer(t *testing.T) {
	n := &Normalizer{Namespace: "mcm-3-x", IgnoredAnnotations: DefaultIgnoredAnnotations}
	got := n.Text(`Node Conditions: [{LastHeartbeatTime:2026-11-29 02:39:39 +0000 UTC LastTransitionTime:0001-01-01 00:00:00 +0000 UTC}] ` +
		`in mcm-3-x at 2026-11-29T02:39:39Z, secret bootstrap-token-ab12cd`)
	want := `Node Conditions: [{LastHeartbeatTime:<time> LastTransitionTime:<time>}] in <ns> at <time>, secret bootstrap-token-<id>`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	leaves, err := flatten(map[string]any{
		"metadata": map[string]any{"resourceVersion": "7", "annotations": map[string]any{
			"machine.purelifecycle.dev/state": "{}", "kept": "yes"}},
		"status": map[string]any{"lastUpdateTime": "2026-11-29T02:39:39Z",
			"currentStatus": map[string]any{"preserveExpiryTime": "2026-12-03T02:39:39Z"},
			"conditions":    []any{map[string]any{"type": "Ready", "status": "True"}}},
		"spec": map[string]any{"taints": []any{map[string]any{"key": "k", "effect": "NoSchedule"}}, "list": []any{"a"}},
	}, n)
	if err != nil {
		t.Fatal(err)
	}
	wantLeaves := map[string]string{"metadata.annotations.kept": "yes", "status.currentStatus.preserveExpiryTime": "<time>",
		"status.conditions[type=Ready].type": "Ready", "status.conditions[type=Ready].status": "True",
		"spec.taints[key=k].key": "k", "spec.taints[key=k].effect": "NoSchedule", "spec.list[0]": "a"}
	if len(leaves) != len(wantLeaves) {
		t.Errorf("leaves %v", leaves)
	}
	for k, v := range wantLeaves {
		if leaves[k] != v {
			t.Errorf("leaf %s = %q, want %q (all: %v)", k, leaves[k], v, leaves)
		}
	}
}

// writes reports changed, added, removed, created and deleted leaves.
func TestWrites(t *testing.T) {
	before := snapshot{"machine m": {"a": "1", "b": "2"}, "node n": {"x": "1"}}
	after := snapshot{"machine m": {"a": "1", "b": "3", "c": "4"}, "secret s": {"y": "1"}}
	got := writes(before, after)
	want := []string{`machine m: b: "2" -> "3"`, `machine m: c: +"4"`, "node n: deleted", "secret s: created", `secret s: y: +"1"`}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// Every row in scope is exercised by a scenario or named, with the reason,
// among those no scenario can reach; none is both.
func TestEveryRowInScopeIsExercisedOrExcused(t *testing.T) {
	scope, err := InScopeRows(RowsDoc, CompatDoc)
	if err != nil {
		t.Fatal(err)
	}
	exercised := map[string]bool{}
	for _, sc := range Scenarios() {
		for _, st := range sc.Steps {
			for _, r := range st.Rows {
				exercised[r] = true
			}
		}
	}
	inScope := map[string]bool{}
	for _, r := range scope {
		inScope[r] = true
		_, excused := NotExercised[r]
		switch {
		case exercised[r] && excused:
			t.Errorf("row %s is exercised and excused", r)
		case !exercised[r] && !excused:
			t.Errorf("row %s is in scope but no step exercises it", r)
		}
	}
	for r := range NotExercised {
		if !inScope[r] {
			t.Errorf("row %s is excused but not in scope", r)
		}
	}
	t.Logf("%d rows in scope, %d exercised, %d excused", len(scope), len(scope)-len(NotExercised), len(NotExercised))
}

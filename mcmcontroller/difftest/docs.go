package difftest

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// The documents the scenarios are checked against, relative to this
// package's directory.
const (
	// RowsDoc writes MCM's decisions down as tables of row ids.
	RowsDoc = "../../doc/mcm-rows.md"
	// CompatDoc lists the deviations from MCM, each with its tests.
	CompatDoc = "../../doc/mcm-compat.md"
)

// rowLine matches a table line that defines a row id: "| A4 | ...".
var rowLine = regexp.MustCompile(`(?m)^\| ([A-Z][0-9]+[a-z]?) \|`)

// DocumentedRows returns the row ids the rows document defines.
func DocumentedRows(path string) (map[string]bool, error) {
	order, err := rowOrder(path)
	if err != nil {
		return nil, err
	}
	rows := map[string]bool{}
	for _, id := range order {
		rows[id] = true
	}
	return rows, nil
}

// rowOrder returns the row ids of the rows document in its order.
func rowOrder(path string) ([]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range rowLine.FindAllStringSubmatch(string(raw), -1) {
		out = append(out, m[1])
	}
	return out, nil
}

// scopeRange matches a row id or a range of them in the scope table.
var scopeRange = regexp.MustCompile(`\b([A-Z][0-9]+[a-z]?)(?:-([A-Z][0-9]+[a-z]?))?\b`)

// InScopeRows returns the row ids the compatibility document's table "What
// is in scope" names, in the rows document's order: a range "A1-A10"
// holds every row from A1 to A10 in that order (H1b among H0-H4).
func InScopeRows(rowsDoc, compatDoc string) ([]string, error) {
	order, err := rowOrder(rowsDoc)
	if err != nil {
		return nil, err
	}
	at := map[string]int{}
	for i, id := range order {
		at[id] = i
	}
	raw, err := os.ReadFile(compatDoc)
	if err != nil {
		return nil, err
	}
	_, table, ok := strings.Cut(string(raw), "## What is in scope")
	if !ok {
		return nil, fmt.Errorf("%s has no section What is in scope", compatDoc)
	}
	table, _, _ = strings.Cut(table, "\n\n## ")
	in := map[int]bool{}
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || strings.HasPrefix(strings.TrimSpace(cells[2]), "---") {
			continue
		}
		for _, m := range scopeRange.FindAllStringSubmatch(cells[2], -1) {
			first, ok1 := at[m[1]]
			last, ok2 := first, true
			if m[2] != "" {
				last, ok2 = at[m[2]]
			}
			if !ok1 || !ok2 || last < first {
				return nil, fmt.Errorf("%s: the scope names %q, which %s does not order", compatDoc, m[0], rowsDoc)
			}
			for i := first; i <= last; i++ {
				in[i] = true
			}
		}
	}
	var out []string
	for i, id := range order {
		if in[i] {
			out = append(out, id)
		}
	}
	return out, nil
}

// CheckScenarios returns what is wrong with the scenarios against the
// documents: a row id the rows document does not define, a scenario
// without rows or steps, a name used twice or not fit for a namespace, a
// step's row the scenario does not list, and a deviation whose heading
// does not start a section of the compatibility document or whose test
// that section does not name.
func CheckScenarios(scs []Scenario, rowsDoc, compatDoc string) ([]string, error) {
	rows, err := DocumentedRows(rowsDoc)
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(compatDoc)
	if err != nil {
		return nil, err
	}
	sections := sectionsOf(string(raw))
	var out []string
	names := map[string]bool{}
	for i := range scs {
		sc := &scs[i]
		bad := func(format string, args ...any) {
			out = append(out, sc.Name+": "+fmt.Sprintf(format, args...))
		}
		if names[sc.Name] {
			bad("the name is used twice")
		}
		names[sc.Name] = true
		if !regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`).MatchString(sc.Name) {
			bad("the name is not a short DNS label")
		}
		if len(sc.Rows) == 0 || len(sc.Steps) == 0 {
			bad("no rows or no steps")
		}
		listed := map[string]bool{}
		for _, r := range sc.Rows {
			listed[r] = true
			if !rows[r] {
				bad("row %s is not in %s", r, rowsDoc)
			}
		}
		for j, st := range sc.Steps {
			for _, r := range st.Rows {
				if !listed[r] {
					bad("step %d exercises row %s, which the scenario does not list", j, r)
				}
			}
		}
		for _, d := range sc.Deviations {
			body, ok := sectionStarting(sections, d.Heading)
			switch {
			case d.Step < End || d.Step >= len(sc.Steps):
				bad("deviation %q: no step %d", d.Heading, d.Step)
			case !ok:
				bad("deviation %q: no section of %s starts so", d.Heading, compatDoc)
			case d.Test == "" || !strings.Contains(body, d.Test):
				bad("deviation %q: its section does not name the test %q", d.Heading, d.Test)
			}
		}
	}
	return out, nil
}

// section is a "### " section of a document: its heading and its text.
type section struct{ heading, body string }

// sectionsOf splits a document into its "### " sections.
func sectionsOf(doc string) []section {
	var out []section
	for _, part := range strings.Split(doc, "\n### ")[1:] {
		heading, body, _ := strings.Cut(part, "\n")
		if i := strings.Index(body, "\n## "); i >= 0 {
			body = body[:i]
		}
		out = append(out, section{heading, body})
	}
	return out
}

// sectionStarting returns the body of the only section whose heading
// starts with prefix.
func sectionStarting(secs []section, prefix string) (string, bool) {
	found, n := "", 0
	for _, s := range secs {
		if prefix != "" && strings.HasPrefix(s.heading, prefix) {
			found, n = s.body, n+1
		}
	}
	return found, n == 1
}

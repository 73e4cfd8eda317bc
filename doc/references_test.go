package doc_test

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The project's files stand on their own: a reader of the repository can
// follow every reference they make. These are the references that cannot
// be followed, each with what it means.
var unresolvable = []struct {
	re   *regexp.Regexp
	what string
	// unless, when set, excuses a line when it or the next line matches
	// it: the reference is resolved there.
	unless *regexp.Regexp
}{
	{re: regexp.MustCompile(`\.\./shared\b`), what: "a path outside the repository"},
	{re: regexp.MustCompile(`\bDESIGN\b`), what: "a design document outside the repository (doc/design.md is the project's)"},
	{re: regexp.MustCompile(`\b[Ss]eeds? 0[0-9]{2}\b`), what: "a seed document outside the repository"},
	{re: regexp.MustCompile(`\b[Cc]ritique\b`), what: "a review outside the repository"},
	{
		re: regexp.MustCompile(`\b[Ii]ssues? [0-9]+\b`), what: "an issue number with no link",
		unless: regexp.MustCompile(`https://github\.com/[^ )]+/(issues|pull)/[0-9]+`),
	},
	{
		re: regexp.MustCompile(`(^|[^\w/&])#[0-9]{2,5}\b`), what: "an upstream issue or pull request number with no link",
		unless: regexp.MustCompile(`https://github\.com/[^ )]+/(issues|pull)/[0-9]+`),
	},
	{
		re: regexp.MustCompile(`\b[Tt]ables? [a-d]\.[0-9]\b`), what: "a section of MCM's decision tables not named by its page",
		unless: regexp.MustCompile(`mcm-rows\.md`),
	},
}

// rowID matches the ids of MCM's decision-table rows (A4, H1b, S2a, ...);
// each must be a row of doc/mcm-rows.md.
var rowID = regexp.MustCompile(`\b(?:[ABDHTXSUIP](?:[1-9]|1[0-9])|[HX]0)[a-z]?\b`)

// rowsPage is where MCM's decision tables live, one row per line that
// starts with "| <id> |".
const rowsPage = "mcm-rows.md"

// scanReferences reports every reference under root that cannot be
// followed, as "path:line: what: text", skipping the directories skip
// names (relative to root). rows holds the row ids doc/mcm-rows.md defines.
func scanReferences(t *testing.T, root string, skip []string, rows map[string]bool) []string {
	t.Helper()
	var bad []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") && d.Name() != ".ci" || slices.Contains(skip, filepath.ToSlash(rel))) {
				return filepath.SkipDir
			}
			return nil
		}
		if !prose(rel) {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		var lines []string
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			lines = append(lines, line)
		}
		if err := sc.Err(); err != nil {
			return err
		}
		for i, line := range lines {
			n := i + 1
			next := ""
			if n < len(lines) {
				next = lines[n]
			}
			for _, u := range unresolvable {
				if u.re.MatchString(line) && (u.unless == nil || !u.unless.MatchString(line) && !u.unless.MatchString(next)) {
					bad = append(bad, fmt.Sprintf("%s:%d: %s: %s", rel, n, u.what, strings.TrimSpace(line)))
				}
			}
			if filepath.Base(rel) == rowsPage {
				continue
			}
			if strings.HasSuffix(rel, ".go") {
				// Row ids are looked for in comments only: code
				// identifiers such as T0 are not references.
				if c := strings.Index(line, "//"); c >= 0 {
					line = line[c:]
				} else {
					continue
				}
			}
			for _, id := range rowID.FindAllString(line, -1) {
				if !rows[id] {
					bad = append(bad, fmt.Sprintf("%s:%d: MCM row %s is not a row of doc/%s: %s", rel, n, id, rowsPage, strings.TrimSpace(line)))
				}
			}
		}
		return nil
	})
	require.NoError(t, err)
	return bad
}

// prose reports whether the file at rel is written for readers: Go source,
// Markdown, shell scripts and CI steps.
func prose(rel string) bool {
	switch filepath.Ext(rel) {
	case ".go", ".md", ".sh", ".patch":
		return true
	}
	return filepath.ToSlash(rel) == ".ci/run"
}

// rowIDs returns the row ids doc/mcm-rows.md defines.
func rowIDs(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(rowsPage)
	require.NoError(t, err)
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\| ([A-Z][0-9]+[a-z]?) \|`).FindAllStringSubmatch(string(b), -1) {
		rows[m[1]] = true
	}
	require.NotEmpty(t, rows)
	return rows
}

// Every reference in the project's files can be followed from the
// repository: no document outside it, no bare issue number, and every MCM
// row id a row of doc/mcm-rows.md. History belongs in CHANGELOG.md, which
// the scan reads too.
func TestEveryReferenceResolves(t *testing.T) {
	skip := []string{"bench/results", "doc/testdata"}
	bad := scanReferences(t, "..", skip, rowIDs(t))
	require.Empty(t, bad, "references a reader of the repository cannot follow:\n%s", strings.Join(bad, "\n"))
}

// The scan finds what it looks for: the planted file under
// testdata/references holds one reference of each kind that cannot be
// followed, and one of each kind that can.
func TestReferenceScanFindsPlantedReferences(t *testing.T) {
	bad := scanReferences(t, "testdata/references", nil, rowIDs(t))
	var kinds []string
	for _, b := range bad {
		kinds = append(kinds, strings.SplitN(b, ": ", 3)[1])
	}
	require.Len(t, bad, len(unresolvable)+1, "one finding per planted reference:\n%s", strings.Join(bad, "\n"))
	for _, u := range unresolvable {
		require.Contains(t, kinds, u.what)
	}
	require.Contains(t, kinds, "MCM row H14 is not a row of doc/"+rowsPage)
}

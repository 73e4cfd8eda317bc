package doc_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The core's package-level tables are read-only values: outside its
// declaration, a package only reads entries out of a table by index. No
// assignment, increment or address-of reaches one, so no step can change
// what another step reads.
func TestTablesAreReadOnly(t *testing.T) {
	for _, tc := range []struct{ pkg, table string }{
		{"lifecycle", "ruleSpecs"},
		{"lastop", "descTexts"},
		{"phase", "edges"},
		{"phase", "allowed"},
	} {
		reads := readOnlyUses(t, filepath.Join("..", tc.pkg), tc.table)
		require.NotZero(t, reads, "%s.%s is never read", tc.pkg, tc.table)
	}
}

// The check sees what it looks for: a write, an address taken and a use
// other than by index each fail it.
func TestTablesAreReadOnlyCheckFindsWrites(t *testing.T) {
	for _, src := range []string{
		`package p; var tab = [2]int{}; func f() { tab[1] = 2 }`,
		`package p; var tab = [2]struct{ a int }{}; func f() { tab[1].a++ }`,
		`package p; var tab = [2]int{}; func f() *int { return &tab[0] }`,
		`package p; var tab = [2]int{}; func f() { for range tab {} }`,
		`package p; var tab = [2]int{}; func f() { g(tab[:]) }; func g([]int) {}`,
	} {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "p.go", src, 0)
		require.NoError(t, err)
		_, bad := tableUses(fset, f, "tab")
		require.NotEmpty(t, bad, "not found in %s", src)
	}
}

// readOnlyUses checks the non-test files of the package in dir and returns
// how many reads of table they make.
func readOnlyUses(t *testing.T, dir, table string) int {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	reads := 0
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		n, bad := tableUses(fset, f, table)
		require.Empty(t, bad)
		reads += n
	}
	return reads
}

// tableUses returns the reads of table in f, and a message for each use
// that is not a plain read by index.
func tableUses(fset *token.FileSet, f *ast.File, table string) (reads int, bad []string) {
	var stack []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, n)
		id, ok := n.(*ast.Ident)
		if !ok || id.Name != table {
			return true
		}
		parent := stack[len(stack)-2]
		if vs, ok := parent.(*ast.ValueSpec); ok && vs.Names[0] == id {
			return true // the declaration
		}
		where := fset.Position(id.Pos()).String()
		if call, ok := parent.(*ast.CallExpr); ok {
			if fn, ok := call.Fun.(*ast.Ident); ok && fn.Name == "len" {
				reads++
				return true
			}
		}
		if ix, ok := parent.(*ast.IndexExpr); !ok || ix.X != id {
			bad = append(bad, where+": "+table+" used other than indexed")
			return true
		}
		// Walk up through selectors and further indexing: the value read
		// must not be written or have its address taken.
		child := stack[len(stack)-2]
	up:
		for i := len(stack) - 3; i >= 0; i-- {
			switch p := stack[i].(type) {
			case *ast.SelectorExpr, *ast.IndexExpr, *ast.ParenExpr:
				child = p
			case *ast.AssignStmt:
				for _, l := range p.Lhs {
					if l == child {
						bad = append(bad, where+": "+table+" written")
					}
				}
				break up
			case *ast.IncDecStmt:
				if p.X == child {
					bad = append(bad, where+": "+table+" written")
				}
				break up
			case *ast.UnaryExpr:
				if p.Op == token.AND {
					bad = append(bad, where+": the address of "+table+" taken")
				}
				break up
			default:
				break up
			}
		}
		reads++
		return true
	})
	return reads, bad
}

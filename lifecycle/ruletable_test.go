package lifecycle

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
)

// The rule table is a read-only value: outside its declaration, the
// package's code only reads entries out of it by index. No assignment,
// increment or address-of reaches it, so no step can change what another
// step reads.
func TestRuleTableIsReadOnly(t *testing.T) {
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	reads := 0
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		var stack []ast.Node
		ast.Inspect(f, func(n ast.Node) bool {
			if n == nil {
				stack = stack[:len(stack)-1]
				return true
			}
			stack = append(stack, n)
			id, ok := n.(*ast.Ident)
			if !ok || id.Name != "ruleSpecs" {
				return true
			}
			parent := stack[len(stack)-2]
			if vs, ok := parent.(*ast.ValueSpec); ok && vs.Names[0] == id {
				return true // the declaration
			}
			where := fset.Position(id.Pos()).String()
			ix, ok := parent.(*ast.IndexExpr)
			require.True(t, ok && ix.X == id, "%s: ruleSpecs used other than indexed", where)
			// Walk up through selectors and further indexing: the value
			// read must not be written or have its address taken.
			child := ast.Node(ix)
			for i := len(stack) - 3; i >= 0; i-- {
				switch p := stack[i].(type) {
				case *ast.SelectorExpr, *ast.IndexExpr, *ast.ParenExpr:
					child = p
					continue
				case *ast.AssignStmt:
					for _, l := range p.Lhs {
						require.NotSame(t, l, child, "%s: ruleSpecs written", where)
					}
				case *ast.IncDecStmt:
					require.NotSame(t, p.X, child, "%s: ruleSpecs written", where)
				case *ast.UnaryExpr:
					require.NotEqual(t, token.AND, p.Op, "%s: the address of ruleSpecs taken", where)
				}
				break
			}
			reads++
			return true
		})
	}
	require.NotZero(t, reads)
}

// Every rule has an entry; the identifiers are unique; a rule with a
// driver method has a handler; the rules of the deletion flow are emitted
// at a stage of deletion, and the rules of other flows name no stage.
func TestRuleTableIsComplete(t *testing.T) {
	seen := map[string]Rule{}
	for r := RuleNone; r < ruleCount; r++ {
		s, ok := r.spec()
		require.True(t, ok)
		require.NotEmpty(t, s.id, "rule %d has no identifier", r)
		require.NotEmpty(t, s.text, "%s has no text", s.id)
		if other, dup := seen[s.id]; dup {
			t.Fatalf("%s is the identifier of rules %d and %d", s.id, other, r)
		}
		seen[s.id] = r
		if s.method != driverapi.MethodNone {
			require.NotEqual(t, handleNone, s.handler, "%s asks the driver but handles no answer", s.id)
		}
		deletion := strings.HasPrefix(s.id, "delete.")
		if s.stage != StageNone {
			require.True(t, deletion, "%s names a deletion stage", s.id)
			require.Equal(t, anyStatus, s.at, "%s: a deletion op is placed by its stage", s.id)
		}
		if deletion && s.handler != handleNone {
			require.NotEqual(t, StageNone, s.stage, "%s handles an outcome of deletion at no stage", s.id)
		}
	}
	_, ok := ruleCount.spec()
	require.False(t, ok)
	require.Equal(t, "rule(9999)", Rule(9999).String())
}

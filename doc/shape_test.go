package doc_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The core's functions stay small enough to read at once: none over 80
// lines or of cyclomatic complexity over 25. A relation or a text that
// would need a long switch is a table instead (see tables_test.go).
const (
	maxFuncLines      = 80
	maxFuncComplexity = 25
)

func TestCoreFunctionsAreSmall(t *testing.T) {
	for _, pkg := range []string{"phase", "lastop", "retry", "driverapi", "lifecycle"} {
		names, err := filepath.Glob(filepath.Join("..", pkg, "*.go"))
		require.NoError(t, err)
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, name, nil, 0)
			require.NoError(t, err)
			for _, big := range bigFuncs(fset, f) {
				t.Errorf("%s/%s", pkg, big)
			}
		}
	}
}

// The check sees a function that is too long or too branchy.
func TestCoreFunctionsAreSmallCheckFindsBigOnes(t *testing.T) {
	long := "package p\nfunc f() {\n" + strings.Repeat("\t_ = 1\n", maxFuncLines) + "}\n"
	branchy := "package p\nfunc g(a, b bool) {\n" + strings.Repeat("\tif a && b {\n\t}\n", maxFuncComplexity/2+1) + "}\n"
	for _, src := range []string{long, branchy} {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "p.go", src, 0)
		require.NoError(t, err)
		require.Len(t, bigFuncs(fset, f), 1, src)
	}
}

// bigFuncs lists the functions of f over the bounds, with their size.
func bigFuncs(fset *token.FileSet, f *ast.File) []string {
	var out []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
		if c := complexity(fn); lines > maxFuncLines || c > maxFuncComplexity {
			out = append(out, fmt.Sprintf("%s: %s has %d lines and cyclomatic complexity %d (at most %d and %d)",
				filepath.Base(fset.Position(fn.Pos()).Filename), fn.Name.Name, lines, c, maxFuncLines, maxFuncComplexity))
		}
	}
	return out
}

// complexity is the cyclomatic complexity of fn: one, plus one for every
// if, for, range, non-default case and select case, && and ||.
func complexity(fn *ast.FuncDecl) int {
	c := 1
	ast.Inspect(fn, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if n.List != nil {
				c++
			}
		case *ast.CommClause:
			if n.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND || n.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}

package doc_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/doc"
)

// The generated pages match the code; `go generate ./doc` rewrites them.
// Generating them runs the explorations of lifecycletest (about two seconds
// without the race detector, many more with it), so the comparison is
// skipped under -race and -short; CI runs it once without the detector.
func TestGeneratedPagesAreUpToDate(t *testing.T) {
	if testing.Short() || raceOn {
		t.Skip("runs the explorations: run without -short and without the race detector")
	}
	files, err := doc.Files()
	require.NoError(t, err)
	for name, want := range files {
		got, err := os.ReadFile(name)
		require.NoError(t, err)
		require.Equal(t, want, string(got), "%s is out of date: run go generate ./doc", name)
	}
}

// Every exported identifier of the core packages and the harness has a doc
// comment, and every package a package comment.
func TestEveryExportedIdentifierIsDocumented(t *testing.T) {
	for _, pkg := range []string{"phase", "lastop", "retry", "driverapi", "lifecycle", "lifecycle/lifecycletest"} {
		dir := filepath.Join("..", pkg)
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		fset := token.NewFileSet()
		hasPkgDoc := false
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
			require.NoError(t, err)
			if f.Doc != nil {
				hasPkgDoc = true
			}
			for _, missing := range undocumented(f) {
				t.Errorf("%s: %s has no doc comment", filepath.Join(pkg, filepath.Base(name)), missing)
			}
		}
		require.True(t, hasPkgDoc, "package %s has no package comment", pkg)
	}
}

// undocumented lists the exported declarations of a file without a doc
// comment: functions, methods on exported types, types, and constants and
// variables (a group's comment covers its members only when each member has
// its own or the group is a single spec).
func undocumented(f *ast.File) []string {
	var out []string
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() || d.Doc != nil {
				continue
			}
			if d.Recv != nil && !exportedRecv(d.Recv) {
				continue
			}
			out = append(out, d.Name.Name)
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() && s.Doc == nil && d.Doc == nil {
						out = append(out, s.Name.Name)
					}
					if st, ok := s.Type.(*ast.StructType); ok && s.Name.IsExported() {
						for _, field := range st.Fields.List {
							for _, n := range field.Names {
								if n.IsExported() && field.Doc == nil && field.Comment == nil {
									out = append(out, s.Name.Name+"."+n.Name)
								}
							}
						}
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() && s.Doc == nil && s.Comment == nil && (d.Doc == nil || len(d.Specs) > 1) {
							out = append(out, n.Name)
						}
					}
				}
			}
		}
	}
	return out
}

func exportedRecv(r *ast.FieldList) bool {
	if len(r.List) == 0 {
		return false
	}
	t := r.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if g, ok := t.(*ast.IndexExpr); ok {
		t = g.X
	}
	id, ok := t.(*ast.Ident)
	return ok && id.IsExported()
}

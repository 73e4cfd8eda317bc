package mcmworld

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"unicode"

	mcmcontroller "github.com/gardener/machine-controller-manager/pkg/controller"
)

// mcmModule is the module path of MCM.
const mcmModule = "github.com/gardener/machine-controller-manager"

// CRDDir returns the directory of the CRDs of the MCM this binary links
// (kubernetes/crds in MCM's module). It looks, in order, in $MCM_DIR (a
// copy of MCM's module, as difftest/run.sh makes), in the module directory
// the binary's MCM code was compiled from (as its debug information names
// the source files), in the module cache at the version the binary's build
// information names (test binaries carry none), and in the directory `go
// list -m` reports from the current directory.
func CRDDir() (string, error) {
	var tried []string
	check := func(dir string) (string, bool) {
		if dir == "" {
			return "", false
		}
		crds := filepath.Join(dir, "kubernetes", "crds")
		if st, err := os.Stat(crds); err == nil && st.IsDir() {
			return crds, true
		}
		tried = append(tried, crds)
		return "", false
	}
	if crds, ok := check(os.Getenv("MCM_DIR")); ok {
		return crds, nil
	}
	if crds, ok := check(fromLinkedSource()); ok {
		return crds, nil
	}
	if crds, ok := check(fromBuildInfo()); ok {
		return crds, nil
	}
	dir, err := fromGoList()
	if crds, ok := check(dir); ok {
		return crds, nil
	}
	return "", fmt.Errorf("mcmworld: no MCM CRDs found (tried %s): %w", strings.Join(tried, ", "),
		errors.Join(err, errors.New("set MCM_DIR to MCM's module directory")))
}

// fromLinkedSource returns the directory of MCM's module as the source
// file of a function of MCM's the binary links names it: absolute, or
// relative to the module cache when the binary was built with -trimpath.
// It returns "" when the file is not where MCM's module has it.
func fromLinkedSource() string {
	const inModule = "/pkg/controller/controller.go"
	file, _ := runtime.FuncForPC(reflect.ValueOf(mcmcontroller.NewController).Pointer()).FileLine(0)
	file = filepath.ToSlash(file)
	dir, ok := strings.CutSuffix(file, inModule)
	if !ok {
		return ""
	}
	if !filepath.IsAbs(dir) {
		cache := modCache()
		if cache == "" {
			return ""
		}
		dir = filepath.Join(cache, dir)
	}
	return filepath.FromSlash(dir)
}

// fromBuildInfo returns MCM's directory in the module cache at the
// version the binary links, "" when the build information does not say.
func fromBuildInfo() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range bi.Deps {
		if d.Path != mcmModule {
			continue
		}
		if d.Replace != nil {
			d = d.Replace
			if d.Version == "" { // a directory, relative to a go.mod this binary does not know
				if filepath.IsAbs(d.Path) {
					return d.Path
				}
				return ""
			}
		}
		cache := modCache()
		if cache == "" || d.Version == "" {
			return ""
		}
		return filepath.Join(cache, escape(d.Path)+"@"+escape(d.Version))
	}
	return ""
}

// modCache returns the module cache as the go command finds it without
// running it: $GOMODCACHE, else the first entry of $GOPATH, else ~/go,
// followed by pkg/mod.
func modCache() string {
	if c := os.Getenv("GOMODCACHE"); c != "" {
		return c
	}
	gopath := filepath.SplitList(os.Getenv("GOPATH"))
	if len(gopath) > 0 && gopath[0] != "" {
		return filepath.Join(gopath[0], "pkg", "mod")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, "go", "pkg", "mod")
}

// escape writes a module path or version as the module cache does: every
// upper-case letter as '!' and the letter in lower case.
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// fromGoList asks the go command for MCM's directory, as the module of the
// current directory requires it.
func fromGoList() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", mcmModule).Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w", mcmModule, err)
	}
	return strings.TrimSpace(string(out)), nil
}

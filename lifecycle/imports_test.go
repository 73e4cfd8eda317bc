package lifecycle_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCoreImportsOnlyStandardLibrary enforces that the core packages (the
// five and the pass)
// depend on nothing outside the standard library and this module.
func TestCoreImportsOnlyStandardLibrary(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not available")
	}
	core := []string{"phase", "lastop", "retry", "driverapi", "lifecycle", "lifecycle/pass"}
	args := []string{"list", "-deps"}
	for _, p := range core {
		args = append(args, "github.com/purelifecycle/machine/"+p)
	}
	out, err := exec.Command("go", args...).CombinedOutput()
	require.NoError(t, err, string(out))
	var foreign []string
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/purelifecycle/machine/") {
			continue
		}
		first, _, _ := strings.Cut(pkg, "/")
		if strings.Contains(first, ".") {
			foreign = append(foreign, pkg)
		}
	}
	require.Empty(t, foreign, "core packages must import only the standard library")
	// The test itself must see at least the core packages and some std ones.
	require.Contains(t, string(out), "github.com/purelifecycle/machine/lifecycle")
}

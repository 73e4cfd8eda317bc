package pass_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/pass"
)

// reconcile is the README's sample: a controller's reconcile of one
// machine, given a pass.Shell for it.
func reconcile(ctx context.Context, shell pass.Shell, now time.Time) (time.Duration, error) {
	// README:begin
	// Once, when the controller starts: the configuration checked, and one
	// pass.Scratch per worker, so a pass allocates nothing.
	checked, err := lifecycle.DefaultConfig().Check() // MCM's defaults: 20m creation timeout, ...
	if err != nil {
		return 0, err
	}
	var scratch pass.Scratch

	// Every reconcile of one machine: shell implements pass.Shell (observe the
	// machine, save its status, apply an effect, invoke the driver). Run keeps
	// the caller's obligations: status first, effects in order, every outcome
	// reported, at most lifecycle.MaxStepsPerPass steps.
	r := pass.Run(ctx, &checked, shell, now, &scratch, nil)
	return r.Requeue, r.Err // requeue after r.Requeue; r.End says why the pass ended
	// README:end
}

// A new machine's first pass: its instance is created and initialized, and
// the machine waits Pending for its node.
func ExampleRun() {
	sh := newShell()
	requeue, err := reconcile(context.Background(), sh, t0.Add(time.Minute))
	fmt.Println(sh.status.Phase, sh.provider.Len(), "instance", requeue, err)
	// Output: Pending 1 instance 1m0s <nil>
}

// The README's "Use it" sample is reconcile's body, so it compiles and
// runs with the package's tests.
func TestREADMESampleCompiles(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	_, body, ok := strings.Cut(string(src), "\t// README:begin\n")
	require.True(t, ok)
	body, _, ok = strings.Cut(body, "\t// README:end\n")
	require.True(t, ok)
	var want strings.Builder
	for line := range strings.Lines(body) {
		want.WriteString(strings.TrimPrefix(line, "\t"))
	}
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	require.Contains(t, string(readme), "```go\n"+want.String()+"```\n",
		"README.md's \"Use it\" sample must be reconcile's body in lifecycle/pass/example_test.go")
}

package shell_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/examples/shell"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
)

// scriptShell runs Reconcile as the Shell of lifecycletest's scenario
// scripts.
type scriptShell struct{}

func (scriptShell) Pass(ctx context.Context, w lifecycletest.ShellWorld, now time.Time) time.Duration {
	cfg, err := w.Config().Check()
	if err != nil {
		panic(err)
	}
	p := shell.Reconcile(ctx, &cfg, w, w.Driver(), driverapi.Class{}, now,
		shell.Hooks{Decided: func(_ int, d *lifecycle.Decision) { w.Decided(d) }})
	return p.Requeue
}

// The lifecycle's scenario scripts pass with Reconcile running their
// passes: it keeps the caller's obligations as the harness's own loop does.
func TestLifecycleScriptsWithReconcile(t *testing.T) {
	lifecycletest.RunScripts(t, filepath.Join("..", "..", "lifecycle", "testdata", "scripts", "*.txt"),
		lifecycletest.ScriptOptions{Shell: scriptShell{}}, false)
}

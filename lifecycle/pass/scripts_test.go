package pass_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
	"github.com/purelifecycle/machine/lifecycle/pass"
)

// scriptWorld binds a scenario script's world to a pass's Shell.
type scriptWorld struct{ w lifecycletest.ShellWorld }

func (s scriptWorld) Observe(_ context.Context, now time.Time, in *lifecycle.Input) error {
	*in = s.w.Observe(now)
	return nil
}

func (s scriptWorld) Save(_ context.Context, st *lifecycle.Status) lifecycle.Write {
	return s.w.SaveStatus(*st)
}

func (s scriptWorld) Apply(_ context.Context, e *lifecycle.Effect) (lifecycle.Write, string) {
	w, err := s.w.Apply(*e)
	if err != nil {
		return w, err.Error()
	}
	return w, ""
}

func (s scriptWorld) Invoke(ctx context.Context, c *driverapi.Call, res *driverapi.Result) {
	*res = driverapi.Invoke(ctx, s.w.Driver(), *c, driverapi.Class{})
}

func (s scriptWorld) Node(_ context.Context, name string) lifecycle.Node { return s.w.NodeNamed(name) }

// Decided reports each decision to the script's world, which checks the
// pass's writes against it.
func (s scriptWorld) Decided(_ *lifecycle.Input, d *lifecycle.Decision) { s.w.Decided(d) }

// scriptShell runs pass.Run as the Shell of lifecycletest's scenario
// scripts.
type scriptShell struct{}

func (scriptShell) Pass(ctx context.Context, w lifecycletest.ShellWorld, now time.Time) time.Duration {
	cfg, err := w.Config().Check()
	if err != nil {
		panic(err)
	}
	var s pass.Scratch
	sw := scriptWorld{w}
	return pass.Run(ctx, &cfg, sw, now, &s, sw).Requeue
}

// The lifecycle's scenario scripts pass with Run as their reconcile loop:
// the script's world checks every obligation as the pass meets it, and
// the expected outputs are the harness's own loop's.
func TestLifecycleScriptsWithRun(t *testing.T) {
	lifecycletest.RunScripts(t, filepath.Join("..", "testdata", "scripts", "*.txt"),
		lifecycletest.ScriptOptions{Shell: scriptShell{}}, false)
}

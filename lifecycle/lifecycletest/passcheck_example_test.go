package lifecycletest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
)

// printer stands in for the *testing.T of a test: it prints the first line
// of each violation the check reports in detail.
type printer struct{ testing.TB }

func (printer) Helper() {}

func (printer) Errorf(format string, args ...any) {
	if msg, _, _ := strings.Cut(fmt.Sprintf(format, args...), "\n"); strings.HasPrefix(msg, "shell check:") {
		fmt.Println(msg)
	}
}

// A shell is checked from a test: NewWorld sets its world up in each start
// state the check asks for, and Run reports every violation to the test.
// Here the shell is the reference one; a test passes its *testing.T.
func ExampleShellCheck() {
	check := lifecycletest.ShellCheck{
		NewWorld: func(spec lifecycletest.WorldSpec) lifecycletest.PassWorld {
			return lifecycletest.NewReferenceWorld(spec)
		},
		Starts: []lifecycletest.Start{lifecycletest.StartNew},
	}
	rep := check.Run(printer{}) // check.Run(t) in a test
	fmt.Println("runs with faults:", rep.Runs > 100, "violations:", rep.Failed)
	// Output: runs with faults: true violations: 0
}

// careless is a shell that reports a status saved whatever the API server
// answered.
type careless struct{ *lifecycletest.ReferenceWorld }

func (c careless) Save(ctx context.Context, st *lifecycle.Status) lifecycle.Write {
	c.ReferenceWorld.Save(ctx, st)
	return lifecycle.WriteOK
}

// A shell that swallows the API server's refusals is caught when the world
// refuses a write ([lifecycletest.WriteRefuser]).
func ExampleShellCheck_brokenShell() {
	check := lifecycletest.ShellCheck{
		NewWorld: func(spec lifecycletest.WorldSpec) lifecycletest.PassWorld {
			return careless{lifecycletest.NewReferenceWorld(spec)}
		},
		Starts:     []lifecycletest.Start{lifecycletest.StartNew},
		Faults:     lifecycletest.FaultWorldRefuses,
		MaxReports: 1,
	}
	rep := check.Run(printer{})
	fmt.Println(rep.Failed > 0)
	// Output:
	// shell check: the world refused a status save, and the shell reported it ok
	// true
}

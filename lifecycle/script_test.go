package lifecycle_test

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
)

// Scenario scripts: testdata/scripts/*.txt tell the lifecycle's main
// stories end to end, played by the harness of lifecycletest.Script (its
// doc lists the commands) against its in-memory provider. Every decision
// is checked as step checks it (helpers_test.go). After a change of
// behaviour, regenerate the outputs and review the diff:
//
//	go test ./lifecycle/ -run Scripts -update-scripts

var scriptUpdate = flag.Bool("update-scripts", false, "rewrite the expected outputs of testdata/scripts/*.txt")

func TestScripts(t *testing.T) {
	lifecycletest.RunScripts(t, filepath.Join("testdata", "scripts", "*.txt"),
		lifecycletest.ScriptOptions{Check: checkedDecision}, *scriptUpdate)
}

// checkedDecision runs checkDecision on a decision of a script, as an
// error.
func checkedDecision(_ *lifecycle.Config, in *lifecycle.Input, d *lifecycle.Decision) (err error) {
	rec := &recorder{}
	defer func() {
		if r := recover(); r != nil && r != errFailNow {
			panic(r)
		}
		err = rec.err
	}()
	checkDecision(rec, *in, *d)
	return nil
}

// recorder is a require.TestingT that keeps the first failure.
type recorder struct{ err error }

var errFailNow = errors.New("FailNow")

func (r *recorder) Errorf(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

func (r *recorder) FailNow() { panic(errFailNow) }

func (r *recorder) Helper() {}

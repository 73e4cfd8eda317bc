package lifecycle_test

import (
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
)

// On any input, with any valid configuration, Step keeps every promise a
// single decision shows (lifecycletest.Check), never changes its input and
// gives the same decision twice.
func TestPropertyEveryDecisionKeepsThePromises(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := lifecycletest.Configs().Draw(t, "config")
		in := lifecycletest.Inputs(cfg).Draw(t, "input")
		before := deepCopy(in)
		d := lifecycle.Step(cfg, in)
		if !reflect.DeepEqual(before, in) {
			t.Fatalf("Step changed its input")
		}
		if again := lifecycle.Step(cfg, before); !reflect.DeepEqual(d, again) {
			t.Fatalf("Step is not deterministic")
		}
		if err := lifecycletest.Check(&cfg, &in, &d); err != nil {
			t.Fatalf("%v\ninput status: %+v\ndecision: %s", err, in.Status, d.String())
		}
	})
}

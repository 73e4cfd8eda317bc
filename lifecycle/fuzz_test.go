package lifecycle_test

import (
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
)

// stepProperty is the property of every decision: no panic, the input
// unchanged, the same decision twice, and the safety promises that one
// decision shows (lifecycletest.Check lists them).
func stepProperty(t *rapid.T) {
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
	if !lifecycle.OpEmittable(&d, !in.Object.DeletionTime.IsZero()) {
		t.Fatalf("the decision's own outcome would be refused (ops.go):\n%s", d.String())
	}
	// StepInto overwrites whatever decision it is handed: here the decision
	// of another input, which may hold more effects, a call and a wait.
	other := lifecycletest.Inputs(cfg).Draw(t, "previous input")
	into := lifecycle.Step(cfg, other)
	// An invalid cfg checks as the zero Checked, which StepInto refuses as
	// Step refuses cfg.
	k, _ := cfg.Check()
	lifecycle.StepInto(&into, &k, &in)
	if !reflect.DeepEqual(d, into) {
		t.Fatalf("StepInto over a previous decision differs from Step:\nStep:     %s\nStepInto: %s", d.String(), into.String())
	}
	if !reflect.DeepEqual(before, in) {
		t.Fatalf("StepInto changed its input")
	}
}

// FuzzStep decodes a configuration and an input from the fuzzer's bytes
// (through the rapid generators) and checks every decision's promises.
func FuzzStep(f *testing.F) {
	for _, seed := range [][]byte{nil, {0}, {1, 2, 3, 4, 5, 6, 7, 8}, []byte("machine lifecycle"),
		{255, 255, 255, 255, 0, 0, 0, 0, 17, 17, 17, 17}} {
		f.Add(seed)
	}
	f.Fuzz(rapid.MakeFuzz(stepProperty))
}

package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/purelifecycle/machine/phase"
)

// Every scenario ends with the machine Running and exactly one instance
// created, also when the controller crashed right after CreateMachine.
func TestScenarios(t *testing.T) {
	for name, s := range scenarios {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			r := run(&out, name, s, false)
			if !r.ok || r.phase != phase.Running || r.creates != 1 {
				t.Fatalf("scenario %s ended %+v\n%s", name, r, out.String())
			}
			if !strings.Contains(out.String(), "health.joined") {
				t.Fatalf("no join in the trace:\n%s", out.String())
			}
		})
	}
	var out bytes.Buffer
	run(&out, "crash", scenarios["crash"], false)
	if !strings.Contains(out.String(), "controller crashed") || !strings.Contains(out.String(), "create.uninitialized") {
		t.Fatalf("the crash scenario must crash and then find the instance:\n%s", out.String())
	}
	out.Reset()
	run(&out, "init-fails", scenarios["init-fails"], false)
	if !strings.Contains(out.String(), "phase=CrashLoopBackOff") {
		t.Fatalf("the init-fails scenario must pass through CrashLoopBackOff:\n%s", out.String())
	}
}

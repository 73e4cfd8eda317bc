package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/purelifecycle/machine/phase"
)

// Every scenario ends as it should: with the machine Running and exactly
// one instance created (also when the controller crashed right after
// CreateMachine), or, for the deletion scenarios, with the machine gone and
// no instance or node left behind.
func TestScenarios(t *testing.T) {
	want := map[string][]string{
		"happy":      {"health.joined"},
		"init-fails": {"phase=CrashLoopBackOff", "create.init-failed", "health.joined"},
		"crash":      {"controller crashed", "create.uninitialized", "health.joined"},
		"delete":     {"delete.begins", "delete.drained", "delete.vm-deleted", "delete.node-deleted", "remove-finalizer"},
		"drain-blocked": {"delete.drain", "delete.draining", "delete.drain-round", "delete.drain-failed", "delete.backoff",
			"delete.drain-force", "delete.force-drained", "delete.volume-attachments"},
		"no-node": {"delete.begins", `No node object found for \"node-vm-1\"`, "remove-finalizer"},
		"update":  {"update.applied", "metadata.patch", "metadata.differs", "metadata.synced", "set pool=web set team=b"},
		"replace": {"update.needs-replacement", "cannot be updated in place"},
	}
	for name, s := range scenarios {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			r := run(&out, name, s, false)
			if !r.ok {
				t.Fatalf("scenario %s ended %+v\n%s", name, r, out.String())
			}
			if s.deleteWhen == nil && (r.phase != phase.Running || r.creates != 1) {
				t.Fatalf("scenario %s ended %+v", name, r)
			}
			if s.deleteWhen != nil && !r.gone {
				t.Fatalf("scenario %s did not delete the machine: %+v", name, r)
			}
			for _, w := range want[name] {
				if !strings.Contains(out.String(), w) {
					t.Errorf("scenario %s: %q missing from the trace:\n%s", name, w, out.String())
				}
			}
		})
	}
}

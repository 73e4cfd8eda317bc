package lifecycle

import (
	"testing"

	"github.com/purelifecycle/machine/phase"
)

// objectInLine is the fast check in front of ensureObject: it must say
// "nothing to ensure" exactly when ensureObject would add no effect. Every
// combination of the fields they read is tried.
func TestObjectInLineAgreesWithEnsureObject(t *testing.T) {
	const pid, node = "fake:///eu-1/vm-1", "node-1"
	for bits := range 1 << 9 {
		has := func(i int) bool { return bits&(1<<i) != 0 }
		var in Input
		var d Decision
		cfg := DefaultConfig()
		cfg.NoTargetCluster = has(0)
		o, st := &in.Object, &d.Status
		o.Finalizer = has(1)
		if has(2) {
			o.Priority = DefaultPriority
		}
		if has(3) {
			st.ProviderID = pid
		}
		if has(4) {
			st.Flags |= FlagStaleInstance
		}
		if has(5) {
			o.ProviderID = pid
		}
		if has(6) {
			st.NodeName = node
		}
		if has(7) {
			o.NodeLabel = node
		}
		x := decider{cfg: &cfg, d: &d, waitFacts: waitFacts{st: st, o: &in.Object, in: &in}, phaseBefore: phase.Running}
		if has(8) {
			x.phaseBefore = phase.CrashLoopBackOff
		}
		inLine := x.objectInLine()
		x.ensureObject()
		if added := d.Effects.Len(); inLine != (added == 0) {
			t.Errorf("case %09b: objectInLine %v, but ensureObject added %d effects", bits, inLine, added)
		}
	}
}

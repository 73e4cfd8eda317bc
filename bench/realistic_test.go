package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/retry"
)

// The realistic healthy step: a Running machine in sync, as a controller
// decodes it, through StepInto with a reused Decision. Unlike the other
// scenarios, the status and the node do not share their conditions: a
// controller decodes the status's mirrored conditions and the node's
// separately, so every string is distinct and comparing them reads them.
// The machine's name has 48 bytes and its node reports seven conditions.
const realisticName = "shoot--garden--prod-eu1--worker-z1-7d9c4b8f-xk2p"

// sevenConditions are a kubelet's five conditions and two of the node
// problem detector's, for a healthy node.
func sevenConditions(since time.Time) []lifecycle.Condition {
	c := healthyConditions(since)
	s := lifecycle.StampOf(since)
	return append(c,
		lifecycle.Condition{Type: "KernelDeadlock", Status: lifecycle.ConditionFalse, Since: s, Reason: "KernelHasNoDeadlock", Message: "kernel has no deadlock"},
		lifecycle.Condition{Type: "ReadonlyFilesystem", Status: lifecycle.ConditionFalse, Since: s, Reason: "FilesystemIsNotReadOnly", Message: "Filesystem is not read-only"})
}

// decoded returns a deep copy of c with every string in memory of its own,
// as a decoder produces it.
func decoded(c []lifecycle.Condition) []lifecycle.Condition {
	out := make([]lifecycle.Condition, len(c))
	for i, x := range c {
		x.Type, x.Reason, x.Message = strings.Clone(x.Type), strings.Clone(x.Reason), strings.Clone(x.Message)
		out[i] = x
	}
	return out
}

// realisticHealthy returns the input of the realistic healthy step, driven
// to rest through the library's flows, with the status and the node
// decoded separately.
func realisticHealthy(tb testing.TB, f *Fixture) lifecycle.Input {
	tb.Helper()
	w := &Provider{}
	in, err := w.Settle(&f.Config, NewInput(realisticName, MachineUID), nil)
	if err != nil {
		tb.Fatal(err)
	}
	n := lifecycle.Node{Name: NodeName, ProviderID: ProviderID, Conditions: sevenConditions(T0.Add(2 * time.Minute)),
		Taints: lifecycle.InstanceNotReady}
	in.Node = n
	in.Now = in.Now.Add(time.Minute)
	if in, err = w.Settle(&f.Config, in, nil); err != nil {
		tb.Fatal(err)
	}
	if in.Status.Phase.String() != "Running" {
		tb.Fatalf("not Running: %s", in.Status.Phase)
	}
	// Decoded anew: the object, the status and the node hold strings of
	// their own. The status keeps the UID's hash its last change recorded,
	// as a shell's decoder reads it back (adapters/mcm: UIDHashAnnotation).
	in.Object.Name, in.Object.UID = strings.Clone(in.Object.Name), strings.Clone(in.Object.UID)
	in.Object.ProviderID, in.Object.NodeLabel = strings.Clone(in.Object.ProviderID), strings.Clone(in.Object.NodeLabel)
	in.Status.ProviderID, in.Status.NodeName = strings.Clone(in.Status.ProviderID), strings.Clone(in.Status.NodeName)
	in.Status.Conditions = decoded(in.Status.Conditions)
	in.Node = lifecycle.Node{Name: strings.Clone(NodeName), ProviderID: strings.Clone(ProviderID),
		MachineName: strings.Clone(realisticName), Conditions: decoded(n.Conditions)}
	in.Now = in.Now.Add(time.Minute)
	return in
}

// BenchmarkRealisticHealthy measures the realistic healthy step (see
// realisticName). Run it pinned: GOMAXPROCS=1 taskset -c 1.
func BenchmarkRealisticHealthy(b *testing.B) {
	f := fixture(b)
	in := realisticHealthy(b, f)
	var d lifecycle.Decision
	b.Run("impl=lifecycle-into", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			lifecycle.StepInto(&d, &f.Checked, &in)
		}
	})
	if d.Rule != lifecycle.RuleHealthy || d.Changed || d.Effects.Len() != 0 {
		b.Fatalf("not the healthy step: %s", d.String())
	}
}

// The realistic healthy step decides as a healthy step and allocates
// nothing.
func TestRealisticHealthyStep(t *testing.T) {
	f := fixture(t)
	in := realisticHealthy(t, f)
	var d lifecycle.Decision
	lifecycle.StepInto(&d, &f.Checked, &in)
	if d.Rule != lifecycle.RuleHealthy || d.Changed || d.Effects.Len() != 0 {
		t.Fatalf("not the healthy step: %s", d.String())
	}
	if &in.Status.Conditions[0] == &in.Node.Conditions[0] || len(in.Object.Name) != 48 || len(in.Node.Conditions) != 7 {
		t.Fatal("the status and the node share their conditions, or the name or conditions are off")
	}
	if in.Status.UIDHash != retry.HashKey(in.Object.UID) {
		t.Fatal("the status does not keep the UID's hash its last change recorded")
	}
	if n := testing.AllocsPerRun(100, func() { lifecycle.StepInto(&d, &f.Checked, &in) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

package lifecycle_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// The seal decides the object ensure-effects once, from the status the
// decision leaves: every decision of a flow for a machine not being
// deleted writes what the object lacks. The tests of this file are the
// cases that differed when each path decided it for itself.

// kindsOf lists the kinds of d's effects.
func kindsOf(d lifecycle.Decision) []lifecycle.Kind {
	var out []lifecycle.Kind
	for _, e := range d.Effects.Slice() {
		out = append(out, e.Kind)
	}
	return out
}

// A failed CreateMachine writes a finalizer the object lost meanwhile, as a
// failed InitializeMachine writes whatever of the instance's identity the
// object lacks.
func TestFailedCreateAndInitializeBothEnsureTheObject(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	ds := run(t, cfg, newInput(), notFound)
	require.Equal(t, lifecycle.RuleCreateVMNotFound, ds[1].Rule)
	in := then(lastInput(newInput(), ds, notFound), ds[1], fail(driverapi.Internal, "boom"))
	in.Object.Finalizer = false // removed by someone while CreateMachine ran
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleCreateFailed, d.Rule)
	require.Equal(t, phase.CrashLoopBackOff, d.Status.Phase)
	require.Contains(t, kindsOf(d), lifecycle.KindEnsureFinalizer, d.String())

	// InitializeMachine fails for an instance the object does not name
	// yet: the identity is written all the same.
	ds = run(t, cfg, newInput(), notFound, ok(providerID, nodeName))
	require.Equal(t, driverapi.MethodInitialize, ds[2].Call.Method, ds[2].String())
	in = then(lastInput(newInput(), ds, notFound, ok(providerID, nodeName)), ds[2], fail(driverapi.Internal, "init boom"))
	in.Object.Finalizer = false
	in.Object.NodeLabel, in.Object.ProviderID, in.Object.Priority = "", "", ""
	d = step(t, cfg, in)
	require.Equal(t, lifecycle.RuleCreateInitFailed, d.Rule)
	for _, k := range []lifecycle.Kind{lifecycle.KindEnsureFinalizer, lifecycle.KindEnsureNodeLabel,
		lifecycle.KindEnsurePriority, lifecycle.KindEnsureProviderID} {
		require.Contains(t, kindsOf(d), k, d.String())
	}
}

// A decision that reports that the previous decision's status or writes
// failed carries no ensure-effects: the next decision, made from the saved
// status, writes what the object lacks.
func TestFailedSaveOrWritesEnsureNothing(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := withIdentity(newInput(), phase.Running)
	in.Node = healthyNode()
	d := step(t, cfg, in)
	in.Object.Finalizer = false
	for _, o := range []lifecycle.Outcome{
		{Persist: lifecycle.WriteConflict},
		{Persist: lifecycle.WriteFailed},
	} {
		next := in
		next.Status = d.Status
		next.Outcome = &o
		got := step(t, cfg, next)
		require.False(t, slices.Contains(kindsOf(got), lifecycle.KindEnsureFinalizer), got.String())
	}
	// Without the failure, the finalizer is written.
	next := in
	next.Status = d.Status
	got := step(t, cfg, next)
	require.Contains(t, kindsOf(got), lifecycle.KindEnsureFinalizer, got.String())
}

// Whether the observer turned degraded before the step or while its
// driver call ran, the frozen decision ensures the object alike.
func TestFrozenDecisionsEnsureAlike(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	ds := run(t, cfg, newInput())
	require.Equal(t, driverapi.MethodGetStatus, ds[0].Call.Method)
	in := then(newInput(), ds[0], notFound)
	in.Object.Finalizer = false
	in.Observer = lifecycle.Observer{Degraded: true, Since: t0}
	afterCall := step(t, cfg, in)
	in.Outcome = nil
	before := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleFrozen, afterCall.Rule)
	require.Equal(t, lifecycle.RuleFrozen, before.Rule)
	require.Equal(t, kindsOf(before), kindsOf(afterCall))
	require.Contains(t, kindsOf(afterCall), lifecycle.KindEnsureFinalizer)
}

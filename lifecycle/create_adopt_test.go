package lifecycle_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// Machines found in the middle of their creation with an instance already
// named, and no creation stage: what MCM leaves after its first creation
// pass (the VM created, spec.providerID and the node label written, no
// phase yet) or after a failed initialization (CrashLoopBackOff), and what
// a shell reads back when the lifecycle's own bookkeeping was lost (the
// MCM adapter's annotation write). MCM's next pass looks the instance up
// and moves the machine on; so must the lifecycle, in one pass, without
// asking the provider the same question again and again.

// adoptedCreating is a machine of phase p that names providerID on its
// spec and in its status, with the node label, and no stage.
func adoptedCreating(p phase.Phase, op lastop.Operation, label bool) lifecycle.Input {
	in := newInput()
	in.Now = t0.Add(3 * time.Minute)
	in.Status.Phase = p
	if p != phase.None {
		in.Status.PhaseSince = lifecycle.StampOf(t0.Add(time.Minute))
	}
	in.Status.LastOp = op
	in.Status.ProviderID = providerID
	in.Object.ProviderID = providerID
	in.Object.Priority = lifecycle.DefaultPriority
	if label {
		in.Status.NodeName = nodeName
		in.Object.NodeLabel = nodeName
	}
	return in
}

// cooperative answers every driver call of an adopted creation.
type cooperative struct {
	lookup driverapi.Code // what GetMachineStatus answers
	calls  map[driverapi.Method]int
}

func (c *cooperative) answer(call driverapi.Call) driverapi.Result {
	if c.calls == nil {
		c.calls = map[driverapi.Method]int{}
	}
	c.calls[call.Method]++
	switch call.Method {
	case driverapi.MethodGetStatus:
		if c.lookup == driverapi.NotFound {
			return fail(driverapi.NotFound, "instance not found")
		}
		r := ok(providerID, nodeName)
		if c.lookup == driverapi.Uninitialized {
			r.Code, r.Message, r.Text = driverapi.Uninitialized, "not initialized", "not initialized"
			c.lookup = driverapi.OK // initialization below makes it so
		}
		return r
	case driverapi.MethodInitialize:
		return ok(providerID, nodeName)
	}
	return fail(driverapi.Internal, "unexpected call "+call.Method.String())
}

// adoptPass runs one reconcile pass of in against the driver and returns its
// decisions, the input the next pass would start from (the saved status,
// the object as the writes left it) and the rules decided.
func adoptPass(t *testing.T, cfg lifecycle.Config, in lifecycle.Input, drv *cooperative) ([]lifecycle.Decision, lifecycle.Input) {
	t.Helper()
	var ds []lifecycle.Decision
	playPass(t, cfg, &in, drv.answer, false, func(d lifecycle.Decision) bool {
		ds = append(ds, d)
		return false
	})
	return ds, in
}

func rulesOfPass(ds []lifecycle.Decision) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Rule.String())
	}
	return out
}

func TestAdoptedCreationMovesOn(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	none := lastop.Operation{}
	createFailed := lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateFailed,
		Desc: lastop.DescCloudProviderError, ErrorCode: "Unavailable", Detail: "try later"}
	initFailed := lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateFailed,
		Desc: lastop.DescInitFailed, ErrorCode: "Internal", Detail: "boot script failed"}
	tests := []struct {
		name   string
		in     lifecycle.Input
		lookup driverapi.Code
		// wantInit: InitializeMachine is asked (once).
		wantInit bool
	}{
		{name: "A10 B8 no phase, the instance exists", in: adoptedCreating(phase.None, none, true), lookup: driverapi.OK},
		{name: "A10 B2 B8 no phase, the node label missing", in: adoptedCreating(phase.None, none, false),
			lookup: driverapi.OK},
		{name: "A8 no phase, the instance is not initialized", in: adoptedCreating(phase.None, none, true),
			lookup: driverapi.Uninitialized, wantInit: true},
		{name: "A7 B8 no phase, the provider cannot find the instance", in: adoptedCreating(phase.None, none, true),
			lookup: driverapi.NotFound},
		{name: "A10 B8 CrashLoopBackOff after a failed creation", in: adoptedCreating(phase.CrashLoopBackOff, createFailed, true),
			lookup: driverapi.OK},
		{name: "A8 CrashLoopBackOff after a failed initialization", in: adoptedCreating(phase.CrashLoopBackOff, initFailed, true),
			lookup: driverapi.Uninitialized, wantInit: true},
		{name: "CrashLoopBackOff after a failed initialization is initialized again", in: adoptedCreating(phase.CrashLoopBackOff, initFailed, true),
			lookup: driverapi.OK, wantInit: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			drv := &cooperative{lookup: tt.lookup}
			ds, next := adoptPass(t, cfg, tt.in, drv)
			last := ds[len(ds)-1]
			require.Equal(t, phase.Pending.Label(), last.Status.Phase.Label(), "phase after one pass; rules %v", rulesOfPass(ds))
			require.Equal(t, providerID, last.Status.ProviderID, "the recorded instance is kept")
			require.Equal(t, "Creating machine on cloud provider", lifecycle.Describe(&last.Status, machineName))
			require.Equal(t, lifecycle.StageNone, last.Status.Stage)
			require.True(t, last.Done(), "the pass ends: rules %v", rulesOfPass(ds))
			require.LessOrEqual(t, drv.calls[driverapi.MethodGetStatus], 1, "the provider is asked once: rules %v", rulesOfPass(ds))
			require.Zero(t, drv.calls[driverapi.MethodCreate], "never created again")
			if tt.wantInit {
				require.Equal(t, 1, drv.calls[driverapi.MethodInitialize], "initialized once")
			} else {
				require.Zero(t, drv.calls[driverapi.MethodInitialize], "not initialized")
			}
			require.Equal(t, nodeName, next.Object.NodeLabel, "the node label")
			for _, d := range ds {
				require.False(t, d.Anomalies.Has(lifecycle.AnomalyBadOutcome), "an outcome of its own decision refused (rule %s)", d.Rule)
			}
		})
	}
}

// An adopted creation whose instance exists never reaches its creation
// timeout while the provider answers: it is Pending within a pass, and
// waits for its node from there.
func TestAdoptedCreationNeverTimesOutWhileTheInstanceExists(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := adoptedCreating(phase.None, lastop.Operation{}, true)
	drv := &cooperative{lookup: driverapi.OK}
	for range 4 * 20 { // twenty minutes of passes every 15 s
		ds, next := adoptPass(t, cfg, in, drv)
		for _, d := range ds {
			require.NotEqual(t, phase.Failed.Label(), d.Status.Phase.Label(), "failed at %v: rules %v", in.Now.Sub(t0), rulesOfPass(ds))
		}
		in = next
		in.Node = healthyNode()
		in.Now = in.Now.Add(15 * time.Second)
	}
	require.Equal(t, phase.Running.Label(), in.Status.Phase.Label())
}

// B2: MCM writes the priority annotation (3, when empty) in its creation
// flow only. A machine past creation whose annotation is missing (removed
// by someone, or never written by another controller) keeps it missing; a
// machine being created gets it with its recorded instance.
func TestPriorityAnnotationOnlyInCreation(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	hasPriority := func(d lifecycle.Decision) bool {
		for _, e := range d.Effects.Slice() {
			if e.Kind == lifecycle.KindEnsurePriority {
				return true
			}
		}
		return false
	}
	for _, p := range []phase.Phase{phase.Pending, phase.Running, phase.Unknown, phase.Failed} {
		in := withIdentity(newInput(), p)
		in.Object.Priority = ""
		in.Node = healthyNode()
		in.Status.Conditions = in.Node.Conditions
		d := step(t, cfg, in)
		require.False(t, hasPriority(d), "%s: %s", p.Label(), d.String())
	}
	in := adoptedCreating(phase.None, lastop.Operation{}, true)
	in.Object.Priority = ""
	ds, _ := adoptPass(t, cfg, in, &cooperative{lookup: driverapi.OK})
	written := false
	for _, d := range ds {
		written = written || hasPriority(d)
	}
	require.True(t, written, "the creation flow writes it: rules %v", rulesOfPass(ds))
}

// An adopted machine found with no phase long after its creation, whose
// instance exists and whose node is healthy, is late, not failed: the
// creation timeout bounds the time to a healthy node, and the node is
// healthy. It moves on to Running.
func TestAdoptedCreationPastItsTimeoutWithAHealthyNodeRuns(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	for _, p := range []phase.Phase{phase.None, phase.CrashLoopBackOff} {
		in := adoptedCreating(p, lastop.Operation{}, true)
		in.Now = t0.Add(3 * time.Hour)
		in.Node = healthyNode()
		drv := &cooperative{lookup: driverapi.OK}
		var phases []string
		for range 3 {
			ds, next := adoptPass(t, cfg, in, drv)
			for _, d := range ds {
				phases = append(phases, d.Status.Phase.Label()+"/"+d.Rule.String())
				require.NotEqual(t, phase.Failed.Label(), d.Status.Phase.Label(), "%s: %v", p.Label(), phases)
			}
			in = next
			in.Now = in.Now.Add(ds[len(ds)-1].Requeue)
		}
		require.Equal(t, phase.Running.Label(), in.Status.Phase.Label(), "%s: %v", p.Label(), phases)
	}
}

// A machine found past creation whose status names its instance but no
// node (older MCM releases left Pending machines without their node label)
// records the node once it observes it carrying the instance's providerID,
// and writes the node label, as MCM's creation flow does (B2).
func TestNodeNameRecordedWhenTheNodeIsObserved(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	for _, p := range []phase.Phase{phase.Pending, phase.Running, phase.Unknown} {
		in := withIdentity(newInput(), p)
		in.Status.NodeName, in.Object.NodeLabel = "", ""
		in.Node = healthyNode()
		ds, next := adoptPass(t, cfg, in, &cooperative{lookup: driverapi.OK})
		last := ds[len(ds)-1]
		require.Equal(t, nodeName, last.Status.NodeName, "%s: rules %v", p.Label(), rulesOfPass(ds))
		require.Equal(t, nodeName, next.Object.NodeLabel, "%s: the node label is written", p.Label())
	}
	// A node that does not carry the instance's providerID is not proven
	// the machine's: its name is not recorded.
	in := withIdentity(newInput(), phase.Running)
	in.Status.NodeName, in.Object.NodeLabel = "", ""
	in.Node = healthyNode()
	in.Node.ProviderID = ""
	d := step(t, cfg, in)
	require.Empty(t, d.Status.NodeName)
}

// An Available machine (no target cluster) whose status and object name no
// instance looks it up and records it, as MCM's D9 sends a machine without
// spec.providerID through its creation flow; it is never created again.
func TestAvailableWithoutInstanceLooksItUp(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	cfg.NoTargetCluster = true
	in := withIdentity(newInput(), phase.Available)
	in.Status.ProviderID, in.Object.ProviderID, in.Status.NodeName, in.Object.NodeLabel = "", "", "", ""
	ds, _ := adoptPass(t, cfg, in, &cooperative{lookup: driverapi.OK})
	last := ds[len(ds)-1]
	require.Equal(t, providerID, last.Status.ProviderID, "rules %v", rulesOfPass(ds))
	require.Equal(t, phase.Available.Label(), last.Status.Phase.Label())
	drv := &cooperative{lookup: driverapi.NotFound}
	ds, _ = adoptPass(t, cfg, in, drv)
	require.Zero(t, drv.calls[driverapi.MethodCreate], "never created again: rules %v", rulesOfPass(ds))
	require.Equal(t, phase.Available.Label(), ds[len(ds)-1].Status.Phase.Label())
}

// A machine past creation without a recorded instance asks the provider at
// most every Long period; in between, health decides.
func TestLookupOfAMissingInstanceIsThrottled(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := runningInput()
	in.Status.ProviderID, in.Object.ProviderID, in.Node.ProviderID = "", "", ""
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleCreateLookup, d.Rule)
	d = step(t, cfg, then(in, d, notFound))
	require.Equal(t, lifecycle.RuleCreateInstanceMissing, d.Rule)
	in.Status, in.Outcome = d.Status, nil
	in.Now = in.Now.Add(time.Minute)
	require.NotEqual(t, driverapi.MethodGetStatus, step(t, cfg, in).Call.Method)
	in.Now = in.Now.Add(retry.Long)
	require.Equal(t, lifecycle.RuleCreateLookup, step(t, cfg, in).Rule)
}

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

// Deviations of the creation flow (create.go) from MCM. The rows:
// create_test.go; machines found in the middle of their creation:
// create_adopt_test.go.
//
// Each test here checks one deviation from MCM listed in
// doc/mcm-compat.md, by the behaviour that replaces MCM's.

// MCM issue 1110
// (https://github.com/gardener/machine-controller-manager/issues/1110): in MCM
// a machine with no phase, or in CrashLoopBackOff with a lookup that keeps
// failing undecodably, never times out.
func TestDeviationCreationTimeoutInEveryPreRunningPhase(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	for _, p := range []phase.Phase{phase.None, phase.CrashLoopBackOff} {
		in := newInput()
		in.Status.Phase = p
		in.Status.Stage = lifecycle.StageCreating
		in.Now = t0.Add(19 * time.Minute)
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleCreateLookup, d.Rule, "before the timeout the flow goes on")
		d = step(t, cfg, then(in, d, undecodable("proxy says no")))
		require.Equal(t, lifecycle.RuleCreateLookupUndecodable, d.Rule)

		in.Now = t0.Add(20*time.Minute + time.Second)
		d = step(t, cfg, in)
		require.Equal(t, lifecycle.RuleCreateTimeoutLookup, d.Rule, "a CreateMachine may have run: one last lookup")
		d = step(t, cfg, then(in, d, undecodable("proxy says no")))
		require.Equal(t, lifecycle.RuleCreateTimeout, d.Rule, p.Label())
		require.Equal(t, phase.Failed, d.Status.Phase, "whatever the lookup answered")
		require.Equal(t, driverapi.MethodNone, d.Call.Method, "no driver call once timed out")
	}
}

// A machine with no phase and no creation intent fails at once.
func TestCreationTimeoutWithoutIntentFailsAtOnce(t *testing.T) {
	in := newInput()
	in.Now = t0.Add(21 * time.Minute)
	d := step(t, lifecycle.DefaultConfig(), in)
	require.Equal(t, lifecycle.RuleCreateTimeout, d.Rule)
	require.Equal(t, phase.Failed, d.Status.Phase)
}

// The last lookup before the timeout records an instance a crashed
// CreateMachine made, so deletion deletes it by providerID, and the machine
// never becomes Running: it was never initialized.
func TestCreationTimeoutRecordsTheInstanceAndNeverRuns(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := newInput()
	in.Status.Stage = lifecycle.StageCreating
	in.Now = t0.Add(21 * time.Minute)
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleCreateTimeoutLookup, d.Rule)
	in = then(in, d, ok(providerID, nodeName))
	d = step(t, cfg, in)
	require.Equal(t, phase.Failed, d.Status.Phase)
	require.Equal(t, providerID, d.Status.ProviderID)
	require.Equal(t, lifecycle.StageCreating, d.Status.Stage, "initialization never succeeded")

	in.Status, in.Outcome = d.Status, nil
	in.Node = healthyNode()
	in.Node.Taints = lifecycle.InstanceNotReady
	d = step(t, cfg, in)
	require.Equal(t, phase.Failed, d.Status.Phase, "not Running without initialization")
	require.NotContains(t, d.Lines(), "remove-taint node-vm-1 "+lifecycle.TaintInstanceNotReady)

	in.Object.DeletionTime = in.Now
	d = step(t, cfg, in)
	require.Equal(t, lifecycle.RuleDeleteBegins, d.Rule)
	require.Equal(t, providerID, d.Status.ProviderID)
}

// Machines past creation are never timed out by the creation timeout, nor
// created again: a Running or Unknown machine older than the timeout,
// without a recorded providerID, adopts its instance and goes on with health.
func TestPastCreationNeverTimesOutOrCreates(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	for _, p := range []phase.Phase{phase.Running, phase.Unknown} {
		in := runningInput()
		in.Status.Phase = p
		in.Status.PhaseSince = lifecycle.StampOf(in.Now.Add(-time.Minute))
		in.Status.ProviderID, in.Object.ProviderID = "", ""
		if p == phase.Unknown {
			in.Node = notReadyNode()
			in.Status.Conditions = in.Node.Conditions
		}
		d := step(t, cfg, in)
		require.Equal(t, p, d.Status.Phase, p.Label())
		require.Equal(t, providerID, d.Status.ProviderID, "adopted from the node")

		in.Node.ProviderID = ""
		d = step(t, cfg, in)
		require.Equal(t, lifecycle.RuleCreateLookup, d.Rule)
		d = step(t, cfg, then(in, d, notFound))
		require.Equal(t, lifecycle.RuleCreateInstanceMissing, d.Rule)
		require.NotEqual(t, driverapi.MethodCreate, d.Call.Method)
		require.Equal(t, p, d.Status.Phase)
	}
}

// The per-machine creation timeout wins over the Config (as MCM's defaults in
// doc/mcm-rows.md say).
func TestCreationTimeoutOverride(t *testing.T) {
	in := newInput()
	in.Object.Overrides.CreationTimeout = 5 * time.Minute
	in.Now = t0.Add(6 * time.Minute)
	d := step(t, lifecycle.DefaultConfig(), in)
	require.Equal(t, lifecycle.RuleCreateTimeout, d.Rule)
	require.Equal(t, "Machine machine-1 failed to be created in 5m0s; creation timeout exceeded.", lifecycle.Describe(&d.Status, machineName))
}

// A crash right after CreateMachine (the intent was saved, the result never
// recorded) is recognised: the next pass looks the instance up on the same key
// and adopts it, never creating a second one.
func TestDeviationCrashAfterCreateNeverCreatesTwice(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := newInput()
	ds := run(t, cfg, in, notFound)
	create := ds[1]
	require.Equal(t, driverapi.MethodCreate, create.Call.Method)
	require.True(t, create.Changed, "the intent is saved before the call")
	require.Equal(t, lifecycle.StageCreating, create.Status.Stage)
	key := create.Call.IdempotencyKey()

	// The shell saved the status, called CreateMachine, and crashed.
	restart := in
	restart.Status = create.Status
	restart.Now = in.Now.Add(30 * time.Second)
	d := step(t, cfg, restart)
	require.Equal(t, driverapi.MethodGetStatus, d.Call.Method, "a new pass looks first")
	require.Equal(t, key, d.Call.IdempotencyKey(), "on the same key")

	// The provider has the instance: adopted and initialized, not created.
	d = step(t, cfg, then(restart, d, ok(providerID, nodeName)))
	require.Equal(t, lifecycle.RuleCreateAdopted, d.Rule)
	require.Equal(t, driverapi.MethodInitialize, d.Call.Method)

	// The provider has nothing yet: created again with the same key, which
	// an idempotent provider answers with the same instance.
	d2 := step(t, cfg, restart)
	d2 = step(t, cfg, then(restart, d2, notFound))
	require.Equal(t, driverapi.MethodCreate, d2.Call.Method)
	require.Equal(t, key, d2.Call.IdempotencyKey())
	require.False(t, d2.Changed, "the intent is already saved")
}

// MCM design problem d.14 (doc/mcm-rows.md): MCM re-initializes only when the
// provider reports Uninitialized; a provider that answers OK lets the machine
// go Pending without initialization. The explicit stage retries
// initialization.
func TestDeviationInitializationRetriedFromTheStage(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := newInput()
	ds := run(t, cfg, in, notFound, ok(providerID, nodeName), fail(driverapi.Internal, "eni not ready"))
	failed := ds[len(ds)-1]
	require.Equal(t, phase.CrashLoopBackOff, failed.Status.Phase)
	require.Equal(t, lifecycle.StageInitializing, failed.Status.Stage)

	next := lastInput(in, ds, notFound, ok(providerID, nodeName), fail(driverapi.Internal, "eni not ready"))
	next.Status = failed.Status
	next.Outcome = nil
	next.Now = in.Now.Add(retry.Short + time.Second)
	d := step(t, cfg, next)
	require.Equal(t, lifecycle.RuleCreateLookup, d.Rule)
	d = step(t, cfg, then(next, d, ok(providerID, nodeName)))
	require.Equal(t, driverapi.MethodInitialize, d.Call.Method, "initialized again although the lookup said OK")
	d = step(t, cfg, then(then(next, d, ok(providerID, nodeName)), d, driverapi.Result{}))
	require.Equal(t, phase.Pending, d.Status.Phase)
}

// A machine whose initialization has not succeeded never becomes Running, even
// when its node joined healthy: the startup taint keeps workload off until
// initialization is done. MCM's H3 makes such a CrashLoopBackOff machine
// Running.
func TestDeviationNoRunningBeforeInitialization(t *testing.T) {
	in := withIdentity(newInput(), phase.CrashLoopBackOff)
	in.Status.Stage = lifecycle.StageInitializing
	in.Node = healthyNode()
	in.Node.Taints = lifecycle.InstanceNotReady
	d := step(t, lifecycle.DefaultConfig(), in)
	require.Equal(t, phase.CrashLoopBackOff, d.Status.Phase)
	require.Equal(t, lifecycle.RuleCreateLookup, d.Rule)
}

// A5 in MCM calls DeleteMachine once and forgets the instance; when that
// call fails the VM leaks, and a later pass may even create another VM for
// the Failed machine. The lifecycle records the stale instance and retries
// its deletion until the provider confirms it, and never creates again.
func TestDeviationStaleInstanceDeletedUntilConfirmed(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := newInput()
	old := lifecycle.Node{Name: "old-node", ProviderID: "fake:///eu-1/vm-0"}
	ds := runCreated(t, cfg, in, old, notFound, ok(providerID, "old-node"), fail(driverapi.Unavailable, "busy"))
	d := ds[len(ds)-1]
	require.Equal(t, lifecycle.RuleCreateStaleNode, d.Rule)
	require.True(t, d.Status.Flags.Has(lifecycle.FlagStaleInstance))
	require.Equal(t, providerID, d.Status.ProviderID)
	require.Equal(t, retry.Short, d.Period)

	// An early reconcile waits for the retry time; a later one deletes again.
	later := in
	later.Status = d.Status
	later.Now = in.Now.Add(time.Second)
	require.Equal(t, driverapi.MethodNone, step(t, cfg, later).Call.Method)
	later.Now = in.Now.Add(retry.Short + time.Second)
	d = step(t, cfg, later)
	require.Equal(t, driverapi.MethodDelete, d.Call.Method)
	require.Equal(t, providerID, d.Call.Machine.ProviderID)
	d = step(t, cfg, then(later, d, driverapi.Result{}))
	require.Equal(t, lifecycle.RuleCreateStaleDeleted, d.Rule)
	require.Empty(t, d.Status.ProviderID)
	require.False(t, d.Status.Flags.Has(lifecycle.FlagStaleInstance))

	// The Failed machine waits for its owner; it never creates again.
	later.Status = d.Status
	later.Outcome = nil
	later.Now = later.Now.Add(time.Hour)
	d = step(t, cfg, later)
	require.Equal(t, lifecycle.RuleAwaitReplacement, d.Rule)
	require.Equal(t, driverapi.MethodNone, d.Call.Method)
}

// An instance that belongs to another incarnation of the machine (same name,
// another UID) is never adopted; it is deleted, and a fresh one is created
// under a new key.
func TestDeviationForeignIncarnationNeverAdopted(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := newInput()
	old := ok("fake:///eu-1/vm-old", "node-old")
	old.OwnerUID = "uid-0"
	ds := run(t, cfg, in, old)
	d := ds[1]
	require.Equal(t, lifecycle.RuleCreateForeignInstance, d.Rule)
	require.Equal(t, driverapi.MethodDelete, d.Call.Method)
	require.Equal(t, "fake:///eu-1/vm-old", d.Call.Machine.ProviderID)
	require.Empty(t, d.Status.ProviderID, "never recorded as this machine's")

	next := then(lastInput(in, ds, old), d, driverapi.Result{})
	d = step(t, cfg, next)
	require.Equal(t, lifecycle.RuleCreateForeignDeleted, d.Rule)
	require.Equal(t, driverapi.MethodGetStatus, d.Call.Method)
	require.Equal(t, "uid-1/1", d.Call.IdempotencyKey(), "a fresh key for the new instance")
	// The lookup's answer is taken: the new instance is created on the new key.
	d = step(t, cfg, then(next, d, notFound))
	require.Equal(t, lifecycle.RuleCreateVMNotFound, d.Rule)
	require.Zero(t, d.Anomalies, "no outcome discarded")
	require.Equal(t, "uid-1/1", d.Call.IdempotencyKey())
}

// An instance found by the providerID this machine recorded is its own,
// whatever owner UID the provider reports (a lagging owner metadata key); it
// is never deleted as another incarnation's.
func TestLaggingOwnerUIDIsNotAnotherIncarnation(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := withIdentity(newInput(), phase.CrashLoopBackOff)
	in.Status.Stage = lifecycle.StageInitializing
	d := step(t, cfg, in)
	require.Equal(t, providerID, d.Call.Machine.ProviderID, "looked up by the recorded providerID")
	lagging := ok(providerID, nodeName)
	lagging.OwnerUID = "uid-0"
	d = step(t, cfg, then(in, d, lagging))
	require.Equal(t, driverapi.MethodInitialize, d.Call.Method)
	require.NotEqual(t, lifecycle.RuleCreateForeignInstance, d.Rule)
}

// A create error after the creation timeout fails the machine with the
// provider's message (A2's getCreateFailurePhase).
func TestCreateErrorPastTheDeadlineIsFailed(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := newInput()
	in.Now = t0.Add(19*time.Minute + 59*time.Second)
	d := step(t, cfg, in)
	in = then(in, d, unimplemented)
	d = step(t, cfg, in)
	require.Equal(t, driverapi.MethodCreate, d.Call.Method, "Unimplemented lookup creates")
	in = then(in, d, fail(driverapi.ResourceExhausted, "quota exceeded"))
	in.Now = t0.Add(20*time.Minute + time.Second)
	d = step(t, cfg, in)
	require.Equal(t, lifecycle.RuleCreateResourceExhausted, d.Rule)
	require.Equal(t, phase.Failed, d.Status.Phase)
	require.Equal(t, "ResourceExhausted", d.Status.LastOp.ErrorCode)
	require.Equal(t, "Cloud provider message - machine codes error: code = [ResourceExhausted] message = [quota exceeded]",
		lifecycle.Describe(&d.Status, machineName))
}

// MCM issues 680 and 679
// (https://github.com/gardener/machine-controller-manager/issues/680,
// https://github.com/gardener/machine-controller-manager/issues/679): after an
// outage deadlines count from when the observer was healthy again, so the end
// of an outage fails nothing at once.
func TestDeviationDeadlinesCountFromObserverRecovery(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := newInput()
	in.Now = t0.Add(25 * time.Minute)
	in.Observer = lifecycle.Observer{Degraded: true, Since: t0.Add(5 * time.Minute)}
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleFrozen, d.Rule)
	require.Equal(t, phase.None, d.Status.Phase)

	in.Observer = lifecycle.Observer{Since: t0.Add(24 * time.Minute)}
	d = step(t, cfg, in)
	require.Equal(t, lifecycle.RuleCreateLookup, d.Rule, "not failed the moment the outage ends")

	in.Now = t0.Add(44*time.Minute + time.Second)
	require.Equal(t, lifecycle.RuleCreateTimeout, step(t, cfg, in).Rule)
}

// Jitter and backoff apply from the second consecutive failure; the first gets
// MCM's exact period. The retry time is in the status, so an early reconcile
// waits instead of hammering the provider.
func TestDeviationBackoffFromTheSecondFailure(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := newInput()
	ds := run(t, cfg, in, notFound, fail(driverapi.Unavailable, "busy"))
	first := ds[2]
	require.Equal(t, retry.Short, first.Requeue, "first failure: MCM's exact period")
	require.Equal(t, uint8(1), first.Status.Failures.Create)

	in.Status = first.Status
	in.Outcome = nil
	in.Now = in.Now.Add(2 * time.Second)
	early := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleCreateBackoff, early.Rule)
	require.Equal(t, 3*time.Second, early.Requeue)
	require.True(t, early.Done())

	in.Now = in.Now.Add(4 * time.Second)
	ds = run(t, cfg, in, notFound, fail(driverapi.Unavailable, "busy"))
	second := ds[2]
	require.Equal(t, retry.Short, second.Period)
	require.Equal(t, cfg.Retry.Backoff(retry.Short, 0, 2, machineUID), second.Requeue)
	require.Greater(t, second.Requeue, 2*retry.Short-time.Nanosecond)
}

// A Failed machine never asks CreateMachine (MCM would re-run creation for a
// Failed machine without providerID).
func TestFailedMachineNeverCreates(t *testing.T) {
	in := newInput()
	in.Status.Phase = phase.Failed
	d := step(t, lifecycle.DefaultConfig(), in)
	require.Equal(t, lifecycle.RuleAwaitReplacement, d.Rule)
	require.Equal(t, lifecycle.WaitReplacement, d.Wait.For)
}

// A new incarnation of a name waits while an older one is still
// terminating: its lookup by name would find the older incarnation's
// instance and delete it while the older machine's deletion may still be
// draining its node. The wait is bounded (by default by the drain
// timeout), no creation timeout passes during it, and the creation
// timeout counts from its end.
func TestNewIncarnationWaitsForItsPredecessor(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	waiting := func(now time.Duration) lifecycle.Input {
		in := newInput()
		in.Now = t0.Add(now)
		in.PredecessorTerminating = true
		return in
	}
	t.Run("no lookup while the predecessor terminates", func(t *testing.T) {
		d := step(t, cfg, waiting(time.Minute))
		require.Equal(t, driverapi.MethodNone, d.Call.Method, d.String())
		require.Equal(t, lifecycle.RuleCreateAwaitPredecessor, d.Rule)
		require.Equal(t, lifecycle.WaitPredecessor, d.Wait.For)
		require.Equal(t, lifecycle.StampOf(t0.Add(cfg.DrainTimeout)), d.Wait.Until)
		require.LessOrEqual(t, d.Requeue, cfg.WaitCheck)
	})
	t.Run("no creation timeout while waiting", func(t *testing.T) {
		in := waiting(time.Minute)
		d := step(t, cfg, in)
		in.Status, in.Now = d.Status, t0.Add(90*time.Minute)
		d = step(t, cfg, in)
		require.Equal(t, phase.None, d.Status.Phase, d.String())
		require.Equal(t, lifecycle.RuleCreateAwaitPredecessor, d.Rule)
	})
	t.Run("once it is gone, the lookup; the creation timeout counts from then", func(t *testing.T) {
		in := waiting(time.Minute)
		d := step(t, cfg, in)
		in.Status, in.Now = d.Status, t0.Add(time.Hour)
		in.PredecessorTerminating = false
		d = step(t, cfg, in)
		require.Equal(t, driverapi.MethodGetStatus, d.Call.Method, d.String())
		in.Status, in.Outcome = d.Status, nil
		in.Now = t0.Add(time.Hour + 19*time.Minute)
		d = step(t, cfg, in)
		require.Equal(t, phase.None, d.Status.Phase, "the creation timeout counts from the end of the wait")
		in.Now = t0.Add(time.Hour + cfg.CreationTimeout)
		d = step(t, cfg, in)
		require.Equal(t, phase.Failed, d.Status.Phase, d.String())
	})
	t.Run("the wait is bounded", func(t *testing.T) {
		bounded := cfg
		bounded.PredecessorWait = 90 * time.Minute
		for _, c := range []lifecycle.Config{cfg, bounded} {
			wait := c.PredecessorWait
			if wait == 0 {
				wait = c.DrainTimeout
			}
			in := waiting(time.Minute)
			d := step(t, c, in)
			require.Equal(t, lifecycle.RuleCreateAwaitPredecessor, d.Rule)
			in.Status, in.Now = d.Status, t0.Add(wait)
			d = step(t, c, in)
			require.Equal(t, driverapi.MethodGetStatus, d.Call.Method, "at %v: %s", wait, d.String())
		}
	})
	t.Run("a machine whose instance is recorded does not wait", func(t *testing.T) {
		in := adoptedCreating(phase.None, lastop.Operation{}, true)
		in.PredecessorTerminating = true
		d := step(t, cfg, in)
		require.Equal(t, driverapi.MethodGetStatus, d.Call.Method, d.String())
	})
}

// MCM makes (or renews) the bootstrap token at the start of every creation
// pass, before its lookup, so a pass whose lookup fails or finds the
// instance leaves a token made for nothing. The lifecycle ensures the token
// in the decision that asks CreateMachine, right before the call.
func TestDeviationTokenOnlyForCreateMachine(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := newInput()
	lookup := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleCreateLookup, lookup.Rule)
	for _, l := range lookup.Lines() {
		require.NotContains(t, l, "bootstrap-token", "no token for the lookup")
	}
	// A lookup that fails or finds the instance makes none.
	for _, r := range []driverapi.Result{fail(driverapi.Internal, "boom"), undecodable("proxy says no"), ok(providerID, nodeName)} {
		d := step(t, cfg, then(in, lookup, r))
		for _, l := range d.Lines() {
			require.NotContains(t, l, "bootstrap-token", "no token after %s", d.Rule)
		}
	}
	// NotFound: the token comes right before CreateMachine.
	d := step(t, cfg, then(in, lookup, notFound))
	lines := d.Lines()
	require.Equal(t, lifecycle.RuleCreateVMNotFound, d.Rule)
	require.GreaterOrEqual(t, len(lines), 2)
	require.Contains(t, lines[len(lines)-2], "ensure-bootstrap-token machine-1")
	require.Contains(t, lines[len(lines)-1], "call CreateMachine")
}

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

// updatingInput is a healthy Running machine at generation 1 whose spec
// asks generation 2.
func updatingInput() lifecycle.Input {
	in := runningInput()
	in.Object.UpdateGeneration = 2
	in.Status.AppliedGeneration = 1
	return in
}

const updateCall = "call UpdateMachine machine-1 providerID=fake:///eu-1/vm-1 uid=uid-1 generation=2"

// TestHotUpdateOutcomes has one case per outcome code of UpdateMachine
// (0..17 and undecodable): OK applies; Unimplemented and FailedPrecondition
// mark the machine as needing replacement; transient codes retry Short,
// ResourceExhausted its configured period, any other code Medium; the phase
// never becomes Failed.
func TestHotUpdateOutcomes(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	first := step(t, cfg, updatingInput())
	require.Equal(t, lifecycle.RuleUpdate, first.Rule)
	require.Equal(t, []string{updateCall}, first.Lines())

	type outcome struct {
		rule   lifecycle.Rule
		period time.Duration
		op     lastop.Desc
		state  lastop.State
	}
	wantFor := func(r driverapi.Result) outcome {
		c := r.Code
		switch {
		case r.Undecodable:
			return outcome{lifecycle.RuleUpdateFailed, retry.Medium, lastop.DescHotUpdateFailed, lastop.StateFailed}
		case c == driverapi.OK:
			return outcome{lifecycle.RuleUpdateApplied, retry.Long, lastop.DescHotUpdateApplied, lastop.StateSuccessful}
		case c == driverapi.Unimplemented, c == driverapi.FailedPrecondition:
			return outcome{lifecycle.RuleUpdateNeedsReplacement, retry.Long, lastop.DescNeedsReplacement, lastop.StateFailed}
		case c.Transient():
			return outcome{lifecycle.RuleUpdateFailed, retry.Short, lastop.DescHotUpdateFailed, lastop.StateFailed}
		case c == driverapi.ResourceExhausted:
			return outcome{lifecycle.RuleUpdateFailed, retry.Long, lastop.DescHotUpdateFailed, lastop.StateFailed}
		}
		return outcome{lifecycle.RuleUpdateFailed, retry.Medium, lastop.DescHotUpdateFailed, lastop.StateFailed}
	}
	results := map[string]driverapi.Result{"undecodable": undecodable("connection reset")}
	for _, c := range driverapi.Codes() {
		r := driverapi.Result{}
		if c != driverapi.OK {
			r = fail(c, "update refused")
		}
		results[c.String()] = r
	}
	for name, r := range results {
		t.Run(name, func(t *testing.T) {
			in := updatingInput()
			d := step(t, cfg, then(in, first, r))
			want := wantFor(r)
			require.Equal(t, want.rule, d.Rule)
			require.Equal(t, want.period, d.Period)
			require.Equal(t, phase.Running, d.Status.Phase, "a hot update never fails the machine")
			require.Equal(t, lastop.TypeUpdate, d.Status.LastOp.Type)
			require.Equal(t, want.state, d.Status.LastOp.State)
			require.Equal(t, want.op, d.Status.LastOp.Desc)
			switch want.rule {
			case lifecycle.RuleUpdateApplied:
				require.Equal(t, int64(2), d.Status.AppliedGeneration)
				require.Equal(t, "Machine machine-1 hot update applied", lifecycle.Describe(&d.Status, machineName))
				require.Equal(t, []string{"event Normal HotUpdateApplied (update.applied)"}, d.Lines())
			case lifecycle.RuleUpdateNeedsReplacement:
				require.True(t, d.Status.Flags.Has(lifecycle.FlagNeedsReplacement))
				require.Equal(t, int64(2), d.Status.RejectedGeneration)
				require.Equal(t, int64(1), d.Status.AppliedGeneration)
				require.Equal(t, r.Code.String(), d.Status.LastOp.ErrorCode)
				require.Equal(t, "Machine machine-1 cannot be updated in place: machine codes error: code = ["+r.Code.String()+
					"] message = [update refused]. Needs replacement", lifecycle.Describe(&d.Status, machineName))
				// No update is asked again while the spec asks that generation.
				next := in
				next.Status, next.Outcome = d.Status, nil
				next.Now = next.Now.Add(time.Hour)
				next.Status.MetadataObserved = lifecycle.StampOf(next.Now)
				require.Equal(t, driverapi.MethodNone, step(t, cfg, next).Call.Method)
			default:
				require.Equal(t, int64(1), d.Status.AppliedGeneration)
				require.Equal(t, "Hot update failed due to - "+r.ErrorText()+". Will retry", lifecycle.Describe(&d.Status, machineName))
				// An early reconcile does not ask again; a later one does.
				next := in
				next.Status, next.Outcome = d.Status, nil
				next.Now = next.Now.Add(time.Second)
				require.Equal(t, driverapi.MethodNone, step(t, cfg, next).Call.Method)
				next.Now = in.Now.Add(d.Requeue + time.Second)
				require.Equal(t, driverapi.MethodUpdate, step(t, cfg, next).Call.Method)
			}
		})
	}
}

// A machine needing replacement becomes updatable again when its spec asks
// another generation, and clean when it asks the applied one.
func TestNeedsReplacementClearsWhenTheSpecMoves(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := updatingInput()
	in.Status.Flags |= lifecycle.FlagNeedsReplacement
	in.Status.RejectedGeneration = 2
	in.Object.UpdateGeneration = 3
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleUpdate, d.Rule)
	require.False(t, d.Status.Flags.Has(lifecycle.FlagNeedsReplacement))

	in.Object.UpdateGeneration = 1
	d = step(t, cfg, in)
	require.False(t, d.Status.Flags.Has(lifecycle.FlagNeedsReplacement))
	require.Equal(t, driverapi.MethodNone, d.Call.Method)
}

// A hot update in flight when deletion starts is abandoned: its outcome
// leads to the deletion, never to Failed or another update.
func TestHotUpdateAbandonedByDeletion(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := updatingInput()
	d := step(t, cfg, in)
	in = then(in, d, fail(driverapi.Unavailable, "busy"))
	in.Object.DeletionTime = in.Now
	d = step(t, cfg, in)
	require.Equal(t, lifecycle.RuleDeleteBegins, d.Rule)
	require.Equal(t, phase.Terminating, d.Status.Phase)
}

// New instances are created at the desired generation, with the desired
// metadata, and record that generation as applied.
func TestCreatedAtTheDesiredGeneration(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := newInput()
	in.Object.UpdateGeneration = 5
	in.Object.Metadata = map[string]string{"team": "a"}
	ds := run(t, cfg, in, notFound)
	require.Equal(t, "call CreateMachine machine-1 uid=uid-1 key=uid-1/0 generation=5 set team=a", ds[1].Lines()[1])
	require.Equal(t, int64(5), ds[1].Status.AppliedGeneration)
	// A retry on the same key asks the generation of the intent, even when
	// the spec moved meanwhile (an idempotent provider answers with the
	// first instance; the hot update follows once it runs).
	retryIn := in
	retryIn.Status = ds[1].Status
	retryIn.Object.UpdateGeneration = 6
	ds2 := run(t, cfg, retryIn, notFound)
	require.Equal(t, driverapi.MethodCreate, ds2[1].Call.Method)
	require.Equal(t, int64(5), ds2[1].Call.Generation)
	require.Equal(t, int64(5), ds2[1].Status.AppliedGeneration)
}

// Health runs first: a Running machine whose node turned unhealthy becomes
// Unknown and asks no hot update.
func TestHotUpdateAfterHealth(t *testing.T) {
	in := updatingInput()
	in.Node = notReadyNode()
	d := step(t, lifecycle.DefaultConfig(), in)
	require.Equal(t, phase.Unknown, d.Status.Phase)
	require.NotEqual(t, driverapi.MethodUpdate, d.Call.Method)
}

// metadataInput is a healthy Running machine whose spec asks two keys,
// last observed carrying only one of them and an old owner UID.
func metadataInput() lifecycle.Input {
	in := runningInput()
	in.Object.Metadata = map[string]string{"team": "a", "pool": "web"}
	in.Status.Metadata = map[string]string{"team": "a", "old": "x"}
	return in
}

const patchCall = "call UpdateMetadata machine-1 providerID=fake:///eu-1/vm-1 uid=uid-1 set pool=web remove old"

// TestMetadataPatchOutcomes has one case per outcome code of the metadata
// patch: whatever it answers, the machine is not in sync until an
// observation shows every key. OK asks GetMachineStatus at once; an error
// counts a failure and asks it after backoff.
func TestMetadataPatchOutcomes(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	first := step(t, cfg, metadataInput())
	require.Equal(t, lifecycle.RuleMetadataPatch, first.Rule)
	require.Equal(t, []string{patchCall}, first.Lines())
	require.Equal(t, "Machine machine-1 instance metadata differs from desired: old, pool. Patching",
		lifecycle.Describe(&first.Status, machineName))

	results := map[string]driverapi.Result{"undecodable": undecodable("EOF")}
	for _, c := range driverapi.Codes() {
		r := driverapi.Result{}
		if c != driverapi.OK {
			r = fail(c, "patch refused")
		}
		results[c.String()] = r
	}
	for name, r := range results {
		t.Run(name, func(t *testing.T) {
			in := metadataInput()
			d := step(t, cfg, then(in, first, r))
			require.NotEqual(t, lastop.DescMetadataSynced, d.Status.LastOp.Desc, "never in sync on the patch's word")
			if r.OK() {
				require.Equal(t, lifecycle.RuleMetadataPatched, d.Rule)
				require.Equal(t, []string{"call GetMachineStatus machine-1 providerID=fake:///eu-1/vm-1 uid=uid-1 key=uid-1/0"}, d.Lines())
				return
			}
			require.Equal(t, lifecycle.RuleMetadataPatchFailed, d.Rule)
			require.Equal(t, uint8(1), d.Status.Failures.Metadata)
			require.Empty(t, d.Lines(), "asked again after backoff")
			require.Equal(t, retry.Short, d.Requeue)
		})
	}
}

// TestMetadataObservationOutcomes: what GetMachineStatus reports after a
// patch decides between in sync, a dropped key patched again after backoff,
// and a provider that could not say.
func TestMetadataObservationOutcomes(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := metadataInput()
	patch := step(t, cfg, in)
	in = then(in, patch, driverapi.Result{})
	observe := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleMetadataPatched, observe.Rule)
	report := func(meta map[string]string, owner string) driverapi.Result {
		r := ok(providerID, nodeName)
		r.Metadata, r.OwnerUID = meta, owner
		return r
	}
	cases := []struct {
		name  string
		r     driverapi.Result
		rule  lifecycle.Rule
		calls []string
	}{
		{"every key: in sync", report(map[string]string{"team": "a", "pool": "web", "provider-tag": "p"}, machineUID),
			lifecycle.RuleMetadataSynced, nil},
		{"a key dropped: patched again after backoff", report(map[string]string{"team": "a", "old": "x"}, machineUID),
			lifecycle.RuleMetadataDiffers, nil},
		{"the owner UID lags: repaired", report(map[string]string{"team": "a", "pool": "web"}, "uid-0"),
			lifecycle.RuleMetadataDiffers, nil},
		{"the provider cannot say", fail(driverapi.Unavailable, "busy"), lifecycle.RuleMetadataObserveFailed, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := step(t, cfg, then(in, observe, tc.r))
			require.Equal(t, tc.rule, d.Rule)
			require.Equal(t, phase.Running, d.Status.Phase)
			if tc.rule == lifecycle.RuleMetadataSynced {
				require.Equal(t, lastop.DescMetadataSynced, d.Status.LastOp.Desc)
				require.Equal(t, map[string]string{"team": "a", "pool": "web"}, d.Status.Metadata, "only managed keys are kept")
				require.Zero(t, d.Status.Failures.Metadata)
				return
			}
			require.Equal(t, uint8(1), d.Status.Failures.Metadata)
			require.Equal(t, driverapi.MethodNone, d.Call.Method, "backoff before the next patch")
			// After the backoff the next pass patches what still differs.
			next := in
			next.Status, next.Outcome = d.Status, nil
			next.Now = in.Now.Add(retry.Short + time.Second)
			nd := step(t, cfg, next)
			if tc.rule == lifecycle.RuleMetadataObserveFailed {
				require.Equal(t, lifecycle.RuleMetadataObserve, nd.Rule)
				return
			}
			require.Equal(t, lifecycle.RuleMetadataPatch, nd.Rule)
		})
	}
}

// A Running machine's observation is refreshed at least every Long period,
// and a machine in sync asks nothing in between.
func TestMetadataObservedEveryLongPeriod(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := runningInput()
	in.Status.MetadataObserved = lifecycle.StampOf(in.Now.Add(-retry.Long + time.Second))
	require.Equal(t, lifecycle.RuleHealthy, step(t, cfg, in).Rule)
	in.Status.MetadataObserved = lifecycle.StampOf(in.Now.Add(-retry.Long))
	require.Equal(t, lifecycle.RuleMetadataObserve, step(t, cfg, in).Rule)
}

// Providers that cannot report owners turn VerifyOwner off: the owner UID
// is then not compared.
func TestVerifyOwnerOff(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	cfg.VerifyOwner = false
	in := runningInput()
	in.Status.OwnerUID = ""
	require.Equal(t, lifecycle.RuleHealthy, step(t, cfg, in).Rule)
	cfg.VerifyOwner = true
	require.Equal(t, lifecycle.RuleMetadataPatch, step(t, cfg, in).Rule)
}

// Regression (found by TestPropertyMetadataNeverInSyncWhileAKeyDiffers): an
// observation and a patch in the same pass share one Now; after a crash
// right after the patch, a desired set that happens to equal the old
// observation must not read as in sync. The patch marks the status
// unverified until the next observation.
func TestMetadataUnverifiedAfterAPatchInTheSamePass(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := runningInput()
	in.Object.Metadata = map[string]string{"pool": "a"}
	in.Status.MetadataObserved = 0
	d := step(t, cfg, in) // observe
	r := ok(providerID, nodeName)
	r.Metadata, r.OwnerUID = map[string]string{"pool": "c"}, machineUID
	d = step(t, cfg, then(in, d, r)) // observed pool=c, patch pool=a at the same Now
	require.Equal(t, lifecycle.RuleMetadataDiffers, d.Rule)
	require.Equal(t, driverapi.MethodUpdateMetadata, d.Call.Method)
	// The shell crashed after the patch; the spec now asks pool=c.
	in.Status, in.Outcome = d.Status, nil
	in.Object.Metadata = map[string]string{"pool": "c"}
	m := lifecycle.MemberOf(&cfg, &in)
	require.False(t, m.MetadataInSync, "the instance may carry pool=a now")
	require.Equal(t, lifecycle.RuleMetadataObserve, step(t, cfg, in).Rule)
}

// A key a patch set, whose outcome was lost (a crash after UpdateMetadata
// answered OK), then dropped from the desired metadata before anything
// observed it: the instance carries it, so the machine is not in sync and
// the next patch removes it. The patch recorded the key as managed when it
// was asked; before, the observation looked only at the desired keys and
// those seen before, and reported the machine in sync forever.
func TestKeyDroppedWhileItsPatchIsUnverified(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := runningInput()
	in.Object.Metadata = map[string]string{"team": "a", "pool": "b"}
	in.Status.Metadata = map[string]string{"team": "a"}
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleMetadataPatch, d.OpID.Rule())
	// Saved, the patch runs, the controller crashes before the outcome.
	in.Status, in.Outcome = d.Status, nil
	in.Object.Metadata = map[string]string{"team": "a"} // pool leaves the desired set
	d = step(t, cfg, in)
	require.Equal(t, lifecycle.RuleMetadataObserve, d.OpID.Rule(), d.String())
	// The instance carries pool=b, which the lost patch set.
	r := driverapi.Result{Method: driverapi.MethodGetStatus, ProviderID: providerID, NodeName: nodeName,
		OwnerUID: machineUID, Metadata: map[string]string{"team": "a", "pool": "b"}}
	in = then(in, d, r)
	d = step(t, cfg, in)
	require.Equal(t, lifecycle.RuleMetadataDiffers, d.Rule, d.String())
	m := lifecycle.MemberOf(&cfg, &lifecycle.Input{Object: in.Object, Status: d.Status})
	require.False(t, m.MetadataInSync, "the instance carries a key no longer desired")
	// After the patch's backoff, the key is removed.
	in.Status, in.Outcome, in.Now = d.Status, nil, in.Now.Add(time.Hour)
	d = step(t, cfg, in)
	for d.OpID.Rule() == lifecycle.RuleMetadataObserve {
		d = step(t, cfg, then(in, d, r))
	}
	require.Equal(t, lifecycle.RuleMetadataPatch, d.OpID.Rule(), d.String())
	require.Equal(t, []string{"pool"}, d.Call.Remove)
}

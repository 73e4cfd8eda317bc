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

// Tests of the instance metadata flow (metadata.go): the patch, the
// observation that verifies it, and their outcomes.

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

// With nothing to keep on the instance (no key desired, none managed, and
// owners not verified) a Running machine asks the provider nothing, never
// observed or long ago: an observation could change nothing. MCM asks a
// Running machine's provider nothing either.
func TestNothingToKeepAsksNothing(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	cfg.VerifyOwner = false
	in := runningInput()
	in.Status.OwnerUID = ""
	for _, seen := range []lifecycle.Stamp{0, lifecycle.StampOf(in.Now.Add(-2 * retry.Long))} {
		in.Status.MetadataObserved = seen
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleHealthy, d.Rule)
		require.Empty(t, d.Lines())
		require.True(t, lifecycle.MemberOf(&cfg, &in).MetadataInSync())
	}
	// A key desired, a key managed, or owners verified: observed.
	in.Object.Metadata = map[string]string{"team": "a"}
	require.Equal(t, lifecycle.RuleMetadataObserve, step(t, cfg, in).Rule)
	in.Object.Metadata, in.Status.Metadata = nil, map[string]string{"team": "a"}
	require.Equal(t, lifecycle.RuleMetadataObserve, step(t, cfg, in).Rule)
	in.Status.Metadata = nil
	cfg.VerifyOwner = true
	require.Equal(t, lifecycle.RuleMetadataObserve, step(t, cfg, in).Rule)
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
	require.False(t, m.MetadataInSync(), "the instance may carry pool=a now")
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
	require.False(t, m.MetadataInSync(), "the instance carries a key no longer desired")
	// After the patch's backoff, the key is removed.
	in.Status, in.Outcome, in.Now = d.Status, nil, in.Now.Add(time.Hour)
	d = step(t, cfg, in)
	for d.OpID.Rule() == lifecycle.RuleMetadataObserve {
		d = step(t, cfg, then(in, d, r))
	}
	require.Equal(t, lifecycle.RuleMetadataPatch, d.OpID.Rule(), d.String())
	require.Equal(t, []string{"pool"}, d.Call.Remove)
}

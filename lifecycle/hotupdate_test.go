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

// Tests of the hot update flow (hotupdate.go): UpdateMachine's outcomes, a
// machine needing replacement, and how the update meets health and
// deletion. A creation at the desired generation: create_test.go.

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

// Health runs first: a Running machine whose node turned unhealthy becomes
// Unknown and asks no hot update.
func TestHotUpdateAfterHealth(t *testing.T) {
	in := updatingInput()
	in.Node = notReadyNode()
	d := step(t, lifecycle.DefaultConfig(), in)
	require.Equal(t, phase.Unknown, d.Status.Phase)
	require.NotEqual(t, driverapi.MethodUpdate, d.Call.Method)
}

// A decision's requeue is the earliest wake-up any of its parts asks for:
// a failed update that waits for its retry time while the metadata is
// observed asks to be stepped at the retry time, which the observation's
// Short period does not push back.
func TestHotUpdateRetryTimeHoldsTheRequeueWhileMetadataGoesOn(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := updatingInput()
	in.Status.Failures.Update = 1
	in.Status.RetryAfter = lifecycle.StampOf(in.Now.Add(400 * time.Millisecond))
	in.Status.MetadataObserved = lifecycle.StampOf(in.Now.Add(-2 * retry.Long))
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleMetadataObserve, d.Rule)
	require.Equal(t, driverapi.MethodGetStatus, d.Call.Method)
	require.Equal(t, 400*time.Millisecond, d.Requeue)
}

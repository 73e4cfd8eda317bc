package lifecycle_test

import (
	"time"

	"testing"

	"pgregory.net/rapid"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
	"github.com/purelifecycle/machine/phase"
)

// earliestDeadline is, written out independently of the lifecycle, the
// earliest deadline after Now that the machine of in waits for once
// decision d is made: its creation timeout (no phase, CrashLoopBackOff,
// Pending) and the end of its wait for an older incarnation, its health
// timeout (Unknown, InPlaceUpdateFailed, unless
// disabled), or, at the drain, the drain timeout and the time a node
// NotReady or with a read-only filesystem forces the drain. Timeouts count
// from the observer's recovery at the earliest, and none fires while the
// observer is degraded, nor while the shell reports a problem with the
// machine or its class (fixing it is an event of its own). 0 when there
// is none.
func earliestDeadline(cfg *lifecycle.Config, in *lifecycle.Input, d *lifecycle.Decision) lifecycle.Stamp {
	if in.Observer.Degraded || in.Problem != lifecycle.ProblemNone {
		return 0
	}
	o, st, now := &in.Object, &d.Status, lifecycle.StampOf(in.Now)
	base := func(s lifecycle.Stamp) lifecycle.Stamp {
		if r := lifecycle.StampOf(in.Observer.Since); r > s {
			return r
		}
		return s
	}
	var at lifecycle.Stamp
	consider := func(s lifecycle.Stamp) {
		if s > now && (at == 0 || s < at) {
			at = s
		}
	}
	orCfg := func(v, c time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return c
	}
	if !o.DeletionTime.IsZero() {
		if !o.Finalizer {
			return 0 // nothing moves without the finalizer (X2)
		}
		const drained = lifecycle.FlagDrainSucceeded | lifecycle.FlagDrainForced | lifecycle.FlagDrainSkipped
		if st.Stage == lifecycle.StageDrain && st.Flags&drained == 0 && !o.ForceDeletion {
			consider(lifecycle.StampOf(o.DeletionTime).Add(orCfg(o.Overrides.DrainTimeout, cfg.DrainTimeout)))
			for _, c := range st.Conditions {
				if c.Since != 0 && (c.Type == lifecycle.ConditionReady && c.Status != lifecycle.ConditionTrue ||
					c.Type == "ReadonlyFilesystem" && c.Status != lifecycle.ConditionFalse) {
					consider(c.Since.Add(cfg.ForceDrainAfter))
				}
			}
		}
		return at
	}
	switch st.Phase {
	case phase.None, phase.CrashLoopBackOff, phase.Pending:
		if !o.CreationTime.IsZero() {
			// From the creation time, or from the end of a wait for an
			// older incarnation of the name.
			start := max(lifecycle.StampOf(o.CreationTime), st.CreationFrom)
			consider(base(start).Add(orCfg(o.Overrides.CreationTimeout, cfg.CreationTimeout)))
			if in.PredecessorTerminating && st.Phase != phase.Pending && st.Stage == lifecycle.StageNone &&
				st.ProviderID == "" && o.ProviderID == "" {
				// A machine that names no instance and has no creation
				// stage waits for an older incarnation of its name.
				consider(lifecycle.StampOf(o.CreationTime).Add(orCfg(cfg.PredecessorWait, orCfg(o.Overrides.DrainTimeout, cfg.DrainTimeout))))
			}
		}
	case phase.Unknown, phase.InPlaceUpdateFailed:
		if !o.Overrides.DisableHealthTimeout && st.PhaseSince != 0 {
			consider(base(st.PhaseSince).Add(orCfg(o.Overrides.HealthTimeout, cfg.HealthTimeout)))
		}
	}
	return at
}

// A deadline is never overshot by a requeue: every decision requeues no
// later than the earliest deadline the machine waits for.
func TestPropertyNoRequeueOvershootsADeadline(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := lifecycletest.Configs().Draw(t, "config")
		in := lifecycletest.Inputs(cfg).Draw(t, "input")
		d := lifecycle.Step(cfg, in)
		if d.Rule == lifecycle.RuleNoMachine || d.Rule == lifecycle.RuleDeleteDone || d.Rule == lifecycle.RuleInvalidStatus {
			return
		}
		at := earliestDeadline(&cfg, &in, &d)
		if at == 0 {
			return
		}
		if left := at.Sub(lifecycle.StampOf(in.Now)); d.Requeue > left {
			t.Fatalf("requeue %v overshoots the deadline %v ahead (rule %s)\n%s", d.Requeue, left, d.Rule, d.String())
		}
	})
}

// A clock that jumps delays no deadline by more than the time the steps
// of the jumped clock governed: a machine whose node turns NotReady is
// marked Failed (granted, the provider confirming) no later than its true
// health timeout plus, for every pass whose clock was off, the time until
// the next pass. A pass's clock may be off either way by up to six hours.
// The node turning NotReady is a watch event: a pass comes then.
func TestPropertyClockJumpsDelayDeadlinesBoundedly(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	rapid.Check(t, func(t *rapid.T) {
		in := runningInput()
		in.Grant.Fail = true
		trueNow := in.Now
		unhealthyAt := trueNow.Add(lifecycletest.Durations().Draw(t, "healthy for"))
		var jumped time.Duration // the time passes of a jumped clock governed
		for range 1000 {
			if !trueNow.Before(unhealthyAt) {
				in.Node = notReadyNode()
			}
			off := time.Duration(0)
			if rapid.IntRange(0, 3).Draw(t, "jump") == 0 {
				off = time.Duration(rapid.Int64Range(-int64(6*time.Hour), int64(6*time.Hour)).Draw(t, "offset"))
			}
			in.Now = trueNow.Add(off)
			r, _ := inputPass{answer: func(driverapi.Call) driverapi.Result { return ok(providerID, nodeName) }}.run(t, cfg, &in)
			if in.Status.Phase == phase.Failed {
				if limit := unhealthyAt.Add(cfg.HealthTimeout + jumped); trueNow.After(limit) {
					t.Fatalf("Failed at %v, after the health timeout at %v plus %v of jumped passes",
						trueNow.Sub(t0), unhealthyAt.Add(cfg.HealthTimeout).Sub(t0), jumped)
				}
				return
			}
			next := trueNow.Add(r.Requeue)
			if trueNow.Before(unhealthyAt) && next.After(unhealthyAt) {
				next = unhealthyAt
			}
			if off != 0 {
				jumped += next.Sub(trueNow)
			}
			trueNow = next
		}
		t.Fatalf("never Failed; phase %s", in.Status.Phase.Label())
	})
}

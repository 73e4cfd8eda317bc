package lifecycle_test

import (
	"time"

	"testing"

	"pgregory.net/rapid"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
	"github.com/purelifecycle/machine/phase"
)

// earliestDeadline is, written out independently of the lifecycle, the
// earliest deadline after Now that the machine of in waits for once
// decision d is made: its creation timeout (no phase, CrashLoopBackOff,
// Pending), its health timeout (Unknown, InPlaceUpdateFailed, unless
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
			consider(base(lifecycle.StampOf(o.CreationTime)).Add(orCfg(o.Overrides.CreationTimeout, cfg.CreationTimeout)))
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

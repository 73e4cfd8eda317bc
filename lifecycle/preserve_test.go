package lifecycle_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// Tests of preservation (preserve.go): one case per line P1-P8 of MCM's
// preservation table (doc/mcm-rows.md), then how preservation meets
// failure, recovery, its expiry, the limiter and deletion.

// preservedCondition is the node's Preserved condition with status s and
// reason.
func preservedCondition(s lifecycle.ConditionStatus, reason, msg string) lifecycle.Condition {
	return lifecycle.Condition{Type: lifecycle.ConditionPreserved, Status: s, Reason: reason, Message: msg}
}

// preservedRunning is a Running machine preserved since an hour (its
// expiry 95 hours ahead), its node showing it, the machine annotated p.
func preservedRunning(p lifecycle.Preserve) lifecycle.Input {
	in := runningInput()
	in.Object.Preserve = p
	in.Status.PreserveUntil = lifecycle.StampOf(in.Now.Add(95 * time.Hour))
	in.Node.ScaleDownDisabled = true
	in.Node.Conditions = append(cloneConds(in.Node.Conditions), preservedCondition(lifecycle.ConditionTrue,
		lifecycle.ReasonPreservedByUser, "Machine preserved until "+in.Status.PreserveUntil.Time().UTC().String()+"."))
	in.Status.Conditions = in.Node.Conditions
	return in
}

// failedInput is a machine Failed an hour ago on its node, NotReady for a
// minute, pods on it.
func failedInput(p lifecycle.Preserve) lifecycle.Input {
	in := unknownInput()
	in.Node.Conditions = cloneConds(in.Node.Conditions)
	in.Node.Conditions[0].Since = lifecycle.StampOf(in.Now.Add(-time.Minute))
	in.Status.Conditions = in.Node.Conditions
	in.Object.Preserve = p
	in.Status.Phase = phase.Failed
	in.Status.PhaseSince = lifecycle.StampOf(in.Now.Add(-time.Hour))
	in.Status.LastOp = lastop.Operation{Type: lastop.TypeHealthCheck, State: lastop.StateFailed, Desc: lastop.DescHealthConfirmed}
	in.Node.Pods = 2
	return in
}

// stepPass steps in as one pass: each decision's effects done and a driver
// call answered by answer, until a decision has no effects (or 10 steps).
// It returns the decisions.
func stepPass(t *testing.T, cfg lifecycle.Config, in lifecycle.Input, answer driverapi.Result) []lifecycle.Decision {
	t.Helper()
	var ds []lifecycle.Decision
	for range 10 {
		d := step(t, cfg, in)
		ds = append(ds, d)
		if d.Effects.Len() == 0 {
			break
		}
		in = then(in, d, answer)
	}
	return ds
}

var (
	stopLines = []string{"event Normal PreservationStopped (preserve.stop)",
		"set-node-condition node-vm-1 Preserved=False reason=Preservation stopped.",
		"remove-node-annotation node-vm-1 " + lifecycle.ScaleDownDisabledAnnotation,
		"remove-node-annotation node-vm-1 " + lifecycle.ScaleDownDisabledByAnnotation}
	beginPreserve = "event Normal MachinePreserved (preserve.begin)"
	annotateNode  = []string{"annotate-node node-vm-1 " + lifecycle.ScaleDownDisabledByAnnotation + "=true",
		"annotate-node node-vm-1 " + lifecycle.ScaleDownDisabledAnnotation + "=true"}
	// ownCordon and giveBack are the preservation's cordon, marked as the
	// lifecycle's, and its uncordon, which takes the mark off.
	ownCordon = "cordon node-vm-1 marking " + lifecycle.CordonMarkAnnotation
	giveBack  = "uncordon node-vm-1 unmarking " + lifecycle.CordonMarkAnnotation
)

// TestPreserveRows has one case per line of MCM's preservation table.
func TestPreserveRows(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	expire := func(in lifecycle.Input) lifecycle.Input {
		in.Status.PreserveUntil = lifecycle.StampOf(in.Now)
		return in
	}
	cases := []struct {
		name   string
		in     lifecycle.Input
		rule   lifecycle.Rule
		lines  []string
		until  bool // still preserved after the decision
		phase  phase.Phase
		inStep func(t *testing.T, d lifecycle.Decision)
	}{
		{name: "P1 false on a preserved machine: stopped, the node given back",
			in: preservedRunning(lifecycle.PreserveFalse), rule: lifecycle.RulePreserveStop, lines: stopLines},
		{name: "P1 no annotation left on a preserved machine: stopped",
			in: preservedRunning(lifecycle.PreserveUnset), rule: lifecycle.RulePreserveStop, lines: stopLines},
		{name: "P2 when-failed, expired: the annotation removed first",
			in: expire(failedInput(lifecycle.PreserveWhenFailed)), rule: lifecycle.RulePreserveEnd, until: true,
			lines: []string{"remove-annotation " + lifecycle.PreserveAnnotation}},
		{name: "P3 when-failed on a Running machine preserved before: stopped",
			in: preservedRunning(lifecycle.PreserveWhenFailed), rule: lifecycle.RulePreserveStop, lines: stopLines},
		{name: "P4 when-failed on a Failed machine: preserved, its node cordoned and drained",
			in: failedInput(lifecycle.PreserveWhenFailed), rule: lifecycle.RulePreserve, until: true,
			lines: []string{beginPreserve, ownCordon, "drain node-vm-1"},
			inStep: func(t *testing.T, d lifecycle.Decision) {
				require.Equal(t, lifecycle.StagePreserveDrain, d.Status.Stage)
				require.Equal(t, lifecycle.RulePreserveDrain, d.OpID.Rule(), "the op is the drain's")
				require.Equal(t, lifecycle.WaitDrain, d.Wait.For)
			}},
		{name: "P5 now, expired: the annotation removed first",
			in: expire(preservedRunning(lifecycle.PreserveNow)), rule: lifecycle.RulePreserveEnd, until: true,
			lines: []string{"remove-annotation " + lifecycle.PreserveAnnotation}},
		{name: "P6 now on a Running machine: preserved, the node kept from the autoscaler",
			in:   func() lifecycle.Input { in := runningInput(); in.Object.Preserve = lifecycle.PreserveNow; return in }(),
			rule: lifecycle.RulePreserve, until: true,
			lines: append(append([]string{beginPreserve}, annotateNode...),
				"set-node-condition node-vm-1 Preserved=True reason=Preserved by user.")},
		{name: "P7 auto-preserved on a machine that recovered: the annotation removed",
			in: preservedRunning(lifecycle.PreserveAutoPreserved), rule: lifecycle.RulePreserveEnd, until: true,
			lines: []string{"remove-annotation " + lifecycle.PreserveAnnotation}},
		{name: "P8 auto-preserved on a Failed machine drained before: preserved by MCM",
			in: func() lifecycle.Input {
				in := failedInput(lifecycle.PreserveAutoPreserved)
				in.Node.Pods, in.Node.Unschedulable = 0, true
				in.Status.Flags = lifecycle.FlagPreserveDrained
				return in
			}(),
			rule: lifecycle.RulePreserve, until: true,
			lines: append(append([]string{beginPreserve}, annotateNode...),
				"set-node-condition node-vm-1 Preserved=True reason=Preserved by MCM.")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := step(t, cfg, tc.in)
			require.Equal(t, tc.rule.String(), d.Rule.String())
			require.Equal(t, tc.lines, d.Lines())
			require.Equal(t, tc.until, d.Status.PreserveUntil != 0, "preserved after the decision")
			require.Equal(t, tc.in.Status.Phase, d.Status.Phase, "preservation never changes the phase")
			if tc.inStep != nil {
				tc.inStep(t, d)
			}
		})
	}
}

// The Preserved condition's message names the expiry, and, for a Failed
// machine, that its node was drained.
func TestPreservedConditionMessage(t *testing.T) {
	in := failedInput(lifecycle.PreserveWhenFailed)
	in.Node.Pods, in.Node.Unschedulable = 0, true
	in.Status.Flags = lifecycle.FlagPreserveDrained
	in.Status.PreserveUntil = lifecycle.StampOf(time.Date(2026, 11, 5, 10, 0, 0, 0, time.UTC))
	d := step(t, lifecycle.DefaultConfig(), in)
	last := d.Effects.At(d.Effects.Len() - 1)
	require.Equal(t, "Preserved node drained successfully. Machine preserved until 2026-11-05 10:00:00 +0000 UTC.", last.Message)
}

// Which annotation decides: the node's over the machine's once the node
// carried one; an invalid node value decides nothing.
func TestPreserveAnnotationPrecedence(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	t.Run("the node says false, the machine now: stopped", func(t *testing.T) {
		in := preservedRunning(lifecycle.PreserveNow)
		in.Node.Preserve = lifecycle.PreserveFalse
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RulePreserveStop, d.Rule)
		require.True(t, d.Status.Flags.Has(lifecycle.FlagPreserveByNode))
	})
	t.Run("the node's annotation removed after it decided: stopped, though the machine says now", func(t *testing.T) {
		in := preservedRunning(lifecycle.PreserveNow)
		in.Status.Flags = lifecycle.FlagPreserveByNode
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RulePreserveStop, d.Rule)
		require.Zero(t, d.Status.PreserveUntil)
		require.False(t, d.Status.Flags.Has(lifecycle.FlagPreserveByNode))
	})
	t.Run("an invalid node value: nothing decided", func(t *testing.T) {
		in := preservedRunning(lifecycle.PreserveFalse)
		in.Node.Preserve = lifecycle.PreserveInvalid
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleHealthy, d.Rule)
		require.Equal(t, in.Status.PreserveUntil, d.Status.PreserveUntil)
	})
	t.Run("an invalid machine value counts as none", func(t *testing.T) {
		in := runningInput()
		in.Object.Preserve = lifecycle.PreserveInvalid
		require.Equal(t, lifecycle.RuleHealthy, step(t, cfg, in).Rule)
	})
	t.Run("ParsePreserve", func(t *testing.T) {
		for text, want := range map[string]lifecycle.Preserve{"now": lifecycle.PreserveNow, "when-failed": lifecycle.PreserveWhenFailed,
			"auto-preserved": lifecycle.PreserveAutoPreserved, "false": lifecycle.PreserveFalse, "": lifecycle.PreserveInvalid,
			"yes": lifecycle.PreserveInvalid} {
			require.Equal(t, want, lifecycle.ParsePreserve(text, true), text)
			if want != lifecycle.PreserveInvalid {
				require.Equal(t, text, want.String())
			}
		}
		require.Equal(t, lifecycle.PreserveUnset, lifecycle.ParsePreserve("now", false))
	})
}

// Every change to Failed sets the expiry in the decision that makes the
// machine Failed, when its preservation is asked once Failed: the owner
// never sees it Failed without one. MCM sets it a reconcile later, and some
// of its paths to Failed clear it.
func TestEveryPathToFailedSetsTheExpiry(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	for _, p := range []lifecycle.Preserve{lifecycle.PreserveWhenFailed, lifecycle.PreserveNow} {
		t.Run("health timeout, "+p.String(), func(t *testing.T) {
			in := unknownInput()
			in.Object.Preserve = p
			in.Grant.Fail = true
			for _, d := range stepPass(t, cfg, in, driverapi.Result{ProviderID: providerID}) {
				if d.Status.Phase == phase.Failed {
					require.NotZero(t, d.Status.PreserveUntil, "Failed without the expiry")
					return
				}
			}
			t.Fatal("never Failed")
		})
	}
	t.Run("join timeout", func(t *testing.T) {
		in := withIdentity(newInput(), phase.Pending)
		in.Object.Preserve = lifecycle.PreserveWhenFailed
		in.Status.LastOp = lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateProcessing, Desc: lastop.DescCreating}
		in.Now = t0.Add(21 * time.Minute)
		d := step(t, cfg, in)
		require.Equal(t, phase.Failed, d.Status.Phase)
		require.Equal(t, lifecycle.StampOf(in.Now.Add(cfg.PreserveTimeout)), d.Status.PreserveUntil)
	})
	t.Run("creation timeout", func(t *testing.T) {
		in := newInput()
		in.Object.Preserve = lifecycle.PreserveAutoPreserved
		in.Now = t0.Add(21 * time.Minute)
		ds := run(t, cfg, in, fail(driverapi.Internal, "quota"))
		d := ds[len(ds)-1]
		require.Equal(t, phase.Failed, d.Status.Phase)
		require.NotZero(t, d.Status.PreserveUntil)
	})
	t.Run("not asked: no expiry", func(t *testing.T) {
		in := unknownInput()
		in.Grant.Fail = true
		d := step(t, cfg, in)
		d = step(t, cfg, then(in, d, driverapi.Result{ProviderID: providerID}))
		require.Zero(t, d.Status.PreserveUntil)
	})
}

// How preservation meets the other flows.
func TestPreserveInterplay(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	t.Run("a preserved Failed machine waits for its expiry, not for its replacement", func(t *testing.T) {
		in := failedInput(lifecycle.PreserveWhenFailed)
		in.Node.Pods, in.Node.Unschedulable = 0, true
		in.Status.Flags = lifecycle.FlagPreserveDrained
		in.Status.PreserveUntil = lifecycle.StampOf(in.Now.Add(3 * time.Minute))
		in.Node.ScaleDownDisabled = true
		in.Node.Conditions = append(cloneConds(in.Node.Conditions), preservedCondition(lifecycle.ConditionTrue,
			lifecycle.ReasonPreservedByUser, "Preserved node drained successfully. Machine preserved until "+
				in.Status.PreserveUntil.Time().UTC().String()+"."))
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RulePreserveKept, d.Rule)
		require.Equal(t, lifecycle.WaitPreserved, d.Wait.For)
		require.Equal(t, 3*time.Minute, d.Requeue, "looked at again at the expiry")
	})
	t.Run("past its expiry: the annotation goes, then preservation stops, then the machine awaits replacement", func(t *testing.T) {
		in := failedInput(lifecycle.PreserveWhenFailed)
		in.Node.Pods = 0
		in.Status.Flags = lifecycle.FlagPreserveDrained
		in.Status.PreserveUntil = lifecycle.StampOf(in.Now)
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RulePreserveEnd, d.Rule)
		in.Object.Preserve = lifecycle.PreserveUnset // the removal done
		d = step(t, cfg, in)
		require.Equal(t, lifecycle.RulePreserveStop, d.Rule)
		require.Zero(t, d.Status.PreserveUntil)
		require.Equal(t, lifecycle.WaitReplacement, d.Wait.For)
		in.Status = d.Status
		require.Equal(t, lifecycle.RuleAwaitReplacement, step(t, cfg, in).Rule)
	})
	t.Run("a preserved Failed machine whose node recovers: Running, the node uncordoned, preservation stopped", func(t *testing.T) {
		in := failedInput(lifecycle.PreserveWhenFailed)
		in.Node.Pods = 0
		in.Node.Unschedulable, in.Node.OwnCordon = true, true // the lifecycle's cordon
		in.Node.ScaleDownDisabled = true
		in.Status.Flags = lifecycle.FlagPreserveDrained | lifecycle.FlagPreserveCordonMarked
		in.Status.PreserveUntil = lifecycle.StampOf(in.Now.Add(time.Hour))
		in.Node.Conditions = healthyNode().Conditions
		ds := stepPass(t, cfg, in, driverapi.Result{})
		d := ds[len(ds)-1]
		require.Equal(t, phase.Running, d.Status.Phase, "the node is healthy again")
		require.Zero(t, d.Status.PreserveUntil, "stopped within the pass")
		var lines []string
		for _, d := range ds {
			lines = append(lines, d.Lines()...)
		}
		require.Contains(t, lines, giveBack, "the node given back with the join")
		require.True(t, d.Status.Flags.Has(lifecycle.FlagPreserveCordonMarked), "until the node shows it schedulable")
		in.Status, in.Outcome, in.Node.Unschedulable = d.Status, nil, false
		d = step(t, cfg, in)
		require.False(t, d.Status.Flags.Has(lifecycle.FlagPreserveCordonMarked))
	})
	t.Run("preserved with now, the node recovers: kept, uncordoned", func(t *testing.T) {
		in := preservedRunning(lifecycle.PreserveNow)
		in.Node.Unschedulable, in.Node.OwnCordon = true, true
		in.Status.Flags = lifecycle.FlagPreserveCordonMarked
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RulePreserveNode, d.Rule)
		require.Equal(t, []string{giveBack}, d.Lines())
		require.NotZero(t, d.Status.PreserveUntil)
	})
	t.Run("deletion clears the expiry", func(t *testing.T) {
		in := preservedRunning(lifecycle.PreserveNow)
		in.Object.DeletionTime = in.Now
		d := step(t, cfg, in)
		require.Equal(t, phase.Terminating, d.Status.Phase)
		require.Zero(t, d.Status.PreserveUntil)
	})
	t.Run("the drain of a preserved node: rounds, then drained, then its condition", func(t *testing.T) {
		in := failedInput(lifecycle.PreserveWhenFailed)
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RulePreserveDrain, d.OpID.Rule())
		in = then(in, d, driverapi.Result{})
		d = step(t, cfg, in)
		require.Equal(t, lifecycle.RulePreserveDraining, d.Rule)
		in.Status, in.Outcome = d.Status, nil
		in.Node.Pods, in.Node.Unschedulable = 0, true
		in.Now = in.Now.Add(time.Minute)
		d = step(t, cfg, in)
		require.Equal(t, lifecycle.RulePreserveDrained, d.Rule)
		require.True(t, d.Status.Flags.Has(lifecycle.FlagPreserveDrained))
		require.Equal(t, lifecycle.StageNone, d.Status.Stage)
		in.Status = d.Status
		d = step(t, cfg, in)
		require.Equal(t, lifecycle.RulePreserveNode, d.Rule)
		require.Equal(t, retry.Long, d.Period)
	})
	t.Run("a write of the preserved node's drain that fails: retried after a backoff, with its event", func(t *testing.T) {
		in := failedInput(lifecycle.PreserveWhenFailed)
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RulePreserveDrain, d.OpID.Rule())
		in.Status = d.Status
		in.Outcome = &lifecycle.Outcome{OpID: d.OpID, Ran: 1, Stopped: lifecycle.WriteFailed, Error: "cordon refused"}
		d = step(t, cfg, in)
		require.Equal(t, lifecycle.RulePreserveDrainFailed, d.Rule)
		require.Contains(t, d.Lines(), "event Warning DrainFailed (preserve.drain-failed)")
		require.Equal(t, lifecycle.WaitRetry, d.Wait.For)
	})
	t.Run("the limiter does not count a preserved Failed machine as a replacement in flight", func(t *testing.T) {
		now := t0.Add(time.Hour)
		failed := failedInput(lifecycle.PreserveWhenFailed)
		failed.Status.PreserveUntil = lifecycle.StampOf(now.Add(time.Hour))
		unknown := unknownInput()
		unknown.Object.Name, unknown.Object.UID = "machine-2", "uid-2"
		unknown.Status.PhaseSince = lifecycle.StampOf(now.Add(-time.Hour))
		fleet := []lifecycle.Member{lifecycle.MemberOf(&cfg, &failed), lifecycle.MemberOf(&cfg, &unknown)}
		grants := lifecycle.Limit(nil, &cfg, now, lifecycle.Observer{}, fleet)
		require.True(t, grants[1].Fail, "a preserved machine blocked its owner's replacements")
		failed.Status.PreserveUntil = 0
		fleet[0] = lifecycle.MemberOf(&cfg, &failed)
		grants = lifecycle.Limit(nil, &cfg, now, lifecycle.Observer{}, fleet)
		require.False(t, grants[1].Fail, "an unpreserved Failed machine is in flight")
	})
}

// Auto-preservation: Limit keeps at most Config.AutoPreserve of an owner's
// Failed machines preserved, sticking to those it preserved, the newest
// failures first; the step preserves a machine granted, stops when the
// grant goes, and does not begin again after its expiry.
func TestAutoPreservation(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	cfg.AutoPreserve = 1
	now := t0.Add(10 * time.Hour)
	failedSince := func(name string, ago time.Duration) lifecycle.Input {
		in := failedInput(lifecycle.PreserveUnset)
		in.Object.Name, in.Object.UID = name, "uid-"+name
		in.Now = now
		in.Status.PhaseSince = lifecycle.StampOf(now.Add(-ago))
		return in
	}
	member := func(in lifecycle.Input) lifecycle.Member { return lifecycle.MemberOf(&cfg, &in) }
	grants := func(fleet ...lifecycle.Member) []bool {
		var out []bool
		for _, g := range lifecycle.Limit(nil, &cfg, now, lifecycle.Observer{}, fleet) {
			out = append(out, g.Preserve)
		}
		return out
	}
	old, young := failedSince("m-old", 2*time.Hour), failedSince("m-young", time.Hour)
	require.Equal(t, []bool{false, true}, grants(member(old), member(young)), "the newest failure first")

	kept := old
	kept.Status.Flags |= lifecycle.FlagAutoPreserved
	kept.Status.PreserveUntil = lifecycle.StampOf(now.Add(time.Hour))
	require.Equal(t, []bool{true, false}, grants(member(kept), member(young)), "a preserved machine keeps its grant")

	named := young
	named.Object.Preserve = lifecycle.PreserveFalse
	require.Equal(t, []bool{true, false}, grants(member(old), member(named)), "an annotated machine is not auto-preserved")

	tooOld := failedSince("m-ancient", cfg.PreserveTimeout)
	require.Equal(t, []bool{false}, grants(member(tooOld)), "not after a preservation timeout")

	cfg.AutoPreserve = 0
	require.Equal(t, []bool{false, false}, grants(member(old), member(young)), "off")
	cfg.AutoPreserve = 1

	// The step.
	in := young
	in.Node.Pods, in.Node.Unschedulable = 0, true
	in.Status.Flags = lifecycle.FlagPreserveDrained
	in.Grant.Preserve = true
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RulePreserve, d.Rule)
	require.True(t, d.Status.Flags.Has(lifecycle.FlagAutoPreserved))
	require.Contains(t, d.Lines(), "set-node-condition node-vm-1 Preserved=True reason=Preserved by MCM.")
	in.Status = d.Status
	in.Grant.Preserve = false
	d = step(t, cfg, in)
	require.Equal(t, lifecycle.RulePreserveStop, d.Rule, "the grant taken back")
	require.Zero(t, d.Status.PreserveUntil)
	require.True(t, d.Status.Flags.Has(lifecycle.FlagAutoPreserved), "kept for the spell of Failed")
	in.Status = d.Status
	in.Grant.Preserve = true // granted again within the spell (or a step whose clock went back)
	d = step(t, cfg, in)
	require.Zero(t, d.Status.PreserveUntil, "one spell of Failed is auto-preserved once")

	expired := tooOld
	expired.Grant.Preserve = true // a grant computed before the expiry
	d = step(t, cfg, expired)
	require.Zero(t, d.Status.PreserveUntil, "an expired auto-preservation does not begin again")
}

// Preservation from the states the fleet simulator found it in.
func TestPreserveFromEveryState(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	t.Run("the node cordoned for a preservation that stopped within a pass is given back at the next", func(t *testing.T) {
		in := runningInput()
		in.Status.Flags = lifecycle.FlagPreserveCordonMarked
		in.Node.Unschedulable, in.Node.OwnCordon = true, true
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RulePreserveNode, d.Rule)
		require.Equal(t, []string{giveBack}, d.Lines())
		in.Status, in.Node.Unschedulable = d.Status, false
		require.False(t, step(t, cfg, in).Status.Flags.Has(lifecycle.FlagPreserveCordonMarked))
	})
	t.Run("a cordon an earlier version made, without the mark, is given back once the machine recovers", func(t *testing.T) {
		in := failedInput(lifecycle.PreserveWhenFailed)
		in.Status.PreserveUntil = lifecycle.StampOf(in.Now.Add(time.Hour))
		in.Status.Flags = lifecycle.FlagPreserveDrained | lifecycle.FlagPreserveCordoned // as it saved them
		in.Node.Pods, in.Node.Unschedulable = 0, true                                    // its cordon carries no mark
		in.Node.Conditions = healthyNode().Conditions
		var lines []string
		for _, d := range stepPass(t, cfg, in, driverapi.Result{}) {
			lines = append(lines, d.Lines()...)
		}
		require.Contains(t, lines, giveBack)
	})
	t.Run("a node not proven the instance's (another incarnation's) is not drained nor marked", func(t *testing.T) {
		in := failedInput(lifecycle.PreserveWhenFailed)
		in.Node.ProviderID = ""
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.StageNone, d.Status.Stage)
		require.NotZero(t, d.Status.PreserveUntil, "the machine is preserved, its node left alone")
		for _, l := range d.Lines() {
			require.NotContains(t, l, "node-vm-1")
		}
	})
}

// What the model check found in preservation, each from a state the
// lifecycle may be handed: a drain cut off by a recovery, a cordon that
// was not the lifecycle's, a drain recorded for a node that no longer
// shows it, an invalid node annotation after the expiry, and the fleet's
// grant behind a preservation another annotation began.
func TestPreserveFoundByTheModelCheck(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	drainLines := func(d lifecycle.Decision) (cordon, drain bool) {
		for _, l := range d.Lines() {
			cordon = cordon || l == ownCordon
			drain = drain || len(l) > 5 && l[:5] == "drain"
		}
		return cordon, drain
	}
	t.Run("a machine that recovers during the preservation's drain gets its node uncordoned", func(t *testing.T) {
		in := failedInput(lifecycle.PreserveWhenFailed)
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.StagePreserveDrain, d.Status.Stage)
		require.True(t, d.Status.Flags.Has(lifecycle.FlagPreserveCordonMarked), "the lifecycle cordons a schedulable node")
		require.False(t, d.Status.Flags.Has(lifecycle.FlagPreserveDrained), "not drained yet")
		// The preservation taken back while its drain is under way, the
		// node Ready again: the machine recovers.
		in.Status, in.Node.Unschedulable, in.Node.OwnCordon, in.Object.Preserve = d.Status, true, true, lifecycle.PreserveUnset
		in.Node.Conditions = healthyNode().Conditions
		lines := []string{}
		for _, d := range stepPass(t, cfg, in, driverapi.Result{}) {
			lines = append(lines, d.Lines()...)
		}
		require.Contains(t, lines, giveBack, "the drain cut off by the recovery gives its cordon back")
	})
	t.Run("an administrator's cordon found before the preservation's drain stays", func(t *testing.T) {
		in := failedInput(lifecycle.PreserveWhenFailed)
		in.Node.Unschedulable = true
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.StagePreserveDrain, d.Status.Stage)
		require.Zero(t, d.Status.Flags&(lifecycle.FlagPreserveCordoned|lifecycle.FlagPreserveCordonMarked), "the cordon is not the lifecycle's")
		in.Status, in.Node.Pods = d.Status, 0
		in.Status.Flags |= lifecycle.FlagPreserveDrained
		in.Status.Stage = lifecycle.StageNone
		in.Node.Conditions = healthyNode().Conditions
		for _, d := range stepPass(t, cfg, in, driverapi.Result{}) {
			require.NotContains(t, d.Lines(), "uncordon node-vm-1", d.Rule.String())
		}
	})
	t.Run("an administrator's cordon made after the lifecycle's own was lost stays", func(t *testing.T) {
		// The model check's path: the preservation's drain begins on a
		// schedulable node; the cordon's write fails and its outcome is
		// lost to a restart; the preservation is taken back and an
		// administrator cordons the node; the machine recovers.
		in := failedInput(lifecycle.PreserveNow)
		d := step(t, cfg, in)
		require.Contains(t, d.Lines(), ownCordon)
		require.True(t, d.Status.Flags.Has(lifecycle.FlagPreserveCordonMarked))
		in.Status, in.Object.Preserve = d.Status, lifecycle.PreserveFalse
		in.Node.Unschedulable = true // the administrator's: no mark
		in.Node.Conditions = healthyNode().Conditions
		ds := stepPass(t, cfg, in, driverapi.Result{})
		for _, d := range ds {
			require.NotContains(t, strings.Join(d.Lines(), "\n"), "uncordon", d.Rule.String())
		}
		last := ds[len(ds)-1]
		require.Equal(t, phase.Running, last.Status.Phase)
		require.Zero(t, last.Status.Flags&(lifecycle.FlagPreserveCordoned|lifecycle.FlagPreserveCordonMarked),
			"the cordon is not the lifecycle's to give back")
	})
	t.Run("an administrator's cordon made after the lifecycle's own was lost stays after the drain it served", func(t *testing.T) {
		in := failedInput(lifecycle.PreserveWhenFailed)
		d := step(t, cfg, in)
		require.Contains(t, d.Lines(), ownCordon)
		// The cordon lost; the administrator's since; the drain goes on
		// under it and ends; the node marked; then the machine recovers.
		in.Status, in.Node.Unschedulable, in.Node.Pods = d.Status, true, 0
		ds := stepPass(t, cfg, in, driverapi.Result{})
		require.NotContains(t, ds[0].Lines(), ownCordon, "the node is cordoned already")
		in.Status = ds[len(ds)-1].Status
		require.True(t, in.Status.Flags.Has(lifecycle.FlagPreserveDrained), "%s", ds[len(ds)-1].Rule)
		in.Node.Conditions = append(cloneConds(healthyNode().Conditions), preservedCondition(lifecycle.ConditionTrue,
			lifecycle.ReasonPreservedByUser, "Preserved node drained successfully. Machine preserved until "+
				in.Status.PreserveUntil.Time().UTC().String()+"."))
		for _, d := range stepPass(t, cfg, in, driverapi.Result{}) {
			require.NotContains(t, strings.Join(d.Lines(), "\n"), "uncordon", d.Rule.String())
		}
	})
	t.Run("MCM's cordon of a preserved node taken over is given back once the machine recovers", func(t *testing.T) {
		in := failedInput(lifecycle.PreserveUnset) // its annotation removed, the node Ready again
		until := lifecycle.StampOf(in.Now.Add(time.Hour))
		in.Status.PreserveUntil = until
		in.Node.Pods, in.Node.Unschedulable, in.Node.ScaleDownDisabled = 0, true, true
		in.Node.Conditions = append(cloneConds(healthyNode().Conditions), preservedCondition(lifecycle.ConditionTrue,
			lifecycle.ReasonPreservedByUser, "Preserved node drained successfully. Machine preserved until "+
				until.Time().UTC().String()+"."))
		lines := []string{}
		for _, d := range stepPass(t, cfg, in, driverapi.Result{}) {
			lines = append(lines, d.Lines()...)
		}
		require.Contains(t, lines, giveBack)
	})
	t.Run("a node made anew with workloads is drained again before it is marked", func(t *testing.T) {
		in := failedInput(lifecycle.PreserveWhenFailed)
		in.Status.PreserveUntil = lifecycle.StampOf(in.Now.Add(time.Hour))
		in.Status.Flags = lifecycle.FlagPreserveDrained | lifecycle.FlagPreserveCordoned
		d := step(t, cfg, in) // schedulable, pods on it
		require.Equal(t, lifecycle.StagePreserveDrain, d.Status.Stage)
		cordon, drain := drainLines(d)
		require.True(t, cordon && drain, "%v", d.Lines())
		for _, l := range d.Lines() {
			require.NotContains(t, l, "Preserved=True")
		}
	})
	t.Run("an invalid node annotation ends a preservation past its expiry and gives back what it left", func(t *testing.T) {
		in := preservedRunning(lifecycle.PreserveUnset)
		in.Node.Preserve = lifecycle.PreserveInvalid
		d := step(t, cfg, in)
		require.Equal(t, in.Status.PreserveUntil, d.Status.PreserveUntil, "decides nothing before the expiry")
		in.Now = in.Status.PreserveUntil.Time().Add(time.Minute)
		d = step(t, cfg, in)
		require.Equal(t, lifecycle.RulePreserveStop, d.Rule)
		require.Zero(t, d.Status.PreserveUntil)
		require.Subset(t, d.Lines(), stopLines[1:])
		// The expiry saved, the node's writes lost: given back at the next.
		in.Status = d.Status
		d = step(t, cfg, in)
		require.Equal(t, lifecycle.RulePreserveNode, d.Rule)
		require.Subset(t, d.Lines(), stopLines[1:])
	})
	t.Run("a preservation the fleet's grant keeps is auto-preserved once its annotation goes", func(t *testing.T) {
		in := failedInput(lifecycle.PreserveNow)
		in.Status.PreserveUntil = lifecycle.StampOf(in.Now.Add(time.Hour))
		in.Object.Preserve = lifecycle.PreserveUnset
		in.Grant.Preserve = true
		d := step(t, cfg, in)
		require.Equal(t, in.Status.PreserveUntil, d.Status.PreserveUntil, "kept by the grant")
		require.True(t, d.Status.Flags.Has(lifecycle.FlagAutoPreserved))
		in.Status = d.Status
		require.Equal(t, in.Status.PreserveUntil, step(t, cfg, in).Status.PreserveUntil, "and at the next step")
	})
	t.Run("a machine becoming Failed with the fleet's grant is auto-preserved", func(t *testing.T) {
		in := unknownInput()
		in.Grant.Preserve, in.Grant.Fail = true, true
		in.Now = in.Status.PhaseSince.Time().Add(cfg.HealthTimeout + time.Minute)
		var d lifecycle.Decision
		for range 5 {
			d = step(t, cfg, in)
			if d.Status.Phase == phase.Failed {
				break
			}
			in = then(in, d, driverapi.Result{})
		}
		require.Equal(t, phase.Failed, d.Status.Phase)
		require.NotZero(t, d.Status.PreserveUntil)
		require.True(t, d.Status.Flags.Has(lifecycle.FlagAutoPreserved))
	})
	t.Run("an invalid machine annotation with the fleet's grant keeps its auto-preservation", func(t *testing.T) {
		in := failedInput(lifecycle.PreserveInvalid)
		in.Grant.Preserve = true
		d := step(t, cfg, in)
		require.NotZero(t, d.Status.PreserveUntil)
		require.True(t, d.Status.Flags.Has(lifecycle.FlagAutoPreserved))
		in.Status = d.Status
		require.Equal(t, d.Status.PreserveUntil, step(t, cfg, in).Status.PreserveUntil)
	})
}

// Property: whatever the fleet, Limit grants at most Config.AutoPreserve
// preservations per owner, only to Failed machines not being deleted that
// no annotation names or that it preserved already.
func TestPropertyAutoPreserveWithinTheMaximum(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := lifecycle.DefaultConfig()
		cfg.AutoPreserve = rapid.IntRange(0, 3).Draw(rt, "max")
		now := t0.Add(100 * time.Hour)
		n := rapid.IntRange(0, 12).Draw(rt, "machines")
		fleet := make([]lifecycle.Member, n)
		owners := make([]string, n)
		for i := range n {
			in := failedInput(lifecycle.PreserveUnset)
			in.Now = now
			in.Object.Name = "m-" + string(rune('a'+i))
			in.Object.UID = "uid-" + in.Object.Name
			in.Object.Owner = rapid.SampledFrom([]string{"ms-1", "ms-2"}).Draw(rt, "owner")
			owners[i] = in.Object.Owner
			in.Status.Phase = rapid.SampledFrom([]phase.Phase{phase.Failed, phase.Failed, phase.Unknown, phase.Running}).Draw(rt, "phase")
			in.Status.PhaseSince = lifecycle.StampOf(now.Add(-time.Duration(rapid.IntRange(0, 120).Draw(rt, "age")) * time.Hour))
			in.Object.Preserve = rapid.SampledFrom([]lifecycle.Preserve{lifecycle.PreserveUnset, lifecycle.PreserveUnset,
				lifecycle.PreserveFalse, lifecycle.PreserveWhenFailed}).Draw(rt, "annotation")
			if rapid.Bool().Draw(rt, "preserved") {
				in.Status.PreserveUntil = lifecycle.StampOf(now.Add(time.Duration(rapid.IntRange(-5, 5).Draw(rt, "left")) * time.Hour))
				if rapid.Bool().Draw(rt, "auto") {
					in.Status.Flags |= lifecycle.FlagAutoPreserved
				}
			}
			if rapid.IntRange(0, 9).Draw(rt, "deleting") == 0 {
				in.Object.DeletionTime = now
			}
			fleet[i] = lifecycle.MemberOf(&cfg, &in)
		}
		perOwner := map[string]int{}
		for i, g := range lifecycle.Limit(nil, &cfg, now, lifecycle.Observer{}, fleet) {
			if g.Preserve {
				perOwner[owners[i]]++
			}
		}
		for owner, k := range perOwner {
			if k > cfg.AutoPreserve {
				rt.Fatalf("owner %s: %d preservations granted, at most %d", owner, k, cfg.AutoPreserve)
			}
		}
	})
}

package machines

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/events"

	"github.com/purelifecycle/machine/kubeshell"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// Every rule's event the reconciler records itself has the lifecycle's
// type: Warning for the rules whose machines need attention.
func TestRuleEventsTakeTheLifecyclesType(t *testing.T) {
	for _, r := range lifecycle.Rules() {
		if r.Event() == "" {
			continue
		}
		want := "Normal"
		if r.Warning() {
			want = "Warning"
		}
		require.Equal(t, want, eventType(r), "rule %s", r)
	}
	require.Equal(t, "Normal", eventType(lifecycle.RuleCreateCreated))
	require.Equal(t, "Warning", eventType(lifecycle.RuleDeleteDrainFailed))
}

// The lifecycle emits the event of every decision that changes the status
// under a rule that declares one; the reconciler records the event of a
// decision that changes nothing (a problem that persists), at most once
// per machine and interval, and never one the lifecycle emitted.
func TestRuleEventsOfUnchangedDecisionsAreRecordedOncePerInterval(t *testing.T) {
	metrics, _ := newTestMetrics(t)
	rec := events.NewFakeRecorder(100)
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	r := &Reconciler{recorder: rec, metrics: metrics, now: func() time.Time { return now }}
	p := newTestPass()

	// A decision that changes the status is told by its own event effect
	// (the lifecycle's), or not at all: nothing is recorded for it here.
	created := &lifecycle.Decision{Rule: lifecycle.RuleCreateCreated, Changed: true,
		Status: lifecycle.Status{LastOp: lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateProcessing, Desc: lastop.DescCreating}}}
	r.decided(p, 0, created)
	r.decided(p, 1, &lifecycle.Decision{Rule: lifecycle.RuleDeleteDrainFailed, Changed: true})
	require.Empty(t, recorded(rec), "a changed decision's event is the lifecycle's to emit")

	// The lifecycle's decision for a machine whose class is unavailable
	// changes nothing and carries no event, pass after pass: reported once
	// per interval, and again for another machine.
	problem := classUnavailableDecision(t)
	r.decided(newTestPass(), 0, &problem)
	r.decided(newTestPass(), 0, &problem)
	evs := recorded(rec)
	require.Equal(t, []string{"Warning ClassUnavailable"}, reasons(evs))
	require.Contains(t, evs[0], "The machine class or its secret is unavailable.")
	other := newTestPass()
	other.m.UID = "uid-2"
	r.decided(other, 0, &problem)
	require.Equal(t, []string{"Warning ClassUnavailable"}, reasons(recorded(rec)))
	now = now.Add(repeatInterval)
	r.decided(newTestPass(), 0, &problem)
	require.Equal(t, []string{"Warning ClassUnavailable"}, reasons(recorded(rec)))

	// A decision with the event effect is reported once, by carrying it
	// out.
	joined := joinedDecision(t)
	r.decided(p, 2, &joined)
	require.Empty(t, recorded(rec))
	i := slices.IndexFunc(joined.Effects.Slice(), func(e lifecycle.Effect) bool { return e.Kind == lifecycle.KindEvent })
	r.event(p, &joined.Status, joined.Effects.At(i))
	require.Equal(t, []string{"Normal MachineRunning"}, reasons(recorded(rec)))

	// Rules without a reason record nothing.
	r.decided(p, 3, &lifecycle.Decision{Rule: lifecycle.RuleHealthy})
	require.Empty(t, recorded(rec))
}

// classUnavailableDecision returns the lifecycle's decision for a Running
// machine whose class is unavailable: it changes nothing and carries no
// event effect.
func classUnavailableDecision(t *testing.T) lifecycle.Decision {
	t.Helper()
	in := joinedDecision(t).Status
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	d := lifecycle.Step(lifecycle.DefaultConfig(), lifecycle.Input{
		Now: t0.Add(10 * time.Minute),
		Object: lifecycle.Object{Name: "m", UID: "uid-1", CreationTime: t0, Finalizer: true, ProviderID: "fake:///vm-1",
			NodeLabel: "vm-1", Priority: lifecycle.DefaultPriority},
		Status:  in,
		Problem: lifecycle.ProblemClassUnavailable,
	})
	require.Equal(t, lifecycle.RuleClassUnavailable, d.Rule)
	require.False(t, d.Changed)
	require.False(t, slices.ContainsFunc(d.Effects.Slice(), func(e lifecycle.Effect) bool { return e.Kind == lifecycle.KindEvent }))
	return d
}

// joinedDecision returns the lifecycle's decision for a Pending machine
// whose node joined healthy: Running, with its event effect.
func joinedDecision(t *testing.T) lifecycle.Decision {
	t.Helper()
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	in := lifecycle.Input{
		Now:    t0.Add(5 * time.Minute),
		Object: lifecycle.Object{Name: "m", UID: "uid-1", CreationTime: t0, Finalizer: true, ProviderID: "fake:///vm-1", NodeLabel: "vm-1", Priority: lifecycle.DefaultPriority},
		Status: lifecycle.Status{Phase: phase.Pending, PhaseSince: lifecycle.StampOf(t0), ProviderID: "fake:///vm-1", NodeName: "vm-1",
			LastOp: lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateProcessing, Desc: lastop.DescCreating}},
		Node: lifecycle.Node{Name: "vm-1", ProviderID: "fake:///vm-1", MachineName: "m",
			Conditions: []lifecycle.Condition{{Type: "Ready", Status: lifecycle.ConditionTrue, Since: lifecycle.StampOf(t0)}}},
	}
	d := lifecycle.Step(lifecycle.DefaultConfig(), in)
	require.Equal(t, lifecycle.RuleHealthJoined, d.Rule)
	require.True(t, d.Changed)
	return d
}

func TestEventNotesAreReadableAndBounded(t *testing.T) {
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{recorder: rec}
	p := newTestPass()
	st := lifecycle.Status{
		Phase:  phase.Unknown,
		LastOp: lastop.Operation{Type: lastop.TypeHealthCheck, State: lastop.StateProcessing, Desc: lastop.DescUnhealthy},
		Conditions: []lifecycle.Condition{{Type: "Ready", Status: lifecycle.ConditionFalse, Reason: "KubeletNotReady",
			Since: lifecycle.StampOf(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))}},
	}
	r.event(p, &st, lifecycle.Effect{Kind: lifecycle.KindEvent, Warning: true, Rule: lifecycle.RuleHealthUnhealthy})
	ev := recorded(rec)[0]
	require.Equal(t, "Warning MachineUnhealthy The node is unhealthy. Machine m is unhealthy - changing MachinePhase to Unknown. "+
		"Node conditions: Ready=False (KubeletNotReady).", ev)
	require.NotContains(t, ev, "{Type:")

	st.LastOp = lastop.Operation{Type: lastop.TypeDelete, State: lastop.StateFailed, Desc: lastop.DescVMDeletionAborted,
		Detail: strings.Repeat("é", lifecycle.MaxDetail)}
	r.event(p, &st, lifecycle.Effect{Kind: lifecycle.KindEvent, Warning: true, Rule: lifecycle.RuleDeleteVMFailed})
	note := strings.TrimPrefix(recorded(rec)[0], "Warning DeleteFailed ")
	require.LessOrEqual(t, len(note), kubeshell.MaxNote)
	require.True(t, strings.HasSuffix(note, "…"))
	require.True(t, strings.HasPrefix(note, "Deleting the instance failed. "))
}

func TestWaitsAreLoggedOncePerMachineWaitAndInterval(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	r := &Reconciler{recorder: events.NewFakeRecorder(10), now: func() time.Time { return now }}
	var lines []string
	p := newTestPass()
	p.log = funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})

	until := lifecycle.StampOf(now.Add(20 * time.Minute))
	join := &lifecycle.Decision{Rule: lifecycle.RuleHealthWaitJoin, Status: lifecycle.Status{Phase: phase.Pending},
		Wait: lifecycle.Wait{For: lifecycle.WaitNodeJoin, Since: lifecycle.StampOf(now), Until: until}}
	for range 3 {
		r.report(p, join)
	}
	require.Len(t, lines, 1)
	require.Contains(t, lines[0], `"msg"="machine waits: waiting for the node to join and turn healthy"`)
	require.Contains(t, lines[0], `"waitingFor"="node-join"`)
	require.Contains(t, lines[0], `"rule"="health.waiting-for-node"`)
	require.Contains(t, lines[0], `"until"="2026-11-22T10:20:00Z"`)

	// Another wait is logged at once; the first again after the interval.
	r.report(p, &lifecycle.Decision{Rule: lifecycle.RuleCreateBackoff, Wait: lifecycle.Wait{For: lifecycle.WaitRetry}})
	require.Len(t, lines, 2)
	now = now.Add(repeatInterval)
	r.report(p, join)
	require.Len(t, lines, 3)
	// Not waiting: nothing.
	r.report(p, &lifecycle.Decision{Rule: lifecycle.RuleHealthy})
	require.Len(t, lines, 3)
	// A decision that acts is not a wait.
	acting := *join
	acting.Changed = true
	now = now.Add(repeatInterval)
	r.report(p, &acting)
	require.Len(t, lines, 3)
}

func TestRepeatLimiterForgetsOldKeys(t *testing.T) {
	var l repeatLimiter
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	key := func(i int) string { return "machine-" + time.Duration(i).String() }
	for i := range 5000 {
		require.True(t, l.allow(key(i), now))
		now = now.Add(time.Second)
	}
	require.Less(t, len(l.last), 2*int(repeatInterval/time.Second)+1024, "keys older than the interval are dropped")
	require.False(t, l.allow(key(4999), now), "a key of the last interval is remembered")
	require.True(t, l.allow(key(0), now), "a key older than the interval is allowed again")
	// A clock that went back allows the key again.
	require.True(t, l.allow("back", now))
	require.True(t, l.allow("back", now.Add(-time.Minute)))
}

// A problem's event says which object the problem is with, the class
// read's error; the rule's text alone ("the machine class or its secret is
// unavailable") named none. Other rules' notes are as before.
func TestProblemEventsNameTheirCause(t *testing.T) {
	metrics, _ := newTestMetrics(t)
	rec := events.NewFakeRecorder(100)
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	r := &Reconciler{recorder: rec, metrics: metrics, now: func() time.Time { return now }}

	problem := classUnavailableDecision(t)
	p := newTestPass()
	p.class = &classRead{problem: lifecycle.ProblemClassUnavailable, err: errors.New(`reading MachineClass gone: not found`)}
	r.decided(p, 0, &problem)
	evs := recorded(rec)
	require.Len(t, evs, 1)
	require.Contains(t, evs[0], "The machine class or its secret is unavailable. Reading MachineClass gone: not found. ")

	// A machine waiting for its name, or for an instance or node another
	// machine holds, is told by NameInUse or InstanceInUse, not by the
	// rule's event, which would call it invalid; the detail (for its
	// conditions) names the holder.
	invalid := problem
	invalid.Rule = lifecycle.RuleInvalidMachine
	p = newTestPass()
	p.nameHolder = "other/m"
	p.class = &classRead{}
	r.decided(p, 0, &invalid)
	require.Empty(t, recorded(rec))
	require.Equal(t, "its name is held by the machine other/m of another namespace", problemDetail(p, invalid.Rule))
	p = newTestPass()
	p.instanceHolder, p.instanceWhat = "ns/orig", "instance fake:///vm-1"
	p.class = &classRead{}
	r.decided(p, 0, &invalid)
	require.Empty(t, recorded(rec))
	require.Equal(t, "the instance fake:///vm-1 it names is held by the machine ns/orig", problemDetail(p, invalid.Rule))

	joined := joinedDecision(t)
	p = newTestPass()
	p.nameHolder = "other/m"
	i := slices.IndexFunc(joined.Effects.Slice(), func(e lifecycle.Effect) bool { return e.Kind == lifecycle.KindEvent })
	r.event(p, &joined.Status, joined.Effects.At(i))
	evs = recorded(rec)
	require.Len(t, evs, 1)
	require.NotContains(t, evs[0], "other/m")
}

package v1alpha1

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// conditionReason is the pattern the API server requires of a condition's
// reason (metav1.Condition).
var conditionReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

func TestEveryRuleHasADistinctValidReason(t *testing.T) {
	seen := map[string]lifecycle.Rule{}
	for _, r := range append(lifecycle.Rules(), lifecycle.RuleNone) {
		reason := ReasonOf(r)
		require.Regexp(t, conditionReason, reason, "rule %s", r)
		prev, dup := seen[reason]
		require.False(t, dup, "rules %s and %s both give reason %s", prev, r, reason)
		seen[reason] = r
	}
	require.Equal(t, "HealthWaitingForNode", ReasonOf(lifecycle.RuleHealthWaitJoin))
	require.Equal(t, "DeleteVMNotFound", ReasonOf(lifecycle.RuleDeleteVMNotFound))
	require.Equal(t, "Rule4000", ReasonOf(lifecycle.Rule(4000)))
}

func TestEveryWaitHasADistinctCondition(t *testing.T) {
	seen := map[string]bool{ConditionReady: true}
	require.Empty(t, WaitCondition(lifecycle.WaitNone))
	for w := lifecycle.WaitNone + 1; w.String() != "unknown-wait"; w++ {
		c := WaitCondition(w)
		require.Regexp(t, `^WaitingFor[A-Z][A-Za-z]+$`, c)
		require.False(t, seen[c], "%s twice", c)
		seen[c] = true
	}
	require.Equal(t, "WaitingForNodeJoin", WaitCondition(lifecycle.WaitNodeJoin))
}

func TestConditionsFollowTheDecisions(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	m := machineNamed("m-1")
	m.Generation = 3

	// Pending, waiting for the node until the creation timeout.
	st := lifecycle.Status{Phase: phase.Pending, PhaseSince: lifecycle.StampOf(t0)}
	pending := Decided{Rule: lifecycle.RuleCreatePending, Wait: lifecycle.Wait{For: lifecycle.WaitNodeJoin,
		Since: lifecycle.StampOf(t0), Until: lifecycle.StampOf(t0.Add(20 * time.Minute))}}
	m.Status = StatusOf(m, &st, pending, t0)
	ready := meta.FindStatusCondition(m.Status.Conditions, ConditionReady)
	require.NotNil(t, ready)
	require.Equal(t, metav1.ConditionFalse, ready.Status)
	require.Equal(t, "CreatePending", ready.Reason)
	require.Equal(t, int64(3), ready.ObservedGeneration)
	join := meta.FindStatusCondition(m.Status.Conditions, "WaitingForNodeJoin")
	require.NotNil(t, join)
	require.Equal(t, metav1.ConditionTrue, join.Status)
	require.Equal(t, "The instance is ready; waiting for its node. The wait ends at 2026-11-22T10:20:00Z, 20m after it began.", join.Message)
	require.Equal(t, &Wait{For: "node-join", Since: &metav1.Time{Time: t0}, Until: &metav1.Time{Time: t0.Add(20 * time.Minute)},
		Rule: "create.pending"}, m.Status.Wait)
	require.Equal(t, int64(3), m.Status.ObservedGeneration)

	// Still waiting a minute later, at a new generation: the transition
	// times stay, the observed generation follows.
	m.Generation = 4
	m.Status = StatusOf(m, &st, pending, t0.Add(time.Minute))
	join = meta.FindStatusCondition(m.Status.Conditions, "WaitingForNodeJoin")
	require.Equal(t, t0, join.LastTransitionTime.Time)
	require.Equal(t, int64(4), join.ObservedGeneration)
	require.Equal(t, t0, meta.FindStatusCondition(m.Status.Conditions, ConditionReady).LastTransitionTime.Time)

	// Running: Ready, and the wait for the node has ended.
	t1 := t0.Add(2 * time.Minute)
	st = lifecycle.Status{Phase: phase.Running, PhaseSince: lifecycle.StampOf(t1)}
	m.Status = StatusOf(m, &st, Decided{Rule: lifecycle.RuleHealthJoined}, t1)
	ready = meta.FindStatusCondition(m.Status.Conditions, ConditionReady)
	require.Equal(t, metav1.ConditionTrue, ready.Status)
	require.Equal(t, "HealthJoined", ready.Reason)
	require.Equal(t, t1, ready.LastTransitionTime.Time)
	join = meta.FindStatusCondition(m.Status.Conditions, "WaitingForNodeJoin")
	require.Equal(t, metav1.ConditionFalse, join.Status)
	require.Equal(t, "HealthJoined", join.Reason)
	require.Equal(t, t1, join.LastTransitionTime.Time)
	require.Nil(t, m.Status.Wait)

	// A later decision leaves the ended wait as it ended.
	m.Status = StatusOf(m, &st, Decided{Rule: lifecycle.RuleHealthy}, t1.Add(time.Hour))
	join = meta.FindStatusCondition(m.Status.Conditions, "WaitingForNodeJoin")
	require.Equal(t, "HealthJoined", join.Reason)
	require.Equal(t, t1, join.LastTransitionTime.Time)
	require.Len(t, m.Status.Conditions, 2)

	// Being deleted, a Running machine is not Ready.
	m.DeletionTimestamp = &metav1.Time{Time: t1.Add(2 * time.Hour)}
	m.Status = StatusOf(m, &st, Decided{Rule: lifecycle.RuleDeleteBegins, Wait: lifecycle.Wait{For: lifecycle.WaitDeletion}}, t1.Add(2*time.Hour))
	require.Equal(t, metav1.ConditionFalse, meta.FindStatusCondition(m.Status.Conditions, ConditionReady).Status)
	require.Equal(t, metav1.ConditionTrue, meta.FindStatusCondition(m.Status.Conditions, "WaitingForDeletion").Status)
	require.Equal(t, "deletion", m.Status.Wait.For)
	require.Nil(t, m.Status.Wait.Until)
}

func TestConditionsOfOthersAreKept(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	m := machineNamed("m-1")
	other := metav1.Condition{Type: "Approved", Status: metav1.ConditionTrue, Reason: "ByHand", Message: "yes",
		LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}
	m.Status.Conditions = []metav1.Condition{other}
	st := lifecycle.Status{Phase: phase.Running}
	ms := StatusOf(m, &st, Decided{Rule: lifecycle.RuleHealthy}, now)
	require.Equal(t, other, *meta.FindStatusCondition(ms.Conditions, "Approved"))
	require.Equal(t, []metav1.Condition{other}, m.Status.Conditions, "the machine's own status is not written")
}

func TestSameView(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	m := machineNamed("m-1")
	st := lifecycle.Status{Phase: phase.Pending}
	wait := lifecycle.Wait{For: lifecycle.WaitNodeJoin, Until: lifecycle.StampOf(now.Add(time.Minute))}
	m.Status = viaAPI(t, StatusOf(m, &st, Decided{Rule: lifecycle.RuleCreatePending, Wait: wait}, now))

	same := StatusOf(m, &st, Decided{Rule: lifecycle.RuleHealthWaitJoin, Wait: wait}, now.Add(time.Second))
	require.True(t, SameView(&same, &m.Status), "another rule, the same wait")

	m2 := m.DeepCopy()
	m2.Generation++
	require.False(t, SameView(ptr(StatusOf(m2, &st, Decided{Rule: lifecycle.RuleHealthWaitJoin, Wait: wait}, now)), &m.Status))
	problem := StatusOf(m, &st, Decided{Rule: lifecycle.RuleClassUnavailable, Wait: lifecycle.Wait{For: lifecycle.WaitProblem}}, now)
	require.False(t, SameView(&problem, &m.Status))
	later := wait
	later.Until = later.Until.Add(time.Minute)
	require.False(t, SameView(ptr(StatusOf(m, &st, Decided{Rule: lifecycle.RuleCreatePending, Wait: later}, now)), &m.Status))
	running := lifecycle.Status{Phase: phase.Running}
	require.False(t, SameView(ptr(StatusOf(m, &running, Decided{Rule: lifecycle.RuleHealthJoined}, now)), &m.Status))
}

func TestDescriptionListsNodeConditionsReadably(t *testing.T) {
	since := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	st := lifecycle.Status{
		Phase: phase.Unknown,
		LastOp: lastop.Operation{Type: lastop.TypeHealthCheck, State: lastop.StateProcessing, Desc: lastop.DescUnhealthy,
			Elapsed: 10*time.Minute + 123*time.Millisecond},
		Conditions: []lifecycle.Condition{
			{Type: "Ready", Status: lifecycle.ConditionFalse, Since: lifecycle.StampOf(since), Reason: "KubeletNotReady", Message: "PLEG"},
			{Type: "MemoryPressure", Status: lifecycle.ConditionFalse},
		},
	}
	got := Description(&st, "m-1")
	require.Equal(t, "Machine m-1 is unhealthy - changing MachinePhase to Unknown. Node conditions: Ready=False (KubeletNotReady), MemoryPressure=False", got)
	require.NotContains(t, lifecycle.Describe(&st, "m-1"), "Ready=False", "MCM's own text is unchanged")
	require.Equal(t, "none", ConditionList(nil))

	st.LastOp = lastop.Operation{Type: lastop.TypeHealthCheck, State: lastop.StateFailed, Desc: lastop.DescHealthTimeout,
		Elapsed: 10*time.Minute + 123*time.Millisecond}
	require.Contains(t, Description(&st, "m-1"), "since last 10m0s minutes")
	require.False(t, strings.Contains(Description(&st, "m-1"), "{Type:"))
}

func TestRoundDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                     "0s",
		400 * time.Millisecond:                "0s",
		45*time.Second + 600*time.Millisecond: "46s",
		20 * time.Minute:                      "20m",
		90 * time.Minute:                      "1h30m",
		2 * time.Hour:                         "2h",
		time.Hour + 5*time.Second:             "1h0m5s",
	} {
		require.Equal(t, want, RoundDuration(d), "%v", d)
	}
}

func TestFlagNamesRoundTrip(t *testing.T) {
	require.Equal(t, []string{"drain-forced", "terminated"}, FlagNames(lifecycle.FlagDrainForced|lifecycle.FlagTerminated))
	require.Nil(t, FlagNames(0))
	names := map[string]bool{}
	for f := lifecycle.Flags(1); f <= lifecycle.FlagPreserveCordonMarked; f <<= 1 {
		n := FlagNames(f)
		require.Len(t, n, 1)
		require.NotContains(t, n[0], "bit-", "flag %#x has no name", uint32(f))
		require.False(t, names[n[0]])
		names[n[0]] = true
	}
	for i := range 16 {
		f := lifecycle.Flags(1) << i
		got, err := ParseFlags(FlagNames(f))
		require.NoError(t, err)
		require.Equal(t, f, got)
	}
	got, err := ParseFlags(FlagNames(0xffff))
	require.NoError(t, err)
	require.Equal(t, lifecycle.Flags(0xffff), got)
	// Each entry is one name, as FlagNames writes it.
	for _, bad := range [][]string{{"drain-forced,terminated"}, {""}, {"bit-4"}, {"no-such-flag"}} {
		_, err := ParseFlags(bad)
		require.Error(t, err, "%q", bad)
	}
}

func ptr[T any](v T) *T { return &v }

// A status the earlier controller wrote, with the flags as bits and the
// node's conditions in status.conditions, is read, and its next save
// writes the flags' names and drops the node's conditions once they are
// mirrored in nodeConditions.
func TestStatusOfTheEarlierControllerIsRead(t *testing.T) {
	earlier := `{"metadata":{"name":"m-1","generation":2},"status":{
		"conditions":[
			{"type":"Ready","status":"True","lastHeartbeatTime":"2026-11-22T09:00:00Z","lastTransitionTime":"2026-11-22T09:00:00Z","reason":"KubeletReady","message":"ok"},
			{"type":"MemoryPressure","status":"False","lastHeartbeatTime":"2026-11-22T09:00:00Z","lastTransitionTime":"2026-11-22T09:00:00Z","reason":"KubeletHasSufficientMemory","message":"ok"}],
		"currentStatus":{"phase":"Terminating"},
		"lastOperation":{"type":"Delete","state":"Processing"},
		"lifecycle":{"stage":"drain","flags":24}}}`
	var m Machine
	require.NoError(t, json.Unmarshal([]byte(earlier), &m))
	require.Equal(t, FlagList{"drain-succeeded", "drain-forced"}, m.Status.Lifecycle.Flags)
	st, err := m.Status.ToLifecycle()
	require.NoError(t, err)
	require.Equal(t, lifecycle.FlagDrainSucceeded|lifecycle.FlagDrainForced, st.Flags)
	require.Empty(t, st.Conditions, "the node's conditions are mirrored again from the node")

	// The first save keeps them, the node's conditions not mirrored yet;
	// a save after they are drops them.
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	ms := StatusOf(&m, &st, Decided{Rule: lifecycle.RuleDeleteDrain}, now)
	require.NotNil(t, meta.FindStatusCondition(ms.Conditions, "MemoryPressure"))
	m.Status = ms
	st.Conditions = []lifecycle.Condition{{Type: "Ready", Status: lifecycle.ConditionTrue}, {Type: "MemoryPressure", Status: lifecycle.ConditionFalse}}
	ms = StatusOf(&m, &st, Decided{Rule: lifecycle.RuleHealthConditions}, now)
	require.Nil(t, meta.FindStatusCondition(ms.Conditions, "MemoryPressure"))
	ready := meta.FindStatusCondition(ms.Conditions, ConditionReady)
	require.Equal(t, "HealthConditions", ready.Reason)
	require.Len(t, ms.NodeConditions, 2)

	b, err := json.Marshal(&Machine{Status: ms})
	require.NoError(t, err)
	require.Contains(t, string(b), `"flags":["drain-succeeded","drain-forced"]`)
	var bad Machine
	require.Error(t, json.Unmarshal([]byte(`{"status":{"lifecycle":{"flags":{"a":1}}}}`), &bad))
}

// What keeps a machine waiting beyond its rule's text (the class that is
// missing, the machine that holds the name) is said after the rule's text
// in the Ready condition and the wait's condition, and kept in the wait;
// a view that differs only in it is not the same view, so it is written
// when it changes (the class found, its Secret then missing).
func TestConditionsSayTheDetail(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	m := machineNamed("m-1")
	st := lifecycle.Status{}
	d := Decided{Rule: lifecycle.RuleClassUnavailable, Wait: lifecycle.Wait{For: lifecycle.WaitProblem, Since: lifecycle.StampOf(t0)},
		Detail: `reading MachineClass gone: machineclasses "gone" not found`}
	s := StatusOf(m, &st, d, t0)
	w := meta.FindStatusCondition(s.Conditions, "WaitingForProblem")
	require.NotNil(t, w)
	require.Equal(t, metav1.ConditionTrue, w.Status)
	require.Equal(t, `The machine class or its secret is unavailable. Reading MachineClass gone: machineclasses "gone" not found.`, w.Message)
	require.True(t, strings.HasPrefix(meta.FindStatusCondition(s.Conditions, ConditionReady).Message,
		`The machine class or its secret is unavailable. Reading MachineClass gone: machineclasses "gone" not found.`))
	require.Equal(t, d.Detail, s.Wait.Detail)

	d.Detail = "reading Secret s of MachineClass gone: not found"
	other := StatusOf(m, &st, d, t0)
	require.False(t, SameView(&s, &other), "a changed detail is not written")
	require.True(t, SameView(&other, &other))

	d.Detail = ""
	plain := StatusOf(m, &st, d, t0)
	require.Equal(t, "The machine class or its secret is unavailable.",
		meta.FindStatusCondition(plain.Conditions, "WaitingForProblem").Message)
	require.Empty(t, plain.Wait.Detail)
}

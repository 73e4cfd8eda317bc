package mcm

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// viaJSON sends m through JSON, as the API server stores it: times keep
// whole seconds only.
func viaJSON(t require.TestingT, m *v1alpha1.Machine) *v1alpha1.Machine {
	b, err := json.Marshal(m)
	require.NoError(t, err)
	var out v1alpha1.Machine
	require.NoError(t, json.Unmarshal(b, &out))
	return &out
}

func newMachine() *v1alpha1.Machine {
	return &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{
			Name: "m-1", Namespace: "shoot--p--c", UID: "uid-1",
			CreationTimestamp: metav1.NewTime(time.Date(2026, 8, 19, 9, 0, 0, 0, time.UTC)),
		},
	}
}

// requireRoundTrip applies st to a fresh machine and reads it back, in
// memory and through JSON.
func requireRoundTrip(t testing.TB, st lifecycle.Status) {
	t.Helper()
	m := newMachine()
	ApplyStatus(st, m, time.Date(2026, 8, 19, 9, 30, 0, 0, time.UTC))
	got, err := StatusFrom(m)
	require.NoError(t, err)
	require.Equal(t, st, got, "in memory; annotation %s", m.Annotations[StateAnnotation])
	got, err = StatusFrom(viaJSON(t, m))
	require.NoError(t, err)
	require.Equal(t, st, got, "through JSON; annotation %s", m.Annotations[StateAnnotation])
}

func stages() []lifecycle.Stage {
	var out []lifecycle.Stage
	for s := lifecycle.StageNone; s.Valid(); s++ {
		out = append(out, s)
	}
	return out
}

// codeNames are MCM's error code names, as they appear in lastOperation.
func codeNames() []string {
	out := []string{""}
	for c := driverapi.Code(0); c <= 17; c++ {
		out = append(out, c.String())
	}
	return out
}

func TestRoundTripEveryPhaseAndStage(t *testing.T) {
	for _, p := range phase.All() {
		for _, s := range stages() {
			t.Run(p.Label()+"/"+s.String(), func(t *testing.T) {
				requireRoundTrip(t, lifecycle.Status{
					Phase: p, Stage: s, Seq: 7,
					PhaseSince: lifecycle.StampOf(time.Date(2026, 8, 19, 9, 10, 0, 123, time.UTC)),
					StageSince: lifecycle.StampOf(time.Date(2026, 8, 19, 9, 11, 0, 0, time.UTC)),
					LastOp:     lastop.Operation{Type: lastop.TypeDelete, State: lastop.StateProcessing, Desc: lastop.DescInitiateDrain},
					ProviderID: "aws:///eu-west-1/i-1", NodeName: "ip-10-0-0-1",
				})
			})
		}
	}
}

func TestRoundTripEveryDescription(t *testing.T) {
	for _, d := range append([]lastop.Desc{lastop.DescNone, lastop.DescUnknown}, lastop.Descs()...) {
		t.Run(d.String(), func(t *testing.T) {
			var detail string
			if d == lastop.DescUnknown || strings.Contains(d.Format(), "<detail>") {
				detail = "machine codes error: code = [Internal] message = [boom]"
			}
			requireRoundTrip(t, lifecycle.Status{
				Phase:      phase.Unknown,
				LastOp:     lastop.Operation{Type: lastop.TypeHealthCheck, State: lastop.StateFailed, Desc: d, ErrorCode: "Internal", Detail: detail, Elapsed: 20 * time.Minute},
				NodeName:   "node-1",
				Conditions: []lifecycle.Condition{{Type: "Ready", Status: lifecycle.ConditionFalse, Since: lifecycle.StampOf(time.Date(2026, 8, 19, 9, 0, 0, 0, time.UTC)), Reason: "KubeletNotReady", Message: "PLEG is not healthy"}},
			})
		})
	}
}

func TestRoundTripEveryFlagFailureAndStamp(t *testing.T) {
	for bit := range 16 {
		requireRoundTrip(t, lifecycle.Status{Phase: phase.Terminating, Flags: lifecycle.Flags(1) << bit})
	}
	requireRoundTrip(t, lifecycle.Status{
		Failures:   lifecycle.Failures{Create: 1, Health: 2, Delete: 3, Update: 4, Metadata: 255, Drain: 6},
		Attempt:    1<<32 - 1,
		Seq:        1<<32 - 1,
		RetryAfter: lifecycle.Stamp(1<<63 - 2), // the extremes stand for saturated times
		StageSince: lifecycle.Stamp(-1<<63 + 1),
		PhaseSince: lifecycle.Stamp(1),
	})
}

// statusGen draws any status the lifecycle could hold, and more: every
// field is drawn from its whole range, except that strings are valid UTF-8
// (JSON and the API server carry nothing else) and stamps leave out the two
// extremes, which stand for times StampOf saturated and are refused on
// reading (TestStatusFromRefusesTimesOutOfStampRange).
func statusGen() *rapid.Generator[lifecycle.Status] {
	stamp := rapid.OneOf(
		rapid.Just(lifecycle.Stamp(0)),
		rapid.Map(rapid.Int64Range(math.MinInt64+1, math.MaxInt64-1), func(n int64) lifecycle.Stamp { return lifecycle.Stamp(n) }),
		rapid.Map(rapid.Int64Range(1.7e9, 1.9e9), func(s int64) lifecycle.Stamp { return lifecycle.Stamp(s * 1e9) }),
	)
	text := rapid.OneOf(rapid.Just(""), rapid.StringMatching(`[a-z0-9.\-]{1,20}`), rapid.String())
	descs := append([]lastop.Desc{lastop.DescNone, lastop.DescUnknown}, lastop.Descs()...)
	detail := rapid.OneOf(text,
		rapid.SampledFrom([]string{
			"machine codes error: code = [ResourceExhausted] message = [quota exceeded]",
			"Initiate node drain", "Set machine status to termination. Now, getting VM Status",
			"Drain successful. Initiate VM deletion", "Creating machine on cloud provider",
		}))
	return rapid.Custom(func(t *rapid.T) lifecycle.Status {
		st := lifecycle.Status{
			Phase: rapid.SampledFrom(phase.All()).Draw(t, "phase"),
			Stage: rapid.SampledFrom(stages()).Draw(t, "stage"),
			Flags: lifecycle.Flags(rapid.Uint32().Draw(t, "flags")),
			Failures: lifecycle.Failures{
				Create: rapid.Uint8().Draw(t, "fc"), Health: rapid.Uint8().Draw(t, "fh"),
				Delete: rapid.Uint8().Draw(t, "fd"), Update: rapid.Uint8().Draw(t, "fu"),
				Metadata: rapid.Uint8().Draw(t, "fm"), Drain: rapid.Uint8().Draw(t, "fi"),
			},
			Attempt:    rapid.Uint32().Draw(t, "attempt"),
			Seq:        rapid.Uint32().Draw(t, "seq"),
			PhaseSince: stamp.Draw(t, "phaseSince"),
			StageSince: stamp.Draw(t, "stageSince"),
			RetryAfter: stamp.Draw(t, "retryAfter"),
			LastOp: lastop.Operation{
				Type:      lastop.Type(rapid.IntRange(0, 6).Draw(t, "type")),
				State:     lastop.State(rapid.IntRange(0, 3).Draw(t, "state")),
				Desc:      rapid.SampledFrom(descs).Draw(t, "desc"),
				ErrorCode: rapid.SampledFrom(codeNames()).Draw(t, "code"),
				Detail:    detail.Draw(t, "detail"),
				Elapsed: rapid.OneOf(rapid.Just(time.Duration(0)), rapid.Just(20*time.Minute),
					rapid.Map(rapid.Int64(), func(n int64) time.Duration { return time.Duration(n) })).Draw(t, "elapsed"),
			},
			ProviderID:         text.Draw(t, "providerID"),
			NodeName:           text.Draw(t, "node"),
			LastKnownState:     text.Draw(t, "lastKnownState"),
			OwnerUID:           text.Draw(t, "ownerUID"),
			AppliedGeneration:  rapid.Int64().Draw(t, "applied"),
			RejectedGeneration: rapid.Int64().Draw(t, "rejected"),
			InPlaceGeneration:  rapid.Int64().Draw(t, "inplace"),
			MetadataObserved:   stamp.Draw(t, "metadataObserved"),
			MetadataSince:      stamp.Draw(t, "metadataSince"),
			CreationFrom:       stamp.Draw(t, "creationFrom"),
			PreserveUntil:      stamp.Draw(t, "preserveUntil"),
			// None, or the hash of newMachine's UID: a status holds no
			// other (another reads back as 0, TestUIDHashOfAnotherUIDIsDropped).
			UIDHash: rapid.SampledFrom([]retry.KeyHash{0, retry.HashKey("uid-1")}).Draw(t, "uidHash"),
		}
		if md := rapid.MapOf(text, text).Draw(t, "metadata"); len(md) > 0 {
			st.Metadata = md
		}
		for range rapid.IntRange(0, 3).Draw(t, "addresses") {
			st.Addresses = append(st.Addresses, driverapi.Address{
				Type:    rapid.SampledFrom([]string{"InternalIP", "ExternalIP", "Hostname", ""}).Draw(t, "addressType"),
				Address: text.Draw(t, "address"),
			})
		}
		for range rapid.IntRange(0, 4).Draw(t, "conditions") {
			st.Conditions = append(st.Conditions, lifecycle.Condition{
				Type:    rapid.SampledFrom([]string{"Ready", "DiskPressure", "KernelDeadlock", "Terminating"}).Draw(t, "conditionType"),
				Status:  lifecycle.ConditionStatus(rapid.IntRange(0, 2).Draw(t, "conditionStatus")),
				Since:   stamp.Draw(t, "since"),
				Reason:  text.Draw(t, "reason"),
				Message: text.Draw(t, "message"),
			})
		}
		return st
	})
}

func TestRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		st := statusGen().Draw(t, "status")
		m := newMachine()
		// Whatever the machine held before is replaced.
		if rapid.Bool().Draw(t, "dirty") {
			ApplyStatus(statusGen().Draw(t, "before"), m, time.Unix(1.75e9, 0))
			m = viaJSON(t, m)
		}
		ApplyStatus(st, m, time.Unix(1.76e9, 5))
		got, err := StatusFrom(m)
		if err != nil {
			t.Fatalf("in memory: %v", err)
		}
		if !reflect.DeepEqual(st, got) {
			t.Fatalf("in memory:\nwant %+v\ngot  %+v\nannotation %s", st, got, m.Annotations[StateAnnotation])
		}
		got, err = StatusFrom(viaJSON(t, m))
		if err != nil {
			t.Fatalf("through JSON: %v", err)
		}
		if !reflect.DeepEqual(st, got) {
			t.Fatalf("through JSON:\nwant %+v\ngot  %+v\nannotation %s", st, got, m.Annotations[StateAnnotation])
		}
	})
}

// TestEveryStatusFieldIsMapped fails when lifecycle.Status or Failures gain
// a field: map it in ApplyStatus and StatusFrom, draw it in statusGen, and
// add it here.
func TestEveryStatusFieldIsMapped(t *testing.T) {
	names := func(v any) []string {
		var out []string
		for f := range reflect.TypeOf(v).Fields() {
			out = append(out, f.Name)
		}
		return out
	}
	require.Equal(t, []string{
		"Phase", "Stage", "Flags", "Failures", "Attempt", "Seq", "PhaseSince", "StageSince", "RetryAfter",
		"LastOp", "ProviderID", "NodeName", "LastKnownState", "Addresses", "Conditions", "OwnerUID",
		"AppliedGeneration", "InPlaceGeneration", "RejectedGeneration", "Metadata", "MetadataObserved", "MetadataSince", "PreserveUntil", "CreationFrom",
		"UIDHash",
	}, names(lifecycle.Status{}))
	require.Equal(t, []string{"Create", "Health", "Delete", "Update", "Metadata", "Drain"}, names(lifecycle.Failures{}))
	require.Equal(t, []string{"Type", "State", "Desc", "ErrorCode", "Detail", "Elapsed"}, names(lastop.Operation{}))
	require.Equal(t, []string{"Type", "Status", "Since", "Reason", "Message"}, names(lifecycle.Condition{}))
}

func TestApplyStatusWritesMCMFields(t *testing.T) {
	since := time.Date(2026, 8, 19, 9, 10, 0, 0, time.UTC)
	now := time.Date(2026, 8, 19, 9, 30, 0, 0, time.UTC)
	m := newMachine()
	ApplyStatus(lifecycle.Status{
		Phase: phase.Terminating, Stage: lifecycle.StageDeleteNode, PhaseSince: lifecycle.StampOf(since),
		Flags:          lifecycle.FlagDrainSucceeded | lifecycle.FlagTerminated,
		LastOp:         lastop.Operation{Type: lastop.TypeDelete, State: lastop.StateProcessing, Desc: lastop.DescNodeDeleted},
		ProviderID:     "aws:///eu-west-1/i-1",
		NodeName:       "ip-10-0-0-1",
		LastKnownState: "opaque",
		Addresses:      []driverapi.Address{{Type: "InternalIP", Address: "10.0.0.1"}},
		Conditions:     []lifecycle.Condition{{Type: "Ready", Status: lifecycle.ConditionTrue, Since: lifecycle.StampOf(since), Reason: "KubeletReady"}},
	}, m, now)

	require.Equal(t, v1alpha1.CurrentStatus{Phase: v1alpha1.MachineTerminating, LastUpdateTime: metav1.NewTime(since)}, m.Status.CurrentStatus)
	require.Equal(t, v1alpha1.LastOperation{
		Description:    `Deletion of Node Object "ip-10-0-0-1" is successful. Initiate machine object finalizer removal`,
		LastUpdateTime: metav1.NewTime(now),
		State:          v1alpha1.MachineStateProcessing,
		Type:           v1alpha1.MachineOperationDelete,
	}, m.Status.LastOperation)
	require.Equal(t, []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since), Reason: "KubeletReady"}}, m.Status.Conditions)
	require.Equal(t, []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}, m.Status.Addresses)
	require.Equal(t, "opaque", m.Status.LastKnownState)
	// Only what MCM has no place for is in the annotation; the description
	// parses back, so the operation is not repeated there.
	require.JSONEq(t, `{"stage":"delete-node","phaseSince":"2026-08-19T09:10:00Z","flags":72,
		"providerID":"aws:///eu-west-1/i-1","node":"ip-10-0-0-1","check":"`+check(m)+`"}`, m.Annotations[StateAnnotation])
	require.Empty(t, m.Spec.ProviderID, "spec is left to the ensure-effects")
	require.Empty(t, m.Labels, "labels are left to the ensure-effects")
}

func TestApplyStatusPendingSetsTimeoutActive(t *testing.T) {
	m := newMachine()
	ApplyStatus(lifecycle.Status{Phase: phase.Pending}, m, time.Unix(1.76e9, 0))
	require.True(t, m.Status.CurrentStatus.TimeoutActive)
	ApplyStatus(lifecycle.Status{Phase: phase.Running}, m, time.Unix(1.76e9, 0))
	require.False(t, m.Status.CurrentStatus.TimeoutActive)
}

func TestApplyStatusKeepsUpdateTimeOfAnUnchangedRecord(t *testing.T) {
	st := lifecycle.Status{Phase: phase.Running, LastOp: lastop.Operation{Type: lastop.TypeHealthCheck, State: lastop.StateSuccessful, Desc: lastop.DescRejoined}}
	first, later := time.Date(2026, 8, 19, 9, 0, 0, 0, time.UTC), time.Date(2026, 8, 19, 10, 0, 0, 0, time.UTC)
	m := newMachine()
	ApplyStatus(st, m, first)
	once := m.DeepCopy()
	ApplyStatus(st, m, later)
	require.Equal(t, once, m, "applying the same status again changes nothing")

	st.Seq++
	st.LastOp.Desc = lastop.DescUnhealthy
	ApplyStatus(st, m, later)
	require.Equal(t, later, m.Status.LastOperation.LastUpdateTime.Time)
}

func TestStatusFromRejectsInvalidInput(t *testing.T) {
	valid := newMachine()
	ApplyStatus(lifecycle.Status{Phase: phase.Running, Stage: lifecycle.StageNone}, valid, time.Unix(1.76e9, 0))
	for name, edit := range map[string]func(m *v1alpha1.Machine){
		"unknown phase without annotation": func(m *v1alpha1.Machine) {
			delete(m.Annotations, StateAnnotation)
			m.Status.CurrentStatus.Phase = "Exploded"
		},
		"lower-case phase": func(m *v1alpha1.Machine) {
			delete(m.Annotations, StateAnnotation)
			m.Status.CurrentStatus.Phase = "running"
		},
		"unknown operation type": func(m *v1alpha1.Machine) {
			delete(m.Annotations, StateAnnotation)
			m.Status.LastOperation.Type = "Reboot"
		},
		"unknown operation state": func(m *v1alpha1.Machine) {
			delete(m.Annotations, StateAnnotation)
			m.Status.LastOperation.State = "Done"
		},
		"annotation not JSON": func(m *v1alpha1.Machine) { m.Annotations[StateAnnotation] = "stage=drain" },
		"annotation trailing": func(m *v1alpha1.Machine) { m.Annotations[StateAnnotation] += "{}" },
		"annotation extra field": func(m *v1alpha1.Machine) {
			m.Annotations[StateAnnotation] = `{"check":"` + check(m) + `","step":"drain"}`
		},
		"unknown stage": func(m *v1alpha1.Machine) {
			m.Annotations[StateAnnotation] = `{"check":"` + check(m) + `","stage":"reboot"}`
		},
		"bad stamp": func(m *v1alpha1.Machine) {
			m.Annotations[StateAnnotation] = `{"check":"` + check(m) + `","phaseSince":"yesterday"}`
		},
		"unknown desc": func(m *v1alpha1.Machine) {
			m.Annotations[StateAnnotation] = `{"check":"` + check(m) + `","op":{"desc":"x99"}}`
		},
		"unknown phase matching the check": func(m *v1alpha1.Machine) {
			m.Status.CurrentStatus.Phase = "Exploded"
			m.Annotations[StateAnnotation] = `{"check":"` + check(m) + `"}`
		},
	} {
		t.Run(name, func(t *testing.T) {
			m := valid.DeepCopy()
			edit(m)
			_, err := StatusFrom(m)
			require.ErrorIs(t, err, ErrInvalidState)
		})
	}
	_, err := StatusFrom(nil)
	require.ErrorIs(t, err, ErrInvalidState)
}

// TestApplyStatusKeepsConditionsPrintedWhenWritten: MCM prints the node
// conditions into its H4 text once, when the machine turns Unknown; later
// changes of the conditions do not rewrite it. A new H4 does.
func TestApplyStatusKeepsConditionsPrintedWhenWritten(t *testing.T) {
	t0 := time.Date(2026, 8, 19, 9, 0, 0, 0, time.UTC)
	unhealthy := lastop.Operation{Type: lastop.TypeHealthCheck, State: lastop.StateProcessing, Desc: lastop.DescUnhealthy}
	cond := func(reason string) []lifecycle.Condition {
		return []lifecycle.Condition{{Type: "Ready", Status: lifecycle.ConditionFalse, Since: lifecycle.StampOf(t0), Reason: reason}}
	}
	m := newMachine()
	st := lifecycle.Status{Phase: phase.Unknown, LastOp: unhealthy, Conditions: cond("KubeletNotReady")}
	ApplyStatus(st, m, t0)
	first := m.Status.LastOperation
	require.Contains(t, first.Description, "Reason:KubeletNotReady")

	st.Conditions = cond("NodeStatusUnknown") // mirrored (H2); the operation stays
	ApplyStatus(st, m, t0.Add(time.Minute))
	require.Equal(t, first, m.Status.LastOperation)
	got, err := StatusFrom(viaJSON(t, m))
	require.NoError(t, err)
	require.Equal(t, st, got)

	st.LastOp = lastop.Operation{Type: lastop.TypeHealthCheck, State: lastop.StateSuccessful, Desc: lastop.DescRejoined}
	ApplyStatus(st, m, t0.Add(2*time.Minute))
	st.LastOp = unhealthy
	ApplyStatus(st, m, t0.Add(3*time.Minute))
	require.Contains(t, m.Status.LastOperation.Description, "Reason:NodeStatusUnknown")
	require.Equal(t, t0.Add(3*time.Minute), m.Status.LastOperation.LastUpdateTime.Time)
}

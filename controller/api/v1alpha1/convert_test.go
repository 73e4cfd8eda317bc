package v1alpha1

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// randomStatus returns a status with every field set, from r.
func randomStatus(r *rand.Rand) lifecycle.Status {
	text := func() string {
		const alphabet = "abcXYZ 0123[]=:-./\"é\n"
		b := make([]rune, 1+r.IntN(20))
		for i := range b {
			b[i] = []rune(alphabet)[r.IntN(len([]rune(alphabet)))]
		}
		return string(b)
	}
	stamp := func() lifecycle.Stamp { return lifecycle.Stamp(1 + r.Int64N(1<<62)) }
	stages := []lifecycle.Stage{}
	for s := lifecycle.StageNone + 1; s.Valid(); s++ {
		stages = append(stages, s)
	}
	phases := phase.All()
	descs := lastop.Descs()
	codes := []string{"Internal", "ResourceExhausted", "NotFound"}
	st := lifecycle.Status{
		Phase: phases[1+r.IntN(len(phases)-1)],
		Stage: stages[r.IntN(len(stages))],
		Flags: lifecycle.Flags(1 + r.IntN(1<<15)),
		Failures: lifecycle.Failures{Create: uint8(1 + r.IntN(255)), Health: uint8(1 + r.IntN(255)), Delete: uint8(1 + r.IntN(255)),
			Update: uint8(1 + r.IntN(255)), Metadata: uint8(1 + r.IntN(255)), Drain: uint8(1 + r.IntN(255))},
		Attempt:    1 + r.Uint32N(1<<31),
		Seq:        1 + r.Uint32N(1<<31),
		PhaseSince: stamp(),
		StageSince: stamp(),
		RetryAfter: stamp(),
		LastOp: lastop.Operation{
			Type:      lastop.Type(1 + r.IntN(int(lastop.TypeDelete))),
			State:     lastop.State(1 + r.IntN(int(lastop.StateSuccessful))),
			Desc:      descs[r.IntN(len(descs))],
			ErrorCode: codes[r.IntN(len(codes))],
			Detail:    text(),
			Elapsed:   time.Duration(1 + r.Int64N(1<<50)),
		},
		ProviderID:     "fake:///zone/" + text(),
		NodeName:       "node-" + text(),
		LastKnownState: text(),

		OwnerUID:           text(),
		AppliedGeneration:  1 + r.Int64N(1<<40),
		RejectedGeneration: 1 + r.Int64N(1<<40),
		InPlaceGeneration:  1 + r.Int64N(1<<40),
		Metadata:           map[string]string{text(): text(), "team": text()},
		MetadataObserved:   stamp(),
		MetadataSince:      stamp(),
		CreationFrom:       stamp(),
		PreserveUntil:      stamp(),
		UIDHash:            retry.KeyHash(r.Uint64() | 1),
	}
	for range 1 + r.IntN(3) {
		st.Addresses = append(st.Addresses, driverapi.Address{Type: "InternalIP", Address: text()})
	}
	for range 1 + r.IntN(3) {
		st.Conditions = append(st.Conditions, lifecycle.Condition{
			Type:   text(),
			Status: lifecycle.ConditionStatus(r.IntN(3)),
			// API times keep whole seconds.
			Since:   lifecycle.StampOf(time.Unix(1+r.Int64N(1<<33), 0)),
			Reason:  text(),
			Message: text(),
		})
	}
	return st
}

// machineNamed returns a machine of that name with an empty status.
func machineNamed(name string) *Machine {
	return &Machine{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// requireAllSet fails unless every field of the struct v, and of the
// structs it holds, is set.
func requireAllSet(t *testing.T, path string, v reflect.Value) {
	t.Helper()
	for f := range v.NumField() {
		name := path + "." + v.Type().Field(f).Name
		require.False(t, v.Field(f).IsZero(), "randomStatus leaves %s unset", name)
		if v.Field(f).Kind() == reflect.Struct {
			requireAllSet(t, name, v.Field(f))
		}
	}
}

// viaAPI sends the status through JSON as the API server stores it.
func viaAPI(t *testing.T, s MachineStatus) MachineStatus {
	t.Helper()
	b, err := json.Marshal(&Machine{Status: s})
	require.NoError(t, err)
	var m Machine
	require.NoError(t, json.Unmarshal(b, &m))
	return m.Status
}

func TestStatusRoundTripsEveryField(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for i := range 500 {
		st := randomStatus(r)
		if i == 0 {
			// The sample sets every field, so a field added to
			// lifecycle.Status fails here until the conversion carries it.
			requireAllSet(t, "lifecycle.Status", reflect.ValueOf(st))
		}
		ms := viaAPI(t, StatusOf(machineNamed("machine-1"), &st, Decided{}, now))
		got, err := ms.ToLifecycle()
		require.NoError(t, err)
		require.Equal(t, st, got)
	}
}

func TestStatusRoundTripsZeroAndEmpty(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for _, st := range []lifecycle.Status{
		{},
		{Phase: phase.Running},
		{Phase: phase.Pending, LastOp: lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateProcessing, Desc: lastop.DescCreating}},
	} {
		ms := viaAPI(t, StatusOf(machineNamed("machine-1"), &st, Decided{}, now))
		got, err := ms.ToLifecycle()
		require.NoError(t, err)
		require.Equal(t, st, got)
	}
}

func TestStatusOfWritesMCMFields(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	since := now.Add(-time.Minute)
	st := lifecycle.Status{
		Phase:      phase.CrashLoopBackOff,
		PhaseSince: lifecycle.StampOf(since),
		LastOp: lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateFailed, Desc: lastop.DescCloudProviderError,
			ErrorCode: "ResourceExhausted", Detail: "machine codes error: code = [ResourceExhausted] message = [quota]"},
	}
	m := machineNamed("machine-1")
	ms := StatusOf(m, &st, Decided{}, now)
	require.Equal(t, "CrashLoopBackOff", ms.CurrentStatus.Phase)
	require.Equal(t, "ResourceExhausted", ms.LastOperation.ErrorCode)
	require.Equal(t, "Failed", ms.LastOperation.State)
	require.Equal(t, "Create", ms.LastOperation.Type)
	require.Equal(t, lifecycle.Describe(&st, "machine-1"), ms.LastOperation.Description)
	require.Equal(t, now, ms.LastOperation.LastUpdateTime.Time)
	require.Equal(t, since, ms.CurrentStatus.LastUpdateTime.Time.UTC())

	// An unchanged record keeps its update time.
	m.Status = ms
	later := StatusOf(m, &st, Decided{}, now.Add(time.Hour))
	require.Equal(t, now, later.LastOperation.LastUpdateTime.Time)
}

func TestToLifecycleAdoptsAnMCMStatus(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	ms := MachineStatus{
		CurrentStatus: CurrentStatus{Phase: "Terminating", LastUpdateTime: since},
		LastOperation: LastOperation{
			Description: "Drain successful. Initiate VM deletion",
			State:       "Processing",
			Type:        "Delete",
		},
	}
	st, err := ms.ToLifecycle()
	require.NoError(t, err)
	require.Equal(t, phase.Terminating, st.Phase)
	require.Equal(t, lifecycle.StampOf(since.Time), st.PhaseSince)
	require.Equal(t, lastop.StepDeleteVM, st.LastOp.Desc.Step())
	require.Equal(t, ms.LastOperation.Description, lifecycle.Describe(&st, "machine-1"))
}

func TestToLifecycleRefusesUnknownTexts(t *testing.T) {
	for _, ms := range []MachineStatus{
		{CurrentStatus: CurrentStatus{Phase: "Sleeping"}},
		{LastOperation: LastOperation{State: "Done"}},
		{Lifecycle: &LifecycleState{Stage: "nowhere"}},
		{Lifecycle: &LifecycleState{PhaseSince: "yesterday"}},
		{Lifecycle: &LifecycleState{Operation: Operation{Desc: "no-such-desc"}}},
		{Lifecycle: &LifecycleState{UIDHash: "not-hexadecimal!"}},
		{Lifecycle: &LifecycleState{UIDHash: "1f"}},
		{Lifecycle: &LifecycleState{UIDHash: "+123456789abcdef"}},
		{Lifecycle: &LifecycleState{Flags: []string{"drain-forced", "no-such-flag"}}},
		{Lifecycle: &LifecycleState{Flags: []string{"bit-32"}}},
		{Lifecycle: &LifecycleState{Flags: []string{"bit-03"}}},
		{NodeConditions: []corev1.NodeCondition{{Type: "Ready", Status: "Maybe"}}},
	} {
		_, err := ms.ToLifecycle()
		require.Error(t, err, "%+v", ms)
	}
}

package mcm

import (
	"testing"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// The extreme instants a lifecycle.Stamp holds: StampOf saturates to them,
// so they stand for every time beyond, and are refused as out of range.
var (
	stampMax = time.Unix(0, 1<<63-1).UTC()
	stampMin = time.Unix(0, -1<<63).UTC()
)

// TestStatusFromRefusesTimesOutOfStampRange: a time outside the years a
// lifecycle.Stamp holds (1678 to 2262), in the annotation or in an MCM
// field StatusFrom reads as a stamp, is an error wrapping ErrInvalidState,
// never a stamp that wrapped around or saturated.
func TestStatusFromRefusesTimesOutOfStampRange(t *testing.T) {
	early := time.Date(1600, 6, 1, 0, 0, 0, 0, time.UTC)
	late := time.Date(3000, 6, 1, 0, 0, 0, 0, time.UTC)
	rfc := func(t time.Time) string { return t.Format(time.RFC3339Nano) }

	// written is a machine the lifecycle wrote, with a mirrored condition.
	written := func() *v1alpha1.Machine {
		m := newMachine()
		ApplyStatus(lifecycle.Status{Phase: phase.Unknown, PhaseSince: lifecycle.StampOf(entered),
			LastOp:     lastop.Operation{Type: lastop.TypeHealthCheck, State: lastop.StateProcessing, Desc: lastop.DescNodeMissing},
			Conditions: []lifecycle.Condition{{Type: "Ready", Status: lifecycle.ConditionFalse, Since: lifecycle.StampOf(entered)}},
		}, m, adoptedAt)
		return m
	}
	// withAnnotation is the written machine with an annotation holding
	// members (JSON) and the current check.
	withAnnotation := func(members string) func() *v1alpha1.Machine {
		return func() *v1alpha1.Machine {
			m := written()
			m.Annotations[StateAnnotation] = `{` + members + `,"check":"` + check(m) + `"}`
			return m
		}
	}
	annotated := func(field, value string) func() *v1alpha1.Machine {
		return withAnnotation(`"` + field + `":"` + value + `"`)
	}
	// mcmSince is a machine MCM wrote, with a mirrored condition, its
	// phase entered at at.
	mcmSince := func(at time.Time) func() *v1alpha1.Machine {
		return func() *v1alpha1.Machine { return unknownSince(at) }
	}
	// transition is the machine of base with its condition's transition
	// at at.
	transition := func(base func() *v1alpha1.Machine, at time.Time) func() *v1alpha1.Machine {
		return func() *v1alpha1.Machine {
			m := base()
			m.Status.Conditions[0].LastTransitionTime = metav1.NewTime(at)
			return m
		}
	}
	tests := []struct {
		name    string
		machine func() *v1alpha1.Machine
	}{
		{"annotation phaseSince in the year 3000", annotated("phaseSince", rfc(late))},
		{"annotation phaseSince in the year 1600", annotated("phaseSince", rfc(early))},
		{"annotation stageSince in the year 3000", annotated("stageSince", rfc(late))},
		{"annotation retryAfter in the year 3000", annotated("retryAfter", rfc(late))},
		{"annotation metadataObserved in the year 1600", annotated("metadataObserved", rfc(early))},
		{"annotation metadataSince in the year 3000", annotated("metadataSince", rfc(late))},
		{"annotation creationFrom in the year 1600", annotated("creationFrom", rfc(early))},
		{"annotation phaseSince at the largest stamp, which saturation gives", annotated("phaseSince", rfc(stampMax))},
		{"annotation phaseSince at the smallest stamp, which saturation gives", annotated("phaseSince", rfc(stampMin))},
		{"annotation in the year 10000", annotated("retryAfter", "10000-01-01T00:00:00Z")},
		{"annotation condition nanoseconds above a second", withAnnotation(`"conditionNanos":[1000000000]`)},
		{"annotation condition nanoseconds negative", withAnnotation(`"conditionNanos":[-1]`)},
		{"annotation condition nanoseconds past the largest stamp",
			transition(withAnnotation(`"conditionNanos":[999999999]`), stampMax.Truncate(time.Second))},
		{"condition transition in the year 3000, annotation current", transition(written, late)},
		{"MCM's lastUpdateTime in the year 3000", mcmSince(late)},
		{"MCM's lastUpdateTime in the year 1600", mcmSince(early)},
		{"MCM's lastUpdateTime in the year 3000, annotation stale", func() *v1alpha1.Machine {
			m := unknownSince(late)
			m.Annotations[StateAnnotation] = `{"attempt":2,"check":"00000000"}`
			return m
		}},
		{"MCM's condition transition in the year 1600", transition(mcmSince(entered), early)},
		{"MCM's condition transition at the smallest stamp", transition(mcmSince(entered), stampMin)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.machine()
			_, err := StatusFrom(m)
			require.ErrorIs(t, err, ErrInvalidState)
			// The API server's JSON keeps whole seconds: still refused.
			_, err = StatusFrom(viaJSON(t, m))
			require.ErrorIs(t, err, ErrInvalidState)
		})
	}
}

// TestStatusFromAcceptsTheWholeStampRange: the times next to the extremes
// are stamps like any other, and read back exactly.
func TestStatusFromAcceptsTheWholeStampRange(t *testing.T) {
	for _, at := range []time.Time{stampMax.Add(-1), stampMin.Add(1), time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)} {
		s := lifecycle.StampOf(at)
		requireRoundTrip(t, lifecycle.Status{Phase: phase.Unknown, PhaseSince: s, StageSince: s, RetryAfter: s,
			MetadataObserved: s, MetadataSince: s, CreationFrom: s,
			Conditions: []lifecycle.Condition{{Type: "Ready", Status: lifecycle.ConditionFalse, Since: s}}})
	}
	// MCM's fields carry whole seconds.
	for _, at := range []time.Time{stampMax.Truncate(time.Second), stampMin.Truncate(time.Second).Add(time.Second)} {
		m := unknownSince(at)
		m.Status.Conditions[0].LastTransitionTime = metav1.NewTime(at)
		st, err := StatusFrom(viaJSON(t, m))
		require.NoError(t, err, "%v", at)
		require.Equal(t, lifecycle.StampOf(at), st.PhaseSince)
		require.Equal(t, lifecycle.StampOf(at), st.Conditions[0].Since)
	}
}

// unknownSince returns an Unknown machine MCM wrote, with the NotReady
// condition it mirrored, its phase entered at at.
func unknownSince(at time.Time) *v1alpha1.Machine {
	m := withConditions(notReady(entered), mcmMachine(v1alpha1.MachineUnknown, v1alpha1.MachineOperationHealthCheck,
		v1alpha1.MachineStateProcessing, "", "Node object went missing. Machine m-1 is unhealthy - changing MachinePhase to Unknown"))
	m.Status.CurrentStatus.LastUpdateTime = metav1.NewTime(at)
	return m
}

// TestNodeFromReadsATransitionOutOfStampRangeAsUnset: NodeFrom cannot
// refuse a node; a condition whose transition time lies outside the years
// a stamp holds is read as having none (as MCM reads the zero time), so it
// neither wraps nor saturates into a stamp the machine's status would then
// mirror and StatusFrom refuse.
func TestNodeFromReadsATransitionOutOfStampRangeAsUnset(t *testing.T) {
	for _, at := range []time.Time{time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), stampMax} {
		n := readyNode()
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "KernelDeadlock", Status: corev1.ConditionFalse,
			LastTransitionTime: metav1.NewTime(at)})
		got := NodeFrom(n)
		require.Equal(t, lifecycle.StampOf(created.Add(2*time.Minute)), got.Conditions[0].Since)
		require.Equal(t, lifecycle.Condition{Type: "KernelDeadlock", Status: lifecycle.ConditionFalse}, got.Conditions[1], "%v", at)
	}
}

// TestStatusFromRefusesASaturatedStamp: a status holding an extreme stamp
// (what StampOf gives for a time beyond the range) is written as it is and
// refused on reading, not read back as a time that lies in range.
func TestStatusFromRefusesASaturatedStamp(t *testing.T) {
	for _, s := range []lifecycle.Stamp{lifecycle.StampOf(stampMax), lifecycle.StampOf(stampMin)} {
		m := newMachine()
		ApplyStatus(lifecycle.Status{Phase: phase.Terminating, Stage: lifecycle.StageDrain, StageSince: s}, m, adoptedAt)
		_, err := StatusFrom(m)
		require.ErrorIs(t, err, ErrInvalidState)
	}
}

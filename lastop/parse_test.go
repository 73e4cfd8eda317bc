package lastop

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseEmptyIsNone(t *testing.T) {
	require.Equal(t, Parsed{}, Parse(""))
}

func TestParseUnknownText(t *testing.T) {
	cases := []struct {
		name string
		text string
		step Step
	}{
		{"foreign text", "Updated provider ID", StepNone},
		{"a template's prefix alone", "Cloud provider message -", StepNone},
		{"MCM text with a trailing space", "Initiate node drain ", StepDrain},
		{"lower-cased MCM text", "vm using old node obj", StepNone},
		{"a marker inside unknown text gives MCM's step", "operator note: Initiate VM deletion soon", StepDeleteVM},
		{"GetVMStatus wins in unknown text as in MCM", "Initiate node drain / Set machine status to termination. Now, getting VM Status!", StepGetVMStatus},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, Parsed{Desc: DescUnknown, Step: c.step, Detail: c.text}, Parse(c.text))
		})
	}
}

func TestParseAmbiguousTexts(t *testing.T) {
	cases := []struct {
		name string
		text string
		want Parsed
	}{
		{
			name: "S1j is not read as S1e with a 'machine code: ' detail",
			text: "Error occurred with decoding machine error status while getting VM status, aborting without retry. machine code: x Set machine status to termination. Now, getting VM Status",
			want: Parsed{Desc: DescGetVMStatusFailed, Step: StepGetVMStatus, Detail: "x"},
		},
		{
			name: "S1e with an empty error keeps both spaces",
			text: "Error occurred with decoding machine error status while getting VM status, aborting without retry.  Set machine status to termination. Now, getting VM Status",
			want: Parsed{Desc: DescGetVMStatusUndecodable, Step: StepGetVMStatus},
		},
		{
			name: "an error embedding the GetVMStatus marker still parses as S4c at step 4",
			text: "VM deletion failed due to - oops: Set machine status to termination. Now, getting VM Status. However, will re-try in the next resync. Initiate VM deletion",
			want: Parsed{Desc: DescVMDeletionRetry, Step: StepDeleteVM, Detail: "oops: Set machine status to termination. Now, getting VM Status"},
		},
		{
			name: "an error embedding another template's whole text stays detail",
			text: "Cloud provider message - Drain successful. Initiate VM deletion",
			want: Parsed{Desc: DescCloudProviderError, Detail: "Drain successful. Initiate VM deletion"},
		},
		{
			name: "an error embedding S4d's suffix parses as S4c when the text ends like S4c",
			text: "VM deletion failed due to - a. Aborting operation. Initiate VM deletion. However, will re-try in the next resync. Initiate VM deletion",
			want: Parsed{Desc: DescVMDeletionRetry, Step: StepDeleteVM, Detail: "a. Aborting operation. Initiate VM deletion"},
		},
		{
			name: "a machine name never spans template text",
			text: "Machine m failed to update dependencies: agent failed to join the cluster in 5m0s minutes.",
			want: Parsed{Desc: DescInPlaceUpdateFailed, Detail: "agent failed to join the cluster in 5m0s minutes.", Args: Args{Machine: "m"}},
		},
		{
			name: "the in-place drain failure text is S2d's",
			text: "Drain failed due to - x. Will retry in next sync. Initiate node drain",
			want: Parsed{Desc: DescDrainFailed, Step: StepDrain, Detail: "x"},
		},
		{
			name: "a detail can be empty",
			text: "Cloud provider message - ",
			want: Parsed{Desc: DescCloudProviderError},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, Parse(c.text))
		})
	}
}

func TestParseRejectsInexactValues(t *testing.T) {
	cases := []struct {
		name string
		text string
	}{
		{"a duration Go does not print that way", "Machine m failed to join the cluster in 20m minutes."},
		{"a duration that is not one", "Machine m failed to join the cluster in twenty minutes."},
		{"a duration in words", "Machine m successfully joined the cluster in ages"},
		{"a machine name with a space", "Machine a b successfully re-joined the cluster"},
		{"an unquoted node name where MCM quotes", "No node object found for n, continuing deletion flow. Initiate machine object finalizer removal"},
		{"a quoted name Go would quote differently", `No node object found for "\x6e", continuing deletion flow. Initiate machine object finalizer removal`},
		{"a broken quoted name", `No node object found for "n, continuing deletion flow. Initiate machine object finalizer removal`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Parse(c.text)
			require.Equal(t, DescUnknown, p.Desc)
			require.Equal(t, c.text, p.Detail)
			op, a := FromLastOperation(LastOperation{Description: c.text})
			require.Equal(t, c.text, op.Describe(a))
		})
	}
}

func TestParseNegativeAndZeroDurations(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second, time.Nanosecond, 1<<63 - 1} {
		text := Operation{Desc: DescJoined, Elapsed: d}.Describe(Args{Machine: "m"})
		p := Parse(text)
		require.Equal(t, DescJoined, p.Desc, text)
		require.Equal(t, d, p.Elapsed, text)
	}
}

func TestRenderAndFromLastOperationRoundTrip(t *testing.T) {
	at := time.Date(2026, 8, 19, 9, 20, 30, 0, time.UTC)
	for _, c := range descCases() {
		t.Run(c.desc.String(), func(t *testing.T) {
			op := Operation{
				Type:      TypeDelete,
				State:     StateFailed,
				Desc:      c.desc,
				ErrorCode: "Unavailable",
				Detail:    c.detail,
				Elapsed:   c.elapsed,
			}
			lo := op.Render(testArgs, at)
			require.Equal(t, LastOperation{
				Description: c.want, ErrorCode: "Unavailable", LastUpdateTime: at,
				State: StateFailed, Type: TypeDelete,
			}, lo)

			back, args := FromLastOperation(lo)
			require.Equal(t, op, back)
			require.Equal(t, c.want, back.Describe(args))
		})
	}
}

func TestFromLastOperationOfUnknownText(t *testing.T) {
	lo := LastOperation{Description: "Updated provider ID", State: StateSuccessful, Type: TypeUpdate}
	op, args := FromLastOperation(lo)
	require.Equal(t, Operation{Type: TypeUpdate, State: StateSuccessful, Desc: DescUnknown, Detail: "Updated provider ID"}, op)
	require.Equal(t, Args{}, args)
	require.Equal(t, lo, op.Render(args, time.Time{}))
}

// mcmTime and mcmNodeCondition mirror metav1.Time and corev1.NodeCondition
// (field order, embedding, and the pointer-receiver String of the generated
// protobuf code), so fmt's %+v can serve as the reference for FormatConditions.
type mcmTime struct {
	time.Time
}

type mcmNodeCondition struct {
	Type               string
	Status             string
	LastHeartbeatTime  mcmTime
	LastTransitionTime mcmTime
	Reason             string
	Message            string
}

func (c *mcmNodeCondition) String() string { return "not used by %+v of a slice" }

func TestFormatConditionsMatchesFmt(t *testing.T) {
	t1 := time.Date(2026, 8, 19, 9, 20, 30, 0, time.UTC)
	t2 := time.Date(2026, 8, 19, 9, 15, 0, 123, time.FixedZone("CEST", 2*3600))
	cases := [][]NodeCondition{
		nil,
		{},
		{{Type: "Ready", Status: "False", LastHeartbeatTime: t1, LastTransitionTime: t1.Add(-5*time.Minute + 30*time.Second), Reason: "KubeletNotReady", Message: "PLEG is not healthy"}},
		{
			{Type: "Ready", Status: "True", LastHeartbeatTime: t1, LastTransitionTime: t2},
			{Type: "DiskPressure", Status: "Unknown", Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status."},
		},
	}
	for _, conds := range cases {
		var mirror []mcmNodeCondition
		for _, c := range conds {
			mirror = append(mirror, mcmNodeCondition{c.Type, c.Status, mcmTime{c.LastHeartbeatTime}, mcmTime{c.LastTransitionTime}, c.Reason, c.Message})
		}
		require.Equal(t, fmt.Sprintf("%+v", mirror), FormatConditions(conds))
	}
	// The conditions of the test table render to the sample text.
	require.Equal(t, testConditions, FormatConditions([]NodeCondition{{
		Type: "Ready", Status: "False", LastHeartbeatTime: t1, LastTransitionTime: time.Date(2026, 8, 19, 9, 15, 0, 0, time.UTC),
		Reason: "KubeletNotReady", Message: "PLEG is not healthy",
	}}))
}

func TestFormatConditionsDropsMonotonicReading(t *testing.T) {
	// A time carrying a monotonic reading (as one from time.Now does) prints
	// like the same instant read back from an API object.
	wall := time.Date(2026, 8, 19, 9, 20, 30, 0, time.UTC)
	withMono := time.Now()
	withMono = withMono.Add(wall.Sub(withMono))
	require.Contains(t, withMono.String(), "m=")
	got := FormatConditions([]NodeCondition{{LastHeartbeatTime: withMono, LastTransitionTime: withMono}})
	require.NotContains(t, got, "m=")
	require.Contains(t, got, "LastHeartbeatTime:"+wall.In(time.Local).String()+" ")
}

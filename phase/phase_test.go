package phase

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStringMatchesMCM(t *testing.T) {
	want := []string{"", "Pending", "Available", "Running", "Terminating", "Unknown", "Failed",
		"CrashLoopBackOff", "InPlaceUpdating", "InPlaceUpdateSuccessful", "InPlaceUpdateFailed"}
	require.Len(t, All(), len(want))
	for i, p := range All() {
		require.Equal(t, want[i], p.String())
		got, err := Parse(p.String())
		require.NoError(t, err)
		require.Equal(t, p, got, "round trip of %q", p.String())
	}
}

func TestParseRejectsUnknownText(t *testing.T) {
	for _, s := range []string{"None", "running", " Running", "Running ", "Phase(11)", "Deleted", "\x00"} {
		p, err := Parse(s)
		require.Error(t, err, s)
		require.True(t, errors.Is(err, ErrUnknownPhase), s)
		require.Contains(t, err.Error(), "phase: unknown phase")
		require.Equal(t, None, p)
	}
}

func TestInvalidValues(t *testing.T) {
	p := Phase(200)
	require.False(t, p.Valid())
	require.Equal(t, "Phase(200)", p.String())
	_, err := p.MarshalText()
	require.Error(t, err)
	require.False(t, Allowed(p, p))
	require.False(t, Allowed(p, Running))
	require.False(t, Allowed(Running, p))
	require.Equal(t, "None", None.Label())
	require.Equal(t, "Running", Running.Label())
}

func TestTextMarshalling(t *testing.T) {
	type doc struct{ Phase Phase }
	b, err := json.Marshal(doc{Phase: CrashLoopBackOff})
	require.NoError(t, err)
	require.JSONEq(t, `{"Phase":"CrashLoopBackOff"}`, string(b))
	var d doc
	require.NoError(t, json.Unmarshal([]byte(`{"Phase":"Unknown"}`), &d))
	require.Equal(t, Unknown, d.Phase)
	d.Phase = Running
	require.Error(t, json.Unmarshal([]byte(`{"Phase":"Bogus"}`), &d))
	require.Equal(t, Running, d.Phase, "failed unmarshal leaves the value")
}

func TestEdgesAgreeWithAllowed(t *testing.T) {
	declared := map[[2]Phase]bool{}
	for _, e := range Edges() {
		require.NotEqual(t, e.From, e.To)
		require.NotEmpty(t, e.Why)
		require.Equal(t, e.Why, Why(e.From, e.To))
		declared[[2]Phase{e.From, e.To}] = true
	}
	for _, from := range All() {
		for _, to := range All() {
			want := from == to || declared[[2]Phase{from, to}]
			assert.Equal(t, want, Allowed(from, to), "%s -> %s", from.Label(), to.Label())
		}
	}
}

func TestDeclaredEdges(t *testing.T) {
	// The relation the flows rely on (a safety promise of lifecycletest.Check:
	// every phase change is declared). Each line is a promise; removing one
	// must be deliberate.
	must := [][2]Phase{
		{None, Pending}, {None, Available}, {None, CrashLoopBackOff}, {None, Failed}, {None, Terminating},
		{CrashLoopBackOff, Pending}, {CrashLoopBackOff, Available}, {CrashLoopBackOff, Failed}, {CrashLoopBackOff, Running},
		{Pending, Running}, {Pending, Failed}, {Pending, Terminating},
		{Running, Unknown}, {Running, Terminating},
		{Unknown, Running}, {Unknown, Failed}, {Unknown, Terminating},
		{Failed, Running}, {Failed, Terminating},
		{Available, Terminating},
	}
	for _, e := range must {
		require.True(t, Allowed(e[0], e[1]), "%s -> %s", e[0].Label(), e[1].Label())
	}
	mustNot := [][2]Phase{
		{Terminating, Running}, {Terminating, None}, {Terminating, Failed},
		{Running, Failed}, {Running, Pending}, {Running, None},
		{None, Running}, {None, Unknown}, {Pending, Unknown}, {Failed, Pending}, {Available, Running},
	}
	for _, e := range mustNot {
		require.False(t, Allowed(e[0], e[1]), "%s -> %s", e[0].Label(), e[1].Label())
	}
}

func TestPredicates(t *testing.T) {
	for _, p := range All() {
		require.Equal(t, p == None || p == Pending || p == CrashLoopBackOff, p.Creating(), p.Label())
		require.Equal(t, p == InPlaceUpdating || p == InPlaceUpdateSuccessful || p == InPlaceUpdateFailed, p.InPlace(), p.Label())
	}
}

func TestAllowedDoesNotAllocate(t *testing.T) {
	n := testing.AllocsPerRun(100, func() {
		_ = Allowed(Pending, Running)
		_ = Running.String()
	})
	require.Zero(t, n)
}

func FuzzParse(f *testing.F) {
	for _, p := range All() {
		f.Add(p.String())
	}
	f.Add("None")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err != nil {
			return
		}
		if p.String() != s {
			t.Fatalf("Parse(%q) = %v, which renders %q", s, p, p.String())
		}
	})
}

// BenchmarkAllowed checks every pair of valid phases, 121 calls an op, as a
// step does once per phase change.
func BenchmarkAllowed(b *testing.B) {
	n := 0
	for b.Loop() {
		for from := range Phase(Count) {
			for to := range Phase(Count) {
				if Allowed(from, to) {
					n++
				}
			}
		}
	}
	if n == 0 {
		b.Fatal("no change allowed")
	}
}

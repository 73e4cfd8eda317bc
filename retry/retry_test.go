package retry

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPeriodsMatchMCM pins the four MCM retry periods (the retry periods of
// doc/mcm-rows.md).
func TestPeriodsMatchMCM(t *testing.T) {
	require.Equal(t, 200*time.Millisecond, Conflict)
	require.Equal(t, 5*time.Second, Short)
	require.Equal(t, 3*time.Minute, Medium)
	require.Equal(t, 10*time.Minute, Long)
}

func TestClassString(t *testing.T) {
	tests := []struct {
		c    Class
		want string
	}{
		{ClassNone, "none"},
		{ClassConflict, "conflict"},
		{ClassTransient, "transient"},
		{ClassExhausted, "exhausted"},
		{ClassPermanent, "permanent"},
		{ClassUndecodable, "undecodable"},
		{ClassUndecodable + 1, "Class(6)"},
		{Class(255), "Class(255)"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, tt.c.String())
	}
}

func TestClassZeroValueIsNone(t *testing.T) {
	var c Class
	require.Equal(t, ClassNone, c)
}

func TestPeriodPerClass(t *testing.T) {
	configured := Policy{ResourceExhausted: 7 * time.Minute}
	tests := []struct {
		name string
		p    Policy
		c    Class
		want time.Duration
	}{
		{"none", DefaultPolicy(), ClassNone, 0},
		{"conflict", DefaultPolicy(), ClassConflict, Conflict},
		{"transient", DefaultPolicy(), ClassTransient, Short},
		{"exhausted default", DefaultPolicy(), ClassExhausted, Long},
		{"exhausted configured", configured, ClassExhausted, 7 * time.Minute},
		{"exhausted zero means Long", Policy{}, ClassExhausted, Long},
		{"exhausted negative means Long", Policy{ResourceExhausted: -time.Second}, ClassExhausted, Long},
		{"exhausted tiny configured", Policy{ResourceExhausted: 1}, ClassExhausted, 1},
		{"permanent", DefaultPolicy(), ClassPermanent, Medium},
		{"undecodable", DefaultPolicy(), ClassUndecodable, Medium},
		{"unknown class", DefaultPolicy(), ClassUndecodable + 1, Medium},
		{"unknown class max", DefaultPolicy(), Class(255), Medium},
		{"configured does not affect transient", configured, ClassTransient, Short},
		{"configured does not affect permanent", configured, ClassPermanent, Medium},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.p.Period(tt.c))
		})
	}
}

func TestDefaultPolicy(t *testing.T) {
	p := DefaultPolicy()
	require.Equal(t, Policy{ResourceExhausted: Long, MaxBackoff: Long, JitterPercent: 10}, p)
	require.NoError(t, p.Validate())
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		p       Policy
		wantErr string // empty: valid
	}{
		{"zero policy", Policy{}, ""},
		{"default policy", DefaultPolicy(), ""},
		{"jitter 0", Policy{JitterPercent: 0}, ""},
		{"jitter 100", Policy{JitterPercent: 100}, ""},
		{"negative ResourceExhausted", Policy{ResourceExhausted: -time.Second},
			"retry: ResourceExhausted must not be negative, got -1s"},
		{"negative MaxBackoff", Policy{MaxBackoff: -time.Minute},
			"retry: MaxBackoff must not be negative, got -1m0s"},
		{"ResourceExhausted above a year", Policy{ResourceExhausted: MaxPeriod + 1},
			"retry: ResourceExhausted must be at most 8760h0m0s, got 8760h0m0.000000001s"},
		{"MaxBackoff near the limit of a duration", Policy{MaxBackoff: 1<<63 - 1},
			"retry: MaxBackoff must be at most 8760h0m0s, got 2562047h47m16.854775807s"},
		{"negative JitterPercent", Policy{JitterPercent: -1},
			"retry: JitterPercent must be within 0..100, got -1"},
		{"JitterPercent above 100", Policy{JitterPercent: 101},
			"retry: JitterPercent must be within 0..100, got 101"},
		{"first invalid field reported", Policy{ResourceExhausted: -1, MaxBackoff: -1, JitterPercent: 500},
			"retry: ResourceExhausted must not be negative, got -1ns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.wantErr)
		})
	}
}

func TestPeriodDoesNotAllocate(t *testing.T) {
	p := DefaultPolicy()
	var sink time.Duration
	allocs := testing.AllocsPerRun(1000, func() {
		for c := ClassNone; c <= ClassUndecodable+1; c++ {
			sink += p.Period(c)
		}
	})
	require.Zero(t, allocs)
	require.NotZero(t, sink)
}

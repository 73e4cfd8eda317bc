package lifecycle_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// member is a fleet member of owner, in phase p since the given minute
// after t0. Unknown members since minute 0 are past the 10m health timeout
// at limiterNow.
func member(name, owner string, p phase.Phase, sinceMinute int) lifecycle.Member {
	return lifecycle.Member{Name: name, UID: "uid-" + name, Owner: owner, Phase: p,
		PhaseSince: lifecycle.StampOf(t0.Add(time.Duration(sinceMinute) * time.Minute))}
}

var limiterNow = t0.Add(30 * time.Minute)

func granted(out []lifecycle.Grant) []int {
	var idx []int
	for i, g := range out {
		if g.Fail {
			idx = append(idx, i)
		}
	}
	return idx
}

func TestLimit(t *testing.T) {
	base := lifecycle.DefaultConfig()
	withLimit := func(l lifecycle.ReplacementLimit) lifecycle.Config { c := base; c.Replacements = l; return c }
	cases := []struct {
		name  string
		cfg   lifecycle.Config
		obs   lifecycle.Observer
		fleet []lifecycle.Member
		want  []int
	}{
		{
			name:  "one replacement at a time per owner, oldest Unknown first",
			cfg:   base,
			fleet: []lifecycle.Member{member("a", "o", phase.Unknown, 5), member("b", "o", phase.Unknown, 1), member("c", "o", phase.Running, 0)},
			want:  []int{1},
		},
		{
			name:  "a Pending peer is in flight: nothing granted (T3)",
			cfg:   base,
			fleet: []lifecycle.Member{member("a", "o", phase.Unknown, 0), member("b", "o", phase.Pending, 25)},
		},
		{
			name: "a machine holding a grant, not yet Failed, counts and keeps its grant",
			cfg:  base,
			fleet: func() []lifecycle.Member {
				held := member("a", "o", phase.Unknown, 0)
				held.Flags = lifecycle.FlagGranted
				return []lifecycle.Member{held, member("b", "o", phase.Unknown, 0)}
			}(),
			want: []int{0},
		},
		{
			name:  "Unknown before its health timeout is not granted",
			cfg:   base,
			fleet: []lifecycle.Member{member("a", "o", phase.Unknown, 25)},
		},
		{
			name: "per-machine health timeout and disableHealthTimeout are honoured",
			cfg:  base,
			fleet: func() []lifecycle.Member {
				long := member("a", "o", phase.Unknown, 0)
				long.HealthTimeout = time.Hour
				off := member("b", "p", phase.Unknown, 0)
				off.DisableHealthTimeout = true
				return []lifecycle.Member{long, off}
			}(),
		},
		{
			name: "a deleting machine is never granted, and counts as in flight",
			cfg:  base,
			fleet: func() []lifecycle.Member {
				del := member("a", "o", phase.Unknown, 0)
				del.Deleting = true
				return []lifecycle.Member{del, member("b", "o", phase.Unknown, 0)}
			}(),
		},
		{
			name:  "owners are limited independently",
			cfg:   base,
			fleet: []lifecycle.Member{member("a", "o1", phase.Unknown, 0), member("b", "o2", phase.Unknown, 0), member("c", "o1", phase.Unknown, 0)},
			want:  []int{0, 1},
		},
		{
			name:  "machines without an owner are limited together (deviation, doc/mcm-compat.md)",
			cfg:   base,
			fleet: []lifecycle.Member{member("a", "", phase.Unknown, 0), member("b", "", phase.Unknown, 1), member("c", "", phase.Unknown, 2)},
			want:  []int{0},
		},
		{
			name: "a configurable count (deviation, doc/mcm-compat.md)",
			cfg:  withLimit(lifecycle.ReplacementLimit{Count: 2}),
			fleet: []lifecycle.Member{member("a", "o", phase.Unknown, 0), member("b", "o", phase.Unknown, 1),
				member("c", "o", phase.Unknown, 2)},
			want: []int{0, 1},
		},
		{
			name: "a percentage of the owner's machines, rounded up",
			cfg:  withLimit(lifecycle.ReplacementLimit{Percent: 25}),
			fleet: []lifecycle.Member{member("a", "o", phase.Unknown, 0), member("b", "o", phase.Unknown, 1),
				member("c", "o", phase.Unknown, 2), member("d", "o", phase.Running, 0), member("e", "o", phase.Running, 0),
				member("f", "o", phase.Running, 0)},
			want: []int{0, 1},
		},
		{
			name:  "Terminating counts once (MCM counts it twice)",
			cfg:   withLimit(lifecycle.ReplacementLimit{Count: 2}),
			fleet: []lifecycle.Member{member("a", "o", phase.Unknown, 0), member("b", "o", phase.Terminating, 0)},
			want:  []int{0},
		},
		{
			name:  "an InPlaceUpdateFailed machine does not block itself",
			cfg:   base,
			fleet: []lifecycle.Member{member("a", "o", phase.InPlaceUpdateFailed, 0), member("b", "o", phase.Running, 0)},
			want:  []int{0},
		},
		{
			name:  "Available machines are settled, not in flight",
			cfg:   base,
			fleet: []lifecycle.Member{member("a", "o", phase.Unknown, 0), member("b", "o", phase.Available, 0)},
			want:  []int{0},
		},
		{
			name: "observer degraded: nothing is past its timeout, held grants are not usable",
			cfg:  base,
			obs:  lifecycle.Observer{Degraded: true},
			fleet: func() []lifecycle.Member {
				held := member("a", "o", phase.Unknown, 0)
				held.Flags = lifecycle.FlagGranted
				return []lifecycle.Member{held, member("b", "p", phase.Unknown, 0)}
			}(),
		},
		{
			name: "two InPlaceUpdateFailed machines of one owner do not block each other",
			cfg:  base,
			fleet: []lifecycle.Member{member("a", "o", phase.InPlaceUpdateFailed, 0),
				member("b", "o", phase.InPlaceUpdateFailed, 1)},
			want: []int{0},
		},
		{
			name: "a held grant no longer usable (timeout disabled or not reached) is dropped and not counted",
			cfg:  base,
			fleet: func() []lifecycle.Member {
				held := member("a", "o", phase.Unknown, 25) // within its timeout again
				held.Flags = lifecycle.FlagGranted
				return []lifecycle.Member{held, member("b", "o", phase.Unknown, 0)}
			}(),
			want: []int{1},
		},
		{
			name:  "after an outage the timeout counts from the recovery",
			cfg:   base,
			obs:   lifecycle.Observer{Since: t0.Add(25 * time.Minute)},
			fleet: []lifecycle.Member{member("a", "o", phase.Unknown, 0)},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.cfg.Validate())
			out := lifecycle.Limit(nil, &tc.cfg, limiterNow, tc.obs, tc.fleet)
			require.Len(t, out, len(tc.fleet))
			require.Equal(t, tc.want, granted(out))
		})
	}
}

func TestLimitReusesItsOutput(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	fleet := []lifecycle.Member{member("a", "o", phase.Unknown, 0), member("b", "o", phase.Running, 0)}
	buf := make([]lifecycle.Grant, 5)
	buf[1].Fail = true // stale content is cleared
	out := lifecycle.Limit(buf, &cfg, limiterNow, lifecycle.Observer{}, fleet)
	require.Equal(t, []lifecycle.Grant{{Fail: true}, {}}, out)
	require.Same(t, &buf[0], &out[0])
}

func TestReplacementLimitValidation(t *testing.T) {
	for _, l := range []lifecycle.ReplacementLimit{{}, {Count: 1, Percent: 10}, {Percent: 101}, {Count: -1}} {
		cfg := lifecycle.DefaultConfig()
		cfg.Replacements = l
		require.ErrorContains(t, cfg.Validate(), "Replacements", "%+v", l)
	}
}

// fleetOf builds n machines spread over owners of 100 machines each, one
// in ten Unknown past its timeout.
func fleetOf(n int) []lifecycle.Member {
	fleet := make([]lifecycle.Member, n)
	for i := range fleet {
		p := phase.Running
		if i%10 == 3 {
			p = phase.Unknown
		}
		fleet[i] = member(fmt.Sprintf("m-%d", i), fmt.Sprintf("owner-%d", i/100), p, i%7)
	}
	return fleet
}

func BenchmarkLimit(b *testing.B) {
	cfg := lifecycle.DefaultConfig()
	for _, n := range []int{10_000, 1_000_000} {
		fleet := fleetOf(n)
		out := make([]lifecycle.Grant, n)
		b.Run(fmt.Sprintf("machines=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out = lifecycle.Limit(out, &cfg, limiterNow, lifecycle.Observer{}, fleet)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/machine")
		})
	}
}

package retry

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const uid = "4f1c2a9e-5b7d-4c1e-9a3f-0d2b6e8c7a15"

func TestBackoffSingleFailureIsBaseExactly(t *testing.T) {
	p := Policy{JitterPercent: 100, MaxBackoff: time.Second}
	for _, base := range []time.Duration{1, Conflict, Short, Medium, Long, math.MaxInt64} {
		for _, failures := range []uint32{0, 1} {
			require.Equal(t, base, p.Backoff(base, 0, failures, uid), "base %v failures %d", base, failures)
			require.Equal(t, base, p.Backoff(base, 1, failures, uid), "limit below base is ignored")
		}
	}
}

func TestBackoffNonPositiveBaseIsZero(t *testing.T) {
	p := DefaultPolicy()
	for _, base := range []time.Duration{0, -1, -Long, math.MinInt64} {
		for _, failures := range []uint32{0, 1, 2, math.MaxUint32} {
			require.Zero(t, p.Backoff(base, 0, failures, uid))
		}
	}
}

func TestBackoffDoublesUntilCap(t *testing.T) {
	p := Policy{} // no jitter
	want := []time.Duration{
		Short, Short, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 320 * time.Second, Long, Long, Long,
	}
	for n, w := range want {
		require.Equal(t, w, p.Backoff(Short, Long, uint32(n), uid), "failures %d", n)
	}
	require.Equal(t, Long, p.Backoff(Short, Long, math.MaxUint32, uid))
}

func TestBackoffLimit(t *testing.T) {
	tests := []struct {
		name  string
		p     Policy
		base  time.Duration
		limit time.Duration
		want  time.Duration
	}{
		{"explicit limit", Policy{MaxBackoff: time.Hour}, Short, time.Minute, time.Minute},
		{"limit 0 uses MaxBackoff", Policy{MaxBackoff: time.Hour}, Short, 0, time.Hour},
		{"limit 0 and MaxBackoff 0 use Long", Policy{}, Short, 0, Long},
		{"negative MaxBackoff uses Long", Policy{MaxBackoff: -time.Hour}, Short, 0, Long},
		{"limit below base means base", Policy{}, Medium, Short, Medium},
		{"negative limit means base", Policy{}, Medium, -1, Medium},
		{"MaxBackoff below base means base", Policy{MaxBackoff: Short}, Medium, 0, Medium},
		{"limit equal to base", Policy{}, Medium, Medium, Medium},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// 5s * 2^61 overflows int64, so only the cap can decide.
			require.Equal(t, tt.want, tt.p.Backoff(tt.base, tt.limit, 62, uid))
		})
	}
}

func TestBackoffSaturatesWithoutOverflow(t *testing.T) {
	bases := []time.Duration{
		1, Conflict, Long, math.MaxInt64/2 - 1, math.MaxInt64 / 2, math.MaxInt64/2 + 1,
		math.MaxInt64 - 1, math.MaxInt64,
	}
	limits := []time.Duration{0, -1, 1, Long, math.MaxInt64 / 2, math.MaxInt64}
	failures := []uint32{2, 3, 31, 32, 33, 62, 63, 64, 65, 1 << 31, math.MaxUint32 - 1, math.MaxUint32}
	for _, pct := range []int{0, 10, 100, 1000} {
		p := Policy{JitterPercent: pct, MaxBackoff: math.MaxInt64}
		for _, base := range bases {
			for _, limit := range limits {
				for _, n := range failures {
					got := p.Backoff(base, limit, n, uid)
					require.Positive(t, got)
					require.GreaterOrEqual(t, got, base, "base %d limit %d failures %d", base, limit, n)
				}
			}
		}
	}
	// With an effectively unlimited cap the doubled base saturates at the
	// cap, and jitter saturates at MaxInt64.
	p := Policy{JitterPercent: 100}
	require.Equal(t, time.Duration(math.MaxInt64), p.Backoff(math.MaxInt64/2, math.MaxInt64, math.MaxUint32, uid))
	require.Equal(t, time.Duration(math.MaxInt64), Policy{}.Backoff(math.MaxInt64/2, math.MaxInt64, math.MaxUint32, uid))
	require.Equal(t, time.Duration(math.MaxInt64-1), Policy{}.Backoff(math.MaxInt64/2, math.MaxInt64, 2, uid))
}

func TestBackoffStaysWithinJitterWindow(t *testing.T) {
	p := DefaultPolicy()
	for n := uint32(2); n < 80; n++ {
		for _, key := range []string{"", "a", uid, "machine-7"} {
			d := Long
			if n < 8 {
				d = Short << (n - 1)
			}
			width := d / 10
			got := p.Backoff(Short, 0, n, key)
			require.GreaterOrEqual(t, got, d, "failures %d", n)
			require.Less(t, got, d+width, "failures %d", n)
		}
	}
}

func TestBackoffJitterDependsOnAttempt(t *testing.T) {
	p := Policy{JitterPercent: 50}
	seen := map[time.Duration]bool{}
	for n := uint32(20); n < 40; n++ { // all capped at Long
		seen[p.Backoff(Short, Long, n, uid)] = true
	}
	require.Greater(t, len(seen), 15, "capped retries of one machine should not all coincide")
}

func TestSpread(t *testing.T) {
	p := DefaultPolicy()
	for _, d := range []time.Duration{0, -1, -Long, math.MinInt64} {
		require.Equal(t, d, p.Spread(d, uid), "non-positive d is returned unchanged")
	}
	require.Equal(t, Long, Policy{}.Spread(Long, uid), "no jitter configured")
	got := p.Spread(Long, uid)
	require.Equal(t, Long+Jitter(uid, 0, Long, 10), got)
	require.GreaterOrEqual(t, got, Long)
	require.Less(t, got, Long+time.Minute)
	require.Equal(t, time.Duration(math.MaxInt64), Policy{JitterPercent: 100}.Spread(math.MaxInt64, uid))
}

func TestJitterNonPositiveWidthIsZero(t *testing.T) {
	for _, w := range []time.Duration{0, -1, math.MinInt64} {
		require.Zero(t, jitterIn(uid, 3, w))
	}
	require.Equal(t, time.Minute, jitterWidth(Long, 10))
	require.Equal(t, Jitter(uid, 0, Long, 10), jitterIn(uid, 0, time.Minute))
}

func TestJitterBounds(t *testing.T) {
	tests := []struct {
		name    string
		d       time.Duration
		percent int
		width   time.Duration // 0: Jitter must be 0
	}{
		{"zero d", 0, 10, 0},
		{"negative d", -Long, 10, 0},
		{"MinInt64 d", math.MinInt64, 100, 0},
		{"zero percent", Long, 0, 0},
		{"negative percent", Long, -10, 0},
		{"MinInt percent", Long, math.MinInt, 0},
		{"width rounds to zero", 9, 10, 0},
		{"width one", 10, 10, 1},
		{"ten percent of Long", Long, 10, time.Minute},
		{"percent above 100 acts as 100", Long, 250, Long},
		{"MaxInt percent", Long, math.MaxInt, Long},
		{"MaxInt64 full width", math.MaxInt64, 100, math.MaxInt64},
		{"MaxInt64 ten percent", math.MaxInt64, 10, 922337203685477580},
		{"MaxInt64 99 percent", math.MaxInt64, 99, 9131138316486228048},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for a := uint32(0); a < 50; a++ {
				got := Jitter(uid, a, tt.d, tt.percent)
				if tt.width == 0 {
					require.Zero(t, got)
					continue
				}
				require.GreaterOrEqual(t, got, time.Duration(0))
				require.Less(t, got, tt.width)
			}
		})
	}
}

// TestJitterGolden pins the jitter function: it is a compatibility contract
// because it decides when every machine is requeued. The values were checked
// with an independent Python implementation of the documented formula.
func TestJitterGolden(t *testing.T) {
	tests := []struct {
		key     string
		attempt uint32
		want    time.Duration
	}{
		{"", 0, 39872003448},
		{"", 1, 12971945111},
		{uid, 0, 24173046460},
		{uid, 2, 42497857470},
		{uid, math.MaxUint32, 16107168575},
		{"machine-1", 0, 42879836593},
		{"abcdefgh", 0, 29346191093},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, Jitter(tt.key, tt.attempt, Long, 10), "key %q attempt %d", tt.key, tt.attempt)
	}
}

func TestJitterIsDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for range 10_000 {
		key := randomKey(r)
		a := r.Uint32()
		d := pickDuration(r)
		pct := pickPercent(r)
		require.Equal(t, Jitter(key, a, d, pct), Jitter(key, a, d, pct))
		p := Policy{MaxBackoff: pickDuration(r), JitterPercent: pct}
		require.Equal(t, p.Backoff(d, d*3, a, key), p.Backoff(d, d*3, a, key))
		require.Equal(t, p.Spread(d, key), p.Spread(d, key))
	}
}

// TestJitterSpreadsAFleet checks that the resync requeues of a fleet cover
// the jitter window instead of clustering.
func TestJitterSpreadsAFleet(t *testing.T) {
	const (
		keys    = 10_000
		buckets = 10
	)
	width := Long / 10
	var counts [buckets]int
	for i := range keys {
		j := Jitter(fmt.Sprintf("machine-uid-%05d", i), 0, Long, 10)
		require.GreaterOrEqual(t, j, time.Duration(0))
		require.Less(t, j, width)
		counts[j*buckets/width]++
	}
	for b, c := range counts {
		// Expected 1000 per bucket; the standard deviation is about 30.
		require.Greater(t, c, 800, "bucket %d under-filled: %v", b, counts)
		require.Less(t, c, 1200, "bucket %d over-filled: %v", b, counts)
	}
}

func TestHotPathDoesNotAllocate(t *testing.T) {
	p := DefaultPolicy()
	key := uid
	var sink time.Duration
	tests := []struct {
		name string
		f    func()
	}{
		{"Backoff", func() { sink += p.Backoff(Short, 0, 7, key) }},
		{"Backoff capped", func() { sink += p.Backoff(Short, Long, math.MaxUint32, key) }},
		{"Spread", func() { sink += p.Spread(Long, key) }},
		{"Jitter", func() { sink += Jitter(key, 3, Long, 10) }},
		{"Period", func() { sink += p.Period(ClassExhausted) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Zero(t, testing.AllocsPerRun(1000, tt.f))
		})
	}
	require.NotZero(t, sink)
}

// TestDifferentialAgainstNaiveReference compares Backoff, Spread and Jitter
// with deliberately naive reimplementations (math/big arithmetic,
// encoding/binary) over random inputs that include the edge values.
func TestDifferentialAgainstNaiveReference(t *testing.T) {
	const rounds = 250_000
	r := rand.New(rand.NewPCG(0x5eed, 0xfeed))
	for i := range rounds {
		p := Policy{MaxBackoff: pickDuration(r), JitterPercent: pickPercent(r)}
		base, limit := pickDuration(r), pickDuration(r)
		n := pickFailures(r)
		key := randomKey(r)

		want := naiveBackoff(p, base, limit, n, key)
		got := p.Backoff(base, limit, n, key)
		if got != want {
			t.Fatalf("round %d: %+v.Backoff(%d, %d, %d, %q) = %d, naive %d", i, p, base, limit, n, key, got, want)
		}
		if got < 0 {
			t.Fatalf("round %d: negative backoff %d", i, got)
		}

		d := pickDuration(r)
		if got, want := p.Spread(d, key), naiveSpread(p, d, key); got != want {
			t.Fatalf("round %d: %+v.Spread(%d, %q) = %d, naive %d", i, p, d, key, got, want)
		}
		if got, want := Jitter(key, n, d, p.JitterPercent), naiveJitter(key, n, d, p.JitterPercent); got != want {
			t.Fatalf("round %d: Jitter(%q, %d, %d, %d) = %d, naive %d", i, key, n, d, p.JitterPercent, got, want)
		}
		w := jitterWidth(d, p.JitterPercent)
		if want := naiveWidth(d, p.JitterPercent); w != want {
			t.Fatalf("round %d: jitterWidth(%d, %d) = %d, naive %d", i, d, p.JitterPercent, w, want)
		}
		if got, want := jitterIn(key, n, w), Jitter(key, n, d, p.JitterPercent); got != want {
			t.Fatalf("round %d: jitterIn(%q, %d, %d) = %d, Jitter %d", i, key, n, w, got, want)
		}
	}
}

var (
	bigMaxInt64 = big.NewInt(math.MaxInt64)
	bigHundred  = big.NewInt(100)
)

// naiveBackoff is the reference for Backoff: it doubles a big.Int one
// failure at a time and stops once the cap is reached.
func naiveBackoff(p Policy, base, limit time.Duration, failures uint32, key string) time.Duration {
	if base <= 0 {
		return 0
	}
	if failures < 2 {
		return base
	}
	if limit == 0 {
		limit = p.MaxBackoff
		if limit <= 0 {
			limit = Long
		}
	}
	if limit < base {
		limit = base
	}
	capped := big.NewInt(int64(limit))
	d := big.NewInt(int64(base))
	for i := uint32(1); i < failures; i++ {
		d.Lsh(d, 1)
		if d.Cmp(capped) >= 0 {
			d.Set(capped)
			break
		}
	}
	dd := time.Duration(d.Int64())
	sum := new(big.Int).Add(d, big.NewInt(int64(naiveJitter(key, failures, dd, p.JitterPercent))))
	if sum.Cmp(bigMaxInt64) > 0 {
		return math.MaxInt64
	}
	return time.Duration(sum.Int64())
}

func naiveSpread(p Policy, d time.Duration, key string) time.Duration {
	if d <= 0 {
		return d
	}
	sum := new(big.Int).Add(big.NewInt(int64(d)), big.NewInt(int64(naiveJitter(key, 0, d, p.JitterPercent))))
	if sum.Cmp(bigMaxInt64) > 0 {
		return math.MaxInt64
	}
	return time.Duration(sum.Int64())
}

// naiveJitter is the reference for Jitter, written from its documentation
// with other tools: the key's words listed first (encoding/binary on
// copies), big.Int for the width and the scaling onto it.
// naiveWidth is the reference for jitterWidth: d*percent/100 in big.Int.
func naiveWidth(d time.Duration, percent int) time.Duration {
	if percent > 100 {
		percent = 100
	}
	if d <= 0 || percent <= 0 {
		return 0
	}
	width := new(big.Int).Mul(big.NewInt(int64(d)), big.NewInt(int64(percent)))
	return time.Duration(width.Quo(width, bigHundred).Int64())
}

func naiveJitter(key string, attempt uint32, d time.Duration, percent int) time.Duration {
	if percent > 100 {
		percent = 100
	}
	if d <= 0 || percent <= 0 {
		return 0
	}
	width := new(big.Int).Mul(big.NewInt(int64(d)), big.NewInt(int64(percent)))
	width.Quo(width, bigHundred)
	if width.Sign() <= 0 {
		return 0
	}
	var words []uint64
	b := []byte(key)
	switch {
	case len(b) >= 8:
		for i := 0; i+8 <= len(b); i += 8 {
			words = append(words, binary.LittleEndian.Uint64(b[i:]))
		}
		if len(b)%8 != 0 {
			words = append(words, binary.LittleEndian.Uint64(b[len(b)-8:]))
		}
	case len(b) > 0:
		var padded [8]byte
		copy(padded[:], b)
		words = append(words, binary.LittleEndian.Uint64(padded[:]))
	}
	h := uint64(len(key)) * 0x9e3779b97f4a7c15
	for _, w := range words {
		h = (h ^ w) * 0xff51afd7ed558ccd
		h ^= h >> 32
	}
	h += (uint64(attempt) + 1) * 0x9e3779b97f4a7c15
	h = (h ^ h>>32) * 0xbf58476d1ce4e5b9
	out := new(big.Int).SetUint64(h)
	out.Mul(out, width)
	return time.Duration(out.Rsh(out, 64).Int64())
}

func pickDuration(r *rand.Rand) time.Duration {
	switch r.IntN(13) {
	case 0:
		return 0
	case 1:
		return 1
	case 2:
		return -1
	case 3:
		return math.MaxInt64
	case 4:
		return math.MinInt64
	case 5:
		return math.MaxInt64/2 + time.Duration(r.IntN(3)) - 1
	case 6:
		return []time.Duration{Conflict, Short, Medium, Long}[r.IntN(4)]
	case 7:
		return time.Duration(r.Int64())
	case 8:
		return -time.Duration(r.Int64())
	case 9:
		return time.Duration(r.Int64N(1000))
	case 10:
		return time.Duration(r.Int64N(int64(24 * time.Hour)))
	case 11:
		return time.Duration(1) << r.IntN(63)
	default:
		return time.Duration(r.Uint64())
	}
}

func pickFailures(r *rand.Rand) uint32 {
	switch r.IntN(8) {
	case 0:
		return []uint32{0, 1, 2, 3}[r.IntN(4)]
	case 1:
		return []uint32{61, 62, 63, 64, 65}[r.IntN(5)]
	case 2:
		return []uint32{math.MaxUint32, math.MaxUint32 - 1, 1 << 31}[r.IntN(3)]
	case 3, 4:
		return r.Uint32N(70)
	default:
		return r.Uint32()
	}
}

func pickPercent(r *rand.Rand) int {
	switch r.IntN(6) {
	case 0:
		return []int{0, 1, 10, 99, 100}[r.IntN(5)]
	case 1:
		return []int{-1, 101, math.MaxInt, math.MinInt}[r.IntN(4)]
	case 2:
		return int(r.Int64())
	default:
		return r.IntN(101)
	}
}

func randomKey(r *rand.Rand) string {
	switch r.IntN(5) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("machine-uid-%d", r.IntN(1_000_000))
	case 2: // a Kubernetes UID: 36 bytes, the key of every resync
		return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", r.Uint32(), r.IntN(1<<16), r.IntN(1<<16), r.IntN(1<<16), r.Int64N(1<<48))
	default:
		b := make([]byte, r.IntN(48))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return string(b)
	}
}

func BenchmarkBackoff(b *testing.B) {
	p := DefaultPolicy()
	var sink time.Duration
	for b.Loop() {
		sink += p.Backoff(Short, 0, 6, uid)
	}
	_ = sink
}

func BenchmarkBackoffCapped(b *testing.B) {
	p := DefaultPolicy()
	var sink time.Duration
	for b.Loop() {
		sink += p.Backoff(Short, 0, math.MaxUint32, uid)
	}
	_ = sink
}

func BenchmarkJitter(b *testing.B) {
	var sink time.Duration
	for b.Loop() {
		sink += Jitter(uid, 3, Long, 10)
	}
	_ = sink
}

func TestBackoffUnlimitedCapDoublesExactly(t *testing.T) {
	// 5s < 2^33ns, so 5s * 2^29 (30 failures) is exact and far from overflow.
	require.Equal(t, Short<<29, Policy{}.Backoff(Short, math.MaxInt64, 30, uid))
	// 5s * 2^30 > 2^62 still fits; 5s * 2^31 does not and saturates at the cap.
	require.Equal(t, Short<<30, Policy{}.Backoff(Short, math.MaxInt64, 31, uid))
	require.Equal(t, time.Duration(math.MaxInt64), Policy{}.Backoff(Short, math.MaxInt64, 32, uid))
}

// Resync is Spread of the Long period under a Policy with that jitter
// percent, for every percent (out of range ones included) and any key, and
// so is the Resync of the key's hash.
func TestResyncIsSpreadOfLong(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for i := range 10000 {
		key := fmt.Sprintf("%016x", r.Uint64())[:r.IntN(16)+1]
		if i%3 == 0 {
			key = fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", r.Uint32(), r.Uint32()&0xffff, r.Uint32()&0xffff, r.Uint32()&0xffff, r.Uint64()&0xffffffffffff)
		}
		percent := r.IntN(240) - 20
		want := Policy{JitterPercent: percent}.Spread(Long, key)
		require.Equal(t, want, Resync(key, percent), "key %q, percent %d", key, percent)
		require.Equal(t, want, HashKey(key).Resync(percent), "key %q, percent %d", key, percent)
		require.GreaterOrEqual(t, Resync(key, percent), Long)
	}
	require.Equal(t, Long, Resync("uid", 0))
	require.Equal(t, Long, HashKey("uid").Resync(0))
}

package retry

import (
	"math"
	"math/bits"
	"time"
)

// Backoff returns the requeue delay after failures consecutive failures of
// the same sub-flow, starting from the base period base (usually
// p.Period(class)).
//
// For failures 0 and 1 it returns base exactly: a single failure gets MCM's
// own period. For n >= 2 failures the delay is
//
//	d = min(base * 2^(n-1), limit)
//
// computed without overflow for every n, followed by d + Jitter(key, n, d,
// p.JitterPercent). A limit of 0 means p.MaxBackoff, and a MaxBackoff that is
// not positive means Long; a limit below base means base. The result is d
// plus less than d*JitterPercent/100 (exactly d when that width is 0), and it
// saturates at math.MaxInt64 rather than overflow. A base that is not
// positive returns 0.
func (p Policy) Backoff(base, limit time.Duration, failures uint32, key string) time.Duration {
	if base <= 0 {
		return 0
	}
	if failures <= 1 {
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
	d := limit
	// base<<shift <= limit exactly when base <= limit>>shift, and then the
	// shift cannot overflow because limit fits.
	if shift := failures - 1; shift < 63 && base <= limit>>shift {
		d = base << shift
	}
	return addSat(d, Jitter(key, failures, d, p.JitterPercent))
}

// Spread returns d plus the steady-state jitter of key, that is
// d + Jitter(key, 0, d, p.JitterPercent), saturating at math.MaxInt64. It is
// meant for Long resync requeues, so the requeues of a fleet spread out over
// the jitter window instead of coinciding. A d that is not positive is
// returned unchanged.
func (p Policy) Spread(d time.Duration, key string) time.Duration {
	if d <= 0 {
		return d
	}
	return addSat(d, Jitter(key, 0, d, p.JitterPercent))
}

// Resync returns the requeue of a machine with nothing to do: the Long
// period plus key's steady-state jitter at percent, that is
// Policy{JitterPercent: percent}.Spread(Long, key). Keyed by the machine's
// UID, it spreads a fleet's resyncs over the jitter window; the width of
// the window is a constant multiple of percent, so it costs one hash.
func Resync(key string, percent int) time.Duration {
	return HashKey(key).Resync(percent)
}

// KeyHash is a jitter key hashed ([HashKey]): the part of [Jitter]'s hash
// that depends on the key alone. A caller that keeps it spares hashing the
// key at every requeue.
type KeyHash uint64

// HashKey returns key hashed as [Jitter] hashes it, up to the attempt: h
// after the loop over the key's words. It reads the key once, a word at a
// time, one multiply per 8 bytes; mixing in the attempt ends with one
// multiplicative mix, as Jitter keeps the product's high bits, which
// depend on every bit of h.
func HashKey(key string) KeyHash {
	n := len(key)
	h := uint64(n) * golden
	if n >= 8 {
		// Every word but the last, then the last 8 bytes: when n is a
		// multiple of 8 they are the last whole word, otherwise they overlap
		// the word before, as Jitter's doc says.
		for i := 0; i < n-8; i += 8 {
			h = (h ^ word(key[i:])) * mix
			h ^= h >> 32
		}
		h = (h ^ word(key[n-8:])) * mix
		h ^= h >> 32
	} else if n > 0 {
		var w uint64
		for j := n - 1; j >= 0; j-- {
			w = w<<8 | uint64(key[j])
		}
		h = (h ^ w) * mix
		h ^= h >> 32
	}
	return KeyHash(h)
}

// Resync is [Resync] of the key h is the hash of: HashKey(key).Resync(p)
// equals Resync(key, p), without hashing the key.
func (h KeyHash) Resync(percent int) time.Duration {
	// A width of 0 gives 0: the high bits of a product by 0.
	hi, _ := bits.Mul64(mixAttempt(uint64(h), 0), uint64(jitterWidth(Long, percent)))
	return Long + time.Duration(hi)
}

// Jitter returns a deterministic duration in [0, w), where w is the jitter
// width d*percent/100 rounded down. The same (key, attempt, d, percent) give
// the same result on every run and platform. It never allocates.
//
// The width is computed as d/100*percent + d%100*percent/100, which equals
// d*percent/100 rounded down but cannot overflow for any d. A percent above
// 100 acts as 100. If the width is not positive (d <= 0, percent <= 0, or d
// too small), Jitter returns 0.
//
// The value is the high 64 bits of the 128-bit product h * w: a multiply
// maps h onto [0, w) without the cost of a division. h is computed as
// follows, all arithmetic on uint64, wrapping, words read little-endian:
//
//	h := len(key) * 0x9e3779b97f4a7c15
//	for each word x of key:
//	    h ^= x; h *= 0xff51afd7ed558ccd; h ^= h >> 32
//	h += (attempt + 1) * 0x9e3779b97f4a7c15
//	h ^= h >> 32; h *= 0xbf58476d1ce4e5b9
//
// The words of a key of 8 bytes or more are its whole 8-byte words and,
// when its length is not a multiple of 8, its last 8 bytes (which overlap
// the word before). A shorter key is one word: its bytes padded with zero
// bytes. An empty key has no word.
//
// This function is a compatibility contract: changing it moves every
// machine's requeue time.
func Jitter(key string, attempt uint32, d time.Duration, percent int) time.Duration {
	return jitterIn(key, attempt, jitterWidth(d, percent))
}

// jitterWidth returns the width of [Jitter]'s window for period d at
// percent: d*percent/100 rounded down, computed without overflow as
// Jitter's doc says. It is 0 when d or percent is not positive or d is too
// small; a percent above 100 acts as 100.
func jitterWidth(d time.Duration, percent int) time.Duration {
	if d <= 0 || percent <= 0 {
		return 0
	}
	if percent > 100 {
		percent = 100
	}
	pc := time.Duration(percent)
	return d/100*pc + d%100*pc/100
}

// jitterIn returns the value of [Jitter] for a window of the given width:
// Jitter(key, attempt, d, percent) equals jitterIn(key, attempt,
// jitterWidth(d, percent)). A width that is not positive gives 0.
func jitterIn(key string, attempt uint32, width time.Duration) time.Duration {
	if width <= 0 {
		return 0
	}
	hi, _ := bits.Mul64(jitterHash(key, attempt), uint64(width))
	return time.Duration(hi)
}

// jitterHash is the hash of Jitter's documented formula: the key's hash
// (HashKey) with the attempt mixed in (mixAttempt).
func jitterHash(key string, attempt uint32) uint64 {
	return mixAttempt(uint64(HashKey(key)), attempt)
}

// The constants of Jitter's hash.
const (
	golden = 0x9e3779b97f4a7c15
	mix    = 0xff51afd7ed558ccd
)

// mixAttempt is the end of Jitter's hash: the attempt mixed into the key's
// hash h, and one multiplicative mix.
func mixAttempt(h uint64, attempt uint32) uint64 {
	h += (uint64(attempt) + 1) * golden
	h ^= h >> 32
	return h * 0xbf58476d1ce4e5b9
}

// word reads b's first 8 bytes little-endian (the compiler makes it one
// load); b holds at least 8.
func word(b string) uint64 {
	b = b[:8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// addSat returns a+b for non-negative a and b, or math.MaxInt64 if the sum
// does not fit.
func addSat(a, b time.Duration) time.Duration {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}

package lifecycle

import (
	"math"
	"time"
)

// Stamp is a point in time kept in a [Status]: Unix nanoseconds, with 0
// meaning "unset". The status stores stamps instead of [time.Time] values
// because a Stamp is 8 bytes against 24, and copying the status is the main
// cost of a step. Stamps cover the years 1678 to 2262.
type Stamp int64

// The extreme stamps, which StampOf saturates to.
const (
	minStamp = Stamp(math.MinInt64)
	maxStamp = Stamp(math.MaxInt64)
)

// StampOf returns the stamp of t; the zero time gives the unset stamp 0. A
// time outside the years a Stamp holds gives the nearest extreme stamp
// instead of wrapping around (see InStampRange).
func StampOf(t time.Time) Stamp {
	if s, ok := stampIn(t); ok {
		return s
	}
	return stampOfEdge(t)
}

// stampIn returns the stamp of t and true when t lies strictly between the
// extreme seconds a Stamp holds, where the stamp is exact; else false, and
// the stamp means nothing (the zero time, the year 1, lies outside). It is
// cheap enough to inline: seconds never wrap around.
func stampIn(t time.Time) (Stamp, bool) {
	s := t.Unix()
	return Stamp(s*int64(time.Second) + int64(t.Nanosecond())), uint64(s-minStampSec-1) < uint64(maxStampSec-minStampSec-1)
}

// stampOfEdge is StampOf of the zero time, of a time in the extreme second
// at either end, and of a time outside, which it saturates.
func stampOfEdge(t time.Time) Stamp {
	if t.IsZero() {
		return 0
	}
	switch s := t.Unix(); {
	case s > maxStampSec, s == maxStampSec && int64(t.Nanosecond()) > maxStampNsec:
		return maxStamp
	case s < minStampSec, s == minStampSec && int64(t.Nanosecond()) < minStampNsec:
		return minStamp
	}
	return Stamp(t.UnixNano())
}

// The extreme stamps in seconds and nanoseconds, as time.Time splits them.
const (
	maxStampSec, maxStampNsec = math.MaxInt64 / int64(time.Second), math.MaxInt64 % int64(time.Second)
	minStampSec, minStampNsec = math.MinInt64/int64(time.Second) - 1, int64(time.Second) + math.MinInt64%int64(time.Second)
)

// InStampRange reports whether t lies within the times a Stamp holds: the
// years 1678 to 2262, or the zero time (the unset stamp). StampOf saturates
// a time outside; Step refuses one (rule input.out-of-range), and a shell
// reading stamps back refuses them too.
func InStampRange(t time.Time) bool {
	if t.IsZero() {
		return true
	}
	s := StampOf(t)
	return s != minStamp && s != maxStamp
}

// Time returns the stamp as a UTC time; the unset stamp gives the zero time.
func (s Stamp) Time() time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(s)).UTC()
}

// IsZero reports whether the stamp is unset.
func (s Stamp) IsZero() bool { return s == 0 }

// Add returns the stamp d later, saturating instead of overflowing.
func (s Stamp) Add(d time.Duration) Stamp {
	r := s + Stamp(d)
	if d > 0 && r < s {
		return Stamp(1<<63 - 1)
	}
	if d < 0 && r > s {
		return Stamp(-1 << 63)
	}
	return r
}

// Sub returns s - t, saturating instead of overflowing.
func (s Stamp) Sub(t Stamp) time.Duration {
	r := time.Duration(s - t)
	if t < 0 && r < 0 && s >= 0 {
		return time.Duration(1<<63 - 1)
	}
	if t > 0 && r > 0 && s < 0 {
		return time.Duration(-1 << 63)
	}
	return r
}

// String formats the stamp as RFC 3339 with nanoseconds, or "unset".
func (s Stamp) String() string {
	if s == 0 {
		return "unset"
	}
	return s.Time().Format(time.RFC3339Nano)
}

// later returns the later of two stamps.
func later(a, b Stamp) Stamp {
	if a > b {
		return a
	}
	return b
}

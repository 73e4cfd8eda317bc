package lifecycle

import (
	"math"
	"testing"
	"time"
)

// StampOf is exact over the whole range a Stamp holds and saturates
// outside it instead of wrapping.
func TestStampOfAtTheEdges(t *testing.T) {
	for _, ns := range []int64{math.MaxInt64, math.MaxInt64 - 1, math.MinInt64, math.MinInt64 + 1, 0, 1, -1, 1e18, -1e18} {
		tm := time.Unix(0, ns)
		if got := StampOf(tm); got != Stamp(ns) && ns != 0 {
			t.Errorf("%d: %d", ns, got)
		}
	}
	if StampOf(time.Unix(0, math.MaxInt64).Add(1)) != maxStamp {
		t.Error("max+1")
	}
	if StampOf(time.Unix(0, math.MinInt64).Add(-1)) != minStamp {
		t.Error("min-1")
	}
}

package lifecycle

import (
	"strings"
	"testing"
)

// sameConditions compares the types as == does, whatever their length and
// wherever they differ: every length up to past the word-wise range, every
// byte position changed, each in memory of its own.
func TestSameConditionsComparesTypesExactly(t *testing.T) {
	const alphabet = "ReadyMemoryPressureDiskPressureNetworkUnavailable"
	for n := 0; n <= 40; n++ {
		typ := (alphabet + strings.Repeat("x", 40))[:n]
		a := []Condition{{Type: "Ready", Status: ConditionTrue}, {Type: strings.Clone(typ), Status: ConditionFalse}}
		b := []Condition{{Type: "Ready", Status: ConditionTrue}, {Type: strings.Clone(typ), Status: ConditionFalse}}
		if !sameConditions(a, b) {
			t.Fatalf("length %d: equal types differ", n)
		}
		for i := range n {
			for _, flip := range []byte{0x01, 0x20, 0x80} {
				other := []byte(typ)
				other[i] ^= flip
				b[1].Type = string(other)
				if sameConditions(a, b) != (a[1].Type == b[1].Type) {
					t.Fatalf("length %d, byte %d ^ %#x: %q and %q compare as equal", n, i, flip, a[1].Type, b[1].Type)
				}
			}
		}
		// A type one byte longer or shorter, sharing its prefix.
		b[1].Type = typ + "y"
		if sameConditions(a, b) {
			t.Fatalf("length %d: a longer type compares as equal", n)
		}
		if n > 0 {
			b[1].Type = typ[:n-1]
			if sameConditions(a, b) {
				t.Fatalf("length %d: a shorter type compares as equal", n)
			}
		}
		b[1].Type = strings.Clone(typ)
		b[1].Status = ConditionUnknown
		if sameConditions(a, b) {
			t.Fatalf("length %d: another status compares as equal", n)
		}
	}
}

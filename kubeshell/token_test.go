package kubeshell

import (
	"regexp"
	"testing"
)

func TestTokenIDOf(t *testing.T) {
	form := regexp.MustCompile(`^[a-z0-9]{6}$`)
	seen := map[string]bool{}
	for _, uid := range []string{"", "3b0e1c5e-6f0a-4a57-9a39-2f0c1d7e9a01", "3b0e1c5e-6f0a-4a57-9a39-2f0c1d7e9a02"} {
		for n := range 4 {
			id := TokenIDOf(uid, n)
			if !form.MatchString(id) || seen[id] {
				t.Fatalf("ID %q of %q/%d: not 6 of [a-z0-9], or seen before", id, uid, n)
			}
			seen[id] = true
			if TokenIDOf(uid, n) != id {
				t.Fatal("not deterministic")
			}
		}
	}
}

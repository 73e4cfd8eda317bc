package kubeshell

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/purelifecycle/machine/lifecycle"
)

func TestGrantsReplaceReturnsTheNewOnes(t *testing.T) {
	var g Grants
	if g.Of("a").Fail {
		t.Fatal("the zero Grants grants")
	}
	fail := lifecycle.Grant{Fail: true}
	if got := g.Replace(map[types.UID]lifecycle.Grant{"a": fail, "b": fail}); len(got) != 2 {
		t.Fatalf("granted %v", got)
	}
	held := lifecycle.Grant{Held: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
	got := g.Replace(map[types.UID]lifecycle.Grant{"b": fail, "c": fail, "d": held})
	if len(got) != 1 || !got["c"] || g.Of("a").Fail || !g.Of("b").Fail || !g.Of("d").Held.Equal(held.Held) {
		t.Fatalf("granted %v; a %v, b %v, d %v", got, g.Of("a"), g.Of("b"), g.Of("d"))
	}
}

// GrantsOf keys Limit's result by UID and leaves out the empty grants.
func TestGrantsOf(t *testing.T) {
	held := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	uids := []types.UID{"a", "b", "c"}
	got := GrantsOf([]lifecycle.Grant{{Fail: true}, {}, {Held: held}}, func(i int) types.UID { return uids[i] })
	if len(got) != 2 || !got["a"].Fail || !got["c"].Held.Equal(held) {
		t.Fatalf("grants %v", got)
	}
}

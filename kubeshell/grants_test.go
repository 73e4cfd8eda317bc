package kubeshell

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestGrantsReplaceReturnsTheNewOnes(t *testing.T) {
	var g Grants
	if g.Of("a").Fail {
		t.Fatal("the zero Grants grants")
	}
	if got := g.Replace(map[types.UID]bool{"a": true, "b": true}); len(got) != 2 {
		t.Fatalf("granted %v", got)
	}
	got := g.Replace(map[types.UID]bool{"b": true, "c": true})
	if len(got) != 1 || !got["c"] || g.Of("a").Fail || !g.Of("b").Fail {
		t.Fatalf("granted %v; a %v, b %v", got, g.Of("a"), g.Of("b"))
	}
}

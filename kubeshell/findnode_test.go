package kubeshell

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/purelifecycle/machine/lifecycle"
)

func TestFindNodeInItsOrder(t *testing.T) {
	nodes := []client.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "by-label"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "recorded"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "named-b", Labels: map[string]string{lifecycle.MachineNameLabel: "m1"}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "named-a", Labels: map[string]string{lifecycle.MachineNameLabel: "m1"}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "by-id"}, Spec: corev1.NodeSpec{ProviderID: "p:///i-1"}},
	}
	c := fake.NewClientBuilder().WithObjects(nodes...).WithIndex(&corev1.Node{}, ProviderIDIndex,
		func(o client.Object) []string { return []string{o.(*corev1.Node).Spec.ProviderID} }).Build()
	for _, tc := range []struct {
		of   NodeOf
		want string
	}{
		{NodeOf{Label: "by-label", Recorded: "recorded", Machine: "m1", ProviderID: "p:///i-1"}, "by-label"},
		{NodeOf{Label: "gone", Recorded: "recorded", Machine: "m1", ProviderID: "p:///i-1"}, "recorded"},
		{NodeOf{Label: "gone", Machine: "m1", ProviderID: "p:///i-1"}, "named-a"},
		{NodeOf{Machine: "m2", ProviderID: "p:///i-1"}, "by-id"},
		{NodeOf{Machine: "m2"}, ""},
	} {
		n, err := FindNode(context.Background(), c, tc.of)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if n != nil {
			got = n.Name
		}
		if got != tc.want {
			t.Errorf("FindNode(%+v) = %q, want %q", tc.of, got, tc.want)
		}
	}
}

// A node's zone is its zone label; a node without one, a node not found
// and no node at all have none.
func TestZoneOf(t *testing.T) {
	c := fake.NewClientBuilder().WithObjects(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n-a", Labels: map[string]string{lifecycle.ZoneLabel: "zone-a"}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n-none"}}).Build()
	ctx := context.Background()
	for node, want := range map[string]string{"n-a": "zone-a", "n-none": "", "n-gone": "", "": ""} {
		if got := ZoneOf(ctx, c, node); got != want {
			t.Errorf("ZoneOf(%q) = %q, want %q", node, got, want)
		}
	}
}

// ReadNode returns the node of that name, and nil without an error for a
// node that does not exist.
func TestReadNode(t *testing.T) {
	c := fake.NewClientBuilder().WithObjects(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n-1"}}).Build()
	ctx := context.Background()
	if n, err := ReadNode(ctx, c, "n-1"); err != nil || n == nil || n.Name != "n-1" {
		t.Fatalf("ReadNode(n-1) = %v, %v", n, err)
	}
	if n, err := ReadNode(ctx, c, "gone"); err != nil || n != nil {
		t.Fatalf("ReadNode(gone) = %v, %v", n, err)
	}
}

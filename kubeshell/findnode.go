package kubeshell

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/purelifecycle/machine/lifecycle"
)

// NodeOf is what a machine says of its node: the names it knows it by and
// the instance it records.
type NodeOf struct {
	// Label is the machine's node label (lifecycle.NodeLabel); Recorded is
	// the node name its status records.
	Label, Recorded string
	// Machine is the machine's name, which its node's
	// lifecycle.MachineNameLabel carries.
	Machine string
	// ProviderID is the instance the machine's status records.
	ProviderID string
}

// ProviderIDIndex is the field index of nodes by spec.providerID that
// FindNode reads with.
const ProviderIDIndex = "spec.providerID"

// FindNode finds a machine's node through c (a cache's client that indexes
// nodes by ProviderIDIndex): by the machine's node label, else by the node
// name its status records, else by the node's machine-name label, else by
// the recorded providerID. Where several nodes match, the one with the
// smallest name, so the choice does not depend on the cache's order. nil
// without an error when there is none.
func FindNode(ctx context.Context, c client.Reader, of NodeOf) (*corev1.Node, error) {
	names := []string{of.Label, of.Recorded}
	if names[1] == names[0] {
		names = names[:1] // the label names the recorded node: one read
	}
	for _, name := range names {
		if name == "" {
			continue
		}
		if n, err := ReadNode(ctx, c, name); n != nil || err != nil {
			return n, err
		}
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes, client.MatchingLabels{lifecycle.MachineNameLabel: of.Machine}); err != nil {
		return nil, err
	}
	if n := first(nodes.Items); n != nil {
		return n, nil
	}
	if of.ProviderID == "" {
		return nil, nil
	}
	if err := c.List(ctx, &nodes, client.MatchingFields{ProviderIDIndex: of.ProviderID}); err != nil {
		return nil, err
	}
	return first(nodes.Items), nil
}

// ReadNode reads the node named name through c; nil, and no error, when
// there is none. A shell that wrote a node reads it so from the API server
// (a client that is not a cache) to decide on what it wrote.
func ReadNode(ctx context.Context, c client.Reader, name string) (*corev1.Node, error) {
	n := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return n, nil
}

// first returns the node with the smallest name.
func first(nodes []corev1.Node) *corev1.Node {
	if len(nodes) == 0 {
		return nil
	}
	n := slices.MinFunc(nodes, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return &n
}

// ZoneOf returns the zone of the named node as c shows it (its
// lifecycle.ZoneLabel, which a fleet pass gives the limiter through
// lifecycle.Node.Zone), "" when it has none, or cannot be read, or node is
// "".
func ZoneOf(ctx context.Context, c client.Reader, node string) string {
	if node == "" {
		return ""
	}
	n := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		return ""
	}
	return n.Labels[lifecycle.ZoneLabel]
}

package machines

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/controller/fakecloud"
	"github.com/purelifecycle/machine/lifecycle"
)

// frozenNodes is a cache that never shows a write to the nodes it holds:
// they stay as they were when it was made. Everything else, and every
// write, goes to the client underneath.
type frozenNodes struct {
	client.Client
	nodes map[string]*corev1.Node
}

func (c frozenNodes) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if n, ok := obj.(*corev1.Node); ok {
		if frozen, ok := c.nodes[key.Name]; ok {
			frozen.DeepCopyInto(n)
			return nil
		}
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// A step that follows one that wrote the node, in the same pass, decides
// on the node as written, not on a cache that does not show the write yet:
// the InPlaceUpdate condition a pass writes on a candidate's node is in
// the machine's status after that pass, however far the cache lags.
func TestPassDecidesOnTheNodeItWrote(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m-lag", UID: "uid-lag"},
		Spec: v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Name: "plain"}}}
	class := &v1alpha1.MachineClass{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "plain"}}
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(m, class).
		WithStatusSubresource(&v1alpha1.Machine{}, &corev1.Node{})
	for _, ix := range cacheIndexes() {
		b = b.WithIndex(ix.obj, ix.field, ix.fn)
	}
	c := b.Build()
	cloud := fakecloud.New()
	r, err := newReconciler(c, c, Options{Driver: cloud})
	require.NoError(t, err)
	r.recorder = events.NewFakeRecorder(1000)

	ctx := context.Background()
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(m)}
	got := &v1alpha1.Machine{}
	for pass := 0; pass < 10 && got.Status.CurrentStatus.Phase != "Running"; pass++ {
		_, err := r.Reconcile(ctx, req)
		require.NoError(t, err)
		for _, inst := range cloud.Instances() {
			require.NoError(t, fakecloud.RegisterNode(ctx, c, inst))
		}
		require.NoError(t, c.Get(ctx, req.NamespacedName, got))
	}
	require.Equal(t, "Running", got.Status.CurrentStatus.Phase)

	name := cloud.Instances()[0].NodeName
	node := &corev1.Node{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: name}, node))
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	node.Labels[lifecycle.CandidateForUpdateLabel] = "true"
	require.NoError(t, c.Update(ctx, node))

	lagging, err := newReconciler(frozenNodes{Client: c, nodes: map[string]*corev1.Node{name: node.DeepCopy()}}, c,
		Options{Driver: cloud})
	require.NoError(t, err)
	lagging.recorder = events.NewFakeRecorder(1000)
	_, err = lagging.Reconcile(ctx, req)
	require.NoError(t, err)

	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: name}, node))
	var onNode, inStatus string
	for _, cond := range node.Status.Conditions {
		if cond.Type == lifecycle.ConditionInPlaceUpdate {
			onNode = cond.Reason
		}
	}
	require.NoError(t, c.Get(ctx, req.NamespacedName, got))
	for _, cond := range got.Status.NodeConditions {
		if cond.Type == lifecycle.ConditionInPlaceUpdate {
			inStatus = cond.Reason
		}
	}
	require.Equal(t, lifecycle.ReasonCandidateForUpdate, onNode, "the node's InPlaceUpdate condition")
	require.Equal(t, lifecycle.ReasonCandidateForUpdate, inStatus, "the condition in the machine's status after the pass")
}

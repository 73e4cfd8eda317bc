package machines_test

import (
	"context"
	"testing"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/mcmcontroller/machines"
)

// laggingCache is a target cluster's cache that never shows a write: its
// nodes are as they were when it was made, its volume attachments none.
// Writes go to the API server.
type laggingCache struct {
	client.Client
	nodes map[string]*corev1.Node
}

func (c laggingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if n, ok := obj.(*corev1.Node); ok {
		if frozen, ok := c.nodes[key.Name]; ok {
			frozen.DeepCopyInto(n)
			return nil
		}
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c laggingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*storagev1.VolumeAttachmentList); ok {
		return nil
	}
	return c.Client.List(ctx, list, opts...)
}

// A step that follows one that wrote the node, in the same pass, decides
// on the node as written, not on a cache that does not show the write yet:
// the condition a pass writes on a candidate's node is mirrored into the
// machine's status by that pass, however far the cache lags.
func TestPassDecidesOnTheNodeItWrote(t *testing.T) {
	w := bareWorld(t)
	stop := w.startOurs(t)
	w.class(t, "small")
	w.machine(t, "worker-lag-1", "small", nil)
	eventually(t, "the machine Running", func() bool {
		m := w.get(t, "worker-lag-1")
		return m != nil && m.Status.CurrentStatus.Phase == v1alpha1.MachineRunning
	})
	stop()
	node := w.cloud.Instances()[0].NodeName
	w.changeNode(t, node, func(n *corev1.Node) { n.Labels[lifecycle.CandidateForUpdateLabel] = "true" })
	frozen := &corev1.Node{}
	must(t, w.c.Get(w.ctx, client.ObjectKey{Name: node}, frozen))

	r, err := machines.New(machines.Clients{Control: w.c, ControlReader: w.c,
		Target: laggingCache{Client: w.c, nodes: map[string]*corev1.Node{node: frozen}}, TargetReader: w.c,
		Recorder: record.NewFakeRecorder(100)}, machines.Options{Provider: w.prov, Namespace: w.ns})
	must(t, err)
	rep := r.Pass(w.ctx, types.NamespacedName{Namespace: w.ns, Name: "worker-lag-1"}, time.Now())
	if rep.Err != nil {
		t.Fatalf("pass: %v", rep.Err)
	}
	if got := w.inPlaceReason(t, node); got != lifecycle.ReasonCandidateForUpdate {
		t.Fatalf("the node's InPlaceUpdate condition says %q", got)
	}
	var mirrored string
	for _, c := range w.get(t, "worker-lag-1").Status.Conditions {
		if c.Type == lifecycle.ConditionInPlaceUpdate {
			mirrored = c.Reason
		}
	}
	if mirrored != lifecycle.ReasonCandidateForUpdate {
		t.Fatalf("after the pass (%s) the machine's status mirrors %q, not the condition the pass wrote", rep.End, mirrored)
	}
}

package kubeshell

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/purelifecycle/machine/lifecycle"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// world returns Nodes over a fake API server holding objs, which also
// serves the pods' spec.nodeName field selector.
func world(t *testing.T, objs ...client.Object) (Nodes, client.Client) {
	t.Helper()
	c := fake.NewClientBuilder().WithObjects(objs...).WithStatusSubresource(&corev1.Node{}).
		WithIndex(&corev1.Pod{}, "spec.nodeName", func(o client.Object) []string {
			return []string{o.(*corev1.Pod).Spec.NodeName}
		}).Build()
	return Nodes{Reader: c, Writer: c}, c
}

func node(c client.Client, t *testing.T, name string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The preservation's cordon carries the lifecycle's mark in the same
// write: set when the write makes the cordon, removed when the node was
// cordoned already (somebody else's cordon), and removed by the uncordon
// that gives the cordon back.
func TestCordonMark(t *testing.T) {
	ctx := context.Background()
	ns, c := world(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	marked := lifecycle.Effect{Kind: lifecycle.KindCordon, Node: "n1", Key: lifecycle.CordonMarkAnnotation,
		Value: lifecycle.CordonMarkPreservation}
	giveBack := lifecycle.Effect{Kind: lifecycle.KindUncordon, Node: "n1", Key: lifecycle.CordonMarkAnnotation}
	apply := func(e lifecycle.Effect) *corev1.Node {
		t.Helper()
		if w, err := ns.Apply(ctx, &e, t0); w != lifecycle.WriteOK || err != nil {
			t.Fatalf("%s: %s, %v", e, w, err)
		}
		return node(c, t, "n1")
	}
	n := apply(marked)
	if !n.Spec.Unschedulable || n.Annotations[lifecycle.CordonMarkAnnotation] != lifecycle.CordonMarkPreservation {
		t.Fatalf("the cordon this write made is not marked: %+v", n)
	}
	n = apply(giveBack)
	if n.Spec.Unschedulable || len(n.Annotations) != 0 {
		t.Fatalf("the cordon given back keeps its mark: %+v", n)
	}

	// Somebody else's cordon, with a mark left behind by an uncordon that
	// did not take it off: the marked cordon finds the node cordoned, so
	// the cordon is not the lifecycle's and the mark goes.
	n.Spec.Unschedulable = true
	n.Annotations = map[string]string{lifecycle.CordonMarkAnnotation: lifecycle.CordonMarkPreservation}
	if err := c.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	n = apply(marked)
	if !n.Spec.Unschedulable || len(n.Annotations) != 0 {
		t.Fatalf("a cordon found in place is marked as the lifecycle's: %+v", n)
	}
	rv := n.ResourceVersion
	if n = apply(marked); n.ResourceVersion != rv {
		t.Fatal("a cordoned node without the mark was written again")
	}
	// An unmarked uncordon (an in-place update's) leaves a mark alone.
	n.Annotations = map[string]string{lifecycle.CordonMarkAnnotation: lifecycle.CordonMarkPreservation}
	if err := c.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	if n = apply(lifecycle.Effect{Kind: lifecycle.KindUncordon, Node: "n1"}); n.Spec.Unschedulable ||
		n.Annotations[lifecycle.CordonMarkAnnotation] == "" {
		t.Fatalf("%+v", n)
	}
}

func TestApplyNodeEffects(t *testing.T) {
	ctx := context.Background()
	ns, c := world(t, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Finalizers: []string{lifecycle.NodeFinalizer}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			{Key: lifecycle.TaintInstanceNotReady, Effect: corev1.TaintEffectNoSchedule},
			{Key: "other", Effect: corev1.TaintEffectNoSchedule},
		}},
	})
	for _, e := range []lifecycle.Effect{
		{Kind: lifecycle.KindLabelNode, Node: "n1", Key: lifecycle.MachineNameLabel, Value: "m1"},
		{Kind: lifecycle.KindRemoveTaint, Node: "n1", Key: lifecycle.TaintInstanceNotReady},
		{Kind: lifecycle.KindSetNodeCondition, Node: "n1", Key: "Terminating", Value: lifecycle.ReasonScaleDown,
			Status: lifecycle.ConditionTrue},
		{Kind: lifecycle.KindAnnotateNode, Node: "n1", Key: lifecycle.ScaleDownDisabledAnnotation, Value: "true"},
		{Kind: lifecycle.KindCordon, Node: "n1"},
		{Kind: lifecycle.KindRemoveNodeFinalizer, Node: "n1", Key: lifecycle.NodeFinalizer},
	} {
		if !IsNodeEffect(e.Kind) {
			t.Fatalf("%s is not a node effect", e.Kind)
		}
		if w, err := ns.Apply(ctx, &e, t0); w != lifecycle.WriteOK || err != nil {
			t.Fatalf("%s: %s, %v", e.Kind, w, err)
		}
	}
	n := node(c, t, "n1")
	if n.Labels[lifecycle.MachineNameLabel] != "m1" || !n.Spec.Unschedulable || len(n.Finalizers) != 0 ||
		len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "other" {
		t.Fatalf("node %+v", n)
	}
	if len(n.Status.Conditions) != 1 || n.Status.Conditions[0].Reason != lifecycle.ReasonScaleDown {
		t.Fatalf("conditions %+v", n.Status.Conditions)
	}
	if n.Annotations[lifecycle.ScaleDownDisabledAnnotation] != "true" {
		t.Fatalf("annotations %v", n.Annotations)
	}
	// The owner's part of an in-place update: labels off, uncordoned; a
	// preservation's annotation off.
	for _, e := range []lifecycle.Effect{
		{Kind: lifecycle.KindRemoveNodeAnnotation, Node: "n1", Key: lifecycle.ScaleDownDisabledAnnotation},
		{Kind: lifecycle.KindRemoveNodeLabel, Node: "n1", Key: lifecycle.MachineNameLabel},
		{Kind: lifecycle.KindUncordon, Node: "n1"},
	} {
		if w, err := ns.Apply(ctx, &e, t0); w != lifecycle.WriteOK || err != nil {
			t.Fatalf("%s: %s, %v", e.Kind, w, err)
		}
	}
	if n = node(c, t, "n1"); n.Labels[lifecycle.MachineNameLabel] != "" || n.Spec.Unschedulable || len(n.Annotations) != 0 {
		t.Fatalf("node %+v", n)
	}
	e := lifecycle.Effect{Kind: lifecycle.KindCordon, Node: "n1"}
	if w, err := ns.Apply(ctx, &e, t0); w != lifecycle.WriteOK || err != nil {
		t.Fatal(w, err)
	}
	n = node(c, t, "n1")
	rv := n.ResourceVersion
	// Effects that find the node as asked write nothing.
	e = lifecycle.Effect{Kind: lifecycle.KindCordon, Node: "n1"}
	if w, err := ns.Apply(ctx, &e, t0); w != lifecycle.WriteOK || err != nil {
		t.Fatal(w, err)
	}
	if node(c, t, "n1").ResourceVersion != rv {
		t.Fatal("a cordoned node was written again")
	}

	e = lifecycle.Effect{Kind: lifecycle.KindDeleteNode, Node: "n1"}
	if w, err := ns.Apply(ctx, &e, t0); w != lifecycle.WriteOK || err != nil {
		t.Fatal(w, err)
	}
	// A node that is gone: removals are done, a label and a deletion are not.
	for kind, want := range map[lifecycle.Kind]lifecycle.Write{
		lifecycle.KindDeleteNode:           lifecycle.WriteNotFound,
		lifecycle.KindLabelNode:            lifecycle.WriteNotFound,
		lifecycle.KindCordon:               lifecycle.WriteOK,
		lifecycle.KindUncordon:             lifecycle.WriteOK,
		lifecycle.KindRemoveNodeLabel:      lifecycle.WriteOK,
		lifecycle.KindRemoveNodeAnnotation: lifecycle.WriteOK,
		lifecycle.KindAnnotateNode:         lifecycle.WriteNotFound,
		lifecycle.KindRemoveTaint:          lifecycle.WriteOK,
		lifecycle.KindRemoveNodeFinalizer:  lifecycle.WriteOK,
		lifecycle.KindSetNodeCondition:     lifecycle.WriteOK,
	} {
		e := lifecycle.Effect{Kind: kind, Node: "n1", Key: "k", Value: "v"}
		if w, _ := ns.Apply(ctx, &e, t0); w != want {
			t.Errorf("%s on a node that is gone: %s, want %s", kind, w, want)
		}
	}
	e = lifecycle.Effect{Kind: lifecycle.KindDrain, Node: "n1"}
	if IsNodeEffect(e.Kind) {
		t.Fatal("a drain is not carried out by Apply")
	}
	if w, err := ns.Apply(ctx, &e, t0); w != lifecycle.WriteFailed || err == nil {
		t.Fatalf("Apply of a drain: %s, %v", w, err)
	}
}

// A refused condition write says so in MCM's words, which the drain's
// failure quotes in the machine's last operation.
func TestSetConditionRefusedInMCMWords(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	c := fake.NewClientBuilder().WithObjects(n).WithStatusSubresource(&corev1.Node{}).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
				return errors.New(`nodes "n1" is forbidden`)
			},
			SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
				return errors.New(`nodes "n1" is forbidden`)
			},
		}).Build()
	ns := Nodes{Reader: c, Writer: c}
	_, err := ns.Apply(context.Background(), &lifecycle.Effect{Kind: lifecycle.KindSetNodeCondition, Node: "n1",
		Key: "Terminating", Value: lifecycle.ReasonScaleDown}, t0)
	want := `failed to create/update conditions on node "n1": nodes "n1" is forbidden`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}

func TestSetConditionKeepsTransitionTimeWhileTrue(t *testing.T) {
	n := &corev1.Node{}
	if !SetCondition(n, "Terminating", corev1.ConditionTrue, lifecycle.ReasonScaleDown, "m", t0) {
		t.Fatal("first set changed nothing")
	}
	if SetCondition(n, "Terminating", corev1.ConditionTrue, lifecycle.ReasonScaleDown, "m", t0.Add(time.Minute)) {
		t.Fatal("the same condition again changed something")
	}
	if !SetCondition(n, "Terminating", corev1.ConditionTrue, lifecycle.ReasonUnhealthy, "m2", t0.Add(time.Minute)) {
		t.Fatal("a new reason changed nothing")
	}
	if len(n.Status.Conditions) != 1 {
		t.Fatalf("%d conditions", len(n.Status.Conditions))
	}
	c := n.Status.Conditions[0]
	if c.Status != corev1.ConditionTrue || c.Reason != lifecycle.ReasonUnhealthy || !c.LastTransitionTime.Time.Equal(t0) {
		t.Fatalf("condition %+v", c)
	}
}

func TestSetKey(t *testing.T) {
	var m map[string]string
	if !SetKey(&m, "a", "1") || SetKey(&m, "a", "1") || !SetKey(&m, "a", "2") || m["a"] != "2" {
		t.Fatalf("%v", m)
	}
	if !SetKey(&m, "b", "") || SetKey(&m, "b", "") {
		t.Fatal("an empty value")
	}
}

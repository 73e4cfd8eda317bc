package kubeshell

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func pod(name, node string, change func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if change != nil {
		change(p)
	}
	return p
}

// drainWorld is the pods of a node a drain leaves and the ones it removes.
func drainWorld() []client.Object {
	yes := true
	return []client.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
		pod("app", "n1", nil),
		pod("blocked", "n1", nil),
		pod("other-node", "n2", nil),
		pod("mirror", "n1", func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }),
		pod("daemon", "n1", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "u", Controller: &yes}}
		}),
		pod("done", "n1", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
		pod("failed", "n1", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
	}
}

// evictions returns a fake API server that records the evictions asked
// and refuses the pod "blocked" as a disruption budget would.
func evictions(objs []client.Object, asked *[]string) client.Client {
	return fake.NewClientBuilder().WithObjects(objs...).
		WithIndex(&corev1.Pod{}, "spec.nodeName", func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj client.Object, in client.Object, opts ...client.SubResourceCreateOption) error {
			if sub != "eviction" {
				return errors.New("unexpected subresource " + sub)
			}
			*asked = append(*asked, obj.GetName())
			if obj.GetName() == "blocked" {
				return apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
			}
			return c.Delete(ctx, obj)
		}}).Build()
}

func TestDrainEvictsThePodsADrainRemoves(t *testing.T) {
	ctx := context.Background()
	var asked []string
	c := evictions(drainWorld(), &asked)
	ns := Nodes{Reader: c, Writer: c}
	pods, err := ns.PodsToDrain(ctx, "n1")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"app", "blocked"}) {
		t.Fatalf("pods to drain %v", names)
	}
	blocked, err := ns.Drain(ctx, "n1", false)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(asked)
	if !slices.Equal(asked, []string{"app", "blocked"}) {
		t.Fatalf("evictions asked %v", asked)
	}
	if len(blocked) != 1 || blocked[0][:len("default/blocked: ")] != "default/blocked: " {
		t.Fatalf("blocked %q", blocked)
	}
	// Forced, the blocked pod is deleted at once.
	if blocked, err := ns.Drain(ctx, "n1", true); err != nil || len(blocked) != 0 {
		t.Fatal(blocked, err)
	}
	if pods, _ := ns.PodsToDrain(ctx, "n1"); len(pods) != 0 {
		t.Fatalf("%d pods left after a forced drain", len(pods))
	}
	var all corev1.PodList
	if err := c.List(ctx, &all); err != nil || len(all.Items) != 5 {
		t.Fatalf("%d pods left in all, %v: a drain removed a pod it must leave", len(all.Items), err)
	}
}

func TestDrainOfANodeThatIsGoneIsDone(t *testing.T) {
	var asked []string
	c := evictions(drainWorld()[1:], &asked)
	blocked, err := Nodes{Reader: c, Writer: c}.Drain(context.Background(), "n1", false)
	if err != nil || len(blocked) != 0 || len(asked) != 0 {
		t.Fatal(blocked, err, asked)
	}
}

func TestDrainFailsOnAnUnreadableNode(t *testing.T) {
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return apierrors.NewServiceUnavailable("down")
	}}).Build()
	if _, err := (Nodes{Reader: c, Writer: c}).Drain(context.Background(), "n1", false); err == nil {
		t.Fatal("a drain whose node cannot be read succeeded")
	}
}

package mcmworld_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/purelifecycle/machine/mcmcontroller/internal/mcmworld"
	"github.com/purelifecycle/machine/mcmcontroller/mcmfake"
)

// The fake kubelet registers the node of an instance once its delay has
// passed, with the instance's providerID and addresses, reports the
// conditions a test sets, leaves the nodes of another cloud alone, and
// deletes the node of an instance that is gone.
func TestKubeletRegistersReportsAndDeletesNodes(t *testing.T) {
	w := mcmworld.Start(t, mcmworld.WithoutControllers())
	cloud := mcmfake.New()
	k := w.NewKubelet(cloud, mcmworld.RegisterAfter(500*time.Millisecond))
	other := mcmfake.New()
	other.IDPrefix, other.NodePrefix = "fake:///zone-b/i-", "b-node-"
	w.StartKubelet(other, mcmworld.RegisterNotReady())

	inst := cloud.Add("m-1", "uid-1", "class-a")
	otherInst := other.Add("m-2", "uid-2", "class-a")
	syncKubelet(t, k)
	if _, err := w.Core.CoreV1().Nodes().Get(w.Ctx, inst.NodeName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("node %s registered before its delay: %v", inst.NodeName, err)
	}
	w.WaitFor("the node registered after its delay", func() bool {
		syncKubelet(t, k)
		_, err := w.Core.CoreV1().Nodes().Get(w.Ctx, inst.NodeName, metav1.GetOptions{})
		return err == nil
	})
	n := node(t, w, inst.NodeName)
	if n.Spec.ProviderID != inst.ProviderID || !mcmworld.NodeReady(n) || len(n.Status.Addresses) != 2 ||
		n.Status.Addresses[0] != inst.Addresses[0] {
		t.Fatalf("node %s: providerID %q, conditions %v, addresses %v", n.Name, n.Spec.ProviderID, n.Status.Conditions, n.Status.Addresses)
	}
	w.WaitFor("the other cloud's node registered NotReady", func() bool {
		n, err := w.Core.CoreV1().Nodes().Get(w.Ctx, otherInst.NodeName, metav1.GetOptions{})
		return err == nil && len(n.Status.Conditions) > 0 && !mcmworld.NodeReady(n)
	})

	k.SetReady(inst.NodeName, false)
	k.SetCondition(inst.NodeName, "KernelDeadlock", corev1.ConditionTrue)
	syncKubelet(t, k)
	n = node(t, w, inst.NodeName)
	if mcmworld.NodeReady(n) || condition(n, "KernelDeadlock") != corev1.ConditionTrue ||
		condition(n, corev1.NodeDiskPressure) != corev1.ConditionFalse {
		t.Fatalf("node %s after SetReady(false) and KernelDeadlock: %v", n.Name, n.Status.Conditions)
	}

	cloud.Vanish(inst.ProviderID)
	syncKubelet(t, k)
	if _, err := w.Core.CoreV1().Nodes().Get(w.Ctx, inst.NodeName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the node of a gone instance: %v", err)
	}
	if _, err := w.Core.CoreV1().Nodes().Get(w.Ctx, otherInst.NodeName, metav1.GetOptions{}); err != nil {
		t.Fatalf("the other cloud's node: %v", err)
	}
}

// syncKubelet syncs the kubelet and fails the test on an error.
func syncKubelet(t *testing.T, k *mcmworld.Kubelet) {
	t.Helper()
	if err := k.Sync(); err != nil {
		t.Fatal(err)
	}
}

// node returns the node as the API server has it.
func node(t *testing.T, w *mcmworld.World, name string) *corev1.Node {
	t.Helper()
	n, err := w.Core.CoreV1().Nodes().Get(w.Ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// condition returns the status of the node's condition typ, "" without
// one.
func condition(n *corev1.Node, typ corev1.NodeConditionType) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

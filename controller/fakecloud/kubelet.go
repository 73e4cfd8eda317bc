package fakecloud

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/purelifecycle/machine/lifecycle"
)

// RegisterNode does what the kubelet of an instance does when it joins:
// it creates the node the instance announces, with the instance's
// providerID and the startup taint lifecycle.TaintInstanceNotReady, and
// reports it Ready. The Ready condition is written to the node the create
// returned, not to a copy read back, so a client reading through a cache
// that does not show the new node yet registers it all the same. An
// existing node without a Ready condition (a registration cut short) gets
// one; an existing node with one is left as it is.
func RegisterNode(ctx context.Context, c client.Client, inst Instance) error {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: inst.NodeName},
		Spec: corev1.NodeSpec{
			ProviderID: inst.ProviderID,
			Taints:     []corev1.Taint{{Key: lifecycle.TaintInstanceNotReady, Effect: corev1.TaintEffectNoSchedule}},
		},
	}
	err := c.Create(ctx, n)
	if apierrors.IsAlreadyExists(err) {
		// Read it back: through a cache that lags the create, this fails
		// (NotFound) and the next registration tries again.
		if err := c.Get(ctx, client.ObjectKey{Name: inst.NodeName}, n); err != nil {
			return err
		}
		if readyCondition(n) != nil {
			return nil
		}
	} else if err != nil {
		return err
	}
	return setReady(ctx, c, n, corev1.ConditionTrue)
}

// SetReady sets the node's Ready condition to status, as a kubelet (or the
// node lifecycle controller, for Unknown) does: read, changed and written
// again when someone else wrote the node meanwhile (a conflict).
func SetReady(ctx context.Context, c client.Client, node string, status corev1.ConditionStatus) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			return err
		}
		return setReady(ctx, c, n, status)
	})
}

// setReady writes n's Ready condition with status.
func setReady(ctx context.Context, c client.Client, n *corev1.Node, status corev1.ConditionStatus) error {
	now := metav1.Now()
	if cond := readyCondition(n); cond != nil {
		if cond.Status != status {
			cond.LastTransitionTime = now
		}
		cond.Status, cond.LastHeartbeatTime = status, now
		return c.Status().Update(ctx, n)
	}
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: status,
		Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now})
	return c.Status().Update(ctx, n)
}

// readyCondition returns the node's Ready condition, nil without one.
func readyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// Kubelet plays the kubelet of every initialized instance of p: every
// interval it registers the nodes not registered yet (RegisterNode), with a
// client that may read through the manager's cache. It implements
// controller-runtime's manager.Runnable; it runs on every replica, leader
// or not.
type Kubelet struct {
	Provider *Provider
	Client   client.Client
	Interval time.Duration
}

// NeedLeaderElection reports false: kubelets do not take turns.
func (k *Kubelet) NeedLeaderElection() bool { return false }

// Start runs until ctx ends.
func (k *Kubelet) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("fake-kubelet")
	t := time.NewTicker(k.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		for _, inst := range k.Provider.Instances() {
			if !inst.Initialized {
				continue
			}
			if err := RegisterNode(ctx, k.Client, inst); err != nil {
				log.Error(err, "registering node", "node", inst.NodeName)
			}
		}
	}
}

package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/purelifecycle/machine/lifecycle"
)

// A Machine whose spec raises inPlaceGeneration has its node updated in
// place: the controller labels the node candidate and selected, cordons
// and drains it, and only with its pod gone tells the node agent
// ReadyForUpdate (the machine InPlaceUpdating); the test plays the agent,
// which reports success; the machine is Running again at the generation,
// the labels are off and the node is schedulable.
func TestInPlaceUpdateRequestedInTheSpec(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	reaper := startPodReaper(t, ns, 200*time.Millisecond)
	_, inst := bringUp(t, ns, "m-inplace", time.Minute)
	newPod(t, ns, "app-inplace", "app", inst.NodeName, false)

	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		m := getMachine(t, ns, "m-inplace")
		m.Spec.InPlaceGeneration = 1
		return k8s.Update(ctx, m)
	}))
	var readyAt time.Time
	eventually(t, 60*time.Second, "the node told ReadyForUpdate", func() (bool, string) {
		n, _ := getNode(t, inst.NodeName)
		reason := inPlaceReason(n)
		if reason == lifecycle.ReasonReadyForUpdate {
			readyAt = time.Now()
			require.True(t, n.Spec.Unschedulable, "ReadyForUpdate on a node that is not cordoned")
			return true, ""
		}
		return false, fmt.Sprintf("labels %v, condition %q", n.Labels, reason)
	})
	gone, ok := reaper.goneAt("app-inplace")
	require.True(t, ok && gone.Before(readyAt), "ReadyForUpdate before the pod was gone")
	require.Equal(t, "InPlaceUpdating", getMachine(t, ns, "m-inplace").Status.CurrentStatus.Phase)

	// The agent updates the node and reports success.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: inst.NodeName}, n); err != nil {
			return err
		}
		n.Labels[lifecycle.UpdateResultLabel] = lifecycle.UpdateResultSuccessful
		return k8s.Update(ctx, n)
	}))
	eventually(t, 60*time.Second, "the machine Running at the generation, the node freed", func() (bool, string) {
		m := getMachine(t, ns, "m-inplace")
		n, _ := getNode(t, inst.NodeName)
		_, candidate := n.Labels[lifecycle.CandidateForUpdateLabel]
		done := m.Status.CurrentStatus.Phase == "Running" && m.Status.Lifecycle != nil &&
			m.Status.Lifecycle.InPlaceGeneration == 1 && !candidate && !n.Spec.Unschedulable
		return done, fmt.Sprintf("phase %s, node labels %v, unschedulable %v", m.Status.CurrentStatus.Phase,
			n.Labels, n.Spec.Unschedulable)
	})
}

// inPlaceReason returns the reason of the node's InPlaceUpdate condition,
// "" without one.
func inPlaceReason(n *corev1.Node) string {
	if n == nil {
		return ""
	}
	for _, c := range n.Status.Conditions {
		if string(c.Type) == lifecycle.ConditionInPlaceUpdate {
			return c.Reason
		}
	}
	return ""
}

package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/retry"

	"github.com/purelifecycle/machine/lifecycle"
)

// A Machine whose spec asks preserve=now is preserved while Running: its
// expiry is set and shown, its node is kept from the cluster autoscaler
// and marked Preserved, and nothing cordons it. Clearing the request stops
// the preservation: the expiry goes, the node's condition turns False and
// its autoscaler annotations are removed.
func TestPreservationRequestedInTheSpec(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	_, inst := bringUp(t, ns, "m-preserve", time.Minute)
	setPreserve := func(v string) {
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			m := getMachine(t, ns, "m-preserve")
			m.Spec.Preserve = v
			return k8s.Update(ctx, m)
		}))
	}
	preserved := func(n *corev1.Node) (corev1.ConditionStatus, string) {
		for _, c := range n.Status.Conditions {
			if string(c.Type) == lifecycle.ConditionPreserved {
				return c.Status, c.Reason
			}
		}
		return "", ""
	}
	setPreserve("now")
	eventually(t, 30*time.Second, "the machine and its node preserved", func() (bool, string) {
		m := getMachine(t, ns, "m-preserve")
		n, _ := getNode(t, inst.NodeName)
		s, reason := preserved(n)
		ok := m.Status.CurrentStatus.PreserveExpiryTime != nil && n.Annotations[lifecycle.ScaleDownDisabledAnnotation] == "true" &&
			s == corev1.ConditionTrue && reason == lifecycle.ReasonPreservedByUser
		return ok, fmt.Sprintf("expiry %v, annotations %v, condition %s %q", m.Status.CurrentStatus.PreserveExpiryTime,
			n.Annotations, s, reason)
	})
	m := getMachine(t, ns, "m-preserve")
	require.Equal(t, "Running", m.Status.CurrentStatus.Phase)
	require.WithinDuration(t, time.Now().Add(96*time.Hour), m.Status.CurrentStatus.PreserveExpiryTime.Time, time.Minute)
	n, _ := getNode(t, inst.NodeName)
	require.False(t, n.Spec.Unschedulable, "a Running machine's preserved node is not cordoned")

	setPreserve("")
	eventually(t, 30*time.Second, "the preservation stopped", func() (bool, string) {
		m := getMachine(t, ns, "m-preserve")
		n, _ := getNode(t, inst.NodeName)
		s, _ := preserved(n)
		_, kept := n.Annotations[lifecycle.ScaleDownDisabledAnnotation]
		return m.Status.CurrentStatus.PreserveExpiryTime == nil && s == corev1.ConditionFalse && !kept,
			fmt.Sprintf("expiry %v, annotations %v, condition %s", m.Status.CurrentStatus.PreserveExpiryTime, n.Annotations, s)
	})
}

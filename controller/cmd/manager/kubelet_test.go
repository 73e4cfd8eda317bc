package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/purelifecycle/machine/controller/fakecloud"
	"github.com/purelifecycle/machine/driverapi"
)

// The fake kubelet runs in the command with the manager's client, which
// reads through the manager's cache: a node it just created is not in the
// cache yet when it reads the node back to report it Ready. Every node must
// still end up Ready.
func TestFakeKubeletRegistersReadyNodesThroughTheManagersCache(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := fakecloud.New()
	p.Zone = "zone-kubelet"
	const n = 5
	for i := range n {
		name := fmt.Sprintf("kubelet-%d", i)
		res := driverapi.Invoke(ctx, p, driverapi.Call{Method: driverapi.MethodCreate,
			Machine: driverapi.MachineRef{Name: name, UID: "uid-" + name}}, driverapi.Class{})
		require.True(t, res.OK(), res.ErrorText())
		res = driverapi.Invoke(ctx, p, driverapi.Call{Method: driverapi.MethodInitialize,
			Machine: driverapi.MachineRef{Name: name, ProviderID: res.ProviderID}}, driverapi.Class{})
		require.True(t, res.OK(), res.ErrorText())
	}
	k := &fakecloud.Kubelet{Provider: p, Client: cached, Interval: 200 * time.Millisecond}
	done := make(chan error, 1)
	go func() { done <- k.Start(ctx) }()

	eventually(t, 15*time.Second, "every node registered and Ready", func() (bool, string) {
		ready := 0
		var last string
		for _, inst := range p.Instances() {
			node, ok := getNode(t, inst.NodeName)
			if !ok {
				last = inst.NodeName + " not registered"
				continue
			}
			if readyStatus(node) == corev1.ConditionTrue {
				ready++
			} else {
				last = fmt.Sprintf("%s Ready=%q", inst.NodeName, readyStatus(node))
			}
		}
		return ready == n, fmt.Sprintf("%d of %d Ready; %s", ready, n, last)
	})
	cancel()
	require.NoError(t, <-done)
}

// readyStatus returns the status of the node's Ready condition, "" without
// one.
func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

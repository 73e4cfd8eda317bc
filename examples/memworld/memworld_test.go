package memworld

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
)

func TestCreateIsIdempotentPerKey(t *testing.T) {
	p := NewProvider()
	ctx := context.Background()
	req := &driverapi.CreateMachineRequest{Machine: driverapi.MachineRef{Name: "m", UID: "u"}, IdempotencyKey: "u/0"}
	a, err := p.CreateMachine(ctx, req)
	require.NoError(t, err)
	b, err := p.CreateMachine(ctx, req)
	require.NoError(t, err)
	require.Equal(t, a.ProviderID, b.ProviderID)
	require.Equal(t, 1, p.Created)

	_, err = p.GetMachineStatus(ctx, &driverapi.GetMachineStatusRequest{Machine: driverapi.MachineRef{Name: "m", UID: "u"}})
	require.Equal(t, driverapi.Uninitialized, driverapi.CodeOf(err))
	_, err = p.InitializeMachine(ctx, &driverapi.InitializeMachineRequest{Machine: driverapi.MachineRef{ProviderID: a.ProviderID}})
	require.NoError(t, err)
	st, err := p.GetMachineStatus(ctx, &driverapi.GetMachineStatusRequest{Machine: driverapi.MachineRef{Name: "m", UID: "u"}})
	require.NoError(t, err)
	require.Equal(t, "u", st.OwnerUID)

	_, err = p.DeleteMachine(ctx, &driverapi.DeleteMachineRequest{Machine: driverapi.MachineRef{ProviderID: a.ProviderID}})
	require.NoError(t, err)
	_, err = p.DeleteMachine(ctx, &driverapi.DeleteMachineRequest{Machine: driverapi.MachineRef{ProviderID: a.ProviderID}})
	require.Equal(t, driverapi.NotFound, driverapi.CodeOf(err))
}

func TestNodesRegisterAfterBoot(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	p := NewProvider()
	c := NewCluster(p, "m", "u", t0)
	resp, err := p.CreateMachine(context.Background(), &driverapi.CreateMachineRequest{Machine: driverapi.MachineRef{Name: "m", UID: "u"}, IdempotencyKey: "k"})
	require.NoError(t, err)
	require.Equal(t, "mem:///zone-a/vm-1", resp.ProviderID)
	require.Equal(t, "node-vm-1", resp.NodeName)
	require.Equal(t, t0, p.At(0).Created, "the provider's clock is the cluster's")
	p.At(p.Lookup(resp.ProviderID)).Initialized = true
	c.Tick(t0.Add(time.Minute))
	require.Empty(t, c.Nodes)
	c.Tick(t0.Add(100 * time.Second))
	n := c.NodeNamed(resp.NodeName)
	require.True(t, n.Found())
	require.True(t, n.Taints.Has(lifecycle.InstanceNotReady))
	require.Equal(t, lifecycle.ConditionFalse, n.Conditions[0].Status)
	c.Tick(t0.Add(2 * time.Minute))
	require.Equal(t, lifecycle.ConditionTrue, c.NodeNamed(resp.NodeName).Conditions[0].Status)

	// The machine finds its node by providerID before its label is set.
	c.Machine.Status.ProviderID = resp.ProviderID
	require.Equal(t, resp.NodeName, c.Observe(t0).Node.Name)
}

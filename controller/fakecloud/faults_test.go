package fakecloud

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
)

func TestClassFaultsAreInjected(t *testing.T) {
	p := New()
	d := WithClassFaults(p)
	ctx := context.Background()
	plain := driverapi.Class{Name: "plain", ProviderSpec: []byte(`{"image":"x"}`)}
	faulty := driverapi.Class{Name: "faulty", ProviderSpec: []byte(
		`{"faults":{"DeleteMachine":"Internal","UpdateMachine":"Unimplemented","InitializeMachine":"NoSuchCode"},"omitIdentity":true}`)}
	ref := driverapi.MachineRef{Name: "m-1", UID: "uid-1"}

	resp, err := d.CreateMachine(ctx, &driverapi.CreateMachineRequest{Machine: ref, Class: plain, IdempotencyKey: "k1"})
	require.NoError(t, err)
	require.NotEmpty(t, resp.ProviderID)
	ref.ProviderID = resp.ProviderID

	_, err = d.DeleteMachine(ctx, &driverapi.DeleteMachineRequest{Machine: ref, Class: faulty})
	require.Equal(t, driverapi.Internal, driverapi.ResultOf(driverapi.MethodDelete, err).Code)
	require.Equal(t, 0, p.Calls("m-1", driverapi.MethodDelete), "a faulty method is not called")
	_, err = d.UpdateMachine(ctx, &driverapi.UpdateMachineRequest{Machine: ref, Class: faulty})
	require.Equal(t, driverapi.Unimplemented, driverapi.ResultOf(driverapi.MethodUpdate, err).Code)
	_, err = d.InitializeMachine(ctx, &driverapi.InitializeMachineRequest{Machine: ref, Class: faulty})
	require.Equal(t, driverapi.Internal, driverapi.ResultOf(driverapi.MethodInitialize, err).Code, "an unknown code is Internal")
	_, err = d.GetMachineStatus(ctx, &driverapi.GetMachineStatusRequest{Machine: ref, Class: faulty})
	require.Equal(t, driverapi.Uninitialized, driverapi.ResultOf(driverapi.MethodGetStatus, err).Code, "no fault: the provider answers")

	resp, err = d.CreateMachine(ctx, &driverapi.CreateMachineRequest{Machine: driverapi.MachineRef{Name: "m-2", UID: "uid-2"},
		Class: faulty, IdempotencyKey: "k2"})
	require.NoError(t, err)
	require.Empty(t, resp.ProviderID)
	require.Empty(t, resp.NodeName)
	_, ok := p.InstanceOf("m-2")
	require.True(t, ok, "the instance is created all the same")

	announcing := driverapi.Class{Name: "announcing", ProviderSpec: []byte(`{"announceNode":"elsewhere"}`)}
	resp, err = d.CreateMachine(ctx, &driverapi.CreateMachineRequest{Machine: driverapi.MachineRef{Name: "m-3", UID: "uid-3"},
		Class: announcing, IdempotencyKey: "k3"})
	require.NoError(t, err)
	require.Equal(t, "elsewhere", resp.NodeName)
	require.NotEmpty(t, resp.ProviderID)

	undecodable := driverapi.Class{Name: "odd", ProviderSpec: []byte(`{"faults":{"DeleteMachine":"Undecodable"}}`)}
	_, err = d.DeleteMachine(ctx, &driverapi.DeleteMachineRequest{Machine: ref, Class: undecodable})
	require.True(t, driverapi.ResultOf(driverapi.MethodDelete, err).Undecodable)

	_, err = d.DeleteMachine(ctx, &driverapi.DeleteMachineRequest{Machine: ref, Class: driverapi.Class{ProviderSpec: []byte(`[1,2]`)}})
	require.NoError(t, err, "a provider spec that is not an object asks nothing")
}

package fakecloud

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
)

func TestCreateIsIdempotentPerKeyAndFindsByNameAndKey(t *testing.T) {
	p := New()
	ctx := context.Background()
	ref := driverapi.MachineRef{Name: "m", UID: "uid-1"}
	first := driverapi.Invoke(ctx, p, driverapi.Call{Method: driverapi.MethodCreate, Machine: ref}, driverapi.Class{})
	require.True(t, first.OK())
	again := driverapi.Invoke(ctx, p, driverapi.Call{Method: driverapi.MethodCreate, Machine: ref}, driverapi.Class{})
	require.Equal(t, first.ProviderID, again.ProviderID)
	require.Len(t, p.Instances(), 1)

	st := driverapi.Invoke(ctx, p, driverapi.Call{Method: driverapi.MethodGetStatus, Machine: ref}, driverapi.Class{})
	require.Equal(t, driverapi.Uninitialized, st.Code)
	require.Equal(t, first.ProviderID, st.ProviderID)
	require.Equal(t, "uid-1", st.OwnerUID)

	ref.ProviderID = first.ProviderID
	require.True(t, driverapi.Invoke(ctx, p, driverapi.Call{Method: driverapi.MethodInitialize, Machine: ref}, driverapi.Class{}).OK())
	require.True(t, driverapi.Invoke(ctx, p, driverapi.Call{Method: driverapi.MethodGetStatus, Machine: ref}, driverapi.Class{}).OK())
	require.True(t, driverapi.Invoke(ctx, p, driverapi.Call{Method: driverapi.MethodDelete, Machine: ref}, driverapi.Class{}).OK())
	gone := driverapi.Invoke(ctx, p, driverapi.Call{Method: driverapi.MethodDelete, Machine: ref}, driverapi.Class{})
	require.Equal(t, driverapi.NotFound, gone.Code)
	require.Equal(t, 2, p.Calls("m", driverapi.MethodCreate))
}

func TestFailCreateFailsOnlyThatMachineUntilCleared(t *testing.T) {
	p := New()
	ctx := context.Background()
	p.FailCreate("bad", driverapi.ResourceExhausted)
	bad := driverapi.Invoke(ctx, p, driverapi.Call{Method: driverapi.MethodCreate, Machine: driverapi.MachineRef{Name: "bad", UID: "1"}}, driverapi.Class{})
	require.Equal(t, driverapi.ResourceExhausted, bad.Code)
	good := driverapi.Invoke(ctx, p, driverapi.Call{Method: driverapi.MethodCreate, Machine: driverapi.MachineRef{Name: "good", UID: "2"}}, driverapi.Class{})
	require.True(t, good.OK())
	p.FailCreate("bad", driverapi.OK)
	bad = driverapi.Invoke(ctx, p, driverapi.Call{Method: driverapi.MethodCreate, Machine: driverapi.MachineRef{Name: "bad", UID: "1"}}, driverapi.Class{})
	require.True(t, bad.OK())
}

package fakecloud

import (
	"context"
	"os"
	"path/filepath"
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

// Two providers, as two runs of the manager have, never name two instances
// alike: a provider that reused the first run's providerIDs and node names
// handed a new machine the node of a machine the first run created (found
// running the manager by hand, restarted, against one API server).
func TestProvidersNeverShareAnInstanceName(t *testing.T) {
	ctx := context.Background()
	a, b := New(), New()
	ref := driverapi.MachineRef{Name: "m", UID: "uid-1"}
	ia := driverapi.Invoke(ctx, a, driverapi.Call{Method: driverapi.MethodCreate, Machine: ref}, driverapi.Class{})
	ib := driverapi.Invoke(ctx, b, driverapi.Call{Method: driverapi.MethodCreate, Machine: ref}, driverapi.Class{})
	require.True(t, ia.OK())
	require.True(t, ib.OK())
	require.NotEqual(t, ia.ProviderID, ib.ProviderID)
	require.NotEqual(t, ia.NodeName, ib.NodeName)
}

// A provider opened on a state file keeps its instances there: the next
// provider opened on it (the manager restarted) has them, finds them by key
// and by providerID, deletes them, and names new instances afresh.
func TestOpenKeepsInstancesAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "fake.json")
	first, err := Open(path)
	require.NoError(t, err)
	require.Empty(t, first.Instances())
	keep := driverapi.MachineRef{Name: "keep", UID: "uid-keep"}
	gone := driverapi.MachineRef{Name: "gone", UID: "uid-gone"}
	created := driverapi.Invoke(ctx, first, driverapi.Call{Method: driverapi.MethodCreate, Machine: keep,
		Metadata: map[string]string{"team": "a"}}, driverapi.Class{Name: "c", Secret: map[string][]byte{"userData": []byte("ud")}})
	require.True(t, created.OK())
	keep.ProviderID = created.ProviderID
	require.True(t, driverapi.Invoke(ctx, first, driverapi.Call{Method: driverapi.MethodInitialize, Machine: keep}, driverapi.Class{}).OK())
	g := driverapi.Invoke(ctx, first, driverapi.Call{Method: driverapi.MethodCreate, Machine: gone}, driverapi.Class{})
	require.True(t, g.OK())
	gone.ProviderID = g.ProviderID
	require.True(t, driverapi.Invoke(ctx, first, driverapi.Call{Method: driverapi.MethodDelete, Machine: gone}, driverapi.Class{}).OK())

	second, err := Open(path)
	require.NoError(t, err)
	require.Equal(t, first.Instances(), second.Instances())
	require.Len(t, second.Instances(), 1)
	inst := second.Instances()[0]
	require.True(t, inst.Initialized)
	require.Equal(t, "ud", inst.UserData)
	require.Equal(t, map[string]string{"team": "a"}, inst.Metadata)

	again := driverapi.Invoke(ctx, second, driverapi.Call{Method: driverapi.MethodCreate, Machine: keep}, driverapi.Class{})
	require.True(t, again.OK())
	require.Equal(t, created.ProviderID, again.ProviderID, "the creation of the first run created again")
	require.True(t, driverapi.Invoke(ctx, second, driverapi.Call{Method: driverapi.MethodGetStatus, Machine: keep}, driverapi.Class{}).OK())
	fresh := driverapi.Invoke(ctx, second, driverapi.Call{Method: driverapi.MethodCreate, Machine: gone, Attempt: 1}, driverapi.Class{})
	require.True(t, fresh.OK())
	require.NotEqual(t, created.ProviderID, fresh.ProviderID)
	require.NotEqual(t, g.ProviderID, fresh.ProviderID, "a deleted instance's providerID given again")

	require.NoError(t, os.WriteFile(path, []byte("{"), 0o600))
	_, err = Open(path)
	require.Error(t, err, "a damaged state file opened as an empty cloud")
}

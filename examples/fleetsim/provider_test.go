package fleetsim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// world returns a shard of one machine, without faults, at its start.
func world(t *testing.T) *shard {
	t.Helper()
	o := DefaultOptions()
	o.Machines, o.Faults, o.Ramp, o.Update, o.Metadata, o.ScaleDown = 1, false, 0, 0, 0, 0
	tab, err := newTables(&o, epoch)
	require.NoError(t, err)
	return newShard(&o, tab, 0, nil)
}

func call(w *shard, m driverapi.Method, attempt uint32, pid string) driverapi.Result {
	o := &w.machines[0].obj
	var r driverapi.Result
	w.invoke(&r, 0, &driverapi.Call{Method: m, Attempt: attempt, Generation: 3, Metadata: o.Metadata,
		Machine: driverapi.MachineRef{Name: o.Name, UID: o.UID, ProviderID: pid}}, w.now)
	return r
}

// CreateMachine is idempotent per key (UID and attempt); GetMachineStatus
// reports the instance's owner, metadata and generation, Uninitialized
// until InitializeMachine ran; ListMachines reports created times;
// DeleteMachine deletes, then answers NotFound.
func TestProviderFollowsTheDriverContract(t *testing.T) {
	w := world(t)
	a := call(w, driverapi.MethodCreate, 0, "")
	require.True(t, a.OK())
	require.NotEmpty(t, a.ProviderID)
	require.NotEmpty(t, a.NodeName)
	b := call(w, driverapi.MethodCreate, 0, "")
	require.Equal(t, a.ProviderID, b.ProviderID, "same key, same instance")
	require.Len(t, w.inst, 1)

	st := call(w, driverapi.MethodGetStatus, 0, "")
	require.Equal(t, driverapi.Uninitialized, st.Code)
	require.Equal(t, a.ProviderID, st.ProviderID)
	require.Equal(t, w.machines[0].obj.UID, st.OwnerUID)
	require.Equal(t, w.machines[0].obj.Metadata, st.Metadata)
	require.Equal(t, int64(3), st.Generation)

	require.True(t, call(w, driverapi.MethodInitialize, 0, a.ProviderID).OK())
	require.True(t, call(w, driverapi.MethodGetStatus, 0, a.ProviderID).OK())

	w.now += 5e9
	w.collectOrphans() // lists the instance, deletes nothing: the machine is being created
	require.Len(t, w.list, 1)
	require.Equal(t, tm(epoch), w.list[0].Created)
	require.Equal(t, w.machines[0].obj.Name, w.list[0].MachineName)
	require.Zero(t, w.stats.OrphansDeleted)

	require.True(t, call(w, driverapi.MethodDelete, 0, "").OK(), "found by name, UID and key")
	require.Equal(t, driverapi.NotFound, call(w, driverapi.MethodDelete, 0, a.ProviderID).Code)
	require.Equal(t, driverapi.NotFound, call(w, driverapi.MethodGetStatus, 0, "").Code)
	c := call(w, driverapi.MethodCreate, 1, "")
	require.NotEqual(t, a.ProviderID, c.ProviderID, "a new key makes a new instance")
	require.Zero(t, w.nviol)
}

// A machine of a fleet without faults goes from nothing to Running, its
// node joined, labelled and without the startup taint; and a pass of the
// Running machine allocates nothing.
func TestMachineReachesRunningAndPassesAllocateNothing(t *testing.T) {
	w := world(t)
	w.end = epoch + 30*60e9
	for w.q.len() > 0 && w.q.peek().at <= w.end {
		e := w.q.pop()
		w.now = e.at
		w.handle(&e)
	}
	m := &w.machines[0]
	require.Equal(t, phase.Running, m.st.Phase)
	require.Zero(t, w.nviol)
	i := w.instByPID(m.st.ProviderID)
	require.GreaterOrEqual(t, i, int32(0))
	n := &w.inst[i].node
	require.False(t, n.taints.Has(lifecycle.InstanceNotReady))
	require.Equal(t, m.slot+1, n.label)
	require.True(t, lifecycle.MemberOf(&w.cfg, &lifecycle.Input{Object: m.obj, Status: m.st}).MetadataInSync())

	allocs := testing.AllocsPerRun(100, func() {
		w.now += 11 * 60e9 // a resync: the metadata is observed again
		w.pass(0)
	})
	require.Zero(t, allocs)
	require.Zero(t, w.nviol)
}

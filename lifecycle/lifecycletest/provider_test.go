package lifecycletest_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
)

func call(m driverapi.Method, name, uid string, attempt uint32, pid string) *driverapi.Call {
	return &driverapi.Call{Method: m, Machine: driverapi.MachineRef{Name: name, UID: uid, ProviderID: pid}, Attempt: attempt}
}

// CreateMachine is idempotent per name and key; GetMachineStatus reports
// the instance, Uninitialized until InitializeMachine ran; DeleteMachine
// deletes, and the instance keeps its number.
func TestProviderFollowsTheDriverContract(t *testing.T) {
	p := lifecycletest.NewProvider()
	now := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	p.Now = func() time.Time { return now }
	c := call(driverapi.MethodCreate, "m-1", "u-1", 0, "")
	c.Generation, c.Metadata = 2, map[string]string{"team": "a"}
	a := p.Invoke(c)
	require.True(t, a.OK())
	require.Equal(t, "test:///vm-1", a.ProviderID)
	require.Equal(t, "node-1", a.NodeName)
	require.Equal(t, a, p.Invoke(c), "same name and key, same instance")
	require.Equal(t, 1, p.Created)
	require.Equal(t, "u-1/0", p.At(0).Key())

	st := p.Invoke(call(driverapi.MethodGetStatus, "m-1", "u-1", 0, ""))
	require.Equal(t, driverapi.Uninitialized, st.Code)
	require.Equal(t, "instance test:///vm-1 is not initialized", st.Message)
	require.Equal(t, driverapi.Error(driverapi.Uninitialized, st.Message).Error(), st.Text)
	require.Equal(t, a.ProviderID, st.ProviderID)
	require.Equal(t, "u-1", st.OwnerUID)
	require.Equal(t, int64(2), st.Generation)
	require.Equal(t, map[string]string{"team": "a"}, st.Metadata)

	require.True(t, p.Invoke(call(driverapi.MethodInitialize, "m-1", "u-1", 0, a.ProviderID)).OK())
	require.True(t, p.Invoke(call(driverapi.MethodGetStatus, "m-1", "", 0, a.ProviderID)).OK())
	require.Equal(t, []driverapi.Instance{{ProviderID: a.ProviderID, MachineName: "m-1", OwnerUID: "u-1", Created: now}},
		p.List(nil))

	require.True(t, p.Invoke(call(driverapi.MethodDelete, "m-1", "u-1", 0, "")).OK(), "found by name and key")
	gone := p.Invoke(call(driverapi.MethodDelete, "m-1", "u-1", 0, a.ProviderID))
	require.Equal(t, driverapi.NotFound, gone.Code)
	require.Equal(t, "no instance test:///vm-1", gone.Message)
	require.Equal(t, "no instance for machine m-1", p.Invoke(call(driverapi.MethodGetStatus, "m-1", "u-1", 0, "")).Message)
	require.Empty(t, p.Instances())
	require.Equal(t, 1, p.Len())
	require.True(t, p.At(0).Deleted)
	require.Equal(t, 0, p.Lookup(a.ProviderID), "a deleted instance keeps its number")

	b := p.Invoke(call(driverapi.MethodCreate, "m-1", "u-1", 0, ""))
	require.Equal(t, "test:///vm-2", b.ProviderID, "the deleted instance's key makes a new one")
	require.Equal(t, 2, p.Created)
	require.Equal(t, [16]int{driverapi.MethodCreate: 3, driverapi.MethodInitialize: 1, driverapi.MethodGetStatus: 3,
		driverapi.MethodDelete: 2}, p.Calls)
}

// A request's idempotency key is kept as it came when it is not the one
// driverapi.Call forms; a request without a key makes an instance no later
// request finds by key; the Driver methods copy the maps they are given
// and hand out.
func TestProviderKeysOfRequests(t *testing.T) {
	p := lifecycletest.NewProvider()
	ctx := context.Background()
	create := func(uid, key string) string {
		md := map[string]string{"team": "a"}
		r, err := p.CreateMachine(ctx, &driverapi.CreateMachineRequest{Machine: driverapi.MachineRef{Name: "m", UID: uid},
			IdempotencyKey: key, Metadata: md})
		require.NoError(t, err)
		md["team"] = "changed"
		return r.ProviderID
	}
	a := create("u", "u/3")
	require.Equal(t, a, create("u", "u/3"))
	require.Equal(t, uint32(3), p.At(0).Attempt)
	require.Equal(t, "u/3", p.At(0).Key())
	require.Equal(t, "a", p.At(0).Metadata["team"], "the provider keeps a copy of a request's map")
	require.Equal(t, a, p.Invoke(&driverapi.Call{Method: driverapi.MethodCreate, Attempt: 3,
		Machine: driverapi.MachineRef{Name: "m", UID: "u"}}).ProviderID, "a request's key and a call's are one")
	for _, opaque := range []string{"u/03", "k", "v/3", "u/", "u/99999999999"} {
		pid := create("u", opaque)
		require.Equal(t, pid, create("u", opaque), opaque)
		require.Equal(t, opaque, p.At(p.Lookup(pid)).Key())
	}
	b := create("u", "")
	require.NotEqual(t, b, create("u", ""), "no key, no idempotency")
	require.Empty(t, p.At(p.Lookup(b)).Key())
	st, err := p.GetMachineStatus(ctx, &driverapi.GetMachineStatusRequest{Machine: driverapi.MachineRef{ProviderID: a}})
	require.Equal(t, driverapi.Uninitialized, driverapi.CodeOf(err))
	st.Metadata["team"] = "changed"
	require.Equal(t, "a", p.At(0).Metadata["team"], "the response's map is a copy")
}

// Among the instances of a name, a call finds the one of its key, then
// one of its UID (made for it or tagged with it), newest first; only
// GetMachineStatus falls back to any instance of the name.
func TestProviderFindsByKeyThenUIDThenName(t *testing.T) {
	p := lifecycletest.NewProvider()
	old := p.Add(lifecycletest.Instance{MachineName: "m-1", CreatorUID: "u-0", OwnerUID: "u-0", Initialized: true})
	require.Equal(t, 0, old)
	other := p.Add(lifecycletest.Instance{MachineName: "m-2", CreatorUID: "u-1", OwnerUID: "u-1"})

	st := p.Invoke(call(driverapi.MethodGetStatus, "m-1", "u-1", 0, ""))
	require.True(t, st.OK(), "GetMachineStatus finds another incarnation's instance by the name")
	require.Equal(t, "u-0", st.OwnerUID, "and reports its owner")
	require.Equal(t, driverapi.NotFound, p.Invoke(call(driverapi.MethodDelete, "m-1", "u-1", 0, "")).Code,
		"DeleteMachine never acts on the name alone")
	require.Equal(t, driverapi.NotFound, p.Invoke(call(driverapi.MethodInitialize, "m-1", "u-1", 0, "")).Code)
	require.Equal(t, -1, p.Find(call(driverapi.MethodDelete, "m-1", "u-1", 0, "")))
	require.Equal(t, old, p.Find(call(driverapi.MethodGetStatus, "m-1", "u-1", 0, "")))

	mine := p.Invoke(call(driverapi.MethodCreate, "m-1", "u-1", 0, ""))
	require.Equal(t, "test:///vm-3", mine.ProviderID, "the key of another name's instance does not count")
	again := p.Invoke(call(driverapi.MethodCreate, "m-1", "u-1", 1, ""))
	require.Equal(t, "test:///vm-4", again.ProviderID, "a new attempt, a new instance")
	require.Equal(t, 3, p.Find(call(driverapi.MethodGetStatus, "m-1", "u-1", 2, "")), "no key: the newest of the UID")
	require.Equal(t, 2, p.Find(call(driverapi.MethodGetStatus, "m-1", "u-1", 0, "")), "the key first")
	require.Equal(t, 3, p.Newest("m-1"))
	require.Equal(t, []int{2, 0, -1}, []int{p.Older(3), p.Older(2), p.Older(0)})
	require.Equal(t, -1, p.Newest("m-9"))

	// The owner tag counts as the UID.
	p.At(old).OwnerUID = "u-7"
	require.Equal(t, old, p.Find(call(driverapi.MethodUpdate, "m-1", "u-7", 0, "")))
	require.Equal(t, other, p.Lookup("test:///vm-2"))
	for _, bad := range []string{"", "test:///vm-", "test:///vm-0", "test:///vm-5", "test:///vm-1x", "mem:///vm-1", "test:///vm-01"} {
		require.Equal(t, -1, p.Lookup(bad), bad)
	}
	require.Equal(t, 1, p.NodeOwner("node-2"))
	require.Equal(t, -1, p.NodeOwner("node-9"))
}

// A scripted failure fails the next calls of its method, before the Fault
// hook is asked; a fault After takes effect; NoIdentity hides the
// instance; Text is used as given.
func TestProviderInjectsFaults(t *testing.T) {
	p := lifecycletest.NewProvider()
	var notes []string
	p.Log = func(s string) { notes = append(notes, s) }
	asked := 0
	var hook lifecycletest.Fault
	p.Fault = func(driverapi.Method) lifecycletest.Fault { asked++; return hook }
	p.FailNext(driverapi.MethodCreate, lifecycletest.Fault{Code: driverapi.ResourceExhausted, Message: "quota"}, 2)
	create := call(driverapi.MethodCreate, "m-1", "u-1", 0, "")
	for range 2 {
		r := p.Invoke(create)
		require.Equal(t, driverapi.ResourceExhausted, r.Code)
		require.Equal(t, "quota", r.Message)
		require.Equal(t, driverapi.Error(driverapi.ResourceExhausted, "quota").Error(), r.Text)
	}
	require.Zero(t, asked, "scripted failures come first")
	require.Zero(t, p.Len())
	require.Equal(t, []string{"scripted failure, 1 left", "scripted failure, 0 left"}, notes)

	hook = lifecycletest.Fault{Code: driverapi.DeadlineExceeded, After: true, Text: "given"}
	r := p.Invoke(create)
	require.Equal(t, driverapi.DeadlineExceeded, r.Code)
	require.Equal(t, "given", r.Text)
	require.Empty(t, r.ProviderID)
	require.Equal(t, 1, p.Len(), "the call took effect before it failed")

	hook = lifecycletest.Fault{NoIdentity: true}
	r = p.Invoke(create)
	require.True(t, r.OK())
	require.Empty(t, r.ProviderID)
	require.Equal(t, 1, p.Len())

	hook = lifecycletest.Fault{Undecodable: true}
	r = p.Invoke(call(driverapi.MethodGetStatus, "m-1", "u-1", 0, ""))
	require.Equal(t, driverapi.ResultOf(driverapi.MethodGetStatus, errorText("injected failure of GetMachineStatus")), r)
	require.Equal(t, []string{"scripted failure, 1 left", "scripted failure, 0 left", "injected DeadlineExceeded, after carrying the call out",
		"created test:///vm-1", "same key u-1/0: returned the existing test:///vm-1", "injected undecodable failure"}, notes)
	require.Equal(t, 3, asked)
}

type errorText string

func (e errorText) Error() string { return string(e) }

// UpdateMetadata asks about the keys to set in sorted order, then those to
// remove, then the owner; a dropped change is silently not applied; the
// instance gets a new map, and a map handed out before stays as it was.
func TestProviderDropsMetadataChanges(t *testing.T) {
	p := lifecycletest.NewProvider()
	c := call(driverapi.MethodCreate, "m-1", "u-1", 0, "")
	c.Metadata = map[string]string{"team": "a", "pool": "web", "zone": "x"}
	pid := p.Invoke(c).ProviderID
	before := p.Invoke(call(driverapi.MethodGetStatus, "", "", 0, pid)).Metadata
	var asked []string
	p.Drop = func(k string) bool { asked = append(asked, k); return k == "zone" }
	var notes []string
	p.Log = func(s string) { notes = append(notes, s) }
	p.DropNext("team")
	up := call(driverapi.MethodUpdateMetadata, "", "u-2", 0, pid)
	up.Metadata = map[string]string{"team": "b", "pool": "db", "cost": "1"}
	up.Remove = []string{"zone", "gone"}
	require.True(t, p.Invoke(up).OK())
	require.Equal(t, []string{"cost", "pool", "zone", "gone", "owner"}, asked, "team is dropped by the script")
	require.Equal(t, map[string]string{"team": "a", "pool": "db", "zone": "x", "cost": "1"}, p.At(0).Metadata)
	require.Equal(t, "u-2", p.At(0).OwnerUID)
	require.Equal(t, map[string]string{"team": "a", "pool": "web", "zone": "x"}, before)
	require.Equal(t, []string{"metadata now {cost=1,pool=db,team=a,zone=x} (silently dropped team, zone)"}, notes)

	p.Drop = func(k string) bool { return k == "owner" }
	up.Machine.UID = "u-3"
	require.True(t, p.Invoke(up).OK())
	require.Equal(t, "u-2", p.At(0).OwnerUID, "the owner tag's change dropped")
	require.Equal(t, map[string]string{"team": "b", "pool": "db", "cost": "1"}, p.At(0).Metadata)
}

// The hooks see every instance made, initialized and deleted; OnCreate may
// rename the node, and NodeOwner then finds the instance that owns the
// name.
func TestProviderHooks(t *testing.T) {
	p := lifecycletest.NewProvider()
	p.IDPrefix, p.NodePrefix = "sim:///a-", "n-"
	var made, inited, deleted []int
	p.OnCreate = func(n int) {
		made = append(made, n)
		if n == 1 {
			p.At(n).NodeName = p.At(0).NodeName // a reused node name
			p.At(n).OwnerUID = ""               // a lost owner tag
		}
	}
	p.OnInitialize = func(n int) { inited = append(inited, n) }
	p.OnDelete = func(n int) { deleted = append(deleted, n) }
	p.Invoke(call(driverapi.MethodCreate, "m-1", "u-1", 0, ""))
	r := p.Invoke(call(driverapi.MethodCreate, "m-2", "u-2", 0, ""))
	require.Equal(t, "sim:///a-2", r.ProviderID)
	require.Equal(t, "n-1", r.NodeName)
	require.Equal(t, 0, p.NodeOwner("n-1"))
	require.Equal(t, -1, p.NodeOwner("n-2"))
	st := p.Invoke(call(driverapi.MethodGetStatus, "m-2", "u-2", 0, ""))
	require.Empty(t, st.OwnerUID)
	require.Equal(t, "sim:///a-2", st.ProviderID, "found by its key")
	p.Invoke(call(driverapi.MethodInitialize, "", "", 0, "sim:///a-2"))
	p.Add(lifecycletest.Instance{MachineName: "m-3"})
	p.Remove(2)
	p.Remove(2)
	p.Invoke(call(driverapi.MethodDelete, "", "", 0, "sim:///a-1"))
	require.Equal(t, []int{0, 1, 2}, made)
	require.Equal(t, []int{1}, inited)
	require.Equal(t, []int{2, 0}, deleted)
	require.Equal(t, 2, p.Created, "Add does not count as CreateMachine")
	require.Len(t, p.Instances(), 1)
}

// The Driver methods answer as Invoke does: a sequence of random calls
// gives the same results through driverapi.Invoke and through Invoke, and
// leaves both providers alike.
func TestProviderDriverMatchesInvoke(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b := lifecycletest.NewProvider(), lifecycletest.NewProvider()
		codes := []driverapi.Code{driverapi.OK, driverapi.OK, driverapi.Unavailable, driverapi.NotFound}
		methods := []driverapi.Method{driverapi.MethodCreate, driverapi.MethodInitialize, driverapi.MethodGetStatus,
			driverapi.MethodDelete, driverapi.MethodList, driverapi.MethodUpdate, driverapi.MethodUpdateMetadata,
			driverapi.MethodGetVolumeIDs}
		for k := range rapid.IntRange(1, 30).Draw(t, "calls") {
			f := lifecycletest.Fault{Code: rapid.SampledFrom(codes).Draw(t, "code"), After: rapid.Bool().Draw(t, "after"),
				Undecodable: rapid.IntRange(0, 9).Draw(t, "undecodable") == 0}
			drop := rapid.SampledFrom([]string{"", "team", "owner"}).Draw(t, "drop")
			for _, p := range []*lifecycletest.Provider{a, b} {
				p.Fault = func(driverapi.Method) lifecycletest.Fault { return f }
				p.Drop = func(k string) bool { return k == drop }
			}
			c := driverapi.Call{Method: rapid.SampledFrom(methods).Draw(t, "method"),
				Machine: driverapi.MachineRef{Name: rapid.SampledFrom([]string{"m-1", "m-2"}).Draw(t, "name"),
					UID: rapid.SampledFrom([]string{"u-1", "u-2", ""}).Draw(t, "uid")},
				Attempt: uint32(rapid.IntRange(0, 1).Draw(t, "attempt")), Generation: int64(k),
				Metadata: map[string]string{"team": rapid.SampledFrom([]string{"a", "b"}).Draw(t, "team")}}
			if rapid.Bool().Draw(t, "by id") {
				c.Machine.ProviderID = rapid.SampledFrom([]string{"test:///vm-1", "test:///vm-2", "test:///vm-9"}).Draw(t, "pid")
			}
			if rapid.Bool().Draw(t, "remove") {
				c.Remove = []string{"team"}
			}
			want := driverapi.Invoke(context.Background(), a, c, driverapi.Class{})
			got := b.Invoke(&c)
			if c.Method == driverapi.MethodList && got.OK() && len(got.Instances) == 0 {
				got.Instances = want.Instances // nil and empty: no instances either way
			}
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("call %d %+v:\n driver %+v\n invoke %+v", k, c, want, got)
			}
		}
		if !reflect.DeepEqual(a.Instances(), b.Instances()) || a.Calls != b.Calls || a.Created != b.Created {
			t.Fatalf("providers differ:\n%s\n%s", a, b)
		}
	})
}

// A GetMachineStatus by providerID of an initialized instance, the call a
// fleet makes most, allocates nothing; nor does a scripted fault with its
// Text.
func TestProviderInvokeAllocatesNothing(t *testing.T) {
	p := lifecycletest.NewProvider()
	c := call(driverapi.MethodCreate, "m-1", "u-1", 0, "")
	c.Metadata = map[string]string{"team": "a"}
	pid := p.Invoke(c).ProviderID
	p.Invoke(call(driverapi.MethodInitialize, "", "", 0, pid))
	st := call(driverapi.MethodGetStatus, "m-1", "u-1", 0, pid)
	byKey := call(driverapi.MethodGetStatus, "m-1", "u-1", 0, "")
	up := call(driverapi.MethodUpdateMetadata, "m-1", "u-1", 0, pid)
	up.Metadata = map[string]string{"team": "a"}
	fault := lifecycletest.Fault{Code: driverapi.Unavailable, Message: "m", Text: "t"}
	allocs := testing.AllocsPerRun(100, func() {
		if !p.Invoke(st).OK() || !p.Invoke(byKey).OK() || !p.Invoke(up).OK() {
			t.Fatal("not OK")
		}
		p.FailNext(driverapi.MethodGetStatus, fault, 1)
		if p.Invoke(st).Code != driverapi.Unavailable {
			t.Fatal("no fault")
		}
	})
	require.Zero(t, allocs)
}

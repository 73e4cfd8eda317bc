package mcmdriver

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/gardener/machine-controller-manager/pkg/util/provider/driver"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/status"
	corev1 "k8s.io/api/core/v1"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/mcmcontroller/mcmfake"
)

// The lifecycle's calls reach an MCM provider of many machines through
// For and its answers come back: creation (once per machine), lookups by
// name and by providerID, the listing, volumes, deletion.
func TestForOverTheMCMFake(t *testing.T) {
	ctx := context.Background()
	fake := mcmfake.New()
	objs := objects()
	class := driverapi.Class{Name: "class-a", ProviderSpec: []byte(`{}`)}
	invoke := func(c driverapi.Call) driverapi.Result {
		return driverapi.Invoke(ctx, For(fake, objs), c, class)
	}
	a := driverapi.MachineRef{Name: "worker-a-1", UID: "uid-1"}
	b := driverapi.MachineRef{Name: "worker-a-2", UID: "uid-2"}
	if res := invoke(driverapi.Call{Method: driverapi.MethodGetStatus, Machine: a}); res.Code != driverapi.NotFound {
		t.Fatalf("lookup before creation: %+v", res)
	}
	ca := invoke(driverapi.Call{Method: driverapi.MethodCreate, Machine: a, Attempt: 1})
	again := invoke(driverapi.Call{Method: driverapi.MethodCreate, Machine: a, Attempt: 2})
	cb := invoke(driverapi.Call{Method: driverapi.MethodCreate, Machine: b, Attempt: 1})
	if !ca.OK() || !cb.OK() || again.ProviderID != ca.ProviderID || cb.ProviderID == ca.ProviderID || len(ca.Addresses) != 1 ||
		!strings.HasPrefix(ca.LastKnownState, "created") {
		t.Fatalf("creations: %+v %+v %+v", ca, again, cb)
	}
	inst, _ := fake.Instance(ca.ProviderID)
	if inst.MachineName != a.Name || inst.MachineUID != a.UID || inst.Class != "class-a" || inst.NodeName != ca.NodeName {
		t.Errorf("instance %+v", inst)
	}
	// Each call reached the provider about its own machine.
	if got := fake.Calls(); got[1].Machine != a.Name || got[3].Machine != b.Name {
		t.Errorf("calls %+v", got)
	}

	byName := invoke(driverapi.Call{Method: driverapi.MethodGetStatus, Machine: a})
	a.ProviderID = ca.ProviderID
	byID := invoke(driverapi.Call{Method: driverapi.MethodGetStatus, Machine: a})
	for _, res := range []driverapi.Result{byName, byID} {
		if !res.OK() || res.ProviderID != ca.ProviderID || res.NodeName != ca.NodeName || !reflect.DeepEqual(res.Addresses, ca.Addresses) {
			t.Errorf("lookup: %+v", res)
		}
	}
	if c := fake.Calls()[len(fake.Calls())-1]; c.ProviderID != ca.ProviderID || c.Instance != ca.ProviderID {
		t.Errorf("the lookup by providerID was recorded as %+v", c)
	}

	list := invoke(driverapi.Call{Method: driverapi.MethodList})
	want := []driverapi.Instance{{ProviderID: ca.ProviderID, MachineName: a.Name}, {ProviderID: cb.ProviderID, MachineName: b.Name}}
	if ca.ProviderID > cb.ProviderID {
		want[0], want[1] = want[1], want[0]
	}
	if !list.OK() || !reflect.DeepEqual(list.Instances, want) {
		t.Errorf("list: %+v", list)
	}

	vols := invoke(driverapi.Call{Method: driverapi.MethodGetVolumeIDs, Volumes: []driverapi.Volume{
		{Name: "pv-1", Driver: mcmfake.CSIDriver, Handle: "vol-1"}, {Name: "pv-2", Driver: "other", Handle: "vol-2"},
		{Name: "pv-3", Spec: []byte(`{"hostPath":{"path":"/x"}}`)}, {Name: "pv-4", Driver: mcmfake.CSIDriver, Handle: "vol-4"}}})
	if !vols.OK() || !reflect.DeepEqual(vols.VolumeIDs, []string{"vol-1", "vol-4"}) {
		t.Errorf("volumes: %+v", vols)
	}

	del := invoke(driverapi.Call{Method: driverapi.MethodDelete, Machine: a, LastKnownState: ca.LastKnownState})
	if !del.OK() || del.LastKnownState != "deleted 1 instance(s)" {
		t.Fatalf("delete: %+v", del)
	}
	if res := invoke(driverapi.Call{Method: driverapi.MethodGetStatus, Machine: a}); res.Code != driverapi.NotFound {
		t.Errorf("after deletion: %+v", res)
	}
	if is := fake.Instances(); len(is) != 1 || is[0].ProviderID != cb.ProviderID {
		t.Errorf("left: %+v", is)
	}
}

// Every code an MCM provider answers reaches the lifecycle as its pair,
// and an instance that needs initialization is reported with it.
func TestEveryCodeFromTheMCMFake(t *testing.T) {
	ctx := context.Background()
	fake := mcmfake.New()
	fake.NeedsInit = true
	d := For(fake, Objects{})
	m := driverapi.MachineRef{Name: "worker-1", UID: "uid-1"}
	for _, c := range mcmCodes()[1:] {
		fake.FailNext(mcmfake.MethodGetStatus, m.Name, c)
		res := driverapi.Invoke(ctx, d, driverapi.Call{Method: driverapi.MethodGetStatus, Machine: m}, driverapi.Class{})
		if want, _ := CodeFromMCM(c); res.Code != want || res.Undecodable || !strings.Contains(res.Message, "scripted "+c.String()) {
			t.Errorf("%s: %+v", c, res)
		}
	}
	created := driverapi.Invoke(ctx, d, driverapi.Call{Method: driverapi.MethodCreate, Machine: m, Attempt: 1}, driverapi.Class{})
	res := driverapi.Invoke(ctx, d, driverapi.Call{Method: driverapi.MethodGetStatus, Machine: m}, driverapi.Class{})
	if res.Code != driverapi.Uninitialized || res.ProviderID != created.ProviderID || res.NodeName != created.NodeName {
		t.Errorf("uninitialized: %+v", res)
	}
	if init := driverapi.Invoke(ctx, d, driverapi.Call{Method: driverapi.MethodInitialize, Machine: m}, driverapi.Class{}); !init.OK() ||
		init.ProviderID != created.ProviderID {
		t.Errorf("initialize: %+v", init)
	}
}

// An MCM provider through both adapters, ToMCM(For(p)), is p again to
// MCM's controller: the same answers and every code.
func TestMCMThroughBothAdapters(t *testing.T) {
	ctx := context.Background()
	fake := mcmfake.New()
	p := ToMCM(For(fake, Objects{}))
	m := objects().Machine
	created, err := p.CreateMachine(ctx, &driver.CreateMachineRequest{Machine: m, MachineClass: objects().Class, Secret: objects().Secret})
	if err != nil {
		t.Fatal(err)
	}
	inst, ok := fake.Instance(created.ProviderID)
	if !ok || inst.NodeName != created.NodeName || inst.Class != "class-a" || !reflect.DeepEqual(inst.Addresses, created.Addresses) {
		t.Fatalf("created %+v, instance %+v", created, inst)
	}
	list, err := p.ListMachines(ctx, &driver.ListMachinesRequest{MachineClass: objects().Class})
	direct, _ := fake.ListMachines(ctx, &driver.ListMachinesRequest{MachineClass: objects().Class})
	if err != nil || !reflect.DeepEqual(list.MachineList, direct.MachineList) || len(list.MachineList) != 1 {
		t.Errorf("list %+v, the fake's %+v", list, direct)
	}
	vols, err := p.GetVolumeIDs(ctx, &driver.GetVolumeIDsRequest{PVSpecs: []*corev1.PersistentVolumeSpec{
		{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: mcmfake.CSIDriver, VolumeHandle: "vol-7"}}}}})
	if err != nil || !reflect.DeepEqual(vols.VolumeIDs, []string{"vol-7"}) {
		t.Errorf("volumes %+v %v", vols, err)
	}
	for _, c := range mcmCodes()[1:] {
		fake.FailNext(mcmfake.MethodDelete, m.Name, c)
		_, err := p.DeleteMachine(ctx, &driver.DeleteMachineRequest{Machine: m})
		if st, ok := status.FromError(err); !ok || st.Code() != c || !strings.Contains(st.Message(), "scripted") {
			t.Errorf("%s came back as %v", c, err)
		}
	}
	if len(fake.Instances()) != 1 {
		t.Fatal("a failed deletion deleted")
	}
	if _, err := p.DeleteMachine(ctx, &driver.DeleteMachineRequest{Machine: m}); err != nil || len(fake.Instances()) != 0 {
		t.Errorf("delete: %v, left %+v", err, fake.Instances())
	}
}

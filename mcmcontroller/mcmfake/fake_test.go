package mcmfake

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/driver"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/codes"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var ctx = context.Background()

func machine(name, providerID string) *v1alpha1.Machine {
	return &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: v1alpha1.MachineSpec{ProviderID: providerID}}
}

func class(name string) *v1alpha1.MachineClass {
	return &v1alpha1.MachineClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func create(t *testing.T, d *Driver, name, cls string) *driver.CreateMachineResponse {
	t.Helper()
	resp, err := d.CreateMachine(ctx, &driver.CreateMachineRequest{Machine: machine(name, ""), MachineClass: class(cls)})
	if err != nil || resp == nil {
		t.Fatalf("create %s: %v %v", name, resp, err)
	}
	return resp
}

func code(err error) codes.Code {
	st, _ := status.FromError(err)
	return st.Code()
}

// One instance per machine name while it lives, each with its own
// providerID and node.
func TestCreateIsIdempotentPerMachineName(t *testing.T) {
	d := New()
	a := create(t, d, "worker-1", "c")
	again := create(t, d, "worker-1", "c")
	b := create(t, d, "worker-2", "c")
	if again.ProviderID != a.ProviderID || again.NodeName != a.NodeName {
		t.Errorf("a repeated create answered %+v after %+v", again, a)
	}
	if b.ProviderID == a.ProviderID || b.NodeName == a.NodeName || b.Addresses[0].Address == a.Addresses[0].Address {
		t.Errorf("two machines share an instance: %+v %+v", a, b)
	}
	is := d.Instances()
	if len(is) != 2 || is[0].MachineName != "worker-1" || is[1].MachineName != "worker-2" || is[0].MachineUID != "uid-worker-1" {
		t.Fatalf("instances %+v", is)
	}
	// After the instance is gone, the name gets a new one.
	if !d.Vanish(a.ProviderID) || d.Vanish(a.ProviderID) {
		t.Fatal("Vanish")
	}
	if c := create(t, d, "worker-1", "c"); c.ProviderID == a.ProviderID || c.ProviderID == b.ProviderID {
		t.Errorf("a new instance reuses a providerID: %s", c.ProviderID)
	}
}

// A withheld node name leaves the answer without it, the instance made
// all the same, for as many calls as asked.
func TestWithholdNodeName(t *testing.T) {
	d := New()
	d.WithholdNodeName("worker-1", 1)
	a := create(t, d, "worker-1", "c")
	if a.NodeName != "" || a.ProviderID == "" || len(d.Instances()) != 1 || d.Instances()[0].NodeName == "" {
		t.Fatalf("answer %+v, instances %+v", a, d.Instances())
	}
	if again := create(t, d, "worker-1", "c"); again.NodeName == "" || again.ProviderID != a.ProviderID {
		t.Fatalf("the second answer %+v", again)
	}
}

func TestGetMachineStatusByProviderIDOrName(t *testing.T) {
	d := New()
	a := create(t, d, "worker-1", "c")
	for _, m := range []*v1alpha1.Machine{machine("worker-1", ""), machine("worker-1", a.ProviderID), machine("renamed", a.ProviderID)} {
		resp, err := d.GetMachineStatus(ctx, &driver.GetMachineStatusRequest{Machine: m})
		if err != nil || resp.ProviderID != a.ProviderID || resp.NodeName != a.NodeName || !reflect.DeepEqual(resp.Addresses, a.Addresses) {
			t.Errorf("%s %q: %+v %v", m.Name, m.Spec.ProviderID, resp, err)
		}
	}
	for _, m := range []*v1alpha1.Machine{machine("worker-2", ""), machine("worker-1", "fake:///zone-a/i-99")} {
		resp, err := d.GetMachineStatus(ctx, &driver.GetMachineStatusRequest{Machine: m})
		if code(err) != codes.NotFound || resp != nil {
			t.Errorf("%s %q: %+v %v", m.Name, m.Spec.ProviderID, resp, err)
		}
	}
	d.Vanish(a.ProviderID)
	if _, err := d.GetMachineStatus(ctx, &driver.GetMachineStatusRequest{Machine: machine("worker-1", "")}); code(err) != codes.NotFound {
		t.Errorf("after the instance vanished: %v", err)
	}
}

// With NeedsInit, an instance is Uninitialized, with its response, until
// InitializeMachine ran; without, InitializeMachine is Unimplemented.
func TestInitialization(t *testing.T) {
	d := New()
	d.NeedsInit = true
	a := create(t, d, "worker-1", "c")
	resp, err := d.GetMachineStatus(ctx, &driver.GetMachineStatusRequest{Machine: machine("worker-1", "")})
	if code(err) != codes.Uninitialized || resp == nil || resp.ProviderID != a.ProviderID {
		t.Fatalf("before initialization: %+v %v", resp, err)
	}
	if _, err := d.InitializeMachine(ctx, &driver.InitializeMachineRequest{Machine: machine("worker-2", "")}); code(err) != codes.NotFound {
		t.Errorf("initializing a machine without an instance: %v", err)
	}
	init, err := d.InitializeMachine(ctx, &driver.InitializeMachineRequest{Machine: machine("worker-1", a.ProviderID)})
	if err != nil || init.ProviderID != a.ProviderID || init.NodeName != a.NodeName {
		t.Fatalf("initialize: %+v %v", init, err)
	}
	if resp, err := d.GetMachineStatus(ctx, &driver.GetMachineStatusRequest{Machine: machine("worker-1", "")}); err != nil || resp.ProviderID != a.ProviderID {
		t.Fatalf("after initialization: %+v %v", resp, err)
	}

	plain := New()
	create(t, plain, "worker-1", "c")
	if _, err := plain.InitializeMachine(ctx, &driver.InitializeMachineRequest{Machine: machine("worker-1", "")}); code(err) != codes.Unimplemented {
		t.Errorf("initialize without NeedsInit: %v", err)
	}
	if _, err := plain.GetMachineStatus(ctx, &driver.GetMachineStatusRequest{Machine: machine("worker-1", "")}); err != nil {
		t.Errorf("status without NeedsInit: %v", err)
	}
}

// Delete by providerID deletes that instance; by name, every instance of
// the name; what is gone is deleted again without an error.
func TestDeleteMachine(t *testing.T) {
	d := New()
	a := create(t, d, "worker-1", "c")
	orphan := d.Add("worker-1", "uid-old", "c")
	b := create(t, d, "worker-2", "c")
	if _, err := d.DeleteMachine(ctx, &driver.DeleteMachineRequest{Machine: machine("worker-2", b.ProviderID)}); err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Instance(b.ProviderID); ok || len(d.Instances()) != 2 {
		t.Fatalf("after deleting %s: %+v", b.ProviderID, d.Instances())
	}
	resp, err := d.DeleteMachine(ctx, &driver.DeleteMachineRequest{Machine: machine("worker-1", "")})
	if err != nil || resp.LastKnownState != "deleted 2 instance(s)" || len(d.Instances()) != 0 {
		t.Fatalf("delete by name: %+v %v, left %+v", resp, err, d.Instances())
	}
	if _, err := d.DeleteMachine(ctx, &driver.DeleteMachineRequest{Machine: machine("worker-1", a.ProviderID)}); err != nil {
		t.Errorf("deleting what is gone: %v", err)
	}
	calls := d.Calls()
	if len(calls) != 5 || calls[3].Instance != orphan.ProviderID || calls[4].Instance != "" {
		t.Errorf("calls %+v", calls)
	}
}

func TestListMachinesByClass(t *testing.T) {
	d := New()
	a := create(t, d, "a-1", "class-a")
	create(t, d, "b-1", "class-b")
	a2 := d.Add("a-2", "uid-a-2", "class-a")
	resp, err := d.ListMachines(ctx, &driver.ListMachinesRequest{MachineClass: class("class-a")})
	want := map[string]string{a.ProviderID: "a-1", a2.ProviderID: "a-2"}
	if err != nil || !reflect.DeepEqual(resp.MachineList, want) {
		t.Errorf("class-a: %+v %v", resp, err)
	}
	all, err := d.ListMachines(ctx, &driver.ListMachinesRequest{})
	if err != nil || len(all.MachineList) != 3 {
		t.Errorf("all: %+v %v", all, err)
	}
}

func TestGetVolumeIDs(t *testing.T) {
	d := New()
	specs := []*corev1.PersistentVolumeSpec{
		{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: CSIDriver, VolumeHandle: "vol-1"}}},
		nil,
		{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "other", VolumeHandle: "vol-2"}}},
		{PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x"}}},
		{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: CSIDriver, VolumeHandle: "vol-3"}}},
	}
	resp, err := d.GetVolumeIDs(ctx, &driver.GetVolumeIDsRequest{PVSpecs: specs})
	if err != nil || !reflect.DeepEqual(resp.VolumeIDs, []string{"vol-1", "vol-3"}) {
		t.Errorf("%+v %v", resp, err)
	}
}

// Codes queued for a machine answer its calls first, then those queued
// for any machine; OK lets a call through; a failed call changes nothing.
func TestScriptedCodes(t *testing.T) {
	d := New()
	d.FailNext(MethodCreate, "worker-1", codes.ResourceExhausted, codes.OK, codes.Unavailable)
	d.FailNext(MethodCreate, "", codes.Internal)
	d.FailNext(MethodList, "", codes.PermissionDenied)
	req := func(name string) *driver.CreateMachineRequest {
		return &driver.CreateMachineRequest{Machine: machine(name, "")}
	}
	var got []codes.Code
	for _, name := range []string{"worker-2", "worker-1", "worker-1", "worker-1", "worker-1", "worker-2"} {
		resp, err := d.CreateMachine(ctx, req(name))
		if (err == nil) == (resp == nil) {
			t.Errorf("%s: response %v with error %v", name, resp, err)
		}
		got = append(got, code(err))
	}
	want := []codes.Code{codes.Internal, codes.ResourceExhausted, codes.OK, codes.Unavailable, codes.OK, codes.OK}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("codes %v, want %v", got, want)
	}
	if _, err := d.ListMachines(ctx, &driver.ListMachinesRequest{}); code(err) != codes.PermissionDenied {
		t.Errorf("list: %v", err)
	}
	if n := len(d.Instances()); n != 2 {
		t.Errorf("%d instances", n)
	}
	calls := d.Calls()
	if len(calls) != 7 || calls[0].Machine != "worker-2" || calls[0].Code != codes.Internal || calls[0].Instance != "" ||
		calls[2].Code != codes.OK || calls[2].Instance == "" || calls[6].Method != MethodList {
		t.Errorf("calls %+v", calls)
	}
	if d.Count(MethodCreate, "worker-1") != 4 || d.Count(MethodCreate, "") != 6 || d.Count(MethodDelete, "") != 0 {
		t.Error("Count")
	}
}

// A hook answers the calls no queued code answers; it may call the fake.
func TestHook(t *testing.T) {
	d := New()
	refused := errors.New("the cloud's API is down")
	d.SetHook(MethodCreate, func(c Call) error {
		if len(d.Instances()) > 0 && c.Machine == "worker-2" {
			return refused
		}
		return nil
	})
	d.FailNext(MethodCreate, "worker-2", codes.Aborted)
	create(t, d, "worker-1", "c")
	for _, want := range []error{status.Error(codes.Aborted, ""), refused} {
		_, err := d.CreateMachine(ctx, &driver.CreateMachineRequest{Machine: machine("worker-2", "")})
		if code(err) != code(want) || (want == refused && !errors.Is(err, refused)) {
			t.Errorf("got %v, want %v", err, want)
		}
	}
	if last := d.Calls()[2]; last.Code != codes.Unknown || last.Err != refused {
		t.Errorf("the hook's answer recorded as %+v", last)
	}
	d.SetHook(MethodCreate, nil)
	create(t, d, "worker-2", "c")
	if n := len(d.Instances()); n != 2 {
		t.Errorf("%d instances", n)
	}
}

// Requests without what the fake must read are refused, also by a Driver
// not made by New; a canceled context is answered with its code.
func TestBadRequestsAndContexts(t *testing.T) {
	for _, d := range []*Driver{New(), {IDPrefix: "x-"}} {
		errs := []error{}
		_, err := d.CreateMachine(ctx, nil)
		errs = append(errs, err)
		_, err = d.CreateMachine(ctx, &driver.CreateMachineRequest{})
		errs = append(errs, err)
		_, err = d.CreateMachine(ctx, &driver.CreateMachineRequest{Machine: machine("", "")})
		errs = append(errs, err)
		_, err = d.InitializeMachine(ctx, &driver.InitializeMachineRequest{})
		errs = append(errs, err)
		_, err = d.GetMachineStatus(ctx, nil)
		errs = append(errs, err)
		_, err = d.DeleteMachine(ctx, &driver.DeleteMachineRequest{})
		errs = append(errs, err)
		_, err = d.ListMachines(ctx, nil)
		errs = append(errs, err)
		_, err = d.GetVolumeIDs(ctx, nil)
		errs = append(errs, err)
		for i, err := range errs {
			if code(err) != codes.InvalidArgument {
				t.Errorf("bad request %d: %v", i, err)
			}
		}
		if n := len(d.Calls()); n != len(errs) {
			t.Errorf("%d calls recorded, %d made", n, len(errs))
		}
	}
	d := New()
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := d.CreateMachine(canceled, &driver.CreateMachineRequest{Machine: machine("worker-1", "")}); code(err) != codes.Canceled || len(d.Instances()) != 0 {
		t.Errorf("canceled: %v", err)
	}
}

// Many workers creating, finding and listing overlapping machines at once
// (run with -race): one instance per name, every call recorded.
func TestConcurrentUse(t *testing.T) {
	d := New()
	const workers, names, rounds = 8, 40, 3
	d.FailNext(MethodCreate, "", codes.Unavailable, codes.Unavailable)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				for n := range names {
					m := machine(fmt.Sprintf("m-%d", (n+w*r)%names), "")
					_, _ = d.CreateMachine(ctx, &driver.CreateMachineRequest{Machine: m})
					_, _ = d.GetMachineStatus(ctx, &driver.GetMachineStatusRequest{Machine: m})
				}
				_, _ = d.ListMachines(ctx, &driver.ListMachinesRequest{})
			}
		})
	}
	wg.Wait()
	is := d.Instances()
	seen := map[string]bool{}
	for _, i := range is {
		if seen[i.MachineName] {
			t.Errorf("two instances of %s", i.MachineName)
		}
		seen[i.MachineName] = true
	}
	if len(seen) != names {
		t.Errorf("%d machines have instances, want %d", len(seen), names)
	}
	calls := d.Calls()
	if len(calls) != workers*rounds*(2*names+1) {
		t.Errorf("%d calls recorded", len(calls))
	}
	var failed []codes.Code
	for _, c := range calls {
		if c.Code != codes.OK && c.Code != codes.NotFound {
			failed = append(failed, c.Code)
		}
	}
	sort.Slice(failed, func(i, j int) bool { return failed[i] < failed[j] })
	if !reflect.DeepEqual(failed, []codes.Code{codes.Unavailable, codes.Unavailable}) {
		t.Errorf("failed calls %v", failed)
	}
}

package mcmdriver

import (
	"context"
	"reflect"
	"testing"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/driver"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/codes"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
)

// recorder is an MCM provider that records the requests it is given and
// answers as told.
type recorder struct {
	create  *driver.CreateMachineRequest
	get     *driver.GetMachineStatusRequest
	del     *driver.DeleteMachineRequest
	volumes *driver.GetVolumeIDsRequest
	err     error
}

func (r *recorder) CreateMachine(_ context.Context, req *driver.CreateMachineRequest) (*driver.CreateMachineResponse, error) {
	r.create = req
	return &driver.CreateMachineResponse{ProviderID: "aws:///eu-1/i-1", NodeName: "ip-10-0-0-1", LastKnownState: "creating",
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}}, r.err
}

func (r *recorder) InitializeMachine(context.Context, *driver.InitializeMachineRequest) (*driver.InitializeMachineResponse, error) {
	return nil, status.Error(codes.Unimplemented, "nothing to initialize")
}

func (r *recorder) GetMachineStatus(_ context.Context, req *driver.GetMachineStatusRequest) (*driver.GetMachineStatusResponse, error) {
	r.get = req
	return nil, status.Error(codes.NotFound, "no instance")
}

func (r *recorder) DeleteMachine(_ context.Context, req *driver.DeleteMachineRequest) (*driver.DeleteMachineResponse, error) {
	r.del = req
	return &driver.DeleteMachineResponse{LastKnownState: "deleting"}, status.Error(codes.Unavailable, "try later")
}

func (r *recorder) ListMachines(context.Context, *driver.ListMachinesRequest) (*driver.ListMachinesResponse, error) {
	return &driver.ListMachinesResponse{MachineList: map[string]string{"p-3": "c", "p-1": "a", "p-2": "b"}}, nil
}

func (r *recorder) GetVolumeIDs(_ context.Context, req *driver.GetVolumeIDsRequest) (*driver.GetVolumeIDsResponse, error) {
	r.volumes = req
	return &driver.GetVolumeIDsResponse{VolumeIDs: []string{"vol-1"}}, nil
}

func objects() Objects {
	return Objects{
		Machine: &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "shoot--p", Name: "worker-a-1", UID: "uid-1",
			Labels: map[string]string{"name": "worker-a"}}},
		Class: &v1alpha1.MachineClass{ObjectMeta: metav1.ObjectMeta{Namespace: "shoot--p", Name: "class-a"},
			ProviderSpec: runtime.RawExtension{Raw: []byte(`{"old":true}`)}, Provider: "AWS"},
		Secret: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shoot--p", Name: "secret-a"},
			Data: map[string][]byte{"userData": []byte("<<BOOTSTRAP_TOKEN>>")}},
	}
}

// The controller's objects reach the provider as copies, with the call's
// instance, node, provider spec and secret data (the user data filled
// in); the objects themselves are not changed.
func TestObjectsReachTheProvider(t *testing.T) {
	rec := &recorder{}
	objs := objects()
	before := objects()
	d := For(rec, objs)
	class := driverapi.Class{Name: "class-a", ProviderSpec: []byte(`{"new":true}`),
		Secret: map[string][]byte{"userData": []byte("abc123.0123456789abcdef")}}
	res := driverapi.Invoke(context.Background(), d, driverapi.Call{Method: driverapi.MethodCreate,
		Machine: driverapi.MachineRef{Name: "worker-a-1", UID: "uid-1"}, Attempt: 1}, class)
	if !res.OK() || res.ProviderID != "aws:///eu-1/i-1" || res.NodeName != "ip-10-0-0-1" || res.LastKnownState != "creating" ||
		!reflect.DeepEqual(res.Addresses, []driverapi.Address{{Type: "InternalIP", Address: "10.0.0.1"}}) {
		t.Fatalf("create: %+v", res)
	}
	m, c, s := rec.create.Machine, rec.create.MachineClass, rec.create.Secret
	if m.Namespace != "shoot--p" || m.Labels["name"] != "worker-a" || m.Spec.ProviderID != "" {
		t.Errorf("machine %+v", m.ObjectMeta)
	}
	if c.Provider != "AWS" || string(c.ProviderSpec.Raw) != `{"new":true}` || s.Name != "secret-a" ||
		string(s.Data["userData"]) != "abc123.0123456789abcdef" {
		t.Errorf("class %s %s, secret %s %q", c.Provider, c.ProviderSpec.Raw, s.Name, s.Data["userData"])
	}
	if !reflect.DeepEqual(objs, before) {
		t.Fatal("the controller's objects were changed")
	}

	// A recorded instance and node the spec does not carry yet reach the
	// provider; the last known state goes with a deletion.
	ref := driverapi.MachineRef{Name: "worker-a-1", UID: "uid-1", ProviderID: "aws:///eu-1/i-1", NodeName: "ip-10-0-0-1"}
	res = driverapi.Invoke(context.Background(), d, driverapi.Call{Method: driverapi.MethodDelete, Machine: ref,
		LastKnownState: "creating"}, class)
	if res.Code != driverapi.Unavailable || res.LastKnownState != "deleting" {
		t.Fatalf("delete: %+v", res)
	}
	if m := rec.del.Machine; m.Spec.ProviderID != ref.ProviderID || m.Labels[v1alpha1.NodeLabelKey] != ref.NodeName ||
		m.Status.LastKnownState != "creating" {
		t.Errorf("delete's machine %+v %+v", m.Spec, m.Status)
	}

	// Another machine than the pass's is built from the call alone.
	other := driverapi.MachineRef{Name: "worker-a-2", UID: "uid-2"}
	res = driverapi.Invoke(context.Background(), d, driverapi.Call{Method: driverapi.MethodGetStatus, Machine: other}, class)
	if res.Code != driverapi.NotFound {
		t.Fatalf("get: %+v", res)
	}
	if m := rec.get.Machine; m.Name != "worker-a-2" || m.UID != "uid-2" || m.Namespace != "" || m.Labels != nil {
		t.Errorf("another machine's request %+v", m.ObjectMeta)
	}
}

func TestWithoutObjects(t *testing.T) {
	rec := &recorder{}
	d := For(rec, Objects{})
	res := driverapi.Invoke(context.Background(), d, driverapi.Call{Method: driverapi.MethodCreate,
		Machine: driverapi.MachineRef{Name: "m", UID: "u"}, Attempt: 1},
		driverapi.Class{Name: "c", ProviderSpec: []byte(`{}`), Secret: map[string][]byte{"userData": []byte("x")}})
	if !res.OK() {
		t.Fatal(res)
	}
	if m, c, s := rec.create.Machine, rec.create.MachineClass, rec.create.Secret; m.Name != "m" || c.Name != "c" ||
		string(c.ProviderSpec.Raw) != `{}` || string(s.Data["userData"]) != "x" {
		t.Errorf("%+v %+v %+v", m, c, s)
	}
}

// MCM's unordered map of instances becomes a list sorted by providerID;
// the methods MCM lacks answer Unimplemented.
func TestListAndTheMethodsMCMLacks(t *testing.T) {
	d := For(&recorder{}, Objects{})
	res := driverapi.Invoke(context.Background(), d, driverapi.Call{Method: driverapi.MethodList}, driverapi.Class{})
	want := []driverapi.Instance{{ProviderID: "p-1", MachineName: "a"}, {ProviderID: "p-2", MachineName: "b"}, {ProviderID: "p-3", MachineName: "c"}}
	if !res.OK() || !reflect.DeepEqual(res.Instances, want) {
		t.Fatalf("list: %+v", res)
	}
	for _, m := range []driverapi.Method{driverapi.MethodUpdate, driverapi.MethodUpdateMetadata, driverapi.MethodInitialize} {
		res := driverapi.Invoke(context.Background(), d, driverapi.Call{Method: m, Machine: driverapi.MachineRef{Name: "m", UID: "u", ProviderID: "p"}}, driverapi.Class{})
		if res.Code != driverapi.Unimplemented {
			t.Errorf("%s: %+v", m, res)
		}
	}
}

// A volume with a CSI handle reaches MCM as a CSI source, an in-tree one as
// its spec; a spec that does not decode is refused before the provider.
func TestVolumes(t *testing.T) {
	rec := &recorder{}
	d := For(rec, Objects{})
	inTree := `{"awsElasticBlockStore":{"volumeID":"vol-9"}}`
	res := driverapi.Invoke(context.Background(), d, driverapi.Call{Method: driverapi.MethodGetVolumeIDs,
		Volumes: []driverapi.Volume{{Name: "a", Driver: "ebs.csi.aws.com", Handle: "vol-1"}, {Name: "b", Spec: []byte(inTree)}}}, driverapi.Class{})
	if !res.OK() || !reflect.DeepEqual(res.VolumeIDs, []string{"vol-1"}) {
		t.Fatalf("%+v", res)
	}
	specs := rec.volumes.PVSpecs
	if len(specs) != 2 || specs[0].CSI.Driver != "ebs.csi.aws.com" || specs[0].CSI.VolumeHandle != "vol-1" ||
		specs[1].AWSElasticBlockStore == nil || specs[1].AWSElasticBlockStore.VolumeID != "vol-9" {
		t.Fatalf("specs %+v", specs)
	}
	rec.volumes = nil
	res = driverapi.Invoke(context.Background(), d, driverapi.Call{Method: driverapi.MethodGetVolumeIDs,
		Volumes: []driverapi.Volume{{Name: "c", Spec: []byte("{")}}}, driverapi.Class{})
	if res.Code != driverapi.InvalidArgument || rec.volumes != nil {
		t.Fatalf("a bad spec: %+v, provider called: %v", res, rec.volumes != nil)
	}
}

// The project's in-memory provider run as an MCM provider and back: a
// machine's instance is created, found, listed and deleted through both
// adapters.
func TestRoundTripThroughBothAdapters(t *testing.T) {
	p := lifecycletest.NewProvider()
	d := For(ToMCM(p), Objects{})
	ctx := context.Background()
	m := driverapi.MachineRef{Name: "m-1", UID: "uid-1"}
	created := driverapi.Invoke(ctx, d, driverapi.Call{Method: driverapi.MethodCreate, Machine: m, Attempt: 1}, driverapi.Class{Name: "c"})
	if !created.OK() || created.ProviderID == "" {
		t.Fatalf("create: %+v", created)
	}
	again := driverapi.Invoke(ctx, d, driverapi.Call{Method: driverapi.MethodCreate, Machine: m, Attempt: 1}, driverapi.Class{Name: "c"})
	if again.ProviderID != created.ProviderID || p.Len() != 1 {
		t.Fatalf("a repeated create made another instance: %+v, %d instances", again, p.Len())
	}
	m.ProviderID = created.ProviderID
	got := driverapi.Invoke(ctx, d, driverapi.Call{Method: driverapi.MethodGetStatus, Machine: m}, driverapi.Class{Name: "c"})
	if got.ProviderID != created.ProviderID || got.NodeName != created.NodeName {
		t.Fatalf("get: %+v", got)
	}
	list := driverapi.Invoke(ctx, d, driverapi.Call{Method: driverapi.MethodList}, driverapi.Class{Name: "c"})
	if len(list.Instances) != 1 || list.Instances[0].ProviderID != created.ProviderID || list.Instances[0].MachineName != "m-1" {
		t.Fatalf("list: %+v", list)
	}
	if del := driverapi.Invoke(ctx, d, driverapi.Call{Method: driverapi.MethodDelete, Machine: m}, driverapi.Class{Name: "c"}); !del.OK() {
		t.Fatalf("delete: %+v", del)
	}
	gone := driverapi.Invoke(ctx, d, driverapi.Call{Method: driverapi.MethodGetStatus, Machine: m}, driverapi.Class{Name: "c"})
	if gone.Code != driverapi.NotFound {
		t.Fatalf("after delete: %+v", gone)
	}
}

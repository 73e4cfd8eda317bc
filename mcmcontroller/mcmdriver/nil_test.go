package mcmdriver

import (
	"context"
	"errors"
	"testing"

	"github.com/gardener/machine-controller-manager/pkg/util/provider/driver"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/codes"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/status"
	corev1 "k8s.io/api/core/v1"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
)

// silent is an MCM provider that answers every call with a nil response
// and err.
type silent struct{ err error }

func (s silent) CreateMachine(context.Context, *driver.CreateMachineRequest) (*driver.CreateMachineResponse, error) {
	return nil, s.err
}
func (s silent) InitializeMachine(context.Context, *driver.InitializeMachineRequest) (*driver.InitializeMachineResponse, error) {
	return nil, s.err
}
func (s silent) GetMachineStatus(context.Context, *driver.GetMachineStatusRequest) (*driver.GetMachineStatusResponse, error) {
	return nil, s.err
}
func (s silent) DeleteMachine(context.Context, *driver.DeleteMachineRequest) (*driver.DeleteMachineResponse, error) {
	return nil, s.err
}
func (s silent) ListMachines(context.Context, *driver.ListMachinesRequest) (*driver.ListMachinesResponse, error) {
	return nil, s.err
}
func (s silent) GetVolumeIDs(context.Context, *driver.GetVolumeIDsRequest) (*driver.GetVolumeIDsResponse, error) {
	return nil, s.err
}

// silentAPI is a driverapi.Driver that answers every call with a nil
// response and err.
type silentAPI struct{ err error }

func (s silentAPI) CreateMachine(context.Context, *driverapi.CreateMachineRequest) (*driverapi.CreateMachineResponse, error) {
	return nil, s.err
}
func (s silentAPI) InitializeMachine(context.Context, *driverapi.InitializeMachineRequest) (*driverapi.InitializeMachineResponse, error) {
	return nil, s.err
}
func (s silentAPI) GetMachineStatus(context.Context, *driverapi.GetMachineStatusRequest) (*driverapi.GetMachineStatusResponse, error) {
	return nil, s.err
}
func (s silentAPI) DeleteMachine(context.Context, *driverapi.DeleteMachineRequest) (*driverapi.DeleteMachineResponse, error) {
	return nil, s.err
}
func (s silentAPI) ListMachines(context.Context, *driverapi.ListMachinesRequest) (*driverapi.ListMachinesResponse, error) {
	return nil, s.err
}
func (s silentAPI) GetVolumeIDs(context.Context, *driverapi.GetVolumeIDsRequest) (*driverapi.GetVolumeIDsResponse, error) {
	return nil, s.err
}
func (s silentAPI) UpdateMachine(context.Context, *driverapi.UpdateMachineRequest) (*driverapi.UpdateMachineResponse, error) {
	return nil, s.err
}
func (s silentAPI) UpdateMetadata(context.Context, *driverapi.UpdateMetadataRequest) (*driverapi.UpdateMetadataResponse, error) {
	return nil, s.err
}

// mcmCalls calls MCM's six methods of p, each with no request or with an
// empty one, and returns whether each response was nil, and the errors.
func mcmCalls(p driver.Driver, empty bool) (nilResponse []bool, errs []error) {
	ctx := context.Background()
	add := func(isNil bool, err error) {
		nilResponse, errs = append(nilResponse, isNil), append(errs, err)
	}
	if empty {
		r1, e1 := p.CreateMachine(ctx, &driver.CreateMachineRequest{})
		add(r1 == nil, e1)
		r2, e2 := p.InitializeMachine(ctx, &driver.InitializeMachineRequest{})
		add(r2 == nil, e2)
		r3, e3 := p.GetMachineStatus(ctx, &driver.GetMachineStatusRequest{})
		add(r3 == nil, e3)
		r4, e4 := p.DeleteMachine(ctx, &driver.DeleteMachineRequest{})
		add(r4 == nil, e4)
		r5, e5 := p.ListMachines(ctx, &driver.ListMachinesRequest{})
		add(r5 == nil, e5)
		r6, e6 := p.GetVolumeIDs(ctx, &driver.GetVolumeIDsRequest{PVSpecs: []*corev1.PersistentVolumeSpec{nil}})
		add(r6 == nil, e6)
		return
	}
	r1, e1 := p.CreateMachine(ctx, nil)
	add(r1 == nil, e1)
	r2, e2 := p.InitializeMachine(ctx, nil)
	add(r2 == nil, e2)
	r3, e3 := p.GetMachineStatus(ctx, nil)
	add(r3 == nil, e3)
	r4, e4 := p.DeleteMachine(ctx, nil)
	add(r4 == nil, e4)
	r5, e5 := p.ListMachines(ctx, nil)
	add(r5 == nil, e5)
	r6, e6 := p.GetVolumeIDs(ctx, nil)
	add(r6 == nil, e6)
	return
}

// apiCalls calls the eight driverapi methods of d with nil requests.
func apiCalls(d driverapi.Driver) []error {
	ctx := context.Background()
	_, e1 := d.CreateMachine(ctx, nil)
	_, e2 := d.InitializeMachine(ctx, nil)
	_, e3 := d.GetMachineStatus(ctx, nil)
	_, e4 := d.DeleteMachine(ctx, nil)
	_, e5 := d.ListMachines(ctx, nil)
	_, e6 := d.GetVolumeIDs(ctx, nil)
	_, e7 := d.UpdateMachine(ctx, nil)
	_, e8 := d.UpdateMetadata(ctx, nil)
	return []error{e1, e2, e3, e4, e5, e6, e7, e8}
}

// allMethods are driverapi's methods, for Invoke.
var allMethods = []driverapi.Method{driverapi.MethodCreate, driverapi.MethodInitialize, driverapi.MethodGetStatus,
	driverapi.MethodDelete, driverapi.MethodList, driverapi.MethodGetVolumeIDs, driverapi.MethodUpdate, driverapi.MethodUpdateMetadata}

// For without a provider, or called without a request, answers
// InvalidArgument (UpdateMachine and UpdateMetadata: Unimplemented) and
// does not panic.
func TestForWithoutProviderOrRequest(t *testing.T) {
	for _, d := range []driverapi.Driver{For(nil, Objects{}), For(silent{}, Objects{})} {
		for i, err := range apiCalls(d) {
			want := driverapi.InvalidArgument
			if i >= 6 {
				want = driverapi.Unimplemented
			}
			if c := driverapi.CodeOf(err); c != want {
				t.Errorf("call %d: %v", i, err)
			}
		}
	}
	for _, m := range allMethods[:6] {
		if res := driverapi.Invoke(context.Background(), For(nil, Objects{}), driverapi.Call{Method: m}, driverapi.Class{}); res.Code != driverapi.InvalidArgument {
			t.Errorf("%s without a provider: %+v", m, res)
		}
	}
}

// A provider's nil response is an empty success without an error and the
// error alone with one.
func TestForNilResponses(t *testing.T) {
	ctx := context.Background()
	call := func(m driverapi.Method) driverapi.Call {
		return driverapi.Call{Method: m, Machine: driverapi.MachineRef{Name: "m", UID: "u"}}
	}
	for _, m := range allMethods[:6] {
		if res := driverapi.Invoke(ctx, For(silent{}, Objects{}), call(m), driverapi.Class{}); !res.OK() ||
			res.ProviderID != "" || res.Instances != nil || res.VolumeIDs != nil {
			t.Errorf("%s, nil and nil: %+v", m, res)
		}
		res := driverapi.Invoke(ctx, For(silent{err: status.Error(codes.Unavailable, "later")}, Objects{}), call(m), driverapi.Class{})
		if res.Code != driverapi.Unavailable || res.Message != "later" {
			t.Errorf("%s, nil and an error: %+v", m, res)
		}
	}
}

// ToMCM without a driver, or called without a request, answers MCM's
// InvalidArgument; empty requests reach the driver; a nil answer without
// an error becomes an empty response, which MCM's controller reads.
func TestToMCMWithoutDriverRequestOrResponse(t *testing.T) {
	for _, p := range []driver.Driver{ToMCM(nil), ToMCM(silentAPI{})} {
		nils, errs := mcmCalls(p, false)
		for i, err := range errs {
			if st, ok := status.FromError(err); !ok || st.Code() != codes.InvalidArgument || !nils[i] {
				t.Errorf("call %d: %v", i, err)
			}
		}
	}
	nils, errs := mcmCalls(ToMCM(silentAPI{}), true)
	for i, err := range errs {
		if err != nil || nils[i] {
			t.Errorf("empty request %d to a silent driver: nil response %v, %v", i, nils[i], err)
		}
	}
	refused := errors.New("refused")
	nils, errs = mcmCalls(ToMCM(silentAPI{err: refused}), true)
	for i, err := range errs {
		if err != refused || !nils[i] {
			t.Errorf("empty request %d to a failing driver: nil response %v, %v", i, nils[i], err)
		}
	}
	// Empty requests to a driver that reads them.
	_, errs = mcmCalls(ToMCM(lifecycletest.NewProvider()), true)
	for i, err := range errs {
		if st, ok := status.FromError(err); err != nil && !ok {
			t.Errorf("empty request %d to the in-memory provider: %v", i, st)
		}
	}
}

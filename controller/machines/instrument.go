package machines

import (
	"context"
	"time"

	"github.com/purelifecycle/machine/driverapi"
)

// driverMethods are the methods of driverapi.Driver, each of which the
// metrics count. It is read-only.
var driverMethods = [...]driverapi.Method{driverapi.MethodCreate, driverapi.MethodInitialize, driverapi.MethodGetStatus,
	driverapi.MethodDelete, driverapi.MethodList, driverapi.MethodGetVolumeIDs, driverapi.MethodUpdate,
	driverapi.MethodUpdateMetadata}

// Instrument returns d with every call counted and timed in the metrics:
// purelifecycle_driver_calls_total{method,code},
// purelifecycle_driver_call_errors_total{method} and
// purelifecycle_driver_call_duration_seconds{method}. The calls, their
// requests and answers pass through unchanged.
func (m *Metrics) Instrument(d driverapi.Driver) driverapi.Driver {
	return &instrumented{d: d, m: m}
}

// instrumented is a driver whose calls are counted and timed.
type instrumented struct {
	d driverapi.Driver
	m *Metrics
}

// observe counts one call of method that began at start and returned err.
func (i *instrumented) observe(method driverapi.Method, start time.Time, err error) {
	name := method.String()
	i.m.driverDuration.WithLabelValues(name).Observe(time.Since(start).Seconds())
	res := driverapi.ResultOf(method, err)
	i.m.driverCalls.WithLabelValues(name, codeLabel(res)).Inc()
	if !res.OK() {
		i.m.driverErrors.WithLabelValues(name).Inc()
	}
}

// codeLabel names the code of an answer: the code's name, Undecodable for
// an error that is not a status error, Invalid for a code outside 0..17.
func codeLabel(res driverapi.Result) string {
	switch {
	case res.Undecodable:
		return "Undecodable"
	case !res.Code.Valid():
		return "Invalid"
	}
	return res.Code.String()
}

// CreateMachine implements driverapi.Driver.
func (i *instrumented) CreateMachine(ctx context.Context, req *driverapi.CreateMachineRequest) (*driverapi.CreateMachineResponse, error) {
	start := time.Now()
	resp, err := i.d.CreateMachine(ctx, req)
	i.observe(driverapi.MethodCreate, start, err)
	return resp, err
}

// InitializeMachine implements driverapi.Driver.
func (i *instrumented) InitializeMachine(ctx context.Context, req *driverapi.InitializeMachineRequest) (*driverapi.InitializeMachineResponse, error) {
	start := time.Now()
	resp, err := i.d.InitializeMachine(ctx, req)
	i.observe(driverapi.MethodInitialize, start, err)
	return resp, err
}

// GetMachineStatus implements driverapi.Driver.
func (i *instrumented) GetMachineStatus(ctx context.Context, req *driverapi.GetMachineStatusRequest) (*driverapi.GetMachineStatusResponse, error) {
	start := time.Now()
	resp, err := i.d.GetMachineStatus(ctx, req)
	i.observe(driverapi.MethodGetStatus, start, err)
	return resp, err
}

// DeleteMachine implements driverapi.Driver.
func (i *instrumented) DeleteMachine(ctx context.Context, req *driverapi.DeleteMachineRequest) (*driverapi.DeleteMachineResponse, error) {
	start := time.Now()
	resp, err := i.d.DeleteMachine(ctx, req)
	i.observe(driverapi.MethodDelete, start, err)
	return resp, err
}

// ListMachines implements driverapi.Driver.
func (i *instrumented) ListMachines(ctx context.Context, req *driverapi.ListMachinesRequest) (*driverapi.ListMachinesResponse, error) {
	start := time.Now()
	resp, err := i.d.ListMachines(ctx, req)
	i.observe(driverapi.MethodList, start, err)
	return resp, err
}

// GetVolumeIDs implements driverapi.Driver.
func (i *instrumented) GetVolumeIDs(ctx context.Context, req *driverapi.GetVolumeIDsRequest) (*driverapi.GetVolumeIDsResponse, error) {
	start := time.Now()
	resp, err := i.d.GetVolumeIDs(ctx, req)
	i.observe(driverapi.MethodGetVolumeIDs, start, err)
	return resp, err
}

// UpdateMachine implements driverapi.Driver.
func (i *instrumented) UpdateMachine(ctx context.Context, req *driverapi.UpdateMachineRequest) (*driverapi.UpdateMachineResponse, error) {
	start := time.Now()
	resp, err := i.d.UpdateMachine(ctx, req)
	i.observe(driverapi.MethodUpdate, start, err)
	return resp, err
}

// UpdateMetadata implements driverapi.Driver.
func (i *instrumented) UpdateMetadata(ctx context.Context, req *driverapi.UpdateMetadataRequest) (*driverapi.UpdateMetadataResponse, error) {
	start := time.Now()
	resp, err := i.d.UpdateMetadata(ctx, req)
	i.observe(driverapi.MethodUpdateMetadata, start, err)
	return resp, err
}

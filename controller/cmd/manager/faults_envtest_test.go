package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/driverapi"
)

// The faults the soak injects: driver calls that fail, before they are
// carried out or after (their answer lost), machine writes refused with a
// conflict, and status writes reported done but never made. Each is drawn
// at its rate from one seeded source, and counted; the rates can be set to
// zero at any time (faults stop).

// dice draws the faults, from every worker at once.
type dice struct {
	mu  sync.Mutex
	rnd *rand.Rand
}

func newDice(seed uint64) *dice { return &dice{rnd: rand.New(rand.NewPCG(seed, seed^0x5eed))} }

// under reports whether a draw falls under rate.
func (d *dice) under(rate float64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rnd.Float64() < rate
}

// intN draws an integer in [0, n).
func (d *dice) intN(n int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rnd.IntN(n)
}

// seed draws a seed for another source.
func (d *dice) seed() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rnd.Uint64()
}

// rate is a probability that can be changed while it is read.
type rate struct{ bits atomic.Uint64 }

func (r *rate) set(p float64) { r.bits.Store(uint64(p * 1e9)) }
func (r *rate) get() float64  { return float64(r.bits.Load()) / 1e9 }

// faultyDriver fails a share of the calls to its driver, each with a
// transient code: half before the call (nothing is done), half after it
// (done, but the answer is lost, as when it timed out). Besides, a share
// of the GetMachineStatus calls answer NotFound for an instance that
// exists, as a provider whose listing lags does.
type faultyDriver struct {
	d        driverapi.Driver
	dice     *dice
	rate     rate
	notFound rate

	calls, failedBefore, failedAfter, falseNotFound atomic.Int64
}

// failed returns how many calls failed, for whatever fault.
func (f *faultyDriver) failed() int64 {
	return f.failedBefore.Load() + f.failedAfter.Load() + f.falseNotFound.Load()
}

var transientCodes = [...]driverapi.Code{driverapi.Unavailable, driverapi.Aborted, driverapi.Unknown, driverapi.DeadlineExceeded}

// faulted calls fn unless the call fails before, and loses its answer
// when it fails after.
func faulted[Req, Resp any](f *faultyDriver, ctx context.Context, req Req,
	fn func(context.Context, Req) (*Resp, error)) (*Resp, error) {
	f.calls.Add(1)
	if f.dice.under(f.rate.get()) {
		if f.dice.intN(2) == 0 {
			f.failedBefore.Add(1)
			return nil, driverapi.Error(transientCodes[f.dice.intN(len(transientCodes))], "injected: the call was not made")
		}
		f.failedAfter.Add(1)
		_, _ = fn(ctx, req)
		return nil, driverapi.Error(driverapi.DeadlineExceeded, "injected: the call was made, its answer lost")
	}
	return fn(ctx, req)
}

// CreateMachine implements driverapi.Driver.
func (f *faultyDriver) CreateMachine(ctx context.Context, req *driverapi.CreateMachineRequest) (*driverapi.CreateMachineResponse, error) {
	return faulted(f, ctx, req, f.d.CreateMachine)
}

// InitializeMachine implements driverapi.Driver.
func (f *faultyDriver) InitializeMachine(ctx context.Context, req *driverapi.InitializeMachineRequest) (*driverapi.InitializeMachineResponse, error) {
	return faulted(f, ctx, req, f.d.InitializeMachine)
}

// GetMachineStatus implements driverapi.Driver.
func (f *faultyDriver) GetMachineStatus(ctx context.Context, req *driverapi.GetMachineStatusRequest) (*driverapi.GetMachineStatusResponse, error) {
	if f.dice.under(f.notFound.get()) {
		f.calls.Add(1)
		f.falseNotFound.Add(1)
		return nil, driverapi.Error(driverapi.NotFound, "injected: the provider's listing lags")
	}
	return faulted(f, ctx, req, f.d.GetMachineStatus)
}

// DeleteMachine implements driverapi.Driver.
func (f *faultyDriver) DeleteMachine(ctx context.Context, req *driverapi.DeleteMachineRequest) (*driverapi.DeleteMachineResponse, error) {
	return faulted(f, ctx, req, f.d.DeleteMachine)
}

// ListMachines implements driverapi.Driver.
func (f *faultyDriver) ListMachines(ctx context.Context, req *driverapi.ListMachinesRequest) (*driverapi.ListMachinesResponse, error) {
	return faulted(f, ctx, req, f.d.ListMachines)
}

// GetVolumeIDs implements driverapi.Driver.
func (f *faultyDriver) GetVolumeIDs(ctx context.Context, req *driverapi.GetVolumeIDsRequest) (*driverapi.GetVolumeIDsResponse, error) {
	return faulted(f, ctx, req, f.d.GetVolumeIDs)
}

// UpdateMachine implements driverapi.Driver.
func (f *faultyDriver) UpdateMachine(ctx context.Context, req *driverapi.UpdateMachineRequest) (*driverapi.UpdateMachineResponse, error) {
	return faulted(f, ctx, req, f.d.UpdateMachine)
}

// UpdateMetadata implements driverapi.Driver.
func (f *faultyDriver) UpdateMetadata(ctx context.Context, req *driverapi.UpdateMetadataRequest) (*driverapi.UpdateMetadataResponse, error) {
	return faulted(f, ctx, req, f.d.UpdateMetadata)
}

// writeFaults refuses a share of a manager's writes of machines with a
// conflict, and reports a share of its status writes of machines done
// without making them (a lost write). It counts the writes and the
// conflicts the API server itself answered.
type writeFaults struct {
	dice               *dice
	conflictRate, lost rate

	writes, statusWrites          atomic.Int64
	injectedConflicts, lostWrites atomic.Int64
	serverConflicts               atomic.Int64
}

// wrap makes the manager's client inject the faults.
func (w *writeFaults) wrap(o *ctrl.Options) {
	o.NewClient = func(cfg *rest.Config, opts client.Options) (client.Client, error) {
		c, err := client.New(cfg, opts)
		return &faultyClient{Client: c, w: w}, err
	}
}

var machinesResource = schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "machines"}

// write carries out a write of obj (status or not) with the faults.
func (w *writeFaults) write(obj client.Object, status bool, do func() error) error {
	if _, ok := obj.(*v1alpha1.Machine); !ok {
		return do()
	}
	w.writes.Add(1)
	if status {
		w.statusWrites.Add(1)
	}
	switch {
	case w.dice.under(w.conflictRate.get()):
		w.injectedConflicts.Add(1)
		return apierrors.NewConflict(machinesResource, obj.GetName(), errors.New("injected: the object has been modified"))
	case status && w.dice.under(w.lost.get()):
		w.lostWrites.Add(1)
		return nil
	}
	err := do()
	if apierrors.IsConflict(err) {
		w.serverConflicts.Add(1)
	}
	return err
}

// faultyClient is a manager's client with writeFaults.
type faultyClient struct {
	client.Client
	w *writeFaults
}

// Update implements client.Client.
func (c *faultyClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.w.write(obj, false, func() error { return c.Client.Update(ctx, obj, opts...) })
}

// Status implements client.Client.
func (c *faultyClient) Status() client.SubResourceWriter {
	return &faultyStatus{SubResourceWriter: c.Client.Status(), w: c.w}
}

type faultyStatus struct {
	client.SubResourceWriter
	w *writeFaults
}

// Update implements client.SubResourceWriter.
func (s *faultyStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return s.w.write(obj, true, func() error { return s.SubResourceWriter.Update(ctx, obj, opts...) })
}

package lifecycletest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/purelifecycle/machine/driverapi"
)

// Instance is one instance of a [Provider].
type Instance struct {
	// ProviderID identifies the instance; MachineName, OwnerUID and Key are
	// the name, UID and idempotency key it was created for; NodeName is the
	// name of the node it registers.
	ProviderID, MachineName, OwnerUID, Key, NodeName string
	// Generation is the hot-update generation the instance is at.
	Generation int64
	// Metadata is the instance's metadata (the owner UID is OwnerUID).
	Metadata map[string]string
	// Initialized reports that InitializeMachine succeeded.
	Initialized bool
	// Created is when the instance was created.
	Created time.Time
}

// Fault is what a [Provider] answers a call with instead of doing it.
type Fault struct {
	// Code is the status code to fail with; OK means no fault.
	Code driverapi.Code
	// Undecodable makes the error a plain text error instead.
	Undecodable bool
	// After makes the call take effect before it fails, as a call whose
	// answer was lost (a timeout after the cloud acted).
	After bool
}

// Provider is a fault-injecting in-memory cloud implementing
// driverapi.Driver as its contract says: CreateMachine is idempotent per
// idempotency key, GetMachineStatus reports Uninitialized with the instance
// until InitializeMachine succeeded, and reports owner, generation and
// metadata. Faults come from the Fault hook, metadata drops from the Drop
// hook, times from the Now hook; nil hooks inject nothing.
type Provider struct {
	driverapi.UnimplementedDriver
	// Instances holds the instances by providerID.
	Instances map[string]*Instance
	// Fault, when set, is asked before every call.
	Fault func(m driverapi.Method) Fault
	// Drop, when set, is asked for every metadata key (and "owner") an
	// UpdateMetadata would change; true drops the change silently.
	Drop func(key string) bool
	// Now, when set, gives creation times.
	Now func() time.Time
	// Calls counts calls by method.
	Calls [16]int
	// Created counts instances created.
	Created int
	seq     int
}

// NewProvider returns an empty provider without faults.
func NewProvider() *Provider { return &Provider{Instances: map[string]*Instance{}} }

// OwnedBy returns the providerIDs of the instances owned by uid, sorted.
func (p *Provider) OwnedBy(uid string) []string {
	var out []string
	for pid, i := range p.Instances {
		if i.OwnerUID == uid {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return out
}

func (p *Provider) fault(m driverapi.Method) (Fault, error) {
	p.Calls[m]++
	if p.Fault == nil {
		return Fault{}, nil
	}
	f := p.Fault(m)
	switch {
	case f.Code == driverapi.OK && !f.Undecodable:
		return f, nil
	case f.Undecodable:
		return f, fmt.Errorf("injected undecodable failure of %s", m)
	}
	return f, driverapi.Error(f.Code, "injected failure of "+m.String())
}

// find returns the instance a call is about: by providerID, else by key,
// else by name and UID.
func (p *Provider) find(ref driverapi.MachineRef, key string) *Instance {
	if ref.ProviderID != "" {
		return p.Instances[ref.ProviderID]
	}
	pids := slices.Sorted(maps.Keys(p.Instances))
	for _, pid := range pids {
		if i := p.Instances[pid]; key != "" && i.Key == key {
			return i
		}
	}
	for _, pid := range pids {
		if i := p.Instances[pid]; i.MachineName == ref.Name && i.OwnerUID == ref.UID {
			return i
		}
	}
	return nil
}

// CreateMachine implements driverapi.Driver.
func (p *Provider) CreateMachine(_ context.Context, req *driverapi.CreateMachineRequest) (*driverapi.CreateMachineResponse, error) {
	f, err := p.fault(driverapi.MethodCreate)
	if err != nil && !f.After {
		return nil, err
	}
	i := p.find(driverapi.MachineRef{Name: req.Machine.Name}, req.IdempotencyKey)
	if i == nil || i.Key != req.IdempotencyKey {
		p.seq++
		p.Created++
		i = &Instance{ProviderID: fmt.Sprintf("test:///vm-%d", p.seq), MachineName: req.Machine.Name,
			OwnerUID: req.Machine.UID, Key: req.IdempotencyKey, NodeName: fmt.Sprintf("node-%d", p.seq),
			Generation: req.Generation, Metadata: maps.Clone(req.Metadata)}
		if p.Now != nil {
			i.Created = p.Now()
		}
		p.Instances[i.ProviderID] = i
	}
	if err != nil {
		return nil, err
	}
	return &driverapi.CreateMachineResponse{ProviderID: i.ProviderID, NodeName: i.NodeName}, nil
}

// InitializeMachine implements driverapi.Driver.
func (p *Provider) InitializeMachine(_ context.Context, req *driverapi.InitializeMachineRequest) (*driverapi.InitializeMachineResponse, error) {
	f, err := p.fault(driverapi.MethodInitialize)
	if err != nil && !f.After {
		return nil, err
	}
	i := p.find(req.Machine, "")
	if i == nil {
		return nil, driverapi.Error(driverapi.NotFound, "no instance")
	}
	i.Initialized = true
	if err != nil {
		return nil, err
	}
	return &driverapi.InitializeMachineResponse{ProviderID: i.ProviderID, NodeName: i.NodeName}, nil
}

// GetMachineStatus implements driverapi.Driver.
func (p *Provider) GetMachineStatus(_ context.Context, req *driverapi.GetMachineStatusRequest) (*driverapi.GetMachineStatusResponse, error) {
	if _, err := p.fault(driverapi.MethodGetStatus); err != nil {
		return nil, err
	}
	i := p.find(req.Machine, req.IdempotencyKey)
	if i == nil {
		return nil, driverapi.Error(driverapi.NotFound, "no instance")
	}
	resp := &driverapi.GetMachineStatusResponse{ProviderID: i.ProviderID, NodeName: i.NodeName, OwnerUID: i.OwnerUID,
		Generation: i.Generation, Metadata: maps.Clone(i.Metadata)}
	if !i.Initialized {
		return resp, driverapi.Error(driverapi.Uninitialized, "not initialized")
	}
	return resp, nil
}

// DeleteMachine implements driverapi.Driver.
func (p *Provider) DeleteMachine(_ context.Context, req *driverapi.DeleteMachineRequest) (*driverapi.DeleteMachineResponse, error) {
	f, err := p.fault(driverapi.MethodDelete)
	if err != nil && !f.After {
		return nil, err
	}
	i := p.find(req.Machine, req.IdempotencyKey)
	if i != nil {
		delete(p.Instances, i.ProviderID)
	}
	if err != nil {
		return nil, err
	}
	if i == nil {
		return nil, driverapi.Error(driverapi.NotFound, "no instance")
	}
	return &driverapi.DeleteMachineResponse{}, nil
}

// ListMachines implements driverapi.Driver.
func (p *Provider) ListMachines(context.Context, *driverapi.ListMachinesRequest) (*driverapi.ListMachinesResponse, error) {
	if _, err := p.fault(driverapi.MethodList); err != nil {
		return nil, err
	}
	resp := &driverapi.ListMachinesResponse{}
	for _, pid := range slices.Sorted(maps.Keys(p.Instances)) {
		i := p.Instances[pid]
		resp.Instances = append(resp.Instances, driverapi.Instance{ProviderID: pid, MachineName: i.MachineName,
			OwnerUID: i.OwnerUID, Created: i.Created})
	}
	return resp, nil
}

// UpdateMachine implements driverapi.Driver.
func (p *Provider) UpdateMachine(_ context.Context, req *driverapi.UpdateMachineRequest) (*driverapi.UpdateMachineResponse, error) {
	f, err := p.fault(driverapi.MethodUpdate)
	if err != nil && !f.After {
		return nil, err
	}
	i := p.find(req.Machine, "")
	if i == nil {
		return nil, driverapi.Error(driverapi.NotFound, "no instance")
	}
	i.Generation = req.Generation
	if err != nil {
		return nil, err
	}
	return &driverapi.UpdateMachineResponse{Generation: i.Generation}, nil
}

// UpdateMetadata implements driverapi.Driver.
func (p *Provider) UpdateMetadata(_ context.Context, req *driverapi.UpdateMetadataRequest) (*driverapi.UpdateMetadataResponse, error) {
	f, err := p.fault(driverapi.MethodUpdateMetadata)
	if err != nil && !f.After {
		return nil, err
	}
	i := p.find(req.Machine, "")
	if i == nil {
		return nil, driverapi.Error(driverapi.NotFound, "no instance")
	}
	drop := func(k string) bool { return p.Drop != nil && p.Drop(k) }
	if i.Metadata == nil {
		i.Metadata = map[string]string{}
	}
	for _, k := range slices.Sorted(maps.Keys(req.Set)) {
		if !drop(k) {
			i.Metadata[k] = req.Set[k]
		}
	}
	for _, k := range req.Remove {
		if !drop(k) {
			delete(i.Metadata, k)
		}
	}
	if !drop("owner") {
		i.OwnerUID = req.Machine.UID
	}
	if err != nil {
		return nil, err
	}
	return &driverapi.UpdateMetadataResponse{}, nil
}

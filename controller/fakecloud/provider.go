// Package fakecloud is an in-process cloud provider for the example
// controller: a driverapi.Driver whose instances exist in memory. It is safe
// for concurrent use. Instances never boot anything: whoever plays the
// kubelet (a test, or the Kubelet runnable) registers the node each
// instance announces (Instance.NodeName, Instance.ProviderID).
//
// Faults are set per machine name with FailCreate, so one machine can keep
// failing while the others are created.
package fakecloud

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/purelifecycle/machine/driverapi"
)

// Instance is one instance of the fake cloud.
type Instance struct {
	// ProviderID identifies the instance, "fake:///<zone>/vm-<n>".
	ProviderID string
	// NodeName is the name its node registers with, "<zone>-vm-<n>", so
	// the nodes of providers of different zones never share a name.
	NodeName string
	// MachineName and OwnerUID name the machine it was created for; the
	// owner UID is kept up to date by UpdateMetadata.
	MachineName, OwnerUID string
	// Key is the idempotency key of the creation.
	Key string
	// Initialized reports that InitializeMachine ran.
	Initialized bool
	// Created is when the instance was created.
	Created time.Time
	// Generation is the hot-update generation the instance runs at.
	Generation int64
	// Metadata is the instance's metadata (tags).
	Metadata map[string]string
	// UserData is the class's Secret["userData"] the instance was created
	// with (where a bootstrap token goes).
	UserData string
	// Class is the class CreateMachine was handed (read-only).
	Class driverapi.Class
}

// Provider is the fake cloud. The zero value is not usable; call New.
type Provider struct {
	driverapi.UnimplementedDriver

	// Zone goes into every providerID and node name.
	Zone string

	mu         sync.Mutex
	seq        int
	instances  map[string]*Instance // by providerID
	failCreate map[string]driverapi.Code
	calls      map[string]map[driverapi.Method]int // by machine name
}

// New returns an empty fake cloud.
func New() *Provider {
	return &Provider{
		Zone:       "zone-a",
		instances:  map[string]*Instance{},
		failCreate: map[string]driverapi.Code{},
		calls:      map[string]map[driverapi.Method]int{},
	}
}

// FailCreate makes every CreateMachine for the named machine fail with code
// from now on; driverapi.OK ends it.
func (p *Provider) FailCreate(machine string, code driverapi.Code) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if code == driverapi.OK {
		delete(p.failCreate, machine)
		return
	}
	p.failCreate[machine] = code
}

// Instances returns copies of the instances, sorted by providerID.
func (p *Provider) Instances() []Instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Instance, 0, len(p.instances))
	for _, id := range slices.Sorted(maps.Keys(p.instances)) {
		i := *p.instances[id]
		i.Metadata = maps.Clone(i.Metadata)
		out = append(out, i)
	}
	return out
}

// InstanceOf returns the instance created for the named machine.
func (p *Provider) InstanceOf(machine string) (Instance, bool) {
	for _, i := range p.Instances() {
		if i.MachineName == machine {
			return i, true
		}
	}
	return Instance{}, false
}

// Calls returns how often method was called for the named machine.
func (p *Provider) Calls(machine string, method driverapi.Method) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[machine][method]
}

func (p *Provider) count(machine string, m driverapi.Method) {
	if p.calls[machine] == nil {
		p.calls[machine] = map[driverapi.Method]int{}
	}
	p.calls[machine][m]++
}

// find returns the instance a request is about: by providerID, else by
// idempotency key, else by machine UID, else by machine name.
func (p *Provider) find(ref driverapi.MachineRef, key string) *Instance {
	if ref.ProviderID != "" {
		return p.instances[ref.ProviderID]
	}
	var byUID, byName *Instance
	for _, id := range slices.Sorted(maps.Keys(p.instances)) {
		i := p.instances[id]
		switch {
		case key != "" && i.Key == key:
			return i
		case i.MachineName != ref.Name:
		case i.OwnerUID == ref.UID && byUID == nil:
			byUID = i
		case byName == nil:
			byName = i
		}
	}
	if byUID != nil {
		return byUID
	}
	return byName
}

// CreateMachine creates an instance, once per idempotency key.
func (p *Provider) CreateMachine(ctx context.Context, req *driverapi.CreateMachineRequest) (*driverapi.CreateMachineResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, driverapi.Wrap(driverapi.DeadlineExceeded, "create "+req.Machine.Name, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.count(req.Machine.Name, driverapi.MethodCreate)
	if c, ok := p.failCreate[req.Machine.Name]; ok {
		return nil, driverapi.Error(c, "simulated failure creating "+req.Machine.Name)
	}
	for _, i := range p.instances {
		if i.Key == req.IdempotencyKey {
			return &driverapi.CreateMachineResponse{ProviderID: i.ProviderID, NodeName: i.NodeName}, nil
		}
	}
	p.seq++
	i := &Instance{
		ProviderID:  fmt.Sprintf("fake:///%s/vm-%d", p.Zone, p.seq),
		NodeName:    fmt.Sprintf("%s-vm-%d", p.Zone, p.seq),
		MachineName: req.Machine.Name,
		OwnerUID:    req.Machine.UID,
		Key:         req.IdempotencyKey,
		Created:     time.Now(),
		Generation:  req.Generation,
		Metadata:    maps.Clone(req.Metadata),
		UserData:    string(req.Class.Secret["userData"]),
		Class:       req.Class,
	}
	p.instances[i.ProviderID] = i
	return &driverapi.CreateMachineResponse{ProviderID: i.ProviderID, NodeName: i.NodeName}, nil
}

// InitializeMachine initializes an instance.
func (p *Provider) InitializeMachine(_ context.Context, req *driverapi.InitializeMachineRequest) (*driverapi.InitializeMachineResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.count(req.Machine.Name, driverapi.MethodInitialize)
	i := p.find(req.Machine, "")
	if i == nil {
		return nil, driverapi.Error(driverapi.NotFound, "no instance "+req.Machine.ProviderID)
	}
	i.Initialized = true
	return &driverapi.InitializeMachineResponse{ProviderID: i.ProviderID, NodeName: i.NodeName}, nil
}

// GetMachineStatus reports an instance; Uninitialized, with the instance,
// until it was initialized.
func (p *Provider) GetMachineStatus(_ context.Context, req *driverapi.GetMachineStatusRequest) (*driverapi.GetMachineStatusResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.count(req.Machine.Name, driverapi.MethodGetStatus)
	i := p.find(req.Machine, req.IdempotencyKey)
	if i == nil {
		return nil, driverapi.Error(driverapi.NotFound, "no instance for machine "+req.Machine.Name)
	}
	resp := &driverapi.GetMachineStatusResponse{ProviderID: i.ProviderID, NodeName: i.NodeName, OwnerUID: i.OwnerUID,
		Metadata: maps.Clone(i.Metadata), Generation: i.Generation}
	if !i.Initialized {
		return resp, driverapi.Error(driverapi.Uninitialized, "instance not initialized")
	}
	return resp, nil
}

// DeleteMachine deletes an instance; NotFound when there is none.
func (p *Provider) DeleteMachine(_ context.Context, req *driverapi.DeleteMachineRequest) (*driverapi.DeleteMachineResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.count(req.Machine.Name, driverapi.MethodDelete)
	i := p.find(req.Machine, req.IdempotencyKey)
	if i == nil {
		return nil, driverapi.Error(driverapi.NotFound, "no instance for machine "+req.Machine.Name)
	}
	delete(p.instances, i.ProviderID)
	return &driverapi.DeleteMachineResponse{}, nil
}

// ListMachines lists every instance.
func (p *Provider) ListMachines(context.Context, *driverapi.ListMachinesRequest) (*driverapi.ListMachinesResponse, error) {
	resp := &driverapi.ListMachinesResponse{}
	for _, i := range p.Instances() {
		resp.Instances = append(resp.Instances, driverapi.Instance{ProviderID: i.ProviderID, MachineName: i.MachineName,
			OwnerUID: i.OwnerUID, Created: i.Created})
	}
	return resp, nil
}

// UpdateMachine applies a hot update in place.
func (p *Provider) UpdateMachine(_ context.Context, req *driverapi.UpdateMachineRequest) (*driverapi.UpdateMachineResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.count(req.Machine.Name, driverapi.MethodUpdate)
	i := p.find(req.Machine, "")
	if i == nil {
		return nil, driverapi.Error(driverapi.NotFound, "no instance "+req.Machine.ProviderID)
	}
	i.Generation = req.Generation
	return &driverapi.UpdateMachineResponse{Generation: i.Generation}, nil
}

// UpdateMetadata patches an instance's metadata.
func (p *Provider) UpdateMetadata(_ context.Context, req *driverapi.UpdateMetadataRequest) (*driverapi.UpdateMetadataResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.count(req.Machine.Name, driverapi.MethodUpdateMetadata)
	i := p.find(req.Machine, "")
	if i == nil {
		return nil, driverapi.Error(driverapi.NotFound, "no instance "+req.Machine.ProviderID)
	}
	if i.Metadata == nil {
		i.Metadata = map[string]string{}
	}
	maps.Copy(i.Metadata, req.Set)
	for _, k := range req.Remove {
		delete(i.Metadata, k)
	}
	i.OwnerUID = req.Machine.UID
	return &driverapi.UpdateMetadataResponse{}, nil
}

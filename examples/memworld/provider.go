// Package memworld is an in-memory cloud provider and cluster for the
// examples: a driverapi.Driver whose instances boot and register nodes in
// simulated time, and a shell.World holding machines, nodes and bootstrap
// tokens. Faults are scripted, so every run is reproducible.
package memworld

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/purelifecycle/machine/driverapi"
)

// Instance is one VM of the in-memory provider.
type Instance struct {
	ProviderID  string
	MachineName string
	OwnerUID    string
	Key         string
	NodeName    string
	Created     time.Time
	Initialized bool
	// Generation is the hot-update generation the instance is at.
	Generation int64
	// Metadata is the instance's metadata.
	Metadata map[string]string
}

// Provider is an in-memory cloud. It implements driverapi.Driver. Its clock
// is the simulated time the caller sets with SetNow.
type Provider struct {
	driverapi.UnimplementedDriver
	now       time.Time
	seq       int
	instances map[string]*Instance // by providerID
	// FailInit makes the next FailInit InitializeMachine calls fail with
	// Internal.
	FailInit int
	// FailCreate makes the next FailCreate CreateMachine calls fail with
	// this code (0: none).
	FailCreate []driverapi.Code
	// FailUpdate makes the next UpdateMachine calls fail with these codes
	// in turn (OK: succeed).
	FailUpdate []driverapi.Code
	// DropMetadata makes the next UpdateMetadata calls silently drop the
	// change of the keys listed, one list per call.
	DropMetadata [][]string
	// Creates counts CreateMachine calls that made an instance.
	Creates int
	// Calls counts driver calls by method.
	Calls map[driverapi.Method]int
}

// NewProvider returns an empty provider.
func NewProvider() *Provider {
	return &Provider{instances: map[string]*Instance{}, Calls: map[driverapi.Method]int{}}
}

// SetNow sets the provider's clock.
func (p *Provider) SetNow(t time.Time) { p.now = t }

// Now returns the provider's clock.
func (p *Provider) Now() time.Time { return p.now }

// Instances returns the instances, sorted by providerID.
func (p *Provider) Instances() []Instance {
	out := make([]Instance, 0, len(p.instances))
	for _, i := range p.instances {
		out = append(out, *i)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ProviderID < out[b].ProviderID })
	return out
}

// find returns the instance a request is about: by providerID, else by
// name and idempotency key, else by name and UID.
func (p *Provider) find(ref driverapi.MachineRef, key string) *Instance {
	if ref.ProviderID != "" {
		return p.instances[ref.ProviderID]
	}
	// Deterministic: instances in providerID order; the key wins, then the
	// machine's own UID, then any instance of that name.
	var byUID, byName *Instance
	for _, inst := range p.Instances() {
		i := p.instances[inst.ProviderID]
		if i.MachineName != ref.Name {
			continue
		}
		if key != "" && i.Key == key {
			return i
		}
		if i.OwnerUID == ref.UID && byUID == nil {
			byUID = i
		}
		if byName == nil {
			byName = i
		}
	}
	if byUID != nil {
		return byUID
	}
	return byName
}

// CreateMachine creates an instance, idempotently for one key.
func (p *Provider) CreateMachine(_ context.Context, req *driverapi.CreateMachineRequest) (*driverapi.CreateMachineResponse, error) {
	p.Calls[driverapi.MethodCreate]++
	if len(p.FailCreate) > 0 {
		c := p.FailCreate[0]
		p.FailCreate = p.FailCreate[1:]
		if c != driverapi.OK {
			return nil, driverapi.Error(c, "simulated create failure")
		}
	}
	for _, i := range p.instances {
		if i.Key == req.IdempotencyKey {
			return &driverapi.CreateMachineResponse{ProviderID: i.ProviderID, NodeName: i.NodeName}, nil
		}
	}
	p.seq++
	i := &Instance{
		ProviderID:  fmt.Sprintf("mem:///zone-a/vm-%d", p.seq),
		MachineName: req.Machine.Name,
		OwnerUID:    req.Machine.UID,
		Key:         req.IdempotencyKey,
		NodeName:    fmt.Sprintf("node-vm-%d", p.seq),
		Created:     p.now,
		Generation:  req.Generation,
		Metadata:    maps.Clone(req.Metadata),
	}
	p.instances[i.ProviderID] = i
	p.Creates++
	return &driverapi.CreateMachineResponse{ProviderID: i.ProviderID, NodeName: i.NodeName}, nil
}

// InitializeMachine initializes an instance, or fails while FailInit > 0.
func (p *Provider) InitializeMachine(_ context.Context, req *driverapi.InitializeMachineRequest) (*driverapi.InitializeMachineResponse, error) {
	p.Calls[driverapi.MethodInitialize]++
	i := p.find(req.Machine, "")
	if i == nil {
		return nil, driverapi.Error(driverapi.NotFound, "no instance "+req.Machine.ProviderID)
	}
	if p.FailInit > 0 {
		p.FailInit--
		return nil, driverapi.Error(driverapi.Internal, "network interface not attached yet")
	}
	i.Initialized = true
	return &driverapi.InitializeMachineResponse{ProviderID: i.ProviderID, NodeName: i.NodeName}, nil
}

// GetMachineStatus reports an instance; Uninitialized (with the instance)
// until it was initialized.
func (p *Provider) GetMachineStatus(_ context.Context, req *driverapi.GetMachineStatusRequest) (*driverapi.GetMachineStatusResponse, error) {
	p.Calls[driverapi.MethodGetStatus]++
	i := p.find(req.Machine, req.IdempotencyKey)
	if i == nil {
		return nil, driverapi.Error(driverapi.NotFound, "no instance for machine "+req.Machine.Name)
	}
	resp := &driverapi.GetMachineStatusResponse{ProviderID: i.ProviderID, NodeName: i.NodeName, OwnerUID: i.OwnerUID,
		Generation: i.Generation, Metadata: maps.Clone(i.Metadata)}
	if !i.Initialized {
		return resp, driverapi.Error(driverapi.Uninitialized, "instance not initialized")
	}
	return resp, nil
}

// DeleteMachine deletes an instance; NotFound when there is none.
func (p *Provider) DeleteMachine(_ context.Context, req *driverapi.DeleteMachineRequest) (*driverapi.DeleteMachineResponse, error) {
	p.Calls[driverapi.MethodDelete]++
	i := p.find(req.Machine, req.IdempotencyKey)
	if i == nil {
		return nil, driverapi.Error(driverapi.NotFound, "no instance")
	}
	delete(p.instances, i.ProviderID)
	return &driverapi.DeleteMachineResponse{}, nil
}

// ListMachines lists every instance.
func (p *Provider) ListMachines(context.Context, *driverapi.ListMachinesRequest) (*driverapi.ListMachinesResponse, error) {
	p.Calls[driverapi.MethodList]++
	resp := &driverapi.ListMachinesResponse{}
	for _, i := range p.Instances() {
		resp.Instances = append(resp.Instances, driverapi.Instance{ProviderID: i.ProviderID, MachineName: i.MachineName,
			OwnerUID: i.OwnerUID, Created: i.Created})
	}
	return resp, nil
}

// UpdateMachine brings an instance to the requested generation, or fails
// as FailUpdate says.
func (p *Provider) UpdateMachine(_ context.Context, req *driverapi.UpdateMachineRequest) (*driverapi.UpdateMachineResponse, error) {
	p.Calls[driverapi.MethodUpdate]++
	i := p.find(req.Machine, "")
	if i == nil {
		return nil, driverapi.Error(driverapi.NotFound, "no instance "+req.Machine.ProviderID)
	}
	if len(p.FailUpdate) > 0 {
		c := p.FailUpdate[0]
		p.FailUpdate = p.FailUpdate[1:]
		if c != driverapi.OK {
			return nil, driverapi.Error(c, "the machine type cannot change on a running instance")
		}
	}
	i.Generation = req.Generation
	return &driverapi.UpdateMachineResponse{Generation: i.Generation}, nil
}

// UpdateMetadata sets and removes metadata keys and the owner, silently
// dropping the keys DropMetadata lists.
func (p *Provider) UpdateMetadata(_ context.Context, req *driverapi.UpdateMetadataRequest) (*driverapi.UpdateMetadataResponse, error) {
	p.Calls[driverapi.MethodUpdateMetadata]++
	i := p.find(req.Machine, "")
	if i == nil {
		return nil, driverapi.Error(driverapi.NotFound, "no instance "+req.Machine.ProviderID)
	}
	var drop []string
	if len(p.DropMetadata) > 0 {
		drop, p.DropMetadata = p.DropMetadata[0], p.DropMetadata[1:]
	}
	if i.Metadata == nil {
		i.Metadata = map[string]string{}
	}
	for k, v := range req.Set {
		if !slices.Contains(drop, k) {
			i.Metadata[k] = v
		}
	}
	for _, k := range req.Remove {
		if !slices.Contains(drop, k) {
			delete(i.Metadata, k)
		}
	}
	if !slices.Contains(drop, "owner") {
		i.OwnerUID = req.Machine.UID
	}
	return &driverapi.UpdateMetadataResponse{}, nil
}

package lifecycle_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/purelifecycle/machine/driverapi"
)

// This file is the tiny in-memory provider of the scenario scripts
// (script_test.go): a driverapi.Driver whose instances are plain records,
// with scripted faults. Every call leaves a note saying what the provider
// did, which the scripts print next to the call's result.

// scriptInstance is one VM of the tiny provider.
type scriptInstance struct {
	providerID  string
	machine     string // the machine name it was created for
	owner       string // the machine UID it was created for (or last given by UpdateMetadata)
	key         string // the idempotency key of its CreateMachine
	node        string // the name its node registers with
	initialized bool
	generation  int64
	metadata    map[string]string
}

// scriptFault is a scripted failure of one driver method.
type scriptFault struct {
	code  driverapi.Code
	msg   string
	times int
}

// scriptProvider is the tiny provider. It implements driverapi.Driver.
type scriptProvider struct {
	driverapi.UnimplementedDriver
	seq       int
	instances []*scriptInstance // in creation order
	faults    map[driverapi.Method]*scriptFault
	// drop lists the metadata keys the next UpdateMetadata calls silently
	// drop, one list per call.
	drop [][]string
	// creates counts the instances CreateMachine made.
	creates int
	// note says what the last call did.
	note string
}

func newScriptProvider() *scriptProvider {
	return &scriptProvider{faults: map[driverapi.Method]*scriptFault{}}
}

// add makes an instance, as CreateMachine does, and returns it.
func (p *scriptProvider) add(machine, owner, key string, generation int64, md map[string]string) *scriptInstance {
	p.seq++
	i := &scriptInstance{
		providerID: "tiny:///vm-" + strconv.Itoa(p.seq),
		machine:    machine,
		owner:      owner,
		key:        key,
		node:       "ip-10-0-0-" + strconv.Itoa(p.seq),
		generation: generation,
		metadata:   maps.Clone(md),
	}
	p.instances = append(p.instances, i)
	return i
}

// find returns the instance a request is about: by providerID; else by
// name and idempotency key, else by name and UID, else by name alone.
func (p *scriptProvider) find(ref driverapi.MachineRef, key string) *scriptInstance {
	if ref.ProviderID != "" {
		for _, i := range p.instances {
			if i.providerID == ref.ProviderID {
				return i
			}
		}
		return nil
	}
	var byUID, byName *scriptInstance
	for _, i := range p.instances {
		if i.machine != ref.Name {
			continue
		}
		if key != "" && i.key == key {
			return i
		}
		if i.owner == ref.UID && byUID == nil {
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

// fault returns the scripted failure of method m, if one is left.
func (p *scriptProvider) fault(m driverapi.Method) error {
	f := p.faults[m]
	if f == nil || f.times == 0 {
		return nil
	}
	f.times--
	p.note = fmt.Sprintf("scripted failure, %d left", f.times)
	return driverapi.Error(f.code, f.msg)
}

// CreateMachine creates an instance, idempotently per key.
func (p *scriptProvider) CreateMachine(_ context.Context, req *driverapi.CreateMachineRequest) (*driverapi.CreateMachineResponse, error) {
	if err := p.fault(driverapi.MethodCreate); err != nil {
		return nil, err
	}
	for _, i := range p.instances {
		if i.key == req.IdempotencyKey {
			p.note = "same key " + req.IdempotencyKey + ": returned the existing " + i.providerID
			return &driverapi.CreateMachineResponse{ProviderID: i.providerID, NodeName: i.node}, nil
		}
	}
	i := p.add(req.Machine.Name, req.Machine.UID, req.IdempotencyKey, req.Generation, req.Metadata)
	p.creates++
	p.note = "created " + i.providerID
	return &driverapi.CreateMachineResponse{ProviderID: i.providerID, NodeName: i.node}, nil
}

// InitializeMachine initializes an instance.
func (p *scriptProvider) InitializeMachine(_ context.Context, req *driverapi.InitializeMachineRequest) (*driverapi.InitializeMachineResponse, error) {
	i := p.find(req.Machine, "")
	if i == nil {
		return nil, driverapi.Error(driverapi.NotFound, "no instance "+req.Machine.ProviderID)
	}
	if err := p.fault(driverapi.MethodInitialize); err != nil {
		return nil, err
	}
	i.initialized = true
	p.note = "initialized " + i.providerID
	return &driverapi.InitializeMachineResponse{ProviderID: i.providerID, NodeName: i.node}, nil
}

// GetMachineStatus reports an instance, Uninitialized (with the instance)
// until it was initialized.
func (p *scriptProvider) GetMachineStatus(_ context.Context, req *driverapi.GetMachineStatusRequest) (*driverapi.GetMachineStatusResponse, error) {
	if err := p.fault(driverapi.MethodGetStatus); err != nil {
		return nil, err
	}
	i := p.find(req.Machine, req.IdempotencyKey)
	if i == nil {
		return nil, driverapi.Error(driverapi.NotFound, "no instance for machine "+req.Machine.Name)
	}
	resp := &driverapi.GetMachineStatusResponse{ProviderID: i.providerID, NodeName: i.node, OwnerUID: i.owner,
		Generation: i.generation, Metadata: maps.Clone(i.metadata)}
	if !i.initialized {
		return resp, driverapi.Error(driverapi.Uninitialized, "instance "+i.providerID+" is not initialized")
	}
	return resp, nil
}

// DeleteMachine deletes an instance; NotFound when there is none.
func (p *scriptProvider) DeleteMachine(_ context.Context, req *driverapi.DeleteMachineRequest) (*driverapi.DeleteMachineResponse, error) {
	if err := p.fault(driverapi.MethodDelete); err != nil {
		return nil, err
	}
	i := p.find(req.Machine, req.IdempotencyKey)
	if i == nil {
		return nil, driverapi.Error(driverapi.NotFound, "no instance for machine "+req.Machine.Name)
	}
	p.instances = slices.DeleteFunc(p.instances, func(j *scriptInstance) bool { return j == i })
	p.note = "deleted " + i.providerID
	return &driverapi.DeleteMachineResponse{}, nil
}

// UpdateMachine brings an instance to the requested generation.
func (p *scriptProvider) UpdateMachine(_ context.Context, req *driverapi.UpdateMachineRequest) (*driverapi.UpdateMachineResponse, error) {
	i := p.find(req.Machine, "")
	if i == nil {
		return nil, driverapi.Error(driverapi.NotFound, "no instance "+req.Machine.ProviderID)
	}
	if err := p.fault(driverapi.MethodUpdate); err != nil {
		return nil, err
	}
	i.generation = req.Generation
	p.note = fmt.Sprintf("%s now at generation %d", i.providerID, i.generation)
	return &driverapi.UpdateMachineResponse{Generation: i.generation}, nil
}

// UpdateMetadata sets and removes metadata keys and records the owner,
// silently dropping the keys the script told it to drop.
func (p *scriptProvider) UpdateMetadata(_ context.Context, req *driverapi.UpdateMetadataRequest) (*driverapi.UpdateMetadataResponse, error) {
	i := p.find(req.Machine, "")
	if i == nil {
		return nil, driverapi.Error(driverapi.NotFound, "no instance "+req.Machine.ProviderID)
	}
	if err := p.fault(driverapi.MethodUpdateMetadata); err != nil {
		return nil, err
	}
	var drop []string
	if len(p.drop) > 0 {
		drop, p.drop = p.drop[0], p.drop[1:]
	}
	if i.metadata == nil {
		i.metadata = map[string]string{}
	}
	for k, v := range req.Set {
		if !slices.Contains(drop, k) {
			i.metadata[k] = v
		}
	}
	for _, k := range req.Remove {
		if !slices.Contains(drop, k) {
			delete(i.metadata, k)
		}
	}
	i.owner = req.Machine.UID
	p.note = "metadata now " + scriptMap(i.metadata)
	if len(drop) > 0 {
		p.note += " (silently dropped " + strings.Join(drop, ", ") + ")"
	}
	return &driverapi.UpdateMetadataResponse{}, nil
}

// String lists the instances, one a line.
func (p *scriptProvider) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "provider: %d instance(s), %d created by CreateMachine", len(p.instances), p.creates)
	for _, i := range p.instances {
		fmt.Fprintf(&b, "\n  %s machine=%s owner=%s key=%s node=%s", i.providerID, i.machine, i.owner, i.key, i.node)
		if i.initialized {
			b.WriteString(" initialized")
		} else {
			b.WriteString(" uninitialized")
		}
		if i.generation != 0 {
			fmt.Fprintf(&b, " generation=%d", i.generation)
		}
		if len(i.metadata) > 0 {
			b.WriteString(" metadata=" + scriptMap(i.metadata))
		}
	}
	return b.String()
}

// scriptMap renders a map as {k=v,...} in key order.
func scriptMap(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return "{" + strings.Join(parts, ",") + "}"
}

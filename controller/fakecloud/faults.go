package fakecloud

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/purelifecycle/machine/driverapi"
)

// ClassFaults are faults a class of the fake provider asks for in its
// provider spec, so a failure path can be tried with manifests alone:
//
//	providerSpec:
//	  faults:                      # method: the code it answers with
//	    DeleteMachine: Internal
//	    UpdateMachine: Unimplemented
//	  omitIdentity: true           # CreateMachine answers OK without providerID and node
//	  announceNode: node-elsewhere # CreateMachine answers with this node name
//
// A fault is a code's name (driverapi.Code.String; an unknown name is
// Internal), or Undecodable for an error that is not a status error. A
// method with a fault is not called; the others are, and CreateMachine's
// answer is changed afterwards (the instance is created all the same).
type ClassFaults struct {
	// Faults maps a method's name (driverapi.Method.String) to the name of
	// the code it answers with.
	Faults map[string]string `json:"faults"`
	// OmitIdentity makes CreateMachine answer without providerID and node
	// name.
	OmitIdentity bool `json:"omitIdentity"`
	// AnnounceNode, when set, is the node name CreateMachine answers with.
	AnnounceNode string `json:"announceNode"`
}

// Undecodable is the fault of an error that is not a status error.
const Undecodable = "Undecodable"

// WithClassFaults returns d answering as each call's class asks
// (ClassFaults); a class that asks nothing, or whose provider spec is not
// a JSON object, changes nothing.
func WithClassFaults(d driverapi.Driver) driverapi.Driver { return faulty{d} }

type faulty struct{ d driverapi.Driver }

// faultsOf reads the faults of a class.
func faultsOf(c driverapi.Class) ClassFaults {
	var f ClassFaults
	_ = json.Unmarshal(c.ProviderSpec, &f) // not an object: no faults
	return f
}

// fault returns the error the class asks method to answer with, or nil.
func fault(c driverapi.Class, m driverapi.Method) error {
	name, ok := faultsOf(c).Faults[m.String()]
	if !ok {
		return nil
	}
	if name == Undecodable {
		return errors.New("fault injected by class " + c.Name + ", not a status error")
	}
	code, err := driverapi.ParseCode(name)
	if err != nil {
		code = driverapi.Internal
	}
	return driverapi.Error(code, "fault injected by class "+c.Name)
}

// CreateMachine implements driverapi.Driver.
func (f faulty) CreateMachine(ctx context.Context, req *driverapi.CreateMachineRequest) (*driverapi.CreateMachineResponse, error) {
	if err := fault(req.Class, driverapi.MethodCreate); err != nil {
		return nil, err
	}
	resp, err := f.d.CreateMachine(ctx, req)
	if err != nil || resp == nil {
		return resp, err
	}
	cf := faultsOf(req.Class)
	if cf.OmitIdentity {
		resp = &driverapi.CreateMachineResponse{LastKnownState: resp.LastKnownState}
	}
	if cf.AnnounceNode != "" {
		r := *resp
		r.NodeName = cf.AnnounceNode
		resp = &r
	}
	return resp, nil
}

// InitializeMachine implements driverapi.Driver.
func (f faulty) InitializeMachine(ctx context.Context, req *driverapi.InitializeMachineRequest) (*driverapi.InitializeMachineResponse, error) {
	if err := fault(req.Class, driverapi.MethodInitialize); err != nil {
		return nil, err
	}
	return f.d.InitializeMachine(ctx, req)
}

// GetMachineStatus implements driverapi.Driver.
func (f faulty) GetMachineStatus(ctx context.Context, req *driverapi.GetMachineStatusRequest) (*driverapi.GetMachineStatusResponse, error) {
	if err := fault(req.Class, driverapi.MethodGetStatus); err != nil {
		return nil, err
	}
	return f.d.GetMachineStatus(ctx, req)
}

// DeleteMachine implements driverapi.Driver.
func (f faulty) DeleteMachine(ctx context.Context, req *driverapi.DeleteMachineRequest) (*driverapi.DeleteMachineResponse, error) {
	if err := fault(req.Class, driverapi.MethodDelete); err != nil {
		return nil, err
	}
	return f.d.DeleteMachine(ctx, req)
}

// ListMachines implements driverapi.Driver.
func (f faulty) ListMachines(ctx context.Context, req *driverapi.ListMachinesRequest) (*driverapi.ListMachinesResponse, error) {
	if err := fault(req.Class, driverapi.MethodList); err != nil {
		return nil, err
	}
	return f.d.ListMachines(ctx, req)
}

// GetVolumeIDs implements driverapi.Driver.
func (f faulty) GetVolumeIDs(ctx context.Context, req *driverapi.GetVolumeIDsRequest) (*driverapi.GetVolumeIDsResponse, error) {
	if err := fault(req.Class, driverapi.MethodGetVolumeIDs); err != nil {
		return nil, err
	}
	return f.d.GetVolumeIDs(ctx, req)
}

// UpdateMachine implements driverapi.Driver.
func (f faulty) UpdateMachine(ctx context.Context, req *driverapi.UpdateMachineRequest) (*driverapi.UpdateMachineResponse, error) {
	if err := fault(req.Class, driverapi.MethodUpdate); err != nil {
		return nil, err
	}
	return f.d.UpdateMachine(ctx, req)
}

// UpdateMetadata implements driverapi.Driver.
func (f faulty) UpdateMetadata(ctx context.Context, req *driverapi.UpdateMetadataRequest) (*driverapi.UpdateMetadataResponse, error) {
	if err := fault(req.Class, driverapi.MethodUpdateMetadata); err != nil {
		return nil, err
	}
	return f.d.UpdateMetadata(ctx, req)
}

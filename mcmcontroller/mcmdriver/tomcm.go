package mcmdriver

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/driver"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/codes"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/status"
	corev1 "k8s.io/api/core/v1"

	mcmadapter "github.com/purelifecycle/machine/adapters/mcm"
	"github.com/purelifecycle/machine/driverapi"
)

// ToMCM returns an MCM driver.Driver that calls d: MCM's requests become
// driverapi's (the machine's name, UID, spec.providerID and node label;
// the class's name and provider spec; the secret's data), the answers and
// errors go back the other way. MCM asks no idempotency key: a creation's
// key is the machine's UID, so MCM's repeated CreateMachine for one machine
// finds the instance the first made. It lets MCM's own controller run the
// project's providers. A nil d, or a nil request, is answered with MCM's
// InvalidArgument; a request without a machine is passed on with an empty
// MachineRef, for d to refuse.
func ToMCM(d driverapi.Driver) driver.Driver { return &mcmOf{d: d} }

// mcmOf is the MCM driver.Driver over a driverapi.Driver.
type mcmOf struct{ d driverapi.Driver }

// check returns the MCM error a call cannot be made for, given whether it
// came with a request, or nil.
func (t *mcmOf) check(hasRequest bool) error {
	switch {
	case t.d == nil:
		return status.Error(codes.InvalidArgument, "mcmdriver: no driver")
	case !hasRequest:
		return status.Error(codes.InvalidArgument, "mcmdriver: no request")
	}
	return nil
}

func ref(m *v1alpha1.Machine) driverapi.MachineRef {
	if m == nil {
		return driverapi.MachineRef{}
	}
	return driverapi.MachineRef{Name: m.Name, UID: string(m.UID), ProviderID: m.Spec.ProviderID,
		NodeName: m.Labels[v1alpha1.NodeLabelKey]}
}

func classOf(c *v1alpha1.MachineClass, s *corev1.Secret) driverapi.Class {
	var out driverapi.Class
	if c != nil {
		out.Name, out.ProviderSpec = c.Name, c.ProviderSpec.Raw
	}
	if s != nil {
		out.Secret = s.Data
	}
	return out
}

func (t *mcmOf) CreateMachine(ctx context.Context, req *driver.CreateMachineRequest) (*driver.CreateMachineResponse, error) {
	if err := t.check(req != nil); err != nil {
		return nil, err
	}
	r := ref(req.Machine)
	resp, err := t.d.CreateMachine(ctx, &driverapi.CreateMachineRequest{Machine: r, IdempotencyKey: r.UID,
		Class: classOf(req.MachineClass, req.Secret)})
	if resp == nil {
		if err != nil {
			return nil, errToMCM(err)
		}
		resp = &driverapi.CreateMachineResponse{} // MCM reads the response of every success
	}
	return &driver.CreateMachineResponse{ProviderID: resp.ProviderID, NodeName: resp.NodeName,
		LastKnownState: resp.LastKnownState, Addresses: mcmadapter.NodeAddresses(resp.Addresses)}, errToMCM(err)
}

func (t *mcmOf) InitializeMachine(ctx context.Context, req *driver.InitializeMachineRequest) (*driver.InitializeMachineResponse, error) {
	if err := t.check(req != nil); err != nil {
		return nil, err
	}
	resp, err := t.d.InitializeMachine(ctx, &driverapi.InitializeMachineRequest{Machine: ref(req.Machine),
		Class: classOf(req.MachineClass, req.Secret)})
	if resp == nil {
		if err != nil {
			return nil, errToMCM(err)
		}
		resp = &driverapi.InitializeMachineResponse{} // MCM reads the response of every success
	}
	return &driver.InitializeMachineResponse{ProviderID: resp.ProviderID, NodeName: resp.NodeName,
		Addresses: mcmadapter.NodeAddresses(resp.Addresses)}, errToMCM(err)
}

func (t *mcmOf) GetMachineStatus(ctx context.Context, req *driver.GetMachineStatusRequest) (*driver.GetMachineStatusResponse, error) {
	if err := t.check(req != nil); err != nil {
		return nil, err
	}
	r := ref(req.Machine)
	resp, err := t.d.GetMachineStatus(ctx, &driverapi.GetMachineStatusRequest{Machine: r, IdempotencyKey: r.UID,
		Class: classOf(req.MachineClass, req.Secret)})
	if resp == nil {
		if err != nil {
			return nil, errToMCM(err)
		}
		resp = &driverapi.GetMachineStatusResponse{} // MCM reads the response of every success
	}
	return &driver.GetMachineStatusResponse{ProviderID: resp.ProviderID, NodeName: resp.NodeName,
		Addresses: mcmadapter.NodeAddresses(resp.Addresses)}, errToMCM(err)
}

func (t *mcmOf) DeleteMachine(ctx context.Context, req *driver.DeleteMachineRequest) (*driver.DeleteMachineResponse, error) {
	if err := t.check(req != nil); err != nil {
		return nil, err
	}
	r := ref(req.Machine)
	var lks string
	if req.Machine != nil {
		lks = req.Machine.Status.LastKnownState
	}
	resp, err := t.d.DeleteMachine(ctx, &driverapi.DeleteMachineRequest{Machine: r, IdempotencyKey: r.UID,
		LastKnownState: lks, Class: classOf(req.MachineClass, req.Secret)})
	if resp == nil {
		if err != nil {
			return nil, errToMCM(err)
		}
		resp = &driverapi.DeleteMachineResponse{} // MCM reads the response of every success
	}
	return &driver.DeleteMachineResponse{LastKnownState: resp.LastKnownState}, errToMCM(err)
}

func (t *mcmOf) ListMachines(ctx context.Context, req *driver.ListMachinesRequest) (*driver.ListMachinesResponse, error) {
	if err := t.check(req != nil); err != nil {
		return nil, err
	}
	resp, err := t.d.ListMachines(ctx, &driverapi.ListMachinesRequest{Class: classOf(req.MachineClass, req.Secret)})
	if resp == nil {
		if err != nil {
			return nil, errToMCM(err)
		}
		resp = &driverapi.ListMachinesResponse{} // MCM reads the response of every success
	}
	list := make(map[string]string, len(resp.Instances))
	for _, i := range resp.Instances {
		list[i.ProviderID] = i.MachineName
	}
	return &driver.ListMachinesResponse{MachineList: list}, errToMCM(err)
}

func (t *mcmOf) GetVolumeIDs(ctx context.Context, req *driver.GetVolumeIDsRequest) (*driver.GetVolumeIDsResponse, error) {
	if err := t.check(req != nil); err != nil {
		return nil, err
	}
	vols := make([]driverapi.Volume, 0, len(req.PVSpecs))
	for _, s := range req.PVSpecs {
		if s == nil {
			continue
		}
		if s.CSI != nil {
			vols = append(vols, driverapi.Volume{Driver: s.CSI.Driver, Handle: s.CSI.VolumeHandle})
			continue
		}
		spec, err := json.Marshal(s)
		if err != nil {
			return nil, errToMCM(driverapi.Wrap(driverapi.InvalidArgument, "a volume spec", err))
		}
		vols = append(vols, driverapi.Volume{Spec: spec})
	}
	resp, err := t.d.GetVolumeIDs(ctx, &driverapi.GetVolumeIDsRequest{Volumes: vols})
	if resp == nil {
		if err != nil {
			return nil, errToMCM(err)
		}
		resp = &driverapi.GetVolumeIDsResponse{} // MCM reads the response of every success
	}
	return &driver.GetVolumeIDsResponse{VolumeIDs: slices.Clone(resp.VolumeIDs)}, errToMCM(err)
}

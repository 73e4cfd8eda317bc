package mcmdriver

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	mcmadapter "github.com/purelifecycle/machine/adapters/mcm"
	"github.com/purelifecycle/machine/driverapi"
)

// Objects are the MCM objects of the calls of one pass, as the controller
// read them. Each may be nil: it is then built from the call's data.
// Requests get copies; the objects are not changed.
type Objects struct {
	// Machine is the machine the calls are about.
	Machine *v1alpha1.Machine
	// Class is its MachineClass.
	Class *v1alpha1.MachineClass
	// Secret is the class's Secret; its data is replaced by the call's
	// Class.Secret, which holds the user data with the machine's bootstrap
	// token and name filled in.
	Secret *corev1.Secret
}

// For returns a driverapi.Driver that calls provider, an MCM provider,
// with requests built from objs and each call's data (see the package doc
// for what maps to what). The controller makes one per pass, with the
// objects it read for that pass. A nil provider gives a driver whose every
// call answers InvalidArgument.
func For(provider driver.Driver, objs Objects) driverapi.Driver {
	return &mcm{provider: provider, objs: objs}
}

// mcm is the driverapi.Driver over an MCM provider.
type mcm struct {
	driverapi.UnimplementedDriver
	provider driver.Driver
	objs     Objects
}

// errNoProvider and errNoRequest are For's answers to a call it cannot
// make.
var (
	errNoProvider = driverapi.Error(driverapi.InvalidArgument, "mcmdriver: no MCM provider")
	errNoRequest  = driverapi.Error(driverapi.InvalidArgument, "mcmdriver: no request")
)

// check returns the error a call cannot be made for, given whether it came
// with a request, or nil.
func (d *mcm) check(hasRequest bool) error {
	switch {
	case d.provider == nil:
		return errNoProvider
	case !hasRequest:
		return errNoRequest
	}
	return nil
}

func (d *mcm) CreateMachine(ctx context.Context, req *driverapi.CreateMachineRequest) (*driverapi.CreateMachineResponse, error) {
	if err := d.check(req != nil); err != nil {
		return nil, err
	}
	m, c, s := d.objects(req.Machine, req.Class)
	resp, err := d.provider.CreateMachine(ctx, &driver.CreateMachineRequest{Machine: m, MachineClass: c, Secret: s})
	if resp == nil {
		return nil, fromMCM(err)
	}
	return &driverapi.CreateMachineResponse{ProviderID: resp.ProviderID, NodeName: resp.NodeName,
		LastKnownState: resp.LastKnownState, Addresses: mcmadapter.AddressesFrom(resp.Addresses)}, fromMCM(err)
}

func (d *mcm) InitializeMachine(ctx context.Context, req *driverapi.InitializeMachineRequest) (*driverapi.InitializeMachineResponse, error) {
	if err := d.check(req != nil); err != nil {
		return nil, err
	}
	m, c, s := d.objects(req.Machine, req.Class)
	resp, err := d.provider.InitializeMachine(ctx, &driver.InitializeMachineRequest{Machine: m, MachineClass: c, Secret: s})
	if resp == nil {
		return nil, fromMCM(err)
	}
	return &driverapi.InitializeMachineResponse{ProviderID: resp.ProviderID, NodeName: resp.NodeName,
		Addresses: mcmadapter.AddressesFrom(resp.Addresses)}, fromMCM(err)
}

func (d *mcm) GetMachineStatus(ctx context.Context, req *driverapi.GetMachineStatusRequest) (*driverapi.GetMachineStatusResponse, error) {
	if err := d.check(req != nil); err != nil {
		return nil, err
	}
	m, c, s := d.objects(req.Machine, req.Class)
	resp, err := d.provider.GetMachineStatus(ctx, &driver.GetMachineStatusRequest{Machine: m, MachineClass: c, Secret: s})
	if resp == nil {
		return nil, fromMCM(err)
	}
	return &driverapi.GetMachineStatusResponse{ProviderID: resp.ProviderID, NodeName: resp.NodeName,
		Addresses: mcmadapter.AddressesFrom(resp.Addresses)}, fromMCM(err)
}

func (d *mcm) DeleteMachine(ctx context.Context, req *driverapi.DeleteMachineRequest) (*driverapi.DeleteMachineResponse, error) {
	if err := d.check(req != nil); err != nil {
		return nil, err
	}
	m, c, s := d.objects(req.Machine, req.Class)
	if req.LastKnownState != "" {
		// MCM hands the provider the state its last answer left.
		m.Status.LastKnownState = req.LastKnownState
	}
	resp, err := d.provider.DeleteMachine(ctx, &driver.DeleteMachineRequest{Machine: m, MachineClass: c, Secret: s})
	if resp == nil {
		return nil, fromMCM(err)
	}
	return &driverapi.DeleteMachineResponse{LastKnownState: resp.LastKnownState}, fromMCM(err)
}

func (d *mcm) ListMachines(ctx context.Context, req *driverapi.ListMachinesRequest) (*driverapi.ListMachinesResponse, error) {
	if err := d.check(req != nil); err != nil {
		return nil, err
	}
	c, s := d.class(req.Class), d.secret(req.Class)
	resp, err := d.provider.ListMachines(ctx, &driver.ListMachinesRequest{MachineClass: c, Secret: s})
	if resp == nil {
		return nil, fromMCM(err)
	}
	out := &driverapi.ListMachinesResponse{Instances: make([]driverapi.Instance, 0, len(resp.MachineList))}
	for _, pid := range slices.Sorted(maps.Keys(resp.MachineList)) {
		out.Instances = append(out.Instances, driverapi.Instance{ProviderID: pid, MachineName: resp.MachineList[pid]})
	}
	return out, fromMCM(err)
}

func (d *mcm) GetVolumeIDs(ctx context.Context, req *driverapi.GetVolumeIDsRequest) (*driverapi.GetVolumeIDsResponse, error) {
	if err := d.check(req != nil); err != nil {
		return nil, err
	}
	specs := make([]*corev1.PersistentVolumeSpec, 0, len(req.Volumes))
	for _, v := range req.Volumes {
		spec, err := volumeSpec(v)
		if err != nil {
			return nil, driverapi.Wrap(driverapi.InvalidArgument, "volume "+v.Name, err)
		}
		specs = append(specs, spec)
	}
	resp, err := d.provider.GetVolumeIDs(ctx, &driver.GetVolumeIDsRequest{PVSpecs: specs})
	if resp == nil {
		return nil, fromMCM(err)
	}
	return &driverapi.GetVolumeIDsResponse{VolumeIDs: slices.Clone(resp.VolumeIDs)}, fromMCM(err)
}

// objects returns the MCM objects of a call about ref with class.
func (d *mcm) objects(ref driverapi.MachineRef, class driverapi.Class) (*v1alpha1.Machine, *v1alpha1.MachineClass, *corev1.Secret) {
	return d.machine(ref), d.class(class), d.secret(class)
}

// machine returns a copy of the pass's machine when ref is about it, else a
// machine built from ref, with ref's instance and node.
func (d *mcm) machine(ref driverapi.MachineRef) *v1alpha1.Machine {
	var m *v1alpha1.Machine
	if o := d.objs.Machine; o != nil && o.Name == ref.Name && string(o.UID) == ref.UID {
		m = o.DeepCopy()
	} else {
		m = &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: ref.Name, UID: types.UID(ref.UID)}}
	}
	if ref.ProviderID != "" {
		m.Spec.ProviderID = ref.ProviderID
	}
	if ref.NodeName != "" {
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		m.Labels[v1alpha1.NodeLabelKey] = ref.NodeName
	}
	return m
}

// class returns a copy of the pass's MachineClass with the call's provider
// spec, or one built from the call.
func (d *mcm) class(c driverapi.Class) *v1alpha1.MachineClass {
	var mc *v1alpha1.MachineClass
	if o := d.objs.Class; o != nil {
		mc = o.DeepCopy()
	} else {
		mc = &v1alpha1.MachineClass{ObjectMeta: metav1.ObjectMeta{Name: c.Name}}
	}
	if c.ProviderSpec != nil {
		mc.ProviderSpec.Raw = slices.Clone(c.ProviderSpec)
	}
	return mc
}

// secret returns a copy of the pass's Secret holding the call's data.
func (d *mcm) secret(c driverapi.Class) *corev1.Secret {
	var s *corev1.Secret
	if o := d.objs.Secret; o != nil {
		s = o.DeepCopy()
	} else {
		s = &corev1.Secret{}
	}
	if c.Secret != nil {
		s.Data = make(map[string][]byte, len(c.Secret))
		for k, v := range c.Secret {
			s.Data[k] = slices.Clone(v)
		}
	}
	return s
}

// volumeSpec returns the PersistentVolumeSpec of v: its serialized spec
// when it has one, else a CSI source of its driver and handle.
func volumeSpec(v driverapi.Volume) (*corev1.PersistentVolumeSpec, error) {
	spec := &corev1.PersistentVolumeSpec{}
	if len(v.Spec) > 0 {
		if err := json.Unmarshal(v.Spec, spec); err != nil {
			return nil, fmt.Errorf("its spec is not a PersistentVolumeSpec: %w", err)
		}
		return spec, nil
	}
	spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: v.Driver, VolumeHandle: v.Handle}
	return spec, nil
}

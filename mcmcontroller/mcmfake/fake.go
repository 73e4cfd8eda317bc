// Package mcmfake is a scriptable in-memory cloud of many machines that
// implements MCM's driver.Driver (machine-controller-manager v0.62.1), for
// tests of code that calls MCM providers. MCM's own fake driver holds a
// single VM; a fleet needs many.
//
// A [Driver] keeps instances keyed by providerID, each made for one machine
// name and with a node name of its own. It answers as a well-behaved MCM
// provider may:
//
//   - CreateMachine is idempotent per machine name: while an instance of the
//     name lives, another CreateMachine returns it instead of making one;
//   - GetMachineStatus finds the instance by the machine's spec.providerID,
//     or, when that is empty, by the machine's name; it answers NotFound
//     when there is none, and Uninitialized (with the instance) while an
//     instance made with NeedsInit has not been initialized;
//   - InitializeMachine answers Unimplemented unless NeedsInit is set, as
//     most of MCM's providers do; with it, it initializes the instance;
//   - DeleteMachine deletes the instance of the providerID, or every
//     instance of the machine's name when the providerID is empty; deleting
//     what is already gone succeeds;
//   - ListMachines maps the providerIDs of the live instances of the
//     request's class (all of them when the request names no class) to
//     their machine names;
//   - GetVolumeIDs returns the handles of the CSI volumes of [CSIDriver] and
//     leaves out every other volume.
//
// A test scripts answers per method and per machine: [Driver.FailNext]
// queues status codes, [Driver.SetHook] installs a function that may answer
// any call instead. Every call is recorded ([Driver.Calls]). A request
// without what a method must read (nil, or without its machine) is answered
// with InvalidArgument, and a call with a canceled context with Canceled or
// DeadlineExceeded. A Driver is safe for concurrent use, as MCM's controller
// calls its provider from several workers.
package mcmfake

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/gardener/machine-controller-manager/pkg/util/provider/driver"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/codes"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/status"
	corev1 "k8s.io/api/core/v1"
)

// CSIDriver is the name of the CSI driver whose volumes the fake manages:
// GetVolumeIDs returns their handles.
const CSIDriver = "disk.csi.mcmfake.example"

// Instance is one instance of the fake cloud.
type Instance struct {
	// ProviderID identifies the instance: the driver's IDPrefix and the
	// instance's number (1 for the first made).
	ProviderID string
	// NodeName is the node the instance registers: the driver's NodePrefix
	// and the instance's number.
	NodeName string
	// MachineName and MachineUID are the name and UID of the machine the
	// instance was made for.
	MachineName, MachineUID string
	// Class is the name of the MachineClass it was made with, "" without
	// one.
	Class string
	// Addresses reach the instance: one InternalIP, 10.0.x.y by its number.
	Addresses []corev1.NodeAddress
	// Initialized reports that the instance needs no InitializeMachine, or
	// had it.
	Initialized bool
}

// clone returns a copy of i sharing nothing with it.
func (i *Instance) clone() Instance {
	c := *i
	c.Addresses = append([]corev1.NodeAddress(nil), i.Addresses...)
	return c
}

// Driver is the fake cloud, an MCM driver.Driver. Make it with [New]; set
// its fields before the first call. Its methods are safe for concurrent
// use.
type Driver struct {
	// IDPrefix and NodePrefix start the providerIDs and node names of new
	// instances, which end in the instance's number.
	IDPrefix, NodePrefix string
	// NeedsInit makes new instances uninitialized: GetMachineStatus answers
	// Uninitialized until InitializeMachine ran. Without it,
	// InitializeMachine answers Unimplemented.
	NeedsInit bool

	mu        sync.Mutex
	made      int                  // instances ever made
	instances map[string]*Instance // live instances by providerID
	order     []string             // providerIDs in the order made, live or not
	scripts   map[target][]codes.Code
	hooks     map[Method]Hook
	calls     []Call
	// withheld counts, by machine name, the next CreateMachine answers
	// that leave the node name out (WithholdNodeName).
	withheld map[string]int
}

// New returns an empty cloud whose providerIDs are "fake:///zone-a/i-N" and
// node names "node-N".
func New() *Driver {
	return &Driver{IDPrefix: "fake:///zone-a/i-", NodePrefix: "node-",
		instances: map[string]*Instance{}, scripts: map[target][]codes.Code{}, hooks: map[Method]Hook{}}
}

// init makes the maps of a Driver that was not made by New. It is called
// with mu held.
func (d *Driver) init() {
	if d.instances == nil {
		d.instances = map[string]*Instance{}
		d.scripts = map[target][]codes.Code{}
		d.hooks = map[Method]Hook{}
	}
}

// Add makes an instance for the named machine outside any CreateMachine
// (an instance left behind by an earlier controller, or an orphan) and
// returns it. It is not recorded as a call.
func (d *Driver) Add(machineName, machineUID, class string) Instance {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.init()
	return d.make(machineName, machineUID, class).clone()
}

// make makes a new live instance. It is called with mu held.
func (d *Driver) make(name, uid, class string) *Instance {
	d.made++
	n := strconv.Itoa(d.made)
	i := &Instance{ProviderID: d.IDPrefix + n, NodeName: d.NodePrefix + n, MachineName: name,
		MachineUID: uid, Class: class, Initialized: !d.NeedsInit,
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP,
			Address: fmt.Sprintf("10.0.%d.%d", d.made/250%250, d.made%250+1)}}}
	d.instances[i.ProviderID] = i
	d.order = append(d.order, i.ProviderID)
	return i
}

// Vanish deletes the instance of providerID as the cloud would on its own
// (a spot instance reclaimed, a VM deleted by hand), without a call, and
// reports whether it lived.
func (d *Driver) Vanish(providerID string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.instances[providerID]
	delete(d.instances, providerID)
	return ok
}

// Instances returns copies of the live instances, in the order they were
// made.
func (d *Driver) Instances() []Instance {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Instance, 0, len(d.instances))
	for _, pid := range d.order {
		if i, ok := d.instances[pid]; ok {
			out = append(out, i.clone())
		}
	}
	return out
}

// Instance returns a copy of the live instance of providerID.
func (d *Driver) Instance(providerID string) (Instance, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	i, ok := d.instances[providerID]
	if !ok {
		return Instance{}, false
	}
	return i.clone(), true
}

// byName returns the live instances of the machine name, in the order they
// were made. It is called with mu held.
func (d *Driver) byName(name string) []*Instance {
	var out []*Instance
	for _, pid := range d.order {
		if i, ok := d.instances[pid]; ok && i.MachineName == name {
			out = append(out, i)
		}
	}
	return out
}

// find returns the live instance a request about a machine with this
// providerID and name is about: by providerID when it is set, else the
// first made of the name. It is called with mu held.
func (d *Driver) find(providerID, name string) *Instance {
	if providerID != "" {
		return d.instances[providerID]
	}
	if is := d.byName(name); len(is) > 0 {
		return is[0]
	}
	return nil
}

// notFound is the answer about a machine without an instance.
func notFound(providerID, name string) error {
	if providerID != "" {
		return status.Error(codes.NotFound, "mcmfake: no instance "+providerID)
	}
	return status.Error(codes.NotFound, "mcmfake: no instance of machine "+strconv.Quote(name))
}

// Driver implements MCM's driver.Driver.
var _ driver.Driver = (*Driver)(nil)

// CreateMachine returns the live instance of the machine's name, or makes
// one.
func (d *Driver) CreateMachine(ctx context.Context, req *driver.CreateMachineRequest) (*driver.CreateMachineResponse, error) {
	var c Call
	if req != nil {
		c = callAbout(MethodCreate, req.Machine)
	}
	var resp *driver.CreateMachineResponse
	err := d.serve(ctx, &c, req == nil || req.Machine == nil || req.Machine.Name == "", func() (string, error) {
		i := d.find("", c.Machine)
		if i == nil {
			i = d.make(c.Machine, string(req.Machine.UID), className(req.MachineClass))
		}
		resp = &driver.CreateMachineResponse{ProviderID: i.ProviderID, NodeName: i.NodeName,
			LastKnownState: "created " + i.ProviderID, Addresses: i.clone().Addresses}
		if d.withheld[c.Machine] > 0 {
			d.withheld[c.Machine]--
			resp.NodeName = ""
		}
		return i.ProviderID, nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// InitializeMachine answers Unimplemented, unless NeedsInit is set: then it
// initializes the machine's instance.
func (d *Driver) InitializeMachine(ctx context.Context, req *driver.InitializeMachineRequest) (*driver.InitializeMachineResponse, error) {
	var c Call
	if req != nil {
		c = callAbout(MethodInitialize, req.Machine)
	}
	var resp *driver.InitializeMachineResponse
	err := d.serve(ctx, &c, req == nil || req.Machine == nil, func() (string, error) {
		if !d.NeedsInit {
			return "", status.Error(codes.Unimplemented, "mcmfake: instances need no initialization")
		}
		i := d.find(c.ProviderID, c.Machine)
		if i == nil {
			return "", notFound(c.ProviderID, c.Machine)
		}
		i.Initialized = true
		resp = &driver.InitializeMachineResponse{ProviderID: i.ProviderID, NodeName: i.NodeName, Addresses: i.clone().Addresses}
		return i.ProviderID, nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// GetMachineStatus reports the machine's instance, found by providerID or
// by name; Uninitialized comes with the response.
func (d *Driver) GetMachineStatus(ctx context.Context, req *driver.GetMachineStatusRequest) (*driver.GetMachineStatusResponse, error) {
	var c Call
	if req != nil {
		c = callAbout(MethodGetStatus, req.Machine)
	}
	var resp *driver.GetMachineStatusResponse
	err := d.serve(ctx, &c, req == nil || req.Machine == nil, func() (string, error) {
		i := d.find(c.ProviderID, c.Machine)
		if i == nil {
			return "", notFound(c.ProviderID, c.Machine)
		}
		resp = &driver.GetMachineStatusResponse{ProviderID: i.ProviderID, NodeName: i.NodeName, Addresses: i.clone().Addresses}
		if !i.Initialized {
			return i.ProviderID, status.Error(codes.Uninitialized, "mcmfake: instance "+i.ProviderID+" is not initialized")
		}
		return i.ProviderID, nil
	})
	// resp is set only when the instance was found: it comes with
	// Uninitialized, as the lifecycle needs, and with no other error.
	return resp, err
}

// DeleteMachine deletes the instance of the machine's providerID, or every
// instance of its name when the providerID is empty; what is gone already
// is deleted.
func (d *Driver) DeleteMachine(ctx context.Context, req *driver.DeleteMachineRequest) (*driver.DeleteMachineResponse, error) {
	var c Call
	if req != nil {
		c = callAbout(MethodDelete, req.Machine)
	}
	var resp *driver.DeleteMachineResponse
	err := d.serve(ctx, &c, req == nil || req.Machine == nil, func() (string, error) {
		var gone []*Instance
		if c.ProviderID != "" {
			if i, ok := d.instances[c.ProviderID]; ok {
				gone = append(gone, i)
			}
		} else {
			gone = d.byName(c.Machine)
		}
		found := ""
		for _, i := range gone {
			delete(d.instances, i.ProviderID)
			found = i.ProviderID
		}
		resp = &driver.DeleteMachineResponse{LastKnownState: fmt.Sprintf("deleted %d instance(s)", len(gone))}
		return found, nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// ListMachines maps the providerIDs of the class's live instances to their
// machine names; without a class name, of every live instance.
func (d *Driver) ListMachines(ctx context.Context, req *driver.ListMachinesRequest) (*driver.ListMachinesResponse, error) {
	c := Call{Method: MethodList}
	var resp *driver.ListMachinesResponse
	err := d.serve(ctx, &c, req == nil, func() (string, error) {
		class := className(req.MachineClass)
		list := map[string]string{}
		for pid, i := range d.instances {
			if class == "" || i.Class == class {
				list[pid] = i.MachineName
			}
		}
		resp = &driver.ListMachinesResponse{MachineList: list}
		return "", nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// GetVolumeIDs returns the handles of the CSI volumes of CSIDriver among
// the specs, in their order; other volumes and nil specs are left out.
func (d *Driver) GetVolumeIDs(ctx context.Context, req *driver.GetVolumeIDsRequest) (*driver.GetVolumeIDsResponse, error) {
	c := Call{Method: MethodGetVolumeIDs}
	var resp *driver.GetVolumeIDsResponse
	err := d.serve(ctx, &c, req == nil, func() (string, error) {
		ids := []string{}
		for _, s := range req.PVSpecs {
			if s != nil && s.CSI != nil && s.CSI.Driver == CSIDriver {
				ids = append(ids, s.CSI.VolumeHandle)
			}
		}
		resp = &driver.GetVolumeIDsResponse{VolumeIDs: ids}
		return "", nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

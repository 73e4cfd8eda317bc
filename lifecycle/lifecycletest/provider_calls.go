package lifecycletest

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/purelifecycle/machine/driverapi"
)

// key is the idempotency key of a call: the string a request carries or,
// for a driverapi.Call, its machine UID and attempt, which are compared
// with an instance's key without building the string.
type key struct {
	s       string
	uid     string
	attempt uint32
	call    bool
}

// matches reports whether an instance made with key ik was made by a call
// with this key. The empty key matches nothing.
func (k *key) matches(ik string) bool {
	if !k.call {
		return k.s != "" && ik == k.s
	}
	// driverapi.Call.IdempotencyKey: the UID, "/", the decimal attempt.
	n := len(k.uid)
	if n == 0 || len(ik) < n+2 || ik[:n] != k.uid || ik[n] != '/' {
		return false
	}
	v := uint64(0)
	for _, c := range []byte(ik[n+1:]) {
		if c < '0' || c > '9' || v > 1<<32 {
			return false
		}
		v = v*10 + uint64(c-'0')
	}
	return v == uint64(k.attempt)
}

// Invoke carries out call c and returns its answer as plain data: the
// Result driverapi.Invoke(ctx, p, *c, class) would return, built without a
// request, a response or an error, so that a call that makes no instance
// and meets no fault without a Text allocates nothing. The maps of the
// Result are the provider's, read-only; the Instances of a ListMachines
// answer are a new slice.
func (p *Provider) Invoke(c *driverapi.Call) driverapi.Result {
	return p.call(c, key{uid: c.Machine.UID, attempt: c.Attempt, call: true})
}

// call carries out c, whose idempotency key is k, with its fault.
func (p *Provider) call(c *driverapi.Call, k key) driverapi.Result {
	m := c.Method
	if !m.Valid() {
		return driverapi.Result{Method: m, Code: driverapi.InvalidArgument, Message: "lifecycletest: no such method " + m.String()}
	}
	p.Calls[m&15]++
	f := p.fault(m)
	if f.failing() && !f.After {
		return f.result(m)
	}
	r := p.carryOut(c, &k)
	if f.failing() {
		return f.result(m)
	}
	if f.NoIdentity && r.OK() {
		r.ProviderID, r.NodeName = "", ""
	}
	return r
}

// carryOut carries out c without faults.
func (p *Provider) carryOut(c *driverapi.Call, k *key) driverapi.Result {
	m := c.Method
	switch m {
	case driverapi.MethodCreate:
		return p.create(c, k)
	case driverapi.MethodGetStatus:
		return p.status(c, k)
	case driverapi.MethodList:
		return driverapi.Result{Method: m, Instances: p.List(nil)}
	case driverapi.MethodGetVolumeIDs:
		f := Fault{Code: driverapi.Unimplemented, Message: "lifecycletest: the provider maps no volumes"}
		return f.result(m)
	case driverapi.MethodDelete:
	default:
		k = nil // InitializeMachine, UpdateMachine and UpdateMetadata carry no key
	}
	n := p.find(&c.Machine, k, false)
	if n < 0 {
		return notFound(m, &c.Machine)
	}
	i := &p.insts[n]
	switch m {
	case driverapi.MethodInitialize:
		i.Initialized = true
		if p.Log != nil {
			p.Log("initialized " + i.ProviderID)
		}
		if p.OnInitialize != nil {
			p.OnInitialize(n)
			i = &p.insts[n]
		}
		return driverapi.Result{Method: m, ProviderID: i.ProviderID, NodeName: i.NodeName}
	case driverapi.MethodDelete:
		i.Deleted = true
		if p.Log != nil {
			p.Log("deleted " + i.ProviderID)
		}
		if p.OnDelete != nil {
			p.OnDelete(n)
		}
		return driverapi.Result{Method: m}
	case driverapi.MethodUpdate:
		i.Generation = c.Generation
		if p.Log != nil {
			p.Log(i.ProviderID + " now at generation " + strconv.FormatInt(i.Generation, 10))
		}
		return driverapi.Result{Method: m, Generation: i.Generation}
	}
	p.patch(i, c)
	return driverapi.Result{Method: m}
}

// find returns the index of the instance a call about ref with key k (nil:
// none) is about: by providerID; else among the live instances of the
// name, newest first, the one made with key k, then one made for or tagged
// with ref's UID, then, when byName, any; -1 when none is.
func (p *Provider) find(ref *driverapi.MachineRef, k *key, byName bool) int {
	if ref.ProviderID != "" {
		n := p.Lookup(ref.ProviderID)
		if n < 0 || p.insts[n].Deleted {
			return -1
		}
		return n
	}
	byUID, named := -1, -1
	for n := p.Newest(ref.Name); n >= 0; n = int(p.insts[n].older) {
		i := &p.insts[n]
		if i.Deleted {
			continue
		}
		if k != nil && k.matches(i.Key) {
			return n
		}
		if byUID < 0 && ref.UID != "" && (i.CreatorUID == ref.UID || i.OwnerUID == ref.UID) {
			byUID = n
		}
		if named < 0 {
			named = n
		}
	}
	if byUID >= 0 || !byName {
		return byUID
	}
	return named
}

// Find returns the index of the instance call c is about, as the provider
// finds it when it carries c out, and -1 when there is none.
func (p *Provider) Find(c *driverapi.Call) int {
	switch c.Method {
	case driverapi.MethodGetStatus, driverapi.MethodDelete:
		k := key{uid: c.Machine.UID, attempt: c.Attempt, call: true}
		return p.find(&c.Machine, &k, c.Method == driverapi.MethodGetStatus)
	}
	return p.find(&c.Machine, nil, false)
}

// create is CreateMachine: the live instance of the name made with the
// same key, else a new one.
func (p *Provider) create(c *driverapi.Call, k *key) driverapi.Result {
	for n := p.Newest(c.Machine.Name); n >= 0; n = int(p.insts[n].older) {
		if i := &p.insts[n]; !i.Deleted && k.matches(i.Key) {
			if p.Log != nil {
				p.Log("same key " + i.Key + ": returned the existing " + i.ProviderID)
			}
			return driverapi.Result{Method: c.Method, ProviderID: i.ProviderID, NodeName: i.NodeName}
		}
	}
	ik := k.s
	if k.call {
		ik = c.IdempotencyKey()
	}
	p.Created++
	n := p.add(Instance{MachineName: c.Machine.Name, CreatorUID: c.Machine.UID, OwnerUID: c.Machine.UID, Key: ik,
		Generation: c.Generation, Metadata: maps.Clone(c.Metadata)})
	i := &p.insts[n]
	if p.Log != nil {
		p.Log("created " + i.ProviderID)
	}
	return driverapi.Result{Method: c.Method, ProviderID: i.ProviderID, NodeName: i.NodeName}
}

// status is GetMachineStatus.
func (p *Provider) status(c *driverapi.Call, k *key) driverapi.Result {
	n := p.find(&c.Machine, k, true)
	if n < 0 {
		return notFound(c.Method, &c.Machine)
	}
	i := &p.insts[n]
	r := driverapi.Result{Method: c.Method, ProviderID: i.ProviderID, NodeName: i.NodeName, OwnerUID: i.OwnerUID,
		Generation: i.Generation, Metadata: i.Metadata}
	if !i.Initialized {
		r.Code, r.Message = driverapi.Uninitialized, "instance "+i.ProviderID+" is not initialized"
		r.Text = (&driverapi.StatusError{Code: r.Code, Message: r.Message}).Error()
	}
	return r
}

// patch is UpdateMetadata: the keys to set in sorted order, then those to
// remove, then the owner tag, each change dropped silently when a scripted
// drop or the Drop hook says so. The instance gets a new map when its
// metadata changes.
func (p *Provider) patch(i *Instance, c *driverapi.Call) {
	scripted := p.nextDrops()
	var dropped []string
	drop := func(k string) bool {
		if slices.Contains(scripted, k) || p.Drop != nil && p.Drop(k) {
			if p.Log != nil {
				dropped = append(dropped, k)
			}
			return true
		}
		return false
	}
	md, own := i.Metadata, false
	write := func() {
		if !own {
			md, own = maps.Clone(md), true
			if md == nil {
				md = map[string]string{}
			}
		}
	}
	keys := p.keys[:0]
	for k := range c.Metadata {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	p.keys = keys
	for _, k := range keys {
		if v, ok := md[k]; !drop(k) && (!ok || v != c.Metadata[k]) {
			write()
			md[k] = c.Metadata[k]
		}
	}
	for _, k := range c.Remove {
		if _, ok := md[k]; !drop(k) && ok {
			write()
			delete(md, k)
		}
	}
	if !drop("owner") {
		i.OwnerUID = c.Machine.UID
	}
	i.Metadata = md
	if p.Log != nil {
		note := "metadata now " + mapString(md)
		if len(dropped) > 0 {
			note += " (silently dropped " + strings.Join(dropped, ", ") + ")"
		}
		p.Log(note)
	}
}

// CreateMachine implements driverapi.Driver.
func (p *Provider) CreateMachine(_ context.Context, req *driverapi.CreateMachineRequest) (*driverapi.CreateMachineResponse, error) {
	r := p.call(&driverapi.Call{Method: driverapi.MethodCreate, Machine: req.Machine, Generation: req.Generation,
		Metadata: req.Metadata}, key{s: req.IdempotencyKey})
	if !r.OK() {
		return nil, r.Err()
	}
	return &driverapi.CreateMachineResponse{ProviderID: r.ProviderID, NodeName: r.NodeName}, nil
}

// InitializeMachine implements driverapi.Driver.
func (p *Provider) InitializeMachine(_ context.Context, req *driverapi.InitializeMachineRequest) (*driverapi.InitializeMachineResponse, error) {
	r := p.call(&driverapi.Call{Method: driverapi.MethodInitialize, Machine: req.Machine}, key{})
	if !r.OK() {
		return nil, r.Err()
	}
	return &driverapi.InitializeMachineResponse{ProviderID: r.ProviderID, NodeName: r.NodeName}, nil
}

// GetMachineStatus implements driverapi.Driver. It answers Uninitialized
// with the instance's status; the response's metadata is a copy.
func (p *Provider) GetMachineStatus(_ context.Context, req *driverapi.GetMachineStatusRequest) (*driverapi.GetMachineStatusResponse, error) {
	r := p.call(&driverapi.Call{Method: driverapi.MethodGetStatus, Machine: req.Machine}, key{s: req.IdempotencyKey})
	if !r.OK() && r.Code != driverapi.Uninitialized || r.Undecodable {
		return nil, r.Err()
	}
	resp := &driverapi.GetMachineStatusResponse{ProviderID: r.ProviderID, NodeName: r.NodeName, OwnerUID: r.OwnerUID,
		Generation: r.Generation, Metadata: maps.Clone(r.Metadata)}
	return resp, r.Err()
}

// DeleteMachine implements driverapi.Driver.
func (p *Provider) DeleteMachine(_ context.Context, req *driverapi.DeleteMachineRequest) (*driverapi.DeleteMachineResponse, error) {
	r := p.call(&driverapi.Call{Method: driverapi.MethodDelete, Machine: req.Machine}, key{s: req.IdempotencyKey})
	if !r.OK() {
		return nil, r.Err()
	}
	return &driverapi.DeleteMachineResponse{}, nil
}

// ListMachines implements driverapi.Driver.
func (p *Provider) ListMachines(context.Context, *driverapi.ListMachinesRequest) (*driverapi.ListMachinesResponse, error) {
	r := p.call(&driverapi.Call{Method: driverapi.MethodList}, key{})
	if !r.OK() {
		return nil, r.Err()
	}
	return &driverapi.ListMachinesResponse{Instances: r.Instances}, nil
}

// UpdateMachine implements driverapi.Driver.
func (p *Provider) UpdateMachine(_ context.Context, req *driverapi.UpdateMachineRequest) (*driverapi.UpdateMachineResponse, error) {
	r := p.call(&driverapi.Call{Method: driverapi.MethodUpdate, Machine: req.Machine, Generation: req.Generation}, key{})
	if !r.OK() {
		return nil, r.Err()
	}
	return &driverapi.UpdateMachineResponse{Generation: r.Generation}, nil
}

// UpdateMetadata implements driverapi.Driver.
func (p *Provider) UpdateMetadata(_ context.Context, req *driverapi.UpdateMetadataRequest) (*driverapi.UpdateMetadataResponse, error) {
	r := p.call(&driverapi.Call{Method: driverapi.MethodUpdateMetadata, Machine: req.Machine, Metadata: req.Set,
		Remove: req.Remove}, key{})
	if !r.OK() {
		return nil, r.Err()
	}
	return &driverapi.UpdateMetadataResponse{}, nil
}

// GetVolumeIDs implements driverapi.Driver: the provider maps no volumes,
// and answers Unimplemented.
func (p *Provider) GetVolumeIDs(context.Context, *driverapi.GetVolumeIDsRequest) (*driverapi.GetVolumeIDsResponse, error) {
	r := p.call(&driverapi.Call{Method: driverapi.MethodGetVolumeIDs}, key{})
	return nil, r.Err()
}

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
// with an instance's without building a string.
type key struct {
	s       string
	uid     string
	attempt uint32
	call    bool
}

// matches reports whether instance i was made by a call with this key. The
// empty key matches nothing.
func (k *key) matches(i *Instance) bool {
	switch {
	case i.keyless:
		return false
	case k.call && i.key != "":
		return k.uid != "" && isKey(i.key, k.uid, k.attempt)
	case k.call:
		return k.uid != "" && i.CreatorUID == k.uid && i.Attempt == k.attempt
	case i.key != "":
		return k.s == i.key
	}
	return k.s != "" && i.CreatorUID != "" && isKey(k.s, i.CreatorUID, i.Attempt)
}

// isKey reports whether s is the idempotency key uid and attempt form, as
// driverapi.Call.IdempotencyKey builds it.
func isKey(s, uid string, attempt uint32) bool {
	n, ok := attemptOf(s, uid)
	return ok && n == attempt
}

// attemptOf returns the attempt of idempotency key s of a machine with
// that uid, and false when s is not of the form driverapi.Call builds.
func attemptOf(s, uid string) (uint32, bool) {
	n := len(uid)
	if n == 0 || len(s) < n+2 || s[:n] != uid || s[n] != '/' || s[n+1] == '0' && len(s) > n+2 {
		return 0, false
	}
	v := uint64(0)
	for k := n + 1; k < len(s); k++ {
		if s[k] < '0' || s[k] > '9' {
			return 0, false
		}
		if v = v*10 + uint64(s[k]-'0'); v > 1<<32-1 {
			return 0, false
		}
	}
	return uint32(v), true
}

// Invoke carries out call c and returns its answer as plain data: the
// Result driverapi.Invoke(ctx, p, *c, class) would return, built without a
// request, a response or an error, so that a call that makes no instance
// and meets no fault without a Text allocates nothing. Maps are shared, as
// driverapi.Call and driverapi.Result make them read-only: the instance
// CreateMachine makes keeps c.Metadata, which the caller must not change
// afterwards, and a GetMachineStatus answer carries the instance's map.
// The Instances of a ListMachines answer are a new slice.
func (p *Provider) Invoke(c *driverapi.Call) driverapi.Result {
	var r driverapi.Result
	p.InvokeInto(&r, c)
	return r
}

// InvokeInto is Invoke writing the answer into *r, for a caller that keeps
// its Result in place (a simulation's outcome) and would otherwise copy it.
func (p *Provider) InvokeInto(r *driverapi.Result, c *driverapi.Call) {
	p.call(r, c, key{uid: c.Machine.UID, attempt: c.Attempt, call: true})
}

// call carries out c, whose idempotency key is k, with its fault, and
// writes the answer into *r.
func (p *Provider) call(r *driverapi.Result, c *driverapi.Call, k key) {
	m := c.Method
	if !m.Valid() {
		*r = driverapi.Result{Method: m, Code: driverapi.InvalidArgument, Message: "lifecycletest: no such method " + m.String()}
		return
	}
	p.Calls[m&15]++
	f := p.fault(m)
	switch {
	case f.failing() && !f.After:
		f.fail(r, m)
	case f.failing():
		p.carryOut(r, c, &k)
		f.fail(r, m)
	default:
		p.carryOut(r, c, &k)
		if f.NoIdentity && r.OK() {
			r.ProviderID, r.NodeName = "", ""
		}
	}
}

// carryOut carries out c without faults and writes the answer into *r.
func (p *Provider) carryOut(r *driverapi.Result, c *driverapi.Call, k *key) {
	m := c.Method
	switch m {
	case driverapi.MethodCreate:
		p.create(r, c, k)
		return
	case driverapi.MethodGetStatus:
		p.status(r, c, k)
		return
	case driverapi.MethodList:
		*r = driverapi.Result{Method: m, Instances: p.List(nil)}
		return
	case driverapi.MethodGetVolumeIDs:
		f := Fault{Code: driverapi.Unimplemented, Message: "lifecycletest: the provider maps no volumes"}
		f.fail(r, m)
		return
	case driverapi.MethodDelete:
	default:
		k = nil // InitializeMachine, UpdateMachine and UpdateMetadata carry no key
	}
	n := p.find(&c.Machine, k, false)
	if n < 0 {
		notFound(r, m, &c.Machine)
		return
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
		*r = driverapi.Result{Method: m, ProviderID: i.ProviderID, NodeName: i.NodeName}
	case driverapi.MethodDelete:
		i.Deleted = true
		if p.Log != nil {
			p.Log("deleted " + i.ProviderID)
		}
		if p.OnDelete != nil {
			p.OnDelete(n)
		}
		*r = driverapi.Result{Method: m}
	case driverapi.MethodUpdate:
		i.Generation = c.Generation
		if p.Log != nil {
			p.Log(i.ProviderID + " now at generation " + strconv.FormatInt(i.Generation, 10))
		}
		*r = driverapi.Result{Method: m, Generation: i.Generation}
	default:
		p.patch(i, c)
		*r = driverapi.Result{Method: m}
	}
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
		if k != nil && k.matches(i) {
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
func (p *Provider) create(r *driverapi.Result, c *driverapi.Call, k *key) {
	for n := p.Newest(c.Machine.Name); n >= 0; n = int(p.insts[n].older) {
		if i := &p.insts[n]; !i.Deleted && k.matches(i) {
			if p.Log != nil {
				p.Log("same key " + i.Key() + ": returned the existing " + i.ProviderID)
			}
			*r = driverapi.Result{Method: c.Method, ProviderID: i.ProviderID, NodeName: i.NodeName}
			return
		}
	}
	made := Instance{MachineName: c.Machine.Name, CreatorUID: c.Machine.UID, OwnerUID: c.Machine.UID,
		Generation: c.Generation, Metadata: c.Metadata}
	switch a, ok := attemptOf(k.s, c.Machine.UID); {
	case k.call && k.uid != "":
		made.Attempt = k.attempt
	case ok:
		made.Attempt = a
	case k.s == "":
		made.keyless = true
	default:
		made.key = k.s
	}
	if !k.call {
		made.Metadata = maps.Clone(c.Metadata) // a request's map stays its caller's
	}
	p.Created++
	n := p.add(made)
	i := &p.insts[n]
	if p.Log != nil {
		p.Log("created " + i.ProviderID)
	}
	*r = driverapi.Result{Method: c.Method, ProviderID: i.ProviderID, NodeName: i.NodeName}
}

// status is GetMachineStatus.
func (p *Provider) status(r *driverapi.Result, c *driverapi.Call, k *key) {
	n := p.find(&c.Machine, k, true)
	if n < 0 {
		notFound(r, c.Method, &c.Machine)
		return
	}
	i := &p.insts[n]
	if i.Initialized {
		*r = driverapi.Result{Method: c.Method}
	} else {
		failure(r, c.Method, driverapi.Uninitialized, "instance ", i.ProviderID, " is not initialized")
	}
	r.ProviderID, r.NodeName, r.OwnerUID, r.Generation, r.Metadata = i.ProviderID, i.NodeName, i.OwnerUID, i.Generation, i.Metadata
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
	var r driverapi.Result
	p.call(&r, &driverapi.Call{Method: driverapi.MethodCreate, Machine: req.Machine, Generation: req.Generation,
		Metadata: req.Metadata}, key{s: req.IdempotencyKey})
	if !r.OK() {
		return nil, r.Err()
	}
	return &driverapi.CreateMachineResponse{ProviderID: r.ProviderID, NodeName: r.NodeName}, nil
}

// InitializeMachine implements driverapi.Driver.
func (p *Provider) InitializeMachine(_ context.Context, req *driverapi.InitializeMachineRequest) (*driverapi.InitializeMachineResponse, error) {
	var r driverapi.Result
	p.call(&r, &driverapi.Call{Method: driverapi.MethodInitialize, Machine: req.Machine}, key{})
	if !r.OK() {
		return nil, r.Err()
	}
	return &driverapi.InitializeMachineResponse{ProviderID: r.ProviderID, NodeName: r.NodeName}, nil
}

// GetMachineStatus implements driverapi.Driver. It answers Uninitialized
// with the instance's status; the response's metadata is a copy.
func (p *Provider) GetMachineStatus(_ context.Context, req *driverapi.GetMachineStatusRequest) (*driverapi.GetMachineStatusResponse, error) {
	var r driverapi.Result
	p.call(&r, &driverapi.Call{Method: driverapi.MethodGetStatus, Machine: req.Machine}, key{s: req.IdempotencyKey})
	if !r.OK() && r.Code != driverapi.Uninitialized || r.Undecodable {
		return nil, r.Err()
	}
	resp := &driverapi.GetMachineStatusResponse{ProviderID: r.ProviderID, NodeName: r.NodeName, OwnerUID: r.OwnerUID,
		Generation: r.Generation, Metadata: maps.Clone(r.Metadata)}
	return resp, r.Err()
}

// DeleteMachine implements driverapi.Driver.
func (p *Provider) DeleteMachine(_ context.Context, req *driverapi.DeleteMachineRequest) (*driverapi.DeleteMachineResponse, error) {
	var r driverapi.Result
	p.call(&r, &driverapi.Call{Method: driverapi.MethodDelete, Machine: req.Machine}, key{s: req.IdempotencyKey})
	if !r.OK() {
		return nil, r.Err()
	}
	return &driverapi.DeleteMachineResponse{}, nil
}

// ListMachines implements driverapi.Driver.
func (p *Provider) ListMachines(context.Context, *driverapi.ListMachinesRequest) (*driverapi.ListMachinesResponse, error) {
	var r driverapi.Result
	p.call(&r, &driverapi.Call{Method: driverapi.MethodList}, key{})
	if !r.OK() {
		return nil, r.Err()
	}
	return &driverapi.ListMachinesResponse{Instances: r.Instances}, nil
}

// UpdateMachine implements driverapi.Driver.
func (p *Provider) UpdateMachine(_ context.Context, req *driverapi.UpdateMachineRequest) (*driverapi.UpdateMachineResponse, error) {
	var r driverapi.Result
	p.call(&r, &driverapi.Call{Method: driverapi.MethodUpdate, Machine: req.Machine, Generation: req.Generation}, key{})
	if !r.OK() {
		return nil, r.Err()
	}
	return &driverapi.UpdateMachineResponse{Generation: r.Generation}, nil
}

// UpdateMetadata implements driverapi.Driver.
func (p *Provider) UpdateMetadata(_ context.Context, req *driverapi.UpdateMetadataRequest) (*driverapi.UpdateMetadataResponse, error) {
	var r driverapi.Result
	p.call(&r, &driverapi.Call{Method: driverapi.MethodUpdateMetadata, Machine: req.Machine, Metadata: req.Set,
		Remove: req.Remove}, key{})
	if !r.OK() {
		return nil, r.Err()
	}
	return &driverapi.UpdateMetadataResponse{}, nil
}

// GetVolumeIDs implements driverapi.Driver: the provider maps no volumes,
// and answers Unimplemented.
func (p *Provider) GetVolumeIDs(context.Context, *driverapi.GetVolumeIDsRequest) (*driverapi.GetVolumeIDsResponse, error) {
	var r driverapi.Result
	p.call(&r, &driverapi.Call{Method: driverapi.MethodGetVolumeIDs}, key{})
	return nil, r.Err()
}

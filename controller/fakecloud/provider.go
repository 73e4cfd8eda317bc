// Package fakecloud is an in-process cloud provider for the example
// controller: a driverapi.Driver whose instances exist in memory. It is safe
// for concurrent use. Instances never boot anything: whoever plays the
// kubelet (a test, or the Kubelet runnable) registers the node each
// instance announces (Instance.NodeName, Instance.ProviderID).
//
// Faults are set per machine name with FailCreate, so one machine can keep
// failing while the others are created.
//
// A provider made by New keeps its instances in memory only: they are gone
// when the process ends. One made by Open keeps them in a file as well, so
// a manager restarted on that file finds the instances it created before,
// as it would at a real cloud. Every provider names its instances with an
// incarnation of its own (kept in that file), so two providers never hand
// out one providerID or node name: a restarted manager's new instances
// never take the nodes of the instances of an earlier run.
package fakecloud

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/purelifecycle/machine/driverapi"
)

// Instance is one instance of the fake cloud.
type Instance struct {
	// ProviderID identifies the instance, "fake:///<zone>/vm-<inc>-<n>",
	// where inc is the provider's incarnation.
	ProviderID string
	// NodeName is the name its node registers with, "<zone>-vm-<inc>-<n>",
	// so the nodes of two providers never share a name.
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
	inc        string // names the provider's instances, with seq
	seq        int
	path       string               // the state file, "" for none
	instances  map[string]*Instance // by providerID
	failCreate map[string]driverapi.Code
	calls      map[string]map[driverapi.Method]int // by machine name
}

// New returns an empty fake cloud, of a new incarnation, that keeps its
// instances in memory only.
func New() *Provider {
	return &Provider{
		Zone:       "zone-a",
		inc:        incarnation(),
		instances:  map[string]*Instance{},
		failCreate: map[string]driverapi.Code{},
		calls:      map[string]map[driverapi.Method]int{},
	}
}

// state is what a state file holds.
type state struct {
	Incarnation string      `json:"incarnation"`
	Seq         int         `json:"seq"`
	Instances   []*Instance `json:"instances"`
}

// Open returns a fake cloud that keeps its instances in the file at path
// as well as in memory: the instances, the incarnation and the last
// instance number the file holds, if it exists (else an empty cloud of a
// new incarnation), written there again after every change. A file that
// cannot be read or decoded is an error, not an empty cloud. Faults and
// call counts are not kept.
func Open(path string) (*Provider, error) {
	p := New()
	p.path = path
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return p, p.save()
	}
	if err != nil {
		return nil, fmt.Errorf("fake cloud state: %w", err)
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("fake cloud state %s: %w", path, err)
	}
	if st.Incarnation == "" {
		return nil, fmt.Errorf("fake cloud state %s: no incarnation", path)
	}
	p.inc, p.seq = st.Incarnation, st.Seq
	for _, i := range st.Instances {
		p.instances[i.ProviderID] = i
	}
	return p, nil
}

// save writes the state file, if there is one: to a temporary file first,
// renamed over it, so a crash leaves the old state or the new one. The
// caller holds p.mu.
func (p *Provider) save() error {
	if p.path == "" {
		return nil
	}
	st := state{Incarnation: p.inc, Seq: p.seq, Instances: make([]*Instance, 0, len(p.instances))}
	for _, id := range slices.Sorted(maps.Keys(p.instances)) {
		st.Instances = append(st.Instances, p.instances[id])
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p.path), filepath.Base(p.path)+".tmp*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p.path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// saved saves the state after a change of method's, as the driver error
// of that call when it fails (the change stays in memory, as at a cloud
// that acted but could not answer).
func (p *Provider) saved(method string) error {
	if err := p.save(); err != nil {
		return driverapi.Wrap(driverapi.Internal, method+": saving the fake cloud's state", err)
	}
	return nil
}

// incarnation returns 5 random characters of [a-z0-9].
func incarnation() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
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
		ProviderID:  fmt.Sprintf("fake:///%s/vm-%s-%d", p.Zone, p.inc, p.seq),
		NodeName:    fmt.Sprintf("%s-vm-%s-%d", p.Zone, p.inc, p.seq),
		MachineName: req.Machine.Name,
		OwnerUID:    req.Machine.UID,
		Key:         req.IdempotencyKey,
		Created:     time.Now().UTC().Round(0), // as the state file keeps it
		Generation:  req.Generation,
		Metadata:    maps.Clone(req.Metadata),
		UserData:    string(req.Class.Secret["userData"]),
		Class:       req.Class,
	}
	p.instances[i.ProviderID] = i
	if err := p.saved("create " + req.Machine.Name); err != nil {
		return nil, err
	}
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
	if err := p.saved("initialize " + req.Machine.Name); err != nil {
		return nil, err
	}
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
	if err := p.saved("delete " + req.Machine.Name); err != nil {
		return nil, err
	}
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
	if err := p.saved("update " + req.Machine.Name); err != nil {
		return nil, err
	}
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
	if err := p.saved("update metadata of " + req.Machine.Name); err != nil {
		return nil, err
	}
	return &driverapi.UpdateMetadataResponse{}, nil
}

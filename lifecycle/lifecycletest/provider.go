package lifecycletest

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/purelifecycle/machine/driverapi"
)

// Instance is one instance of a [Provider].
type Instance struct {
	// ProviderID identifies the instance: the provider's IDPrefix followed
	// by the instance's number (1 for the first instance it made).
	ProviderID string
	// NodeName is the name of the node the instance's kubelet registers:
	// the provider's NodePrefix followed by the instance's number, unless
	// the OnCreate hook named it otherwise.
	NodeName string
	// MachineName and CreatorUID are the name and UID of the machine the
	// instance was created for.
	MachineName, CreatorUID string
	// Attempt is the machine's creation attempt the instance was made for:
	// with CreatorUID it forms the idempotency key of the CreateMachine
	// that made it ([Instance.Key]).
	Attempt uint32
	// OwnerUID is the owner the instance is tagged with, as GetMachineStatus
	// and ListMachines report it: CreatorUID at first, then the UID of the
	// last UpdateMetadata that did not drop the owner; "" when the tag is
	// lost.
	OwnerUID string
	// Generation is the hot-update generation the instance is at.
	Generation int64
	// Metadata is the instance's metadata. The provider replaces the map
	// when the metadata changes and never writes it in place, so a map it
	// handed out stays as it was.
	Metadata map[string]string
	// Created is when the instance was made, by the provider's Now hook
	// (zero without one).
	Created time.Time
	// Initialized reports that an InitializeMachine of the instance was
	// carried out.
	Initialized bool
	// Deleted reports that the instance was deleted. A deleted instance
	// keeps its place and its number: no call finds it, no listing shows
	// it.
	Deleted bool
	// older is the next older instance made with the same machine name,
	// -1 for none.
	older int32
	// key is the idempotency key of the request that made the instance
	// when it is not the one CreatorUID and Attempt form; keyless is set
	// when the request carried none.
	key     string
	keyless bool
}

// Key returns the idempotency key of the CreateMachine that made the
// instance: CreatorUID + "/" + Attempt, as driverapi.Call.IdempotencyKey
// forms it ("" without a CreatorUID), unless the request carried another.
func (i *Instance) Key() string {
	if i.key != "" || i.keyless || i.CreatorUID == "" {
		return i.key
	}
	return i.CreatorUID + "/" + strconv.FormatUint(uint64(i.Attempt), 10)
}

// Provider is an in-memory cloud implementing driverapi.Driver as its
// contract says, for tests and simulations of shells and drivers:
//
//   - CreateMachine is idempotent per machine name and idempotency key: a
//     repeated call returns the instance the first one made;
//   - GetMachineStatus finds an instance by providerID, else among the
//     instances of the machine's name by idempotency key, then by the
//     machine's UID (the instance's creator or owner tag), then any
//     instance of the name, as providers that find instances by a name tag
//     do; it reports the owner tag, the generation and the metadata, and
//     Uninitialized, with the instance, until InitializeMachine ran;
//   - DeleteMachine, InitializeMachine, UpdateMachine and UpdateMetadata
//     find an instance the same way but never by the name alone, and
//     answer NotFound when there is none;
//   - UpdateMetadata sets and removes keys and tags the instance with the
//     machine's UID as its owner;
//   - ListMachines lists the instances not deleted, in the order they were
//     made, for lifecycle.Orphans.
//
// Faults are injected by scripted failures ([Provider.FailNext],
// [Provider.DropNext]) and by hooks (Fault, Drop); other hooks let a
// simulation attach its own state to the instances (OnCreate, OnInitialize,
// OnDelete) and watch what the calls do (Log). [Provider.Invoke] answers a
// driverapi.Call as plain data, as driverapi.Invoke would, without building
// a request or an error: a fleet simulation calls it millions of times.
//
// Instances are numbered in the order they are made and keep their number
// when deleted: [Provider.Len], [Provider.At] and the hooks address them by
// index (the number less one). A Provider is not safe for concurrent use.
type Provider struct {
	driverapi.UnimplementedDriver
	// IDPrefix and NodePrefix start the providerIDs and node names of the
	// instances, which end in their number. Set them before the first
	// instance is made.
	IDPrefix, NodePrefix string
	// Fault, when set, decides the fault of every call that no scripted
	// failure ([Provider.FailNext]) fails. It is asked before the call is
	// carried out.
	Fault func(m driverapi.Method) Fault
	// Drop, when set, is asked for every metadata key an UpdateMetadata
	// would set or remove (the keys to set in sorted order, then those to
	// remove in their order) and for "owner", the owner tag, unless a
	// scripted drop ([Provider.DropNext]) drops it; true drops that change
	// silently.
	Drop func(key string) bool
	// Now, when set, gives the creation time of new instances.
	Now func() time.Time
	// OnCreate, when set, is called with the index of every instance made,
	// by CreateMachine or Add, before the call answers: it may rename the
	// instance's node or clear its owner tag, and must not keep a pointer
	// to it past the next instance made.
	OnCreate func(n int)
	// OnInitialize, when set, is called with the index of the instance an
	// InitializeMachine initialized, every time one does.
	OnInitialize func(n int)
	// OnDelete, when set, is called with the index of the instance a
	// DeleteMachine or Remove deleted, after it is marked Deleted.
	OnDelete func(n int)
	// Log, when set, is told in a sentence what each call did ("created
	// test:///vm-1", "scripted failure, 1 left"); a call that found no
	// instance tells nothing.
	Log func(note string)
	// Calls counts the calls by method, faults included.
	Calls [16]int
	// Created counts the instances CreateMachine made.
	Created int

	insts  []Instance
	newest map[string]int32 // machine name -> its newest instance
	// scripted holds the scripted failures of each method, in turn.
	scripted [16][]scriptedFault
	// drops holds the scripted drops of the next UpdateMetadata calls.
	drops [][]string
	// buf and keys are scratch: for the names of new instances, for the
	// sorted keys of an UpdateMetadata.
	buf  []byte
	keys []string
}

// NewProvider returns an empty provider without faults, whose providerIDs
// are test:///vm-N and node names node-N.
func NewProvider() *Provider {
	return &Provider{IDPrefix: "test:///vm-", NodePrefix: "node-", newest: map[string]int32{}}
}

// Grow makes room for n more instances, for a caller that knows how many
// it will make.
func (p *Provider) Grow(n int) {
	p.insts = slices.Grow(p.insts, n)
	if len(p.newest) == 0 {
		p.newest = make(map[string]int32, n)
	}
}

// Len returns the number of instances the provider made, deleted ones
// included.
func (p *Provider) Len() int { return len(p.insts) }

// At returns instance n (0 ≤ n < Len), the one numbered n+1. The pointer is
// valid until the provider makes its next instance.
func (p *Provider) At(n int) *Instance { return &p.insts[n] }

// Lookup returns the index of the instance with that providerID, deleted or
// not, and -1 when the provider made none.
func (p *Provider) Lookup(providerID string) int {
	if n := p.numbered(providerID); n >= 0 && p.insts[n].ProviderID == providerID {
		return n
	}
	return -1
}

// NodeOwner returns the index of the instance whose own node has that name,
// the one whose number the name ends in, and -1 when there is none. An
// instance whose node the OnCreate hook named after another's is not found
// by that name: the node belongs to the other instance.
func (p *Provider) NodeOwner(name string) int {
	if n := p.numbered(name); n >= 0 && p.insts[n].NodeName == name {
		return n
	}
	return -1
}

// numbered returns the index of the instance numbered by the decimal s
// ends in, -1 when that is none; the caller compares the whole name.
func (p *Provider) numbered(s string) int {
	num, mul := 0, 1
	for k := len(s) - 1; k >= 0 && s[k] >= '0' && s[k] <= '9'; k-- {
		if num += int(s[k]-'0') * mul; num > len(p.insts) || mul > 1e12 {
			return -1
		}
		mul *= 10
	}
	if num < 1 {
		return -1
	}
	return num - 1
}

// Newest returns the index of the newest instance made for that machine
// name, deleted or not, and -1 when there is none; [Provider.Older] goes
// on to the older ones.
func (p *Provider) Newest(name string) int {
	if n, ok := p.newest[name]; ok {
		return int(n)
	}
	return -1
}

// Older returns the index of the next older instance made for the machine
// name of instance n, and -1 when there is none.
func (p *Provider) Older(n int) int { return int(p.insts[n].older) }

// Instances returns copies of the instances not deleted, in the order they
// were made.
func (p *Provider) Instances() []Instance {
	var out []Instance
	for n := range p.insts {
		if !p.insts[n].Deleted {
			out = append(out, p.insts[n])
		}
	}
	return out
}

// OwnedBy returns the providerIDs of the instances not deleted whose owner
// tag is uid, sorted.
func (p *Provider) OwnedBy(uid string) []string {
	var out []string
	for n := range p.insts {
		if i := &p.insts[n]; !i.Deleted && i.OwnerUID == uid {
			out = append(out, i.ProviderID)
		}
	}
	slices.Sort(out)
	return out
}

// List appends the instances not deleted to dst, as ListMachines reports
// them, and returns it. It is no call: it counts none and injects no
// fault, for a simulation that lists often into a buffer it reuses.
func (p *Provider) List(dst []driverapi.Instance) []driverapi.Instance {
	for n := range p.insts {
		if i := &p.insts[n]; !i.Deleted {
			dst = append(dst, driverapi.Instance{ProviderID: i.ProviderID, MachineName: i.MachineName,
				OwnerUID: i.OwnerUID, Created: i.Created})
		}
	}
	return dst
}

// Add makes an instance outside any call, as if another controller or a
// person had created it, and returns its index. The provider fills in its
// ProviderID, NodeName and Created and keeps the other fields of i (a copy
// of Metadata); OnCreate is called. It does not count as created by
// CreateMachine.
func (p *Provider) Add(i Instance) int {
	i.Metadata, i.key, i.keyless = maps.Clone(i.Metadata), "", false
	return p.add(i)
}

// Remove deletes instance n outside any call, as if someone had deleted it
// in the cloud's console; OnDelete is called. Removing a deleted instance
// does nothing.
func (p *Provider) Remove(n int) {
	if p.insts[n].Deleted {
		return
	}
	p.insts[n].Deleted = true
	if p.OnDelete != nil {
		p.OnDelete(n)
	}
}

// add makes instance i (its metadata already the provider's own).
func (p *Provider) add(i Instance) int {
	if p.newest == nil {
		p.newest = map[string]int32{}
	}
	n := len(p.insts)
	i.ProviderID, i.NodeName = p.name(p.IDPrefix, n+1), p.name(p.NodePrefix, n+1)
	i.Created, i.Deleted, i.older = time.Time{}, false, -1
	if p.Now != nil {
		i.Created = p.Now()
	}
	if o, ok := p.newest[i.MachineName]; ok {
		i.older = o
	}
	p.insts = append(p.insts, i)
	p.newest[i.MachineName] = int32(n)
	if p.OnCreate != nil {
		p.OnCreate(n)
	}
	return n
}

// name returns prefix followed by num, allocating only the result.
func (p *Provider) name(prefix string, num int) string {
	p.buf = strconv.AppendInt(append(p.buf[:0], prefix...), int64(num), 10)
	return string(p.buf)
}

// String lists the instances not deleted, one a line after a summary line:
// providerID, machine, owner tag, key, node, whether initialized, and the
// generation and metadata when set.
func (p *Provider) String() string {
	var b strings.Builder
	live := 0
	for n := range p.insts {
		if !p.insts[n].Deleted {
			live++
		}
	}
	fmt.Fprintf(&b, "provider: %d instance(s), %d created by CreateMachine", live, p.Created)
	for n := range p.insts {
		i := &p.insts[n]
		if i.Deleted {
			continue
		}
		fmt.Fprintf(&b, "\n  %s machine=%s owner=%s key=%s node=%s", i.ProviderID, i.MachineName, i.OwnerUID, i.Key(), i.NodeName)
		if i.Initialized {
			b.WriteString(" initialized")
		} else {
			b.WriteString(" uninitialized")
		}
		if i.Generation != 0 {
			fmt.Fprintf(&b, " generation=%d", i.Generation)
		}
		if len(i.Metadata) > 0 {
			b.WriteString(" metadata=" + mapString(i.Metadata))
		}
	}
	return b.String()
}

// mapString renders a map as {k=v,...} in key order; "{}" when empty.
func mapString(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return "{" + strings.Join(parts, ",") + "}"
}

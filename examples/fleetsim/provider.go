package fleetsim

import (
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
)

// The simulated provider is lifecycletest.Provider, one per shard, its
// hooks the shard's: faults drawn from the shard's random stream (the
// driver faults of the run, dropped metadata keys, lost owner tags, stale
// node names), the creation time from the simulated clock, and for every
// instance it makes an entry of w.inst at the same index: the machine
// whose CreateMachine made it, its machine's name slot, and its node. It
// answers driver calls as plain data (Provider.Invoke), so a call that
// makes no instance allocates nothing; its answers are those a driver
// would give through driverapi.Invoke.

// instance is the simulation's side of the provider's instance of the same
// index: who made it, and the node its kubelet registers.
type instance struct {
	mi   int32 // the machine whose CreateMachine made it
	slot int32 // its machine's name slot
	// meta is the code of its metadata at the provider, for the checks:
	// recorded when it is made and after every UpdateMetadata of it.
	meta    metaCode
	booting bool  // its node's registration is scheduled
	stale   bool  // created with the name of another instance's node (A5)
	zone    uint8 // zone+1 of the zone it runs in (its machine's), 0 none
	node    node
}

// node is the Kubernetes node of an instance.
type node struct {
	conds []lifecycle.Condition // replaced, never written in place
	// badSince is when the world last saw the node turn unhealthy (NotReady,
	// or its object deleted), or the instance's creation while it never
	// was healthy; 0 while it is healthy.
	badSince int64
	label    int32 // slot+1 of its machine-name label, 0 none
	ready    lifecycle.ConditionStatus
	taints   lifecycle.Taints
	down     uint8 // causes that keep it NotReady (flaps, outages)
	zone     uint8 // zone+1 of its lifecycle.ZoneLabel label, 0 none
	volumes  uint8 // status.volumesAttached
	attach   uint8 // live VolumeAttachments
	pods     uint8
	// evicted is when a drain's evictions of its pods were accepted; the
	// pods terminate podGrace later. 0 while none are terminating.
	evicted    int64
	exists     bool
	registered bool
	booted     bool
	dead       bool
	finalizer  bool
	deleting   bool
	cordoned   bool
	terminated bool // its Terminating condition is set
	// What deletion did to the node, as the world saw it: drained, a drain
	// succeeded and left no pods; forced, a forced drain was attempted on
	// it, whatever came of it.
	drained, forced bool

	// The in-place update and preservation (flows.go). Of the node object,
	// gone with it: update, its labels of the in-place protocol; preserve,
	// its preserve annotation; ann, the other annotations of both flows
	// (annReason, annScaleDown, annScaleDownByMCM); extra, its conditions
	// other than Ready (InPlaceUpdate, Preserved), which conds repeats
	// after Ready. Of the node's life: cordonBy, the flow that cordoned it
	// (cordonDeletion, cordonInPlace, cordonPreserve); goodSince, when it
	// last turned Ready. Of the instance: agent and agentTok, its node
	// agent's state and the token of its events; updated, when the agent's
	// update of it last succeeded.
	update    lifecycle.UpdateLabels
	preserve  lifecycle.Preserve
	ann       uint8
	cordonBy  uint8
	agent     uint8
	agentTok  uint8
	extra     []lifecycle.Condition
	goodSince int64
	updated   int64
}

// tailNum returns the decimal number after the last '-' of s, -1 if none.
func tailNum(s string) int {
	n, mul, i := 0, 1, len(s)-1
	for ; i >= 0 && s[i] >= '0' && s[i] <= '9'; i-- {
		n += int(s[i]-'0') * mul
		mul *= 10
		if mul > 1e12 {
			return -1
		}
	}
	if i == len(s)-1 || i < 0 || s[i] != '-' {
		return -1
	}
	return n
}

// vm returns the provider's record of instance i.
func (w *shard) vm(i int32) *lifecycletest.Instance { return w.p.At(int(i)) }

// alive reports whether instance i is not deleted.
func (w *shard) alive(i int32) bool { return !w.p.At(int(i)).Deleted }

// instByPID returns the instance with that providerID, -1 if none.
func (w *shard) instByPID(pid string) int32 { return int32(w.p.Lookup(pid)) }

// slotOf returns the name slot of a machine name, -1 if none.
func (w *shard) slotOf(name string) int32 {
	i := tailNum(name)
	if i < 0 || i >= len(w.names) || w.names[i] != name {
		return -1
	}
	return int32(i)
}

// mutating reports whether a call of m changes the provider.
func mutating(m driverapi.Method) bool {
	switch m {
	case driverapi.MethodCreate, driverapi.MethodInitialize, driverapi.MethodDelete,
		driverapi.MethodUpdate, driverapi.MethodUpdateMetadata:
		return true
	}
	return false
}

// latency draws how long a call of method m takes.
func (w *shard) latency(m driverapi.Method) int64 {
	if w.o.Latency == 0 {
		return 0
	}
	lo, hi := 20*time.Millisecond, 500*time.Millisecond
	switch m {
	case driverapi.MethodCreate:
		lo, hi = 2*time.Second, 30*time.Second
	case driverapi.MethodDelete:
		lo, hi = time.Second, 15*time.Second
	case driverapi.MethodInitialize, driverapi.MethodUpdate:
		lo, hi = 500*time.Millisecond, 5*time.Second
	}
	return int64(float64(w.between(lo, hi)) * w.o.Latency)
}

// newProvider returns the shard's provider, its hooks the shard's.
func (w *shard) newProvider() *lifecycletest.Provider {
	p := lifecycletest.NewProvider()
	p.IDPrefix, p.NodePrefix = "sim:///shard-"+w.prefix, "n"+w.prefix
	p.Fault = w.driverFault
	p.Drop = w.dropKey
	p.Now = func() time.Time { return tm(w.callAt) }
	p.OnCreate = w.made
	p.OnInitialize = w.initialized
	p.OnDelete = w.deleted
	return p
}

// invoke carries out a driver call for machine mi (-1: orphan collection)
// at time now, with the faults of the run, writes its result into *r and
// returns how long it took.
func (w *shard) invoke(r *driverapi.Result, mi int32, c *driverapi.Call, now int64) int64 {
	m := c.Method
	w.stats.Calls[m]++
	lat := w.latency(m)
	if w.ip && mi >= 0 {
		w.checkOneUpdate(mi, c)
	}
	w.caller, w.callAt = mi, now
	w.p.InvokeInto(r, c)
	switch m {
	case driverapi.MethodGetStatus:
		if w.o.broken.lieMetadata && mi >= 0 && (r.OK() || r.Code == driverapi.Uninitialized) {
			r.Metadata = w.machines[mi].obj.Metadata // test hook: the desired, not the real
		}
	case driverapi.MethodUpdateMetadata:
		if i := w.p.Find(c); i >= 0 {
			w.inst[i].meta, _ = codeOf(w.p.At(i).Metadata)
		}
		if mi >= 0 {
			w.machines[mi].more |= mMetaDirty
		}
	}
	return lat
}

// driverFault is the provider's Fault hook: an outcome drawn from the
// run's driver faults for method m. A call of a mutating method that times
// out or fails undecodably took effect half the time, and an
// InitializeMachine answered Unimplemented always did.
func (w *shard) driverFault(m driverapi.Method) lifecycletest.Fault {
	if !w.faulty || w.t.faults.total[m] == 0 {
		return lifecycletest.Fault{}
	}
	out := w.t.faults.pick(m, w.rng.Float64())
	if out == 0 {
		return lifecycletest.Fault{}
	}
	w.stats.CallFaults[m]++
	w.stats.FaultOutcomes[out]++
	if out == outEmpty {
		return lifecycletest.Fault{NoIdentity: true}
	}
	f := w.t.fault[out]
	f.After = mutating(m) && ((f.Undecodable || f.Code.Transient()) && w.rng.IntN(2) == 0 ||
		m == driverapi.MethodInitialize && f.Code == driverapi.Unimplemented)
	return f
}

// made is the provider's OnCreate hook: instance i was made for machine
// w.caller. It may be made without its owner tag, or with the name of a
// node that is still there (a stale node, MCM A5); a second instance alive
// for one machine UID is a violation.
func (w *shard) made(n int) {
	x := w.p.At(n)
	in := instance{mi: w.caller, slot: w.slotOf(x.MachineName), zone: w.machines[w.caller].zone}
	in.meta, _ = codeOf(x.Metadata)
	in.node.badSince = w.callAt
	if w.fault(w.o.OwnerTagLost) {
		x.OwnerUID = ""
		w.stats.OwnerTagsLost++
	}
	if w.fault(w.o.StaleNode) {
		if j := w.recent[w.rng.IntN(len(w.recent))]; j >= 0 && w.inst[j].node.exists {
			x.NodeName, in.stale = w.vm(j).NodeName, true
			w.stats.StaleNodes++
		}
	}
	for j := w.p.Older(n); j >= 0; j = w.p.Older(j) {
		if o := w.p.At(j); !o.Deleted && o.CreatorUID == x.CreatorUID && !w.inst[j].stale && !in.stale {
			w.violation(w.caller, "double create: CreateMachine made instance "+x.ProviderID+" while "+o.ProviderID+
				" of the same machine UID is alive")
			break
		}
	}
	w.inst = append(w.inst, in)
	w.slotInst[in.slot] = int32(n)
	w.stats.Instances++
	if w.adding {
		return
	}
	w.creates++
	if w.creates == w.o.duplicateCreate {
		// Test hook: a provider that forgets its idempotency.
		w.adding = true
		w.p.Add(lifecycletest.Instance{MachineName: x.MachineName, CreatorUID: x.CreatorUID, OwnerUID: x.CreatorUID,
			Attempt: x.Attempt, Generation: x.Generation, Metadata: x.Metadata})
		w.adding = false
	}
}

// initialized is the provider's OnInitialize hook: the instance boots and
// its kubelet registers the node one to three minutes after creation.
func (w *shard) initialized(n int) {
	i := int32(n)
	in := &w.inst[i]
	if in.booting || in.stale {
		return
	}
	in.booting = true
	if w.cfg.NoTargetCluster {
		return // no cluster, no node
	}
	if w.fault(w.o.NoJoin) {
		w.stats.NoJoin++
		return // its kubelet never registers
	}
	created := w.vm(i).Created.UnixNano()
	at := max(created+w.between(time.Minute, 150*time.Second), w.callAt+int64(time.Second))
	w.push(at, evRegister, i, 0)
}

// deleted is the provider's OnDelete hook: the instance went, its node
// turns NotReady and the cloud's node controller deletes it a little
// later.
func (w *shard) deleted(n int) {
	i := int32(n)
	w.stats.InstancesDeleted++
	if w.inst[i].node.exists {
		w.refreshNode(i)
		w.push(w.callAt+w.between(30*time.Second, 2*time.Minute), evNodeGC, i, 0)
	}
}

// dropKey is the provider's Drop hook: the change of a metadata key, or of
// the owner tag, is dropped silently at the DropKey rate.
func (w *shard) dropKey(string) bool {
	if w.fault(w.o.DropKey) {
		w.stats.DroppedKeys++
		return true
	}
	return false
}

// tables are what every shard reads and none writes: the fault table,
// the metadata maps, the faults of each outcome, the outage time, and the
// zone outage's time and zone (+1, 0 none).
type tables struct {
	faults       *faultTable
	meta         *metaTable
	fault        [outCount]lifecycletest.Fault
	outageAt     int64
	zoneOutageAt int64
	outageZone   uint8
}

func newTables(o *Options, outageAt int64) (*tables, error) {
	ft, err := newFaultTable(o.DriverFaults)
	if err != nil {
		return nil, err
	}
	t := &tables{faults: ft, meta: newMetaTable(), outageAt: outageAt}
	for out := 1; out < outUndecodable; out++ {
		c := driverapi.Code(out)
		msg := "simulated " + c.String()
		t.fault[out] = lifecycletest.Fault{Code: c, Message: msg, Text: driverapi.Error(c, msg).Error()}
	}
	t.fault[outUndecodable] = lifecycletest.Fault{Code: driverapi.Unknown, Undecodable: true,
		Message: "read tcp 10.0.0.1:443: connection reset by peer"}
	return t, nil
}

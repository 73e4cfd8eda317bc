package fleetsim

import (
	"strconv"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
)

// The simulated provider: instances in a slice, found by the number in
// their providerID, by the name slot of their machine (a list per name,
// newest first) and, for creation, by their idempotency key (creator UID
// and attempt). It answers driver calls as plain data, without building
// requests or errors, so a call allocates nothing; its answers are those a
// driver would give through driverapi.Invoke. Faults are drawn from the
// shard's random stream.

// instance is one VM of the provider, with the node its kubelet registers.
type instance struct {
	providerID string
	nodeName   string
	ownerTag   string // the owner UID the provider reports; "" when the tag was lost
	creator    string // the UID of the CreateMachine that made it: with attempt, its idempotency key
	created    int64
	gen        int64
	attempt    uint32
	mi         int32 // the machine whose CreateMachine made it
	slot       int32 // its machine's name slot
	prevInSlot int32 // the next older instance of the same name, -1 none
	meta       metaCode
	alive      bool
	init       bool // InitializeMachine ran
	booting    bool // its node's registration is scheduled
	stale      bool // created with the name of another instance's node (A5)
	node       node
}

// node is the Kubernetes node of an instance.
type node struct {
	conds []lifecycle.Condition // replaced, never written in place
	// badSince is when the world last saw the node turn unhealthy (NotReady,
	// or its object deleted), or the instance's creation while it never
	// was healthy; 0 while it is healthy.
	badSince   int64
	label      int32 // slot+1 of its machine-name label, 0 none
	ready      lifecycle.ConditionStatus
	taints     lifecycle.Taints
	down       uint8 // causes that keep it NotReady (flaps, outage)
	volumes    uint8 // status.volumesAttached
	attach     uint8 // live VolumeAttachments
	pods       uint8
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

// instByPID returns the instance with that providerID, -1 if none.
func (w *shard) instByPID(pid string) int32 {
	i := tailNum(pid)
	if i < 0 || i >= len(w.inst) || w.inst[i].providerID != pid {
		return -1
	}
	return int32(i)
}

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

// invoke carries out a driver call for machine mi (-1: orphan collection)
// at time now, with the faults of the run, and returns its result and how
// long it took.
func (w *shard) invoke(mi int32, c *driverapi.Call, now int64) (driverapi.Result, int64) {
	m := c.Method
	w.stats.Calls[m]++
	lat := w.latency(m)
	out := 0
	if w.faulty && w.t.faults.total[m] > 0 {
		out = w.t.faults.pick(m, w.rng.Float64())
	}
	if out == 0 {
		return w.do(mi, c, now), lat
	}
	w.stats.CallFaults[m]++
	w.stats.FaultOutcomes[out]++
	if out == outEmpty {
		r := w.do(mi, c, now)
		if r.OK() {
			r.ProviderID, r.NodeName = "", ""
		}
		return r, lat
	}
	code := driverapi.Code(out)
	if out == outUndecodable {
		code = driverapi.Unknown
	}
	if mutating(m) && ((out == outUndecodable || code.Transient()) && w.rng.IntN(2) == 0 ||
		m == driverapi.MethodInitialize && code == driverapi.Unimplemented) {
		// It took effect; the caller sees only the error.
		w.do(mi, c, now)
	}
	return w.t.result(m, out), lat
}

// do carries out a call without faults.
func (w *shard) do(mi int32, c *driverapi.Call, now int64) driverapi.Result {
	switch c.Method {
	case driverapi.MethodCreate:
		return w.create(mi, c, now)
	case driverapi.MethodGetStatus:
		i := w.find(&c.Machine, c.Attempt, true)
		if i < 0 {
			return w.t.result(c.Method, int(driverapi.NotFound))
		}
		in := &w.inst[i]
		r := driverapi.Result{Method: c.Method, ProviderID: in.providerID, NodeName: in.nodeName,
			OwnerUID: in.ownerTag, Metadata: w.t.meta.of(in.meta), Generation: in.gen}
		if w.o.broken.lieMetadata && mi >= 0 {
			r.Metadata = w.machines[mi].obj.Metadata // test hook: the desired, not the real
		}
		if !in.init {
			r.Code, r.Message, r.Text = driverapi.Uninitialized, w.t.uninit, w.t.uninitText
		}
		return r
	}
	i := w.find(&c.Machine, c.Attempt, false)
	if i < 0 {
		return w.t.result(c.Method, int(driverapi.NotFound))
	}
	in := &w.inst[i]
	switch c.Method {
	case driverapi.MethodInitialize:
		w.initialize(i, now)
		return driverapi.Result{Method: c.Method, ProviderID: in.providerID, NodeName: in.nodeName}
	case driverapi.MethodDelete:
		w.deleteInstance(i, now)
		return driverapi.Result{Method: c.Method}
	case driverapi.MethodUpdate:
		in.gen = c.Generation
		return driverapi.Result{Method: c.Method, Generation: in.gen}
	case driverapi.MethodUpdateMetadata:
		w.patchMetadata(in, c)
		if mi >= 0 {
			w.machines[mi].more |= mMetaDirty
		}
		return driverapi.Result{Method: c.Method}
	}
	return w.t.result(c.Method, int(driverapi.InvalidArgument))
}

// find returns the instance a call is about: by providerID; else by name
// and idempotency key, then by name and UID, then (byName, for
// GetMachineStatus) any instance of the name, as providers that find
// instances by their name tag do, reporting the owner so that another
// incarnation's instance is recognised.
func (w *shard) find(ref *driverapi.MachineRef, attempt uint32, byName bool) int32 {
	if ref.ProviderID != "" {
		i := w.instByPID(ref.ProviderID)
		if i < 0 || !w.inst[i].alive {
			return -1
		}
		return i
	}
	slot := w.slotOf(ref.Name)
	if slot < 0 {
		return -1
	}
	byUID, named := int32(-1), int32(-1)
	for i := w.slotInst[slot]; i >= 0; i = w.inst[i].prevInSlot {
		in := &w.inst[i]
		if !in.alive {
			continue
		}
		if in.creator == ref.UID && in.attempt == attempt {
			return i
		}
		if byUID < 0 && (in.creator == ref.UID || in.ownerTag == ref.UID) {
			byUID = i
		}
		if named < 0 {
			named = i
		}
	}
	if byUID >= 0 || !byName {
		return byUID
	}
	return named
}

// create is CreateMachine: idempotent per key (creator UID and attempt).
func (w *shard) create(mi int32, c *driverapi.Call, now int64) driverapi.Result {
	slot := w.slotOf(c.Machine.Name)
	if slot < 0 {
		return w.t.result(c.Method, int(driverapi.InvalidArgument))
	}
	for i := w.slotInst[slot]; i >= 0; i = w.inst[i].prevInSlot {
		if in := &w.inst[i]; in.alive && in.creator == c.Machine.UID && in.attempt == c.Attempt {
			return driverapi.Result{Method: c.Method, ProviderID: in.providerID, NodeName: in.nodeName}
		}
	}
	i := w.newInstance(mi, slot, c, now)
	w.creates++
	if w.creates == w.o.duplicateCreate {
		// Test hook: a provider that forgets its idempotency.
		w.newInstance(mi, slot, c, now)
	}
	in := &w.inst[i]
	return driverapi.Result{Method: c.Method, ProviderID: in.providerID, NodeName: in.nodeName}
}

func (w *shard) newInstance(mi, slot int32, c *driverapi.Call, now int64) int32 {
	i := int32(len(w.inst))
	num := strconv.Itoa(int(i))
	in := instance{
		providerID: "sim:///shard-" + w.prefix + num, nodeName: "n" + w.prefix + num,
		ownerTag: c.Machine.UID, creator: c.Machine.UID, attempt: c.Attempt,
		created: now, gen: c.Generation, mi: mi, slot: slot, prevInSlot: w.slotInst[slot], alive: true,
	}
	in.node.badSince = now
	in.meta, _ = codeOf(c.Metadata)
	if w.fault(w.o.OwnerTagLost) {
		in.ownerTag = ""
		w.stats.OwnerTagsLost++
	}
	if w.fault(w.o.StaleNode) {
		// The cloud names the new instance's node like a node object that
		// is still there (a stale node, MCM A5).
		if j := w.recent[w.rng.IntN(len(w.recent))]; j >= 0 && w.inst[j].node.exists {
			in.nodeName, in.stale = w.inst[j].nodeName, true
			w.stats.StaleNodes++
		}
	}
	for j := w.slotInst[slot]; j >= 0; j = w.inst[j].prevInSlot {
		if o := &w.inst[j]; o.alive && o.creator == in.creator && !o.stale && !in.stale {
			w.violation(mi, "double create: CreateMachine made instance "+in.providerID+" while "+o.providerID+
				" of the same machine UID is alive")
			break
		}
	}
	w.inst = append(w.inst, in)
	w.slotInst[slot] = i
	w.stats.Instances++
	return i
}

// initialize is InitializeMachine: the instance boots and its kubelet
// registers the node one to three minutes after creation.
func (w *shard) initialize(i int32, now int64) {
	in := &w.inst[i]
	in.init = true
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
	at := max(in.created+w.between(time.Minute, 150*time.Second), now+int64(time.Second))
	w.push(at, evRegister, i, 0)
}

// deleteInstance is DeleteMachine: the instance goes, its node turns
// NotReady and the cloud's node controller deletes it a little later.
func (w *shard) deleteInstance(i int32, now int64) {
	in := &w.inst[i]
	in.alive = false
	w.stats.InstancesDeleted++
	if in.node.exists {
		w.refreshNode(i)
		w.push(now+w.between(30*time.Second, 2*time.Minute), evNodeGC, i, 0)
	}
}

// patchMetadata is UpdateMetadata: it sets and removes keys and records
// the owner, each change dropped silently at the DropKey rate. The keys
// are visited in a fixed order, so the random stream does not depend on
// map iteration.
func (w *shard) patchMetadata(in *instance, c *driverapi.Call) {
	for k := range metaKeyCount {
		v, ok := c.Metadata[metaKey(k)]
		if !ok || w.dropKey() {
			continue
		}
		if j := valueIndex(k, v); j >= 0 {
			in.meta = in.meta.with(k, j+1)
		}
	}
	for _, key := range c.Remove {
		if k := keyIndex(key); k >= 0 && !w.dropKey() {
			in.meta = in.meta.with(k, 0)
		}
	}
	if !w.dropKey() {
		in.ownerTag = c.Machine.UID
	}
}

func (w *shard) dropKey() bool {
	if w.fault(w.o.DropKey) {
		w.stats.DroppedKeys++
		return true
	}
	return false
}

// tables are what every shard reads and none writes: the fault table,
// the metadata maps, the texts of error results, the outage time.
type tables struct {
	faults     *faultTable
	meta       *metaTable
	texts      [outCount]string
	msgs       [outCount]string
	uninit     string
	uninitText string
	outageAt   int64
}

func newTables(o *Options, outageAt int64) (*tables, error) {
	ft, err := newFaultTable(o.DriverFaults)
	if err != nil {
		return nil, err
	}
	t := &tables{faults: ft, meta: newMetaTable(), outageAt: outageAt}
	for out := 1; out < outUndecodable; out++ {
		c := driverapi.Code(out)
		t.msgs[out] = "simulated " + c.String()
		t.texts[out] = driverapi.Error(c, t.msgs[out]).Error()
	}
	t.msgs[outUndecodable] = "read tcp 10.0.0.1:443: connection reset by peer"
	t.texts[outUndecodable] = t.msgs[outUndecodable]
	t.uninit = "instance not initialized"
	t.uninitText = driverapi.Error(driverapi.Uninitialized, t.uninit).Error()
	return t, nil
}

// result returns the result of a call of method m that failed with
// outcome out, as driverapi.ResultOf builds it from the error.
func (t *tables) result(m driverapi.Method, out int) driverapi.Result {
	if out == outUndecodable {
		return driverapi.Result{Method: m, Code: driverapi.Unknown, Undecodable: true,
			Message: t.msgs[out], Text: t.texts[out]}
	}
	return driverapi.Result{Method: m, Code: driverapi.Code(out), Message: t.msgs[out], Text: t.texts[out]}
}

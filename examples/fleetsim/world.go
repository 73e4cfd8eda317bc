package fleetsim

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
)

// epoch is the simulated time the run starts at.
var epoch = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC).UnixNano()

// tm turns simulated nanoseconds into a time.Time.
func tm(ns int64) time.Time { return time.Unix(0, ns).UTC() }

// machine is one machine object with its persisted status and the
// simulator's bookkeeping. Machines live in a slice and are named by their
// index; a machine that is gone stays, marked, so indices never move.
type machine struct {
	obj   lifecycle.Object
	st    lifecycle.Status
	next  int64 // when its queued reconcile is due
	busy  int64 // when its last pass ended
	tok   uint32
	owner int32
	slot  int32 // name slot
	mv    uint8 // desired metadata version
	bits  mbits
}

type mbits uint8

const (
	mQueued mbits = 1 << iota // a reconcile is queued
	mGone                     // the object is deleted
	mGrant                    // the limiter's grant of the last fleet pass
	mToken                    // its bootstrap token exists
	mRan                      // it reached Running once
)

func (m *machine) gone() bool     { return m.bits&mGone != 0 }
func (m *machine) deleting() bool { return !m.obj.DeletionTime.IsZero() }

// owner is a MachineSet: it keeps desired machines alive, deletes Failed
// ones and replaces them.
type owner struct {
	uid                string
	desired, live      int32 // live: neither deleting nor gone
	deleting           int32
	unknown, failed    int32 // Unknown; Failed and not deleting
	needsRepl, granted int32
	list               []int32 // its machines (gone ones dropped lazily)
	free               []int32 // name slots of its gone machines; the newest is reused first
}

// shard is one independent simulation: a set of owners with their
// machines, a provider and a cluster, a random stream and an event queue.
type shard struct {
	o   *Options
	t   *tables
	cfg lifecycle.Config
	// checked is cfg checked, for StepInto. Options.Validate has checked
	// it before any shard is built; were it invalid, every step would
	// decide input.invalid-config and the checks would report it.
	checked lifecycle.Checked
	index   int
	prefix  string // "<shard>-", in names
	rng     *rand.Rand
	q       queue

	now, activeEnd, end int64
	clock               int64 // the latest clock a step of the current pass was given
	active, faulty      bool
	observer            lifecycle.Observer
	outageNodes         []int32 // nodes NotReady for the outage

	machines    []machine
	owners      []owner
	names       []string // by name slot
	slotNode    []int32  // instance+1 of the node labelled with the slot's name
	slotInst    []int32  // newest instance created for the slot's name, -1 none
	slotMachine []int32  // newest machine of the slot's name
	inst        []instance
	recent      [32]int32 // recently registered nodes (their instances), for the stale-node fault
	recentNext  int
	uidSeq      int
	creates     int

	// Scratch, reused so steps allocate nothing.
	in      lifecycle.Input
	d       lifecycle.Decision
	out     lifecycle.Outcome
	members []lifecycle.Member
	idxs    []int32
	grants  []lifecycle.Grant
	list    []driverapi.Instance
	calls   []driverapi.Call

	stats   Stats
	ttr     []time.Duration
	viol    []Violation
	nviol   int
	summary lifecycle.Summary
	tr      *tracer
}

// newShard builds shard index with its share of the owners: owner g goes to
// shard g mod Shards.
func newShard(o *Options, t *tables, index int, tr *tracer) *shard {
	w := &shard{
		o: o, t: t, cfg: o.Config, index: index, tr: tr,
		prefix: strconv.Itoa(index) + "-",
		rng:    rand.New(rand.NewPCG(o.Seed, uint64(index)+1)),
		now:    epoch, activeEnd: epoch + int64(o.Active), end: epoch + int64(o.Active+o.Drain),
		active: true, faulty: o.Faults,
	}
	w.checked, _ = o.Config.Check()
	w.stats.init()
	owners := (o.Machines + o.PerOwner - 1) / o.PerOwner
	size := 0
	for g := index; g < owners; g += o.shards() {
		n := min(o.PerOwner, o.Machines-g*o.PerOwner)
		w.owners = append(w.owners, owner{uid: "ms-" + strconv.Itoa(g), desired: int32(n)})
		size += n
	}
	w.machines = make([]machine, 0, size+size/4)
	w.inst = make([]instance, 0, size+size/4)
	w.stats.Machines, w.stats.Owners = size, len(w.owners)
	for i := range w.recent {
		w.recent[i] = -1
	}
	for oi := range w.owners {
		for range w.owners[oi].desired {
			at := epoch
			if o.Ramp > 0 {
				at += w.rng.Int64N(int64(o.Ramp) + 1)
			}
			w.createMachine(int32(oi), at)
		}
	}
	w.push(epoch+int64(o.FleetEvery), evFleet, 0, 0)
	w.push(epoch+int64(o.OrphanEvery), evOrphans, 0, 0)
	if o.Faults && o.Outage > 0 {
		w.push(t.outageAt, evOutageStart, 0, 0)
		w.push(t.outageAt+int64(o.Outage), evOutageEnd, 0, 0)
	}
	w.push(w.activeEnd, evActiveEnd, 0, 0)
	if o.Teardown > 0 {
		w.push(epoch+int64(o.Teardown), evTeardown, 0, 0)
	}
	return w
}

func (w *shard) push(at int64, k evKind, idx int32, tok uint32) {
	w.q.push(event{at: at, kind: k, idx: idx, tok: tok})
}

// chance reports true with probability p, drawing only when p > 0.
func (w *shard) chance(p float64) bool { return p > 0 && w.rng.Float64() < p }

// fault is chance for a fault: never once the faults stopped.
func (w *shard) fault(p float64) bool { return w.faulty && w.chance(p) }

// between returns a duration within [a, b].
func (w *shard) between(a, b time.Duration) int64 {
	if b <= a {
		return int64(a)
	}
	return int64(a) + w.rng.Int64N(int64(b-a)+1)
}

// run processes the events until the end, then checks the fleet.
func (w *shard) run() {
	for w.q.len() > 0 && w.q.peek().at <= w.end {
		e := w.q.pop()
		w.now = e.at
		w.handle(&e)
		if w.tr != nil && w.tr.done {
			return
		}
	}
	w.now = w.end
	w.finalChecks()
}

func (w *shard) handle(e *event) {
	switch e.kind {
	case evReconcile:
		m := &w.machines[e.idx]
		if m.bits&mQueued == 0 || e.tok != m.tok || m.gone() {
			return // superseded
		}
		m.bits &^= mQueued
		if m.busy > w.now {
			// One worker per machine: a pass starts after the last ended.
			w.enqueue(e.idx, m.busy)
			return
		}
		w.pass(e.idx)
	case evRegister:
		w.register(e.idx)
	case evReady:
		w.inst[e.idx].node.booted = true
		w.refreshNode(e.idx)
	case evFlap, evDie:
		w.nodeFault(e)
	case evRejoin:
		w.rejoin(e.idx)
	case evRecover:
		if n := &w.inst[e.idx].node; n.down > 0 {
			n.down--
			w.refreshNode(e.idx)
		}
	case evNodeGC:
		if i := &w.inst[e.idx]; i.node.exists && !i.alive {
			w.removeNode(e.idx)
		}
	case evUpdate, evMetadata, evScaleDown:
		w.scenario(e)
	case evForceRemove:
		w.forceRemove(e.idx)
	case evFleet:
		w.fleetPass()
		w.push(w.now+int64(w.o.FleetEvery), evFleet, 0, 0)
	case evOrphans:
		w.collectOrphans()
		w.push(w.now+int64(w.o.OrphanEvery), evOrphans, 0, 0)
	case evOutageStart:
		w.outageBegins()
	case evOutageEnd:
		w.outageEnds()
	case evActiveEnd:
		w.active, w.faulty = false, false
	case evTeardown:
		w.teardown()
	}
}

// enqueue asks for a reconcile of machine mi at time at; a reconcile queued
// for earlier stands (a work queue de-duplicates its keys).
func (w *shard) enqueue(mi int32, at int64) {
	m := &w.machines[mi]
	if m.gone() || m.bits&mQueued != 0 && m.next <= at {
		return
	}
	m.tok++
	m.next = at
	m.bits |= mQueued
	w.push(at, evReconcile, mi, m.tok)
}

// createMachine makes a new machine of owner oi at time at, as its
// MachineSet does, and plans its scenario.
func (w *shard) createMachine(oi int32, at int64) int32 {
	o := &w.owners[oi]
	var slot int32
	if n := len(o.free); n > 0 && w.chance(w.o.Reuse) {
		slot, o.free = o.free[n-1], o.free[:n-1]
		w.stats.NamesReused++
	} else {
		slot = int32(len(w.names))
		w.names = append(w.names, "m"+w.prefix+strconv.Itoa(int(slot)))
		w.slotNode = append(w.slotNode, 0)
		w.slotInst = append(w.slotInst, -1)
		w.slotMachine = append(w.slotMachine, 0)
	}
	mi := int32(len(w.machines))
	w.uidSeq++
	w.machines = append(w.machines, machine{
		obj: lifecycle.Object{
			Name: w.names[slot], UID: "uid-" + w.prefix + strconv.Itoa(w.uidSeq), Owner: o.uid,
			CreationTime: tm(at), UpdateGeneration: 1, Metadata: w.t.meta.of(metaVersion(0)),
		},
		owner: oi, slot: slot,
	})
	w.slotMachine[slot] = mi
	o.list = append(o.list, mi)
	o.live++
	w.stats.Created++
	w.enqueue(mi, at)
	w.plan(mi, at)
	return mi
}

// plan schedules the scenario of a new machine within the active period.
func (w *shard) plan(mi int32, at int64) {
	if at >= w.activeEnd {
		return
	}
	span := w.activeEnd - at
	when := func() int64 { return at + w.rng.Int64N(span) }
	if w.chance(w.o.Update) {
		w.push(when(), evUpdate, mi, 0)
	}
	if w.chance(w.o.Metadata) {
		w.push(when(), evMetadata, mi, 0)
	}
	if w.chance(w.o.ScaleDown) {
		w.push(when(), evScaleDown, mi, 0)
	}
	if !w.o.Faults || w.o.Flap+w.o.Dead == 0 {
		return
	}
	switch u := w.rng.Float64(); {
	case u < w.o.Flap:
		tok := uint32(w.between(w.o.FlapMin, w.o.FlapMax)/int64(time.Second)) << 1
		if w.chance(w.o.NodeGone) {
			tok |= 1
		}
		w.push(when(), evFlap, mi, tok)
	case u < w.o.Flap+w.o.Dead:
		w.push(when(), evDie, mi, 0)
	}
}

// scenario carries out a planned change of a machine's spec, or its
// scale-down.
func (w *shard) scenario(e *event) {
	m := &w.machines[e.idx]
	if !w.active || m.gone() || m.deleting() {
		return
	}
	switch e.kind {
	case evUpdate:
		m.obj.UpdateGeneration++
		w.stats.HotUpdates++
		if w.tracing(e.idx) {
			w.note(e.idx, "the spec asks hot-update generation "+strconv.FormatInt(m.obj.UpdateGeneration, 10))
		}
	case evMetadata:
		m.mv++
		m.obj.Metadata = w.t.meta.of(metaVersion(m.mv))
		w.stats.MetadataChanges++
		if w.tracing(e.idx) {
			w.note(e.idx, "the spec asks metadata version "+strconv.Itoa(int(m.mv%4)))
		}
	case evScaleDown:
		w.owners[m.owner].desired--
		w.stats.ScaledDown++
		if w.tracing(e.idx) {
			w.note(e.idx, "the owner scales down: deletion requested")
		}
		w.deleteByOwner(e.idx)
		return
	}
	w.enqueue(e.idx, w.now)
}

package fleetsim

import (
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
	"github.com/purelifecycle/machine/lifecycle/pass"
)

// epoch is the simulated time the run starts at.
var epoch = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC).UnixNano()

// tm turns simulated nanoseconds into a time.Time.
func tm(ns int64) time.Time { return time.Unix(0, ns).UTC() }

// machine is one machine object with its persisted status and the
// simulator's bookkeeping. Machines live in a slice and are named by their
// index; a machine that is gone stays, marked, so indices never move.
type machine struct {
	obj    lifecycle.Object
	st     lifecycle.Status
	next   int64 // when its queued reconcile is due
	busy   int64 // when its last pass ended
	goneAt int64 // when its object was deleted (mGone)
	tok    uint32
	owner  int32
	slot   int32 // name slot
	ip     int32 // instance+1 of the providerID its saved status records, 0 none
	mv     uint8 // desired metadata version
	bits   mbits
	more   mbits2
	// problem is the lifecycle.Problem the machine itself has now (the
	// Problem fault); its owner's class may have one too.
	problem uint8
	zone    uint8 // zone+1 of the zone its owner placed it in, 0 none
}

type mbits uint8

const (
	mQueued   mbits = 1 << iota // a reconcile is queued
	mGone                       // the object is deleted
	mGrant                      // the limiter's grant of the last fleet pass
	mToken                      // its bootstrap token exists
	mRan                        // it reached Running (or Available) once
	mLagged                     // a write of it has not reached the cache yet (shard.lagged)
	mStaleOut                   // its next pass is preceded by a step given an outcome of an older decision (shard.staleOuts)
	// mHealthFailed: the world saw it saved Failed by the health timeout,
	// and it has not been saved Running since; with its deletion it counts
	// as a replacement in flight until it is gone.
	mHealthFailed
)

type mbits2 uint8

const (
	// mReplaces: its owner created it to replace a machine Failed by the
	// health timeout; it counts as a replacement in flight until it is
	// saved Running or Available, or is gone.
	mReplaces mbits2 = 1 << iota
	// mMetaDirty: what its metadata verdict depends on besides its status
	// changed since it was last checked (the desired metadata, its
	// instance's metadata or owner, the copy a pass started from).
	mMetaDirty
	// mPreserveGrant: the limiter's preservation grant of the last fleet
	// pass (Grant.Preserve).
	mPreserveGrant
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
	// preserving counts its machines holding the limiter's preservation
	// grant.
	preserving int32
	// healthReplace counts the machines Failed by the health timeout that
	// it deleted and has not created a replacement for yet.
	healthReplace int32
	list          []int32 // its machines (gone ones dropped lazily)
	free          []int32 // name slots of its gone machines; the newest is reused first
	// problem is the lifecycle.Problem its machine class has now, and
	// problemEnd when its last problem ended.
	problem    uint8
	problemEnd int64
	nextZone   uint8 // the zone its next machine goes to (placeZone)
}

// lagEntry is a machine as the controller's cache still shows it: the
// object before a write that reaches the cache late, and the sequence
// number its status had then (for the trace), until when it arrives.
type lagEntry struct {
	obj   lifecycle.Object
	seq   uint32
	until int64
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
	// zoneDown: the zone outage is on, keeping zoneNodes NotReady.
	// zoneChecks: the world checks the limiter by zone (zoneSetup).
	zoneDown, zoneChecks bool
	zoneNodes            []int32
	// ip and pv: the world runs and checks the in-place update and the
	// preservation, flows either (flowSetup); flow is the world's record
	// of each machine's flows, by machine index, while flows.
	ip, pv, flows bool
	flow          []flowRec
	// held holds until when the limiter holds machines back for their
	// zone's outage; problemEnded when machines' problems last ended;
	// grantView, with a lagging fleet view, the time as of which the view
	// showed the fleet when the limiter granted a machine its replacement
	// (checkReplacements).
	held, problemEnded, grantView map[int32]int64
	// classProblems counts the owners whose class has a problem now.
	classProblems int
	// degraded counts what degrades the observer now (the outage, blips);
	// recovered is the real time it last became healthy again, 0 never.
	degraded  int
	recovered int64
	// offset is how far the controller's clock is off, all run long (the
	// ClockOffset fault); tolerance is how early a wrong clock can make a
	// deadline fire: the offset's size plus ClockJumpMax when clock jumps
	// are on.
	offset, tolerance int64

	// The current pass: stepNow is the real time of its current step;
	// base the status sequence number its saves are made from (the copy it
	// started from, then its own last save), which the API server compares
	// with the saved one; injecting that the current step was given an
	// outcome of an older decision.
	stepNow   int64
	base      uint32
	injecting bool
	// lagged holds the machines whose writes reach the cache late;
	// staleOuts the outcomes of older decisions fed to the machines' next
	// passes; kept and nkept the outcomes a pass keeps for that.
	lagged    map[int32]lagEntry
	staleOuts map[int32]lifecycle.Outcome
	kept      [2]lifecycle.Outcome
	nkept     int
	injected  lifecycle.Outcome

	machines    []machine
	owners      []owner
	names       []string // by name slot
	slotNode    []int32  // instance+1 of the node labelled with the slot's name
	slotInst    []int32  // newest instance made for the slot's name, -1 none (the provider's Newest, kept at hand)
	slotMachine []int32  // newest machine of the slot's name
	// p is the provider; inst the simulation's side of its instances, by
	// the same index. caller and callAt are the machine (-1: orphan
	// collection) and the time of the call it is carrying out; adding is
	// set while it makes a second instance for the duplicate-create hook.
	p          *lifecycletest.Provider
	inst       []instance
	caller     int32
	callAt     int64
	adding     bool
	recent     [32]int32 // recently registered nodes (their instances), for the stale-node fault
	recentNext int
	uidSeq     int
	creates    int

	// Scratch, reused so passes and steps allocate nothing: the shell of
	// the current pass and its pass.Scratch.
	sh      machineShell
	scratch pass.Scratch
	probed  lifecycle.Decision // of a step given an outcome of an older decision (machineShell.probe)
	fleetIn lifecycle.Input    // what a fleet function reads of one machine
	members []lifecycle.Member
	idxs    []int32
	grants  []lifecycle.Grant
	list    []driverapi.Instance
	calls   []driverapi.Call

	// The faults drawn at every step, save, write or pass: countdowns to
	// their next occurrence.
	cdJump, cdNodeRead, cdLostWrite, cdWriteFail, cdCrash countdown
	cdCacheLag, cdStaleOutcome, cdBlip                    countdown

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
	w.zoneSetup()
	w.flowSetup()
	w.checked, _ = w.cfg.Check()
	w.stats.init()
	for _, c := range []struct {
		cd *countdown
		p  float64
	}{
		{&w.cdJump, o.ClockJump}, {&w.cdNodeRead, o.NodeReadFail}, {&w.cdLostWrite, o.LostWrite},
		{&w.cdWriteFail, o.WriteFail}, {&w.cdCrash, o.Crash}, {&w.cdCacheLag, o.CacheLag},
		{&w.cdStaleOutcome, o.StaleOutcome}, {&w.cdBlip, o.ObserverBlip},
	} {
		w.initCountdown(c.cd, c.p)
	}
	if o.Faults && o.ClockOffset > 0 {
		w.offset = w.rng.Int64N(2*int64(o.ClockOffset)+1) - int64(o.ClockOffset)
		if w.offset >= 0 {
			w.stats.ClockAhead++
		} else {
			w.stats.ClockBehind++
		}
		w.stats.ClockOffsetSum += time.Duration(abs(w.offset))
	}
	w.tolerance = abs(w.offset)
	if o.Faults && o.ClockJump > 0 {
		w.tolerance += int64(o.ClockJumpMax)
	}
	if o.broken.noTolerance {
		w.tolerance = 0
	}
	owners := (o.Machines + o.PerOwner - 1) / o.PerOwner
	size := 0
	for g := index; g < owners; g += o.shards() {
		n := min(o.PerOwner, o.Machines-g*o.PerOwner)
		w.owners = append(w.owners, owner{uid: "ms-" + strconv.Itoa(g), desired: int32(n)})
		size += n
	}
	if o.Faults && o.Problem > 0 {
		// Class problems: an owner's machine class is unavailable, not
		// ready, or has an invalid node template, for a while.
		for oi := range w.owners {
			if w.chance(o.Problem) {
				kind := lifecycle.ProblemClassUnavailable + lifecycle.Problem(w.rng.IntN(3))
				w.push(epoch+w.rng.Int64N(int64(o.Active)), evClassProblem, int32(oi), w.problemTok(kind))
			}
		}
	}
	w.machines = make([]machine, 0, size+size/4)
	w.p = w.newProvider()
	w.p.Grow(size + size/4)
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
	if o.Faults && o.ZoneOutage > 0 {
		w.push(t.zoneOutageAt, evZoneOutageStart, 0, 0)
		w.push(t.zoneOutageAt+int64(o.ZoneOutage), evZoneOutageEnd, 0, 0)
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

// A countdown draws the occurrences of a fault that has a rate p at each
// of many trials (each step, each save, each write) by the gaps between
// them, which follow the geometric distribution: the same process as a
// draw at every trial, for one draw per occurrence.
type countdown struct {
	left int64   // trials until the next occurrence, counting it
	lnq  float64 // ln(1-p); -Inf when p is 1
}

const never = math.MaxInt64

func (w *shard) initCountdown(c *countdown, p float64) {
	switch {
	case !w.o.Faults || !(p > 0):
		c.left = never
	case p >= 1:
		c.lnq, c.left = math.Inf(-1), 1
	default:
		c.lnq = math.Log1p(-p)
		c.left = w.gap(c)
	}
}

// gap draws the number of trials to the next occurrence, counting it.
func (w *shard) gap(c *countdown) int64 {
	if math.IsInf(c.lnq, -1) {
		return 1
	}
	g := 1 + math.Floor(math.Log1p(-w.rng.Float64())/c.lnq)
	if !(g < 1<<62) {
		return 1 << 62
	}
	return int64(g)
}

// occurs counts a trial of the fault of c and reports whether the fault
// occurs at it: never once the faults stopped.
func (w *shard) occurs(c *countdown) bool {
	c.left--
	return c.left <= 0 && w.faulty && w.fires(c)
}

// fires draws the gap to the fault's next occurrence after this one. It
// is kept out of line, so that occurs, called at every trial, is inlined.
//
//go:noinline
func (w *shard) fires(c *countdown) bool {
	c.left = w.gap(c)
	return true
}

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
		if w.inst[e.idx].node.exists && !w.alive(e.idx) {
			w.removeNode(e.idx)
		}
	case evUpdate, evMetadata, evScaleDown, evInPlace:
		w.scenario(e)
	case evPreserve:
		w.annotate(e)
	case evPreserveStop:
		w.stopPreserve(e)
	case evAgent:
		w.agentStarts(e)
	case evAgentDone:
		w.agentFinishes(e)
	case evForceRemove:
		w.forceRemove(e.idx)
	case evFleet:
		w.fleetPass()
		if w.flows && !w.observer.Degraded {
			w.flowScan()
		}
		w.push(w.now+int64(w.o.FleetEvery), evFleet, 0, 0)
	case evOrphans:
		w.collectOrphans()
		w.push(w.now+int64(w.o.OrphanEvery), evOrphans, 0, 0)
	case evOutageStart:
		w.outageBegins()
	case evOutageEnd:
		w.outageEnds()
	case evZoneOutageStart:
		w.zoneOutageBegins()
	case evZoneOutageEnd:
		w.zoneOutageEnds()
	case evActiveEnd:
		w.active, w.faulty = false, false
	case evTeardown:
		w.teardown()
	case evBlipEnd:
		w.restore()
	case evProblem, evProblemEnd, evClassProblem, evClassProblemEnd:
		w.problemEvent(e)
	case evForceLabel:
		w.forceLabel(e.idx)
	}
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
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
		owner: oi, slot: slot, zone: w.placeZone(o),
	})
	if w.flows {
		w.flow = append(w.flow, flowRec{})
	}
	if o.healthReplace > 0 {
		o.healthReplace--
		w.machines[mi].more |= mReplaces
	}
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
	if w.o.Faults && w.chance(w.o.Problem) {
		w.push(when(), evProblem, mi, w.problemTok(lifecycle.ProblemInvalidMachine))
	}
	if w.chance(w.o.InPlace.Share) {
		w.push(when(), evInPlace, mi, 0)
	}
	w.planPreserve(mi, at)
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
	w.lagWrite(e.idx, w.now)
	switch e.kind {
	case evUpdate:
		m.obj.UpdateGeneration++
		w.stats.HotUpdates++
		if w.tracing(e.idx) {
			w.note(e.idx, "the spec asks hot-update generation "+strconv.FormatInt(m.obj.UpdateGeneration, 10))
		}
	case evMetadata:
		m.mv++
		m.more |= mMetaDirty
		m.obj.Metadata = w.t.meta.of(metaVersion(m.mv))
		w.stats.MetadataChanges++
		if w.tracing(e.idx) {
			w.note(e.idx, "the spec asks metadata version "+strconv.Itoa(int(m.mv%4)))
		}
	case evInPlace:
		w.inPlaceAsked(e.idx)
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

package fleetsim

// evKind is the kind of a simulation event.
type evKind uint8

const (
	// evReconcile reconciles machine idx (valid while tok is the
	// machine's current token).
	evReconcile evKind = iota
	// evRegister: instance idx's kubelet registers its node.
	evRegister
	// evReady: instance idx's node finished booting (Ready unless
	// something keeps it NotReady).
	evReady
	// evFlap: machine idx's node turns NotReady for tok>>1 seconds; its
	// object is deleted meanwhile when tok&1 is set.
	evFlap
	// evDie: machine idx's node turns NotReady for good.
	evDie
	// evRecover: one cause that kept instance idx's node NotReady ends.
	evRecover
	// evRejoin: instance idx's kubelet registers its deleted node again.
	evRejoin
	// evNodeGC: the cloud node controller deletes the node of instance idx
	// if its instance is gone.
	evNodeGC
	// evUpdate: machine idx's desired hot-update generation rises.
	evUpdate
	// evMetadata: machine idx's desired metadata changes.
	evMetadata
	// evScaleDown: machine idx's owner scales down by deleting it.
	evScaleDown
	// evForceRemove: someone removes machine idx's finalizer by hand while
	// it is being deleted.
	evForceRemove
	// evFleet: a fleet pass (owners, limiter).
	evFleet
	// evOrphans: orphan collection.
	evOrphans
	// evOutageStart and evOutageEnd bound the observer outage.
	evOutageStart
	evOutageEnd
	// evActiveEnd: the scenario and the faults stop.
	evActiveEnd
	// evTeardown: every owner scales down to zero.
	evTeardown
	// evBlipEnd: an observer blip ends.
	evBlipEnd
	// evProblem: machine idx has the problem tok&7 for tok>>3 seconds;
	// evProblemEnd: it is fixed.
	evProblem
	evProblemEnd
	// evClassProblem: owner idx's class has the problem tok&7 for tok>>3
	// seconds; evClassProblemEnd: it is fixed.
	evClassProblem
	evClassProblemEnd
	// evForceLabel: someone sets the force-deletion label on machine idx
	// while it is being deleted.
	evForceLabel
	// evZoneOutageStart and evZoneOutageEnd bound the zone outage.
	evZoneOutageStart
	evZoneOutageEnd
	// evInPlace: machine idx's owner asks an in-place update.
	evInPlace
	// evPreserve: a user annotates machine idx, or its node, for
	// preservation (tok: tokWhenFailed, tokOnNode); evPreserveStop: the
	// user stops it (tok: tokRemove).
	evPreserve
	evPreserveStop
	// evAgent: instance idx's node agent starts the update it was told to
	// make (tok: its token << 2); evAgentDone: it is done (tok: its token
	// << 2 | its verdict).
	evAgent
	evAgentDone
)

// event is one entry of the event queue.
type event struct {
	at   int64 // simulated Unix nanoseconds
	seq  uint64
	idx  int32
	tok  uint32
	kind evKind
}

func (a *event) before(b *event) bool {
	return a.at < b.at || a.at == b.at && a.seq < b.seq
}

// queue is a 4-ary min-heap of events ordered by time, then by the order
// they were pushed in, so equal times are served first come, first served.
type queue struct {
	h   []event
	seq uint64
}

func (q *queue) len() int { return len(q.h) }

func (q *queue) push(e event) {
	q.seq++
	e.seq = q.seq
	q.h = append(q.h, e)
	i := len(q.h) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !q.h[i].before(&q.h[p]) {
			break
		}
		q.h[i], q.h[p] = q.h[p], q.h[i]
		i = p
	}
}

// peek returns the earliest event; the queue must not be empty.
func (q *queue) peek() *event { return &q.h[0] }

func (q *queue) pop() event {
	top := q.h[0]
	n := len(q.h) - 1
	last := q.h[n]
	q.h = q.h[:n]
	if n == 0 {
		return top
	}
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		best := c
		end := min(c+4, n)
		for j := c + 1; j < end; j++ {
			if q.h[j].before(&q.h[best]) {
				best = j
			}
		}
		if !q.h[best].before(&last) {
			break
		}
		q.h[i] = q.h[best]
		i = best
	}
	q.h[i] = last
	return top
}

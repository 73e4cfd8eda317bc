package fleetsim

import (
	"fmt"
	"strings"
	"time"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// Preservation. Users annotate a share of the machines, or their nodes,
// now or when-failed at a random time of the active period, and later set
// a share of those annotations to false or remove them; with
// Config.AutoPreserve the limiter grants the preservation of each owner's
// newest Failed machines that no annotation names (Grant.Preserve). The
// owner (a MachineSet) respects preservation as MCM's does: it does not
// replace a Failed machine whose expiry (Status.PreserveUntil) is ahead or
// whose annotation asks for its preservation, nor one the limiter chose to
// auto-preserve (MCM's MachineSet chooses those itself, with the
// auto-preserved annotation; here Limit chooses, and the owner asks it
// first). A kept machine counts towards its owner's replicas.
//
// The world judges: the owner never replaces a Failed machine while a
// preservation of it, as the world saw it begin, has not reached its
// expiry, nor one whose annotation asked for its preservation before it
// failed and whose preservation never began; no owner ever has more
// auto-preserved Failed machines (no annotation ever named them, their
// expiry ahead) than Config.AutoPreserve; a Preserved condition is written
// True for a Failed machine only once its node has no pods a drain
// removes; every preservation ends by its expiry (the expiry cleared, the
// annotation no longer asking, the node without the autoscaler's
// annotations and its Preserved condition not True) within a resync; once
// a preservation stopped, its node is given back within a resync, and a
// node cordoned for it is uncordoned within a resync of its machine's
// recovery; a machine the limiter granted its preservation begins it
// within a pass; an auto-preservation that ran to its expiry does not
// begin again in the same Failed spell; no preservation writes its
// condition over and over.

// PreserveOptions is the preservation setting.
type PreserveOptions struct {
	// Share is the share of machines annotated for preservation, now or
	// when-failed evenly, at a random time of the active period; 0: none
	// (auto-preservation is Config.AutoPreserve).
	Share float64
	// Node is the share of those annotations put on the machine's node
	// rather than on the machine.
	Node float64
	// Stop is the share of those annotations the user later sets to false
	// or removes (evenly), at a random time after it was set.
	Stop float64
}

// DefaultAutoPreserve and DefaultPreserveTimeout are the auto-preservation
// maximum and the preservation timeout the command runs with when it asks
// for preservation and sets neither: a timeout that passes within the
// default run, so that preservations end in it.
const (
	DefaultAutoPreserve    = 1
	DefaultPreserveTimeout = 40 * time.Minute
)

// The bits of an evPreserve token: the annotation's value is when-failed
// (else now), and it goes on the node; of an evPreserveStop token: the
// annotation is removed (else set to false).
const (
	tokWhenFailed uint32 = 1 << iota
	tokOnNode
	tokRemove = 1
)

// planPreserve draws machine mi's annotation, and its stop, within
// [at, activeEnd).
func (w *shard) planPreserve(mi int32, at int64) {
	if !w.chance(w.o.Preserve.Share) {
		return
	}
	span := w.activeEnd - at
	when := at + w.rng.Int64N(span)
	tok := uint32(w.rng.IntN(2))
	if w.chance(w.o.Preserve.Node) {
		tok |= tokOnNode
	}
	w.push(when, evPreserve, mi, tok)
	if w.chance(w.o.Preserve.Stop) {
		w.push(when+1+w.rng.Int64N(w.activeEnd-when), evPreserveStop, mi, uint32(w.rng.IntN(2)))
	}
}

// annotate is a user annotating machine mi, or its node, for
// preservation; without a node, the machine.
func (w *shard) annotate(e *event) {
	mi := e.idx
	m := &w.machines[mi]
	if !w.active || m.gone() || m.deleting() {
		return
	}
	value := lifecycle.PreserveNow
	if e.tok&tokWhenFailed != 0 {
		value = lifecycle.PreserveWhenFailed
	}
	rec := &w.flow[mi].pv
	rec.annotated, rec.annAt = true, w.now
	if value == lifecycle.PreserveNow {
		w.stats.Flows.AnnotatedNow++
	} else {
		w.stats.Flows.AnnotatedWhenFailed++
	}
	where := "the machine"
	if i := w.ownNode(mi); e.tok&tokOnNode != 0 && i >= 0 {
		w.inst[i].node.preserve = value
		w.stats.Flows.OnNodes++
		where = "its node"
		w.nodeChanged(i)
	} else {
		w.lagWrite(mi, w.now)
		m.obj.Preserve = value
		w.enqueue(mi, w.now)
	}
	if w.tracing(mi) {
		w.note(mi, "a user annotates "+where+" preserve="+value.String())
	}
}

// stopPreserve is the user setting machine mi's annotation, or its
// node's, to false, or removing it, if it still asks for preservation.
func (w *shard) stopPreserve(e *event) {
	mi := e.idx
	m := &w.machines[mi]
	if m.gone() || m.deleting() {
		return
	}
	value := lifecycle.PreserveFalse
	if e.tok&tokRemove != 0 {
		value = lifecycle.PreserveUnset
	}
	switch i := w.ownNode(mi); {
	case asks(m.obj.Preserve):
		w.lagWrite(mi, w.now)
		m.obj.Preserve = value
		w.enqueue(mi, w.now)
	case i >= 0 && asks(w.inst[i].node.preserve):
		w.inst[i].node.preserve = value
		w.nodeChanged(i)
	default:
		return
	}
	w.flow[mi].pv.annAt = w.now
	w.stats.Flows.UserStops++
	if w.tracing(mi) {
		w.note(mi, "a user stops the preservation: preserve="+value.String())
	}
}

// asks reports whether annotation value p asks for preservation.
func asks(p lifecycle.Preserve) bool {
	return p == lifecycle.PreserveNow || p == lifecycle.PreserveWhenFailed || p == lifecycle.PreserveAutoPreserved
}

// ownNode returns the instance of machine mi's own node: the node of the
// instance its status records, -1 when it has none.
func (w *shard) ownNode(mi int32) int32 {
	if i := w.machines[mi].ip - 1; i >= 0 && w.alive(i) && w.inst[i].node.exists {
		return i
	}
	return -1
}

// worldAsks returns the annotation that decides machine mi's preservation
// as the world sees it (its node's, when the node has one, else the
// machine's), and where it is.
func (w *shard) worldAsks(mi int32) (lifecycle.Preserve, string) {
	if i := w.ownNode(mi); i >= 0 && w.inst[i].node.preserve != lifecycle.PreserveUnset {
		return w.inst[i].node.preserve, "its node's"
	}
	return w.machines[mi].obj.Preserve, "the machine's"
}

// preservationChanged returns when the world last saw machine mi's
// preservation change (an annotation, a begin, a stop, its expiry
// passing), 0 never.
func (w *shard) preservationChanged(mi int32) int64 {
	if !w.pv {
		return 0
	}
	rec := &w.flow[mi].pv
	t := max(rec.annAt, rec.begin, rec.end)
	if rec.begin != 0 {
		if expiry := rec.begin + int64(w.preserveTimeout(&w.machines[mi].obj)); expiry <= w.now {
			t = max(t, expiry)
		}
	}
	return t
}

// preserveTimeout returns the preservation timeout of machine object o.
func (w *shard) preserveTimeout(o *lifecycle.Object) time.Duration {
	if t := o.Overrides.PreserveTimeout; t > 0 {
		return t
	}
	return w.cfg.PreserveTimeout
}

// ownerKeeps reports whether the owner keeps Failed machine mi rather
// than replacing it: its expiry is ahead by the owner's clock (the
// controller's: MCM's MachineSet runs in the process of its machine
// controller), its annotation asks for its preservation, or the limiter
// chose it for auto-preservation. One it replaces the world judges
// (checkReplaced).
func (w *shard) ownerKeeps(mi int32) bool {
	if !w.pv {
		return false
	}
	m := &w.machines[mi]
	if m.st.PreserveUntil > lifecycle.Stamp(w.now+w.offset) || asks(m.obj.Preserve) || m.more&mPreserveGrant != 0 {
		w.stats.Flows.OwnerKept++
		return true
	}
	w.checkReplaced(mi)
	return false
}

// checkReplaced: the owner replaces Failed machine mi neither while a
// preservation of it, as the world saw it begin, has not reached its
// expiry (less the tolerance of the clock faults), nor, when an
// annotation asked for its preservation before it failed, without its
// preservation ever beginning.
func (w *shard) checkReplaced(mi int32) {
	m, rec := &w.machines[mi], &w.flow[mi]
	timeout := w.preserveTimeout(&m.obj)
	if b := rec.pv.begin; b != 0 && w.now-b < int64(timeout)-w.tolerance {
		w.flowViolation(mi, "replaced by its owner %s after its preservation began (at +%s), before its expiry %s later; expiry saved +%s",
			time.Duration(w.now-b), sinceStart(b), timeout, sinceStart(int64(m.st.PreserveUntil)-w.offset))
		return
	}
	if value, where := w.worldAsks(mi); asks(value) && rec.pv.begin == 0 && rec.pv.annAt < rec.failedAt {
		w.flowViolation(mi, "replaced by its owner, Failed since +%s, though %s annotation preserve=%s (set at +%s) asks for its preservation, which never began",
			sinceStart(rec.failedAt), where, value, sinceStart(rec.pv.annAt))
	}
}

// grantPreserve hands machine mi the limiter's preservation grant, or
// takes it back; a new grant is an input that changed, and the machine
// is reconciled now.
func (w *shard) grantPreserve(mi int32, on bool) {
	m := &w.machines[mi]
	if on == (m.more&mPreserveGrant != 0) {
		return
	}
	w.account(mi, -1)
	if on {
		m.more |= mPreserveGrant
		w.flow[mi].pv.grant = w.now
		if w.tracing(mi) {
			w.note(mi, "the fleet limiter grants its auto-preservation")
		}
		w.enqueue(mi, w.now)
	} else {
		m.more &^= mPreserveGrant
		w.flow[mi].pv.grant = 0
	}
	w.account(mi, 1)
}

// preserveSaved records what a save of machine mi at time now says of its
// preservation, prev being the status saved before: a preservation begun
// (the expiry saved) or stopped (the expiry cleared).
func (w *shard) preserveSaved(mi int32, prev *lifecycle.Status, now int64) {
	m, rec := &w.machines[mi], &w.flow[mi].pv
	st := &m.st
	switch {
	case prev.PreserveUntil == 0 && st.PreserveUntil != 0:
		if rec.expired && rec.spell == int64(st.PhaseSince) && st.Phase == phase.Failed && !rec.annotated {
			w.flowViolation(mi, "its auto-preservation begins again in the Failed spell since +%s, after one ran to its expiry",
				sinceStart(int64(st.PhaseSince)-w.offset))
		}
		rec.begin, rec.spell, rec.expired, rec.writes, rec.reported = now, int64(st.PhaseSince), false, 0, false
		f := &w.stats.Flows
		f.Preservations++
		if st.Phase == phase.Failed {
			f.PreservedFailed++
		}
		if !rec.annotated {
			f.AutoPreserved++
			w.checkAutoPreserve(m.owner)
		}
	case prev.PreserveUntil != 0 && st.PreserveUntil == 0:
		rec.expired = rec.begin != 0 && now-rec.begin >= int64(w.preserveTimeout(&m.obj))-w.tolerance
		if rec.expired {
			w.stats.Flows.Expired++
		} else {
			w.stats.Flows.Stopped++
		}
		rec.begin, rec.end, rec.reported = 0, now, false
	}
}

// autoPreserved reports whether the world counts machine mi as
// auto-preserved now: Failed and not being deleted, its expiry ahead by
// the controller's clock, and no annotation ever named it.
func (w *shard) autoPreserved(mi int32) bool {
	m := &w.machines[mi]
	return m.st.Phase == phase.Failed && !m.deleting() && !m.gone() && !w.flow[mi].pv.annotated &&
		m.st.PreserveUntil > lifecycle.Stamp(w.now+w.offset)
}

// checkAutoPreserve: owner oi has no more auto-preserved Failed machines
// than Config.AutoPreserve.
func (w *shard) checkAutoPreserve(oi int32) {
	n := 0
	for _, mi := range w.owners[oi].list {
		if w.autoPreserved(mi) {
			n++
		}
	}
	w.autoPreserveExceeded(oi, n)
}

// autoPreserveExceeded counts owner oi's n auto-preserved Failed machines
// and reports them when they are more than Config.AutoPreserve.
func (w *shard) autoPreserveExceeded(oi int32, n int) {
	w.stats.Flows.AutoMax = max(w.stats.Flows.AutoMax, int64(n))
	if n <= w.cfg.AutoPreserve {
		return
	}
	var which []string
	first := int32(-1)
	for _, mi := range w.owners[oi].list {
		if w.autoPreserved(mi) {
			m := &w.machines[mi]
			which = append(which, fmt.Sprintf("%s (Failed since +%s, expiry +%s)", m.obj.Name,
				sinceStart(int64(m.st.PhaseSince)-w.offset), sinceStart(int64(m.st.PreserveUntil)-w.offset)))
			if first < 0 {
				first = mi
			}
		}
	}
	w.flowViolation(first, "owner %s has %d auto-preserved Failed machines, more than Config.AutoPreserve %d: %s",
		w.owners[oi].uid, n, w.cfg.AutoPreserve, strings.Join(which, ", "))
}

// preservedConditionWritten judges the write of machine mi's node i's
// Preserved condition before it is carried out: True for a Failed machine
// only on a node without pods a drain removes; and counts the writes.
func (w *shard) preservedConditionWritten(mi, i int32, e *lifecycle.Effect) {
	m, rec, n := &w.machines[mi], &w.flow[mi].pv, &w.inst[i].node
	if rec.writes++; rec.writes == maxPreservedWrites+1 {
		w.flowViolation(mi, "the Preserved condition of node %s written %d times in one preservation (begun at +%s): a loop",
			w.vm(i).NodeName, rec.writes, sinceStart(rec.begin))
	}
	if e.Status != lifecycle.ConditionTrue || m.st.Phase != phase.Failed || m.deleting() {
		return
	}
	w.stats.Flows.PreservedDrained++
	settlePods(n, w.stepNow)
	if n.pods > 0 {
		w.flowViolation(mi, "node %s of the Failed machine marked Preserved while %d pods a drain removes remain on it (%s)",
			w.vm(i).NodeName, n.pods, e.Message)
	}
}

// scanPreserve: machine mi's preservation, the machine not being deleted,
// ends by its expiry within a resync; once it stopped, the node is given
// back within a resync; a node cordoned for it is uncordoned within a
// resync of the machine's recovery; a preservation granted begins within
// a pass. Each counts from when the lifecycle could act.
func (w *shard) scanPreserve(mi int32) {
	m, rec := &w.machines[mi], &w.flow[mi].pv
	if w.frozen(mi) || rec.reported {
		return
	}
	i := w.ownNode(mi)
	var n *node
	shows := false
	if i >= 0 {
		n = &w.inst[i].node
		shows = n.showsPreservation()
	}
	value, where := w.worldAsks(mi)
	switch {
	case rec.begin != 0:
		expiry := rec.begin + int64(w.preserveTimeout(&m.obj))
		if w.now >= w.settledSince(mi, expiry)+w.slackResync() {
			w.flowViolation(mi, "its preservation, begun at +%s, did not end by its expiry +%s: expiry saved +%s, %s annotation preserve=%s, node shows it %t",
				sinceStart(rec.begin), sinceStart(expiry), sinceStart(int64(m.st.PreserveUntil)-w.offset), where, value, shows)
			rec.reported = true
		}
	case rec.end != 0 && shows && w.now >= w.settledSince(mi, rec.end)+w.slackResync():
		w.flowViolation(mi, "node %s not given back since its preservation stopped at +%s: %s",
			w.vm(i).NodeName, sinceStart(rec.end), n.preservationShown())
		rec.reported = true
	case rec.grant != 0 && m.st.Phase == phase.Failed && m.st.PreserveUntil == 0 &&
		w.now >= w.settledSince(mi, rec.grant)+w.slackPass():
		w.flowViolation(mi, "granted its auto-preservation at +%s, which has not begun", sinceStart(rec.grant))
		rec.reported = true
	}
	if n != nil && n.cordonBy == cordonPreserve && m.st.Phase == phase.Running && !rec.reported &&
		w.now >= w.settledSince(mi, w.flow[mi].runningAt)+w.slackResync() {
		w.flowViolation(mi, "node %s, cordoned for its preservation, still cordoned though the machine is Running since +%s",
			w.vm(i).NodeName, sinceStart(w.flow[mi].runningAt))
		rec.reported = true
	}
}

// checkPreserveEnd: at the end, the node of a machine not preserved (no
// expiry saved) shows no preservation.
func (w *shard) checkPreserveEnd(mi int32) {
	m := &w.machines[mi]
	i := w.ownNode(mi)
	if i < 0 || m.st.PreserveUntil != 0 || m.deleting() {
		return
	}
	if n := &w.inst[i].node; n.showsPreservation() {
		w.flowViolation(mi, "not preserved at the end, but its node %s shows a preservation: %s", w.vm(i).NodeName,
			n.preservationShown())
	}
}

// showsPreservation reports whether node n shows a preservation: an
// autoscaler annotation of the lifecycle's, or its Preserved condition
// True.
func (n *node) showsPreservation() bool {
	c, ok := n.condition(lifecycle.ConditionPreserved)
	return n.ann&(annScaleDown|annScaleDownByMCM) != 0 || ok && c.Status == lifecycle.ConditionTrue
}

// preservationShown renders what node n shows of a preservation.
func (n *node) preservationShown() string {
	cond := "none"
	if c, ok := n.condition(lifecycle.ConditionPreserved); ok {
		cond = c.Status.String()
	}
	return fmt.Sprintf("scale-down-disabled %t, scale-down-disabled-by-mcm %t, Preserved condition %s",
		n.ann&annScaleDown != 0, n.ann&annScaleDownByMCM != 0, cond)
}

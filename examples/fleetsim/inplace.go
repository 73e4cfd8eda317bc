package fleetsim

import (
	"fmt"
	"strconv"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// The in-place update. The owner asks it the way the project's controller
// does, through the machine's Object.InPlaceGeneration: the lifecycle then
// plays the owner's part of MCM's protocol itself (it labels the node
// candidate and selected, and once the update brought the machine Running
// again it takes the labels off and uncordons the node), so its own writes
// of the whole protocol meet the run's faults, and the world judges the
// labels' removal and the uncordon too. A node agent per node waits for
// the node's InPlaceUpdate condition to say ReadyForUpdate, then succeeds
// (the node reboots, NotReady for a while, and the agent labels
// update-result=successful as it comes back), fails (update-result=failed
// and the failed-reason annotation), or stalls (never gives a verdict), by
// the shares of InPlaceOptions.
//
// The world judges: the agent is never told ReadyForUpdate while pods a
// drain removes remain on the node or while it is not cordoned; no hot
// update or metadata patch reaches an instance while its agent updates it;
// every update ends (after the agent's success, the machine is Running
// with the update recorded, the labels off and the node uncordoned within
// three resyncs of its node being Ready, as the lifecycle writes to a node
// at the start of a pass only; after its failure, InPlaceUpdateFailed
// within a pass; after a stall, InPlaceUpdateFailed by the in-place update
// timeout; Failed from InPlaceUpdateFailed only after the health timeout
// counted from the agent's failure or the in-place timeout); no update
// writes the InPlaceUpdate condition, drains the node or enters
// InPlaceUpdating over and over; and at the end every Running machine runs
// the update asked, on an instance the agent updated or made after it was
// asked, its node without the protocol's labels and uncordoned.

// InPlaceOptions is the in-place update setting.
type InPlaceOptions struct {
	// Share is the share of machines whose owner asks an in-place update
	// (a higher Object.InPlaceGeneration) at a random time of the active
	// period; 0 turns the setting off.
	Share float64
	// Fail and Stall are the shares of the node agents' updates that fail
	// and that stall; the others succeed.
	Fail, Stall float64
	// Down is the share of the failed and stalled updates that leave the
	// node NotReady for good (the update broke its kubelet); the others
	// leave it Ready.
	Down float64
}

// The node agent's states (node.agent).
const (
	// agentIdle: no update under way.
	agentIdle uint8 = iota
	// agentTold: told ReadyForUpdate; it starts soon (evAgent).
	agentTold
	// agentWorking: updating; its verdict comes (evAgentDone).
	agentWorking
	// agentHung: stalled; it never gives a verdict.
	agentHung
	// agentPendingOK and agentPendingFail: its verdict is ready, but the
	// node object is gone; it labels the node when it registers again.
	agentPendingOK
	agentPendingFail
	// agentDone: it gave its verdict.
	agentDone
)

// The agent's verdicts (inPlaceRec.result), the low two bits of an
// evAgentDone token; tokDown above them: the verdict leaves the node
// NotReady for good. The agent's token is above those.
const (
	verdictOK uint8 = 1 + iota
	verdictFail
	// verdictHung: a stall, recorded as the verdict it never gives.
	verdictHung

	tokDown    = 1 << 2
	agentShift = 3
)

// agentFailedReason is the text of the simulated agent's failed-reason
// annotation.
const agentFailedReason = "the simulated node agent could not apply the update"

// inPlaceAsked is the owner raising machine mi's in-place generation.
func (w *shard) inPlaceAsked(mi int32) {
	m := &w.machines[mi]
	m.obj.InPlaceGeneration++
	w.flow[mi].ip = inPlaceRec{asked: w.now}
	w.stats.Flows.InPlaceAsked++
	if w.tracing(mi) {
		w.note(mi, "the owner asks in-place generation "+strconv.FormatInt(m.obj.InPlaceGeneration, 10))
	}
}

// inPlaceRound begins a new round of machine mi's update, whose node
// agent has given no verdict yet: the lifecycle labels its node, which
// carries no label of the protocol, a candidate, or the node object
// carrying the labels, and the agent's verdict with them, is deleted.
func (w *shard) inPlaceRound(mi int32) {
	rec := &w.flow[mi].ip
	rec.result, rec.verdict, rec.ready = 0, 0, 0
}

// inPlaceConditionWritten judges the write of machine mi's node i's
// InPlaceUpdate condition before it is carried out: ReadyForUpdate only on
// a node cordoned and without pods a drain removes; and counts the writes.
func (w *shard) inPlaceConditionWritten(mi, i int32, e *lifecycle.Effect) {
	rec, n := &w.flow[mi].ip, &w.inst[i].node
	if rec.writes++; rec.writes == maxInPlaceWrites+1 {
		w.flowViolation(mi, "the InPlaceUpdate condition of node %s written %d times in one in-place update (asked at +%s), now %s: a loop",
			w.vm(i).NodeName, rec.writes, sinceStart(rec.asked), e.Value)
	}
	if e.Value != lifecycle.ReasonReadyForUpdate {
		return
	}
	settlePods(n, w.stepNow)
	if n.pods > 0 || !n.cordoned {
		w.flowViolation(mi, "node %s told ReadyForUpdate while %d pods a drain removes remain on it, cordoned %t",
			w.vm(i).NodeName, n.pods, n.cordoned)
	}
	if rec.ready == 0 {
		rec.ready = w.now
		w.stats.Flows.ReadyTold++
	}
}

// inPlaceCordoned counts a cordon of machine mi's node for its in-place
// update: begun again and again, it is a loop.
func (w *shard) inPlaceCordoned(mi, i int32) {
	rec := &w.flow[mi].ip
	if rec.asked == 0 {
		return
	}
	if rec.drains++; rec.drains == maxInPlaceDrains+1 {
		w.flowViolation(mi, "node %s cordoned %d times for one in-place update (asked at +%s): a loop",
			w.vm(i).NodeName, rec.drains, sinceStart(rec.asked))
	}
}

// agentTold is node i's agent seeing its condition say ReadyForUpdate: it
// starts a few seconds later, unless it is at work already or hung.
func (w *shard) agentTold(i int32) {
	n := &w.inst[i].node
	if n.agent != agentIdle && n.agent != agentDone {
		return
	}
	n.agent = agentTold
	w.push(w.now+w.between(2*time.Second, 20*time.Second), evAgent, i, uint32(n.agentTok)<<agentShift)
}

// agentStarts is node i's agent starting the update it was told to make,
// if its node still says ReadyForUpdate: it draws its outcome.
func (w *shard) agentStarts(e *event) {
	i := e.idx
	n := &w.inst[i].node
	if uint8(e.tok>>agentShift) != n.agentTok || n.agent != agentTold {
		return
	}
	if c, ok := n.condition(lifecycle.ConditionInPlaceUpdate); !w.alive(i) || !n.exists || !ok ||
		c.Reason != lifecycle.ReasonReadyForUpdate {
		n.agent = agentIdle // told again later, it starts again
		return
	}
	mi := w.inst[i].mi
	tok := uint32(n.agentTok) << agentShift
	switch u := w.rng.Float64(); {
	case u < w.o.InPlace.Fail:
		n.agent = agentWorking
		if w.chance(w.o.InPlace.Down) {
			tok |= tokDown
		}
		w.push(w.now+w.between(30*time.Second, 3*time.Minute), evAgentDone, i, tok|uint32(verdictFail))
	case u < w.o.InPlace.Fail+w.o.InPlace.Stall:
		n.agent = agentHung
		w.flow[mi].ip.result = verdictHung
		w.stats.Flows.AgentHung++
		down := w.chance(w.o.InPlace.Down)
		if down {
			n.down++ // for good
			w.refreshNode(i)
		}
		if w.tracing(mi) {
			w.note(mi, "the node agent of "+w.vm(i).NodeName+" stalls, leaving the node NotReady "+strconv.FormatBool(down))
		}
		return
	default:
		// The update reboots the node: NotReady until the agent is back.
		n.agent = agentWorking
		n.down++
		w.refreshNode(i)
		w.push(w.now+w.between(time.Minute, 3*time.Minute), evAgentDone, i, tok|uint32(verdictOK))
	}
	if w.tracing(mi) {
		w.note(mi, "the node agent of "+w.vm(i).NodeName+" starts the update")
	}
}

// agentFinishes is node i's agent done with its update: the node is back
// from its reboot, and the agent labels its verdict, or keeps it for the
// node object registered again when the object is gone.
func (w *shard) agentFinishes(e *event) {
	i := e.idx
	n := &w.inst[i].node
	ok := uint8(e.tok&3) == verdictOK
	switch {
	case ok && n.down > 0:
		n.down--
		w.refreshNode(i)
	case e.tok&tokDown != 0:
		n.down++ // for good
		w.refreshNode(i)
	}
	if uint8(e.tok>>agentShift) != n.agentTok || n.agent != agentWorking || !w.alive(i) {
		return
	}
	if !n.exists {
		n.agent = agentPendingFail
		if ok {
			n.agent = agentPendingOK
		}
		return
	}
	w.verdict(i, ok)
}

// agentRejoined is node i registered again: an agent whose verdict was
// pending labels the new node object with it.
func (w *shard) agentRejoined(i int32) {
	switch w.inst[i].node.agent {
	case agentPendingOK:
		w.verdict(i, true)
	case agentPendingFail:
		w.verdict(i, false)
	}
}

// verdict is node i's agent labelling its verdict; the node changed.
func (w *shard) verdict(i int32, ok bool) {
	n := &w.inst[i].node
	mi := w.inst[i].mi
	rec := &w.flow[mi].ip
	n.agent = agentDone
	rec.verdict = w.now
	if ok {
		n.update = n.update&^lifecycle.UpdateFailed | lifecycle.UpdateSucceeded
		n.updated = w.now
		rec.result = verdictOK
		w.stats.Flows.AgentOK++
	} else {
		n.update = n.update&^lifecycle.UpdateSucceeded | lifecycle.UpdateFailed
		n.ann |= annReason
		rec.result = verdictFail
		if rec.failVerdict == 0 {
			rec.failVerdict = w.now
		}
		w.stats.Flows.AgentFail++
	}
	if w.tracing(mi) {
		w.note(mi, "the node agent of "+w.vm(i).NodeName+" labels its verdict, successful "+strconv.FormatBool(ok))
	}
	w.nodeChanged(i)
}

// updateLabelRemoved carries out the removal of node i's label key, one of
// the in-place protocol's: the update is over, and the agent is ready for
// the next.
func (w *shard) updateLabelRemoved(i int32, key string) {
	n := &w.inst[i].node
	switch key {
	case lifecycle.CandidateForUpdateLabel:
		n.update &^= lifecycle.UpdateCandidate
	case lifecycle.SelectedForUpdateLabel:
		n.update &^= lifecycle.UpdateSelected
	case lifecycle.UpdateResultLabel:
		n.update &^= lifecycle.UpdateSucceeded | lifecycle.UpdateFailed
		n.ann &^= annReason
	}
	if n.agent != agentWorking {
		n.agent = agentIdle
		n.agentTok++
	}
}

// checkOneUpdate: no UpdateMachine or UpdateMetadata of machine mi reaches
// an instance its node agent is updating.
func (w *shard) checkOneUpdate(mi int32, c *driverapi.Call) {
	if c.Method != driverapi.MethodUpdate && c.Method != driverapi.MethodUpdateMetadata {
		return
	}
	if i := w.p.Find(c); i >= 0 && w.inst[i].node.agent == agentWorking {
		w.violation(mi, c.Method.String()+" of instance "+w.vm(int32(i)).ProviderID+" while its node agent updates it in place")
	}
}

// inPlaceSaved records what a save of machine mi at time now says of its
// in-place update, prev being the status saved before, and judges a
// change from InPlaceUpdateFailed to Failed.
func (w *shard) inPlaceSaved(mi int32, prev *lifecycle.Status, now int64) {
	m, rec := &w.machines[mi], &w.flow[mi].ip
	st := &m.st
	if prev.Phase != st.Phase {
		switch st.Phase {
		case phase.InPlaceUpdating:
			rec.updating = now
			if rec.firstUpdating == 0 {
				rec.firstUpdating = now
			}
			if rec.asked != 0 {
				if rec.entries++; rec.entries == maxInPlaceEntries+1 {
					w.flowViolation(mi, "InPlaceUpdating for the %dth time in one in-place update (asked at +%s): a loop",
						rec.entries, sinceStart(rec.asked))
				}
			}
		case phase.InPlaceUpdateFailed:
			w.stats.Flows.InPlaceFailed++
		}
	}
	if rec.asked != 0 && rec.done == 0 && st.InPlaceGeneration == m.obj.InPlaceGeneration &&
		prev.InPlaceGeneration != st.InPlaceGeneration {
		rec.done = now
		w.stats.Flows.InPlaceDone++
		if rec.result == verdictOK {
			d := time.Duration(now - rec.verdict)
			w.stats.Flows.DoneWait += d
			w.stats.Flows.DoneWaitMax = max(w.stats.Flows.DoneWaitMax, d)
		}
	}
}

// checkInPlaceFailed: a machine saved Failed at time now from
// InPlaceUpdateFailed has been failed by the world for its health timeout:
// since the agent's first failure, or since the in-place update timeout
// passed after the world first saw it InPlaceUpdating, in this update,
// whichever came first, less the tolerance of the clock faults.
func (w *shard) checkInPlaceFailed(mi int32, now int64) {
	m, rec := &w.machines[mi], &w.flow[mi].ip
	var from int64
	if rec.firstUpdating != 0 {
		from = rec.firstUpdating + int64(w.inPlaceTimeout(&m.obj))
	}
	if rec.failVerdict != 0 && (from == 0 || rec.failVerdict < from) {
		from = rec.failVerdict
	}
	if from == 0 {
		return // nothing the world knows to judge by
	}
	from = max(from, w.recovered)
	if spent := time.Duration(now - from); spent < w.healthTimeout(&m.obj)-time.Duration(w.tolerance) {
		w.flowViolation(mi, "saved Failed from InPlaceUpdateFailed %s after the world saw its in-place update fail (at +%s), before its health timeout %s",
			spent, sinceStart(from), w.healthTimeout(&m.obj))
	}
}

// inPlaceTimeout returns the in-place update timeout of machine object o.
func (w *shard) inPlaceTimeout(o *lifecycle.Object) time.Duration {
	if t := o.Overrides.InPlaceUpdateTimeout; t > 0 {
		return t
	}
	return w.cfg.InPlaceUpdateTimeout
}

// scanInPlace: machine mi's in-place update, not being deleted, ends.
// After the agent's success, once its node has been Ready for three
// resyncs (five when its preservation changed meanwhile), the machine is
// Running, its status records the generation, the labels are off and the
// node uncordoned; after the agent's failure, it is
// InPlaceUpdateFailed (or Failed) within a pass; without a verdict, by
// the in-place update timeout counted from when the world saw it
// InPlaceUpdating. Each counts from when the lifecycle could act.
func (w *shard) scanInPlace(mi int32) {
	m, rec := &w.machines[mi], &w.flow[mi].ip
	if rec.asked == 0 || rec.over || w.frozen(mi) {
		return
	}
	failed := m.st.Phase == phase.InPlaceUpdateFailed || m.st.Phase == phase.Failed
	i := m.ip - 1
	switch {
	case rec.result == verdictOK:
		if i < 0 || !w.alive(i) || !w.inst[i].node.exists || w.inst[i].node.ready != lifecycle.ConditionTrue {
			return // not healthy: the health timeout decides
		}
		n := &w.inst[i].node
		if rec.over = m.st.Phase == phase.Running && m.st.InPlaceGeneration == m.obj.InPlaceGeneration &&
			n.update == 0 && !n.cordoned; rec.over {
			return
		}
		// The lifecycle writes to the node at the start of a pass only,
		// and each of its writes may take a resync: the condition
		// UpdateSuccessful (when its first write was lost), then the
		// labels' removal; a preservation's writes, which come there too,
		// may take two more.
		from, slack := max(rec.verdict, n.goodSince), 3*w.slackResync()
		if t := w.preservationChanged(mi); t != 0 && t >= from {
			from, slack = t, 5*w.slackResync()
		}
		if w.now >= w.settledSince(mi, from)+slack {
			w.flowViolation(mi, "its in-place update is not done though the node agent succeeded at +%s and node %s is Ready since +%s: phase %s, generation %d of %d recorded, labels %d, cordoned %t",
				sinceStart(rec.verdict), w.vm(i).NodeName, sinceStart(n.goodSince), m.st.Phase.Label(), m.st.InPlaceGeneration,
				m.obj.InPlaceGeneration, n.update, n.cordoned)
			rec.over = true
		}
	case rec.result == verdictFail:
		if rec.over = failed; !failed && w.now >= w.settledSince(mi, rec.verdict)+w.slackPass() {
			w.flowViolation(mi, "not InPlaceUpdateFailed though its node agent failed at +%s: phase %s", sinceStart(rec.verdict),
				m.st.Phase.Label())
			rec.over = true
		}
	case rec.updating != 0 && m.st.Phase == phase.InPlaceUpdating:
		// The timeout counts from the observer's recovery at the latest.
		timeout := int64(w.inPlaceTimeout(&m.obj))
		if w.now >= w.settledSince(mi, max(rec.updating, w.recovered)+timeout)+w.slackPass() {
			w.flowViolation(mi, "still InPlaceUpdating %s after the world saw it so (at +%s), past its in-place update timeout %s, its node agent %s",
				time.Duration(w.now-rec.updating), sinceStart(rec.updating), time.Duration(timeout), w.agentState(mi))
			rec.over = true
		}
	}
}

// agentState names the state of the agent of machine mi's node.
func (w *shard) agentState(mi int32) string {
	i := w.machines[mi].ip - 1
	if i < 0 {
		return "of no node"
	}
	return [...]string{"idle", "told", "working", "hung", "pending", "pending", "done"}[w.inst[i].node.agent]
}

// checkInPlaceEnd: at the end, Running machine mi runs the in-place
// update asked: its status records the generation, its instance was
// updated by the agent or made after the update was asked, its node
// carries none of the protocol's labels and is not cordoned.
func (w *shard) checkInPlaceEnd(mi int32) {
	m, rec := &w.machines[mi], &w.flow[mi].ip
	i := w.instByPID(m.st.ProviderID)
	if i < 0 {
		return // checkRunning reports it
	}
	n := &w.inst[i].node
	bad := n.cordoned || n.update != 0
	if rec.asked != 0 {
		bad = bad || m.st.InPlaceGeneration != m.obj.InPlaceGeneration ||
			n.updated < rec.asked && w.vm(i).Created.UnixNano() < rec.asked
	}
	if !bad {
		return
	}
	what := fmt.Sprintf("Running at the end, its node %s cordoned %t (by %s), with the in-place labels %d", w.vm(i).NodeName,
		n.cordoned, [...]string{"none", "deletion", "an in-place drain", "a preservation drain"}[n.cordonBy], n.update)
	if rec.asked != 0 {
		updated := "never"
		if n.updated != 0 {
			updated = "at +" + sinceStart(n.updated).String()
		}
		what += fmt.Sprintf("; in-place generation %d recorded of %d asked at +%s; its instance %s made at +%s, updated by its node agent %s",
			m.st.InPlaceGeneration, m.obj.InPlaceGeneration, sinceStart(rec.asked), w.vm(i).ProviderID,
			sinceStart(w.vm(i).Created.UnixNano()), updated)
	}
	w.violation(mi, what)
}

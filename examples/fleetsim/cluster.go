package fleetsim

import (
	"strconv"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// The simulated cluster: nodes live in their instances (a node is named
// after the instance whose kubelet registered it), machine objects in the
// machines slice, bootstrap tokens in a bit of each machine. Watch events
// (a node registered, turned Ready or NotReady, was deleted) enqueue the
// machines that find the node.

// nodeNamed returns the instance holding the node of that name, -1 if no
// such node exists.
func (w *shard) nodeNamed(name string) int32 {
	i := w.p.NodeOwner(name)
	if i < 0 || !w.inst[i].node.exists {
		return -1
	}
	return int32(i)
}

// predecessorTerminating reports, as a shell finds it, whether an older
// incarnation of m's name is still terminating: an instance of the name
// made for another UID is alive and its node still exists.
func (w *shard) predecessorTerminating(m *machine) bool {
	if m.st.ProviderID != "" || m.st.Phase != phase.None && m.st.Phase != phase.CrashLoopBackOff {
		return false // only a machine being created asks
	}
	for i := int(w.slotInst[m.slot]); i >= 0; i = w.p.Older(i) {
		if x := w.p.At(i); !x.Deleted && x.CreatorUID != m.obj.UID && w.inst[i].node.exists {
			return true
		}
	}
	return false
}

// findNode finds a machine's node as a shell does: by the machine's node
// label, else by the recorded node name, else by the node's machine-name
// label, else by the recorded providerID; -1 when none.
func (w *shard) findNode(m *machine) int32 {
	if m.obj.NodeLabel != "" {
		if i := w.nodeNamed(m.obj.NodeLabel); i >= 0 {
			return i
		}
	}
	if m.st.NodeName != "" && m.st.NodeName != m.obj.NodeLabel {
		if i := w.nodeNamed(m.st.NodeName); i >= 0 {
			return i
		}
	}
	if i := w.slotNode[m.slot] - 1; i >= 0 && w.inst[i].node.exists && w.inst[i].node.label == m.slot+1 {
		return i
	}
	if m.st.ProviderID != "" {
		if i := w.instByPID(m.st.ProviderID); i >= 0 && w.inst[i].node.exists {
			return i
		}
	}
	return -1
}

// shellObserver returns the observer as the shell reports it.
func (w *shard) shellObserver() lifecycle.Observer {
	if w.o.broken.forgetRecovery && !w.observer.Degraded {
		return lifecycle.Observer{} // test hook: the recovery time is lost
	}
	return w.observer
}

// nodeView returns what the lifecycle reads of the node of instance i.
func (w *shard) nodeView(i int32) lifecycle.Node {
	x, n := w.vm(i), &w.inst[i].node
	v := lifecycle.Node{Name: x.NodeName, ProviderID: x.ProviderID, Conditions: n.conds, Taints: n.taints,
		Deleting: n.deleting, VolumesAttached: int(n.volumes), Pods: int(n.pods), Zone: zoneName(n.zone),
		Unschedulable: n.cordoned || w.o.broken.noCordon}
	if n.update != 0 || n.preserve != lifecycle.PreserveUnset || n.ann != 0 {
		w.flowView(n, &v)
	}
	if w.o.broken.fakeDrain {
		v.Pods = 0 // test hook: the shell never counts the pods left
	}
	if n.label > 0 {
		v.MachineName = w.names[n.label-1]
	}
	return v
}

// observe fills in as the shell reads the world before a step: the object
// as last written, the persisted status, the node, the token, the observer
// and the limiter's grant. At the start of a pass (fresh) a gone machine
// reads as the zero object; within a pass the object is as the shell's own
// last write returned it, also the write that removed its last finalizer,
// and the status is left to pass.Run, which steps on from the status of
// its last decision.
func (w *shard) observe(mi int32, now int64, in *lifecycle.Input, fresh bool) {
	m := &w.machines[mi]
	in.Now = tm(now + w.offset)
	in.Outcome = nil
	in.Problem = lifecycle.ProblemNone
	in.Observer = w.shellObserver()
	if fresh && m.gone() {
		in.Object, in.Status, in.Node = lifecycle.Object{}, lifecycle.Status{}, lifecycle.Node{}
		in.NodeReadFailed, in.VolumeAttachments, in.TokenExists, in.Grant = false, 0, false, lifecycle.Grant{}
		return
	}
	in.Object = m.obj
	if fresh {
		in.Status = m.st
	}
	if p := m.problem; p != 0 {
		in.Problem = lifecycle.Problem(p)
	} else if w.classProblems > 0 {
		in.Problem = lifecycle.Problem(w.owners[m.owner].problem)
	}
	in.TokenExists = m.bits&mToken != 0
	in.Grant = lifecycle.Grant{Fail: m.bits&mGrant != 0,
		Preserve: m.more&mPreserveGrant != 0 && !w.o.broken.hidePreserveGrant || w.o.broken.preserveAll}
	if w.held != nil {
		in.Grant.Held = w.heldUntil(mi)
	}
	in.PredecessorTerminating = w.predecessorTerminating(m) && !w.o.broken.noPredecessor
	in.NodeReadFailed = false
	i := w.findNode(m)
	if w.occurs(&w.cdNodeRead) {
		in.NodeReadFailed, i = true, -1
		w.stats.NodeReadFailures++
	}
	if i < 0 {
		in.Node, in.VolumeAttachments = lifecycle.Node{}, 0
		return
	}
	settlePods(&w.inst[i].node, now)
	in.Node = w.nodeView(i)
	if w.o.broken.fakeKeepDrain && in.Object.DeletionTime.IsZero() {
		in.Node.Pods = 0 // test hook: the kept node's pods go uncounted
	}
	in.VolumeAttachments = int(w.inst[i].node.attach)
}

// register is the kubelet of instance i registering its node: NotReady,
// with the startup taint and its zone label, Ready when it finished
// booting (unless its zone is down). Pods land on it once the startup
// taint is removed (KindRemoveTaint), unless it is cordoned or was
// drained.
func (w *shard) register(i int32) {
	in := &w.inst[i]
	n := &in.node
	if !w.alive(i) || in.stale || n.registered {
		return
	}
	n.exists, n.registered, n.finalizer = true, true, true
	n.taints = lifecycle.InstanceNotReady
	w.registersInZone(i)
	if w.chance(0.3) {
		n.volumes, n.attach = 1, 1
	}
	if w.tracing(in.mi) {
		w.note(in.mi, "node "+w.vm(i).NodeName+" registers")
	}
	w.recent[w.recentNext] = i
	w.recentNext = (w.recentNext + 1) % len(w.recent)
	w.refreshNode(i)
	w.push(w.now+w.between(10e9, 60e9), evReady, i, 0)
}

// rejoin is the kubelet of instance i registering its node again after the
// node object was deleted: a new object, with the startup taint, not
// cordoned, and without labels but the zone label the kubelet sets.
func (w *shard) rejoin(i int32) {
	in := &w.inst[i]
	n := &in.node
	if !w.alive(i) || n.exists {
		return
	}
	n.exists, n.finalizer, n.conds = true, true, nil
	n.cordoned, n.cordonBy = false, cordonNone
	n.taints = lifecycle.InstanceNotReady
	if w.tracing(in.mi) {
		w.note(in.mi, "node "+w.vm(i).NodeName+" registers again")
	}
	w.refreshNode(i)
	if w.ip {
		w.agentRejoined(i)
	}
}

// refreshNode recomputes the Ready condition of instance i's node and, when
// it changed, replaces the node's conditions and tells its machines.
func (w *shard) refreshNode(i int32) {
	in := &w.inst[i]
	n := &in.node
	if !n.exists {
		return
	}
	want := lifecycle.ConditionTrue
	switch {
	case !w.alive(i) || n.dead || n.down > 0:
		want = lifecycle.ConditionUnknown
	case !n.booted:
		want = lifecycle.ConditionFalse
	}
	if n.conds != nil && n.ready == want {
		return
	}
	switch {
	case want == lifecycle.ConditionTrue:
		n.badSince, n.goodSince = 0, w.now
	case n.badSince == 0:
		n.badSince = w.now
	}
	n.ready = want
	ready := lifecycle.Condition{Type: lifecycle.ConditionReady, Status: want, Since: lifecycle.Stamp(w.now)}
	if n.extra == nil {
		n.conds = []lifecycle.Condition{ready}
	} else {
		n.conds = withExtra(ready, n.extra)
	}
	if w.tracing(in.mi) {
		w.note(in.mi, "node "+w.vm(i).NodeName+" Ready="+want.String())
	}
	w.nodeChanged(i)
}

// removeNode deletes the node object of instance i. The pods bound to it
// are garbage-collected with it.
func (w *shard) removeNode(i int32) {
	n := &w.inst[i].node
	n.exists, n.conds, n.pods, n.evicted = false, nil, 0, 0
	if w.ip && n.update != 0 {
		w.inPlaceRound(w.inst[i].mi) // the agent's verdict goes with the labels
	}
	n.clearFlowObject()
	if n.badSince == 0 {
		n.badSince = w.now
	}
	if n.label > 0 && w.slotNode[n.label-1] == i+1 {
		w.slotNode[n.label-1] = 0
	}
	n.label = 0
	if w.tracing(w.inst[i].mi) {
		w.note(w.inst[i].mi, "node "+w.vm(i).NodeName+" is deleted")
	}
	w.nodeChanged(i)
}

// nodeChanged is a node watch event: the machine the instance was created
// for, and the newest machine of its name, are reconciled now.
func (w *shard) nodeChanged(i int32) {
	in := &w.inst[i]
	w.enqueue(in.mi, w.now)
	if mi := w.slotMachine[in.slot]; mi != in.mi {
		w.enqueue(mi, w.now)
	}
}

// nodeFault makes a machine's node NotReady: for a while (a flap), or for
// good (its kubelet died).
func (w *shard) nodeFault(e *event) {
	if !w.faulty {
		return
	}
	m := &w.machines[e.idx]
	if m.gone() || m.st.ProviderID == "" {
		return
	}
	i := w.instByPID(m.st.ProviderID)
	if i < 0 || !w.inst[i].node.exists {
		return
	}
	n := &w.inst[i].node
	if e.kind == evDie {
		n.dead = true
		w.stats.Deaths++
		if w.tracing(e.idx) {
			w.note(e.idx, "its node dies")
		}
	} else {
		n.down++
		w.stats.Flaps++
		secs := int64(e.tok >> 1)
		w.push(w.now+secs*1e9, evRecover, i, 0)
		if w.tracing(e.idx) {
			w.note(e.idx, "its node flaps NotReady for "+strconv.FormatInt(secs, 10)+"s")
		}
		if e.tok&1 != 0 {
			// Someone deletes the node object; the kubelet registers it
			// again when it is back.
			w.stats.NodesGone++
			w.refreshNode(i)
			w.removeNode(i)
			w.push(w.now+secs*1e9, evRejoin, i, 0)
			return
		}
	}
	w.refreshNode(i)
}

// podsPerNode is how many pods land on a node once it is schedulable.
const podsPerNode = 3

// podGrace is how long evicted pods take to terminate.
const podGrace = int64(30e9) // 30 seconds, in nanoseconds

// settlePods ends the termination of node n's evicted pods once their
// grace period passed: they are gone, and their volumes detach.
func settlePods(n *node, now int64) {
	if n.evicted != 0 && now-n.evicted >= podGrace {
		n.pods, n.drained, n.evicted = 0, true, 0
		n.volumes, n.attach = 0, 0
	}
}

// The error texts of failed writes.
const (
	errConflict = "Operation cannot be fulfilled: the object has been modified; please apply your changes to the latest version and try again"
	errTimeout  = "etcdserver: request timed out"
	errNotFound = "nodes not found"
)

// apply carries out one effect other than a driver call for machine mi at
// time now and says how it went. A forced drain is recorded on its node as
// attempted before the write may fail.
func (w *shard) apply(mi int32, e *lifecycle.Effect, now int64) (lifecycle.Write, string) {
	switch e.Kind {
	case lifecycle.KindEvent:
		w.stats.Events++
		return lifecycle.WriteOK, ""
	case lifecycle.KindDrain:
		if e.Force {
			if i := w.nodeNamed(e.Node); i >= 0 {
				w.inst[i].node.forced = true
			}
		}
	}
	if w.occurs(&w.cdWriteFail) {
		w.stats.WriteFailures++
		if w.rng.IntN(2) == 0 {
			return lifecycle.WriteConflict, errConflict
		}
		return lifecycle.WriteFailed, errTimeout
	}
	m := &w.machines[mi]
	switch e.Kind {
	case lifecycle.KindEnsureFinalizer:
		m.obj.Finalizer = true
	case lifecycle.KindRemoveFinalizer:
		m.obj.Finalizer = false
		if m.deleting() {
			w.setGone(mi)
		}
	case lifecycle.KindEnsureNodeLabel:
		m.obj.NodeLabel = e.Value
	case lifecycle.KindEnsurePriority:
		m.obj.Priority = e.Value
	case lifecycle.KindEnsureProviderID:
		m.obj.ProviderID = e.Value
	case lifecycle.KindEnsureBootstrapToken:
		m.bits |= mToken
	case lifecycle.KindDeleteBootstrapToken:
		m.bits &^= mToken
	case lifecycle.KindRemoveAnnotation:
		w.removeAnnotation(mi, e)
	default:
		return w.applyNode(mi, e)
	}
	return lifecycle.WriteOK, ""
}

// applyNode carries out a node effect.
func (w *shard) applyNode(mi int32, e *lifecycle.Effect) (lifecycle.Write, string) {
	i := w.nodeNamed(e.Node)
	if i >= 0 {
		w.checkForeignNode(mi, i, e)
	}
	var n *node
	if i >= 0 {
		n = &w.inst[i].node
	}
	switch e.Kind {
	case lifecycle.KindLabelNode:
		if n == nil {
			return lifecycle.WriteNotFound, errNotFound
		}
		if e.Key != lifecycle.MachineNameLabel {
			return w.applyFlowNode(mi, i, n, e)
		}
		if slot := w.slotOf(e.Value); slot >= 0 {
			n.label = slot + 1
			w.slotNode[slot] = i + 1
		}
	case lifecycle.KindRemoveTaint:
		if n != nil && e.Key == lifecycle.TaintInstanceNotReady {
			n.taints &^= lifecycle.InstanceNotReady
			if !n.cordoned && !n.drained {
				n.pods = podsPerNode // the node is schedulable: workloads land on it
			}
		}
	case lifecycle.KindSetNodeCondition:
		if e.Key != lifecycle.ConditionTerminating {
			return w.applyFlowNode(mi, i, n, e)
		}
		if n != nil {
			n.terminated = true
		}
	case lifecycle.KindCordon:
		if n != nil && !w.o.broken.noCordon {
			if e.Key == lifecycle.CordonMarkAnnotation {
				// Marked when this write makes the cordon, unmarked when
				// the node was cordoned already.
				n.ann &^= annCordonMark
				if !n.cordoned {
					n.ann |= annCordonMark
				}
			}
			n.cordoned, n.cordonBy = true, w.cordonFlow(mi)
			if w.ip && n.cordonBy == cordonInPlace {
				w.inPlaceCordoned(mi, i)
			}
		}
	case lifecycle.KindRemoveNodeLabel, lifecycle.KindAnnotateNode, lifecycle.KindRemoveNodeAnnotation, lifecycle.KindUncordon:
		return w.applyFlowNode(mi, i, n, e)
	case lifecycle.KindDrain:
		if n == nil {
			return lifecycle.WriteOK, "" // nothing to drain
		}
		if !e.Force && w.fault(w.o.DrainFail) {
			// A disruption budget refuses the evictions of this round:
			// the pods stay, and a later round asks again.
			w.stats.DrainFailures++
			return lifecycle.WriteOK, ""
		}
		if e.Force {
			// Deleted at once, without a grace period; deleted pods leave
			// their volume attachments behind.
			n.pods, n.drained, n.evicted = 0, true, 0
			break
		}
		if n.pods == 0 {
			n.drained = true
		} else if n.evicted == 0 {
			n.evicted = w.now // the evicted pods go podGrace later
		}
	case lifecycle.KindDeleteVolumeAttachments:
		if n != nil {
			n.attach = 0
		}
	case lifecycle.KindRemoveNodeFinalizer:
		if n != nil {
			n.finalizer = false
			if n.deleting {
				w.removeNode(i)
			}
		}
	case lifecycle.KindDeleteNode:
		if n == nil {
			return lifecycle.WriteNotFound, errNotFound
		}
		if n.finalizer {
			n.deleting = true
		} else {
			w.removeNode(i)
		}
	default:
		return lifecycle.WriteFailed, "unknown effect " + e.Kind.String()
	}
	return lifecycle.WriteOK, ""
}

// checkForeignNode: a deletion drains or deletes only its own machine's
// node, never the node of another incarnation's instance (one found by its
// machine-name label before the machine recorded an instance).
func (w *shard) checkForeignNode(mi, i int32, e *lifecycle.Effect) {
	if e.Kind != lifecycle.KindDrain && e.Kind != lifecycle.KindDeleteNode {
		return
	}
	m := &w.machines[mi]
	x := w.vm(i)
	if x.ProviderID == m.st.ProviderID || x.CreatorUID == m.obj.UID {
		return
	}
	w.violation(mi, e.Kind.String()+" of node "+x.NodeName+", which belongs to instance "+x.ProviderID+
		" of another incarnation")
}

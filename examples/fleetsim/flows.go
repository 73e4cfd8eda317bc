package fleetsim

import (
	"fmt"
	"time"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// The in-place update (inplace.go) and the preservation (preserve.go) in
// the simulated world: what both need of the cluster (the nodes' labels,
// annotations and conditions of the two flows, the uncordon, the removal
// of a machine's annotation), the world's record of each machine's flows,
// the checks the world makes after every fleet pass, and their report.
// Both are off unless a run asks for them; off, nothing here draws a
// random number or changes what the lifecycle reads.

// Node annotation bits (node.ann).
const (
	// annReason: the node agent's update-failed-reason annotation.
	annReason uint8 = 1 << iota
	// annScaleDown: cluster-autoscaler's scale-down-disabled "true".
	annScaleDown
	// annScaleDownByMCM: scale-down-disabled-by-mcm "true", which says
	// the lifecycle put annScaleDown there.
	annScaleDownByMCM
	// annCordonMark: the lifecycle's mark of its own cordon
	// (lifecycle.CordonMarkAnnotation).
	annCordonMark
)

// Who cordoned a node (node.cordonBy), as the world tells from the
// machine's saved status when the cordon is carried out.
const (
	cordonNone uint8 = iota
	// cordonDeletion: the machine was being deleted.
	cordonDeletion
	// cordonInPlace: the machine was not Failed: the drain before an
	// in-place update.
	cordonInPlace
	// cordonPreserve: the machine was Failed: the drain of a preserved
	// node.
	cordonPreserve
)

// flowRec is the world's record of one machine's in-place update and
// preservation, from the writes it carried out and the statuses it saved;
// the times are the world's. runningAt and failedAt are when the machine
// was last saved Running and Failed.
type flowRec struct {
	ip                  inPlaceRec
	pv                  preserveRec
	runningAt, failedAt int64
}

// inPlaceRec is the world's record of a machine's in-place update.
type inPlaceRec struct {
	// asked is when its owner asked it (0: never); updating when the world
	// last saw the machine saved InPlaceUpdating, firstUpdating when it
	// first did since; ready when its node was first told ReadyForUpdate
	// since; verdict when the agent's verdict of the current round reached
	// its node, failVerdict when a failure first did since the update was
	// asked; done when its status first recorded the generation asked.
	asked, updating, firstUpdating, ready, verdict, failVerdict, done int64
	// result is the agent's verdict (verdictOK, verdictFail) or its stall
	// (verdictHung); writes counts the InPlaceUpdate condition's writes,
	// drains the cordons of its node and entries the changes to
	// InPlaceUpdating since the update was asked.
	result, writes, drains, entries uint8
	// over: the world saw the update end (or reported that it did not).
	over bool
}

// preserveRec is the world's record of a machine's preservation.
type preserveRec struct {
	// annotated: someone annotated the machine or its node for
	// preservation, ever; annAt is when the annotation last changed.
	annotated bool
	annAt     int64
	// begin is when the world saw its preservation begin (the expiry
	// saved), 0 while it has none; end when it saw the last one stop (the
	// expiry cleared); spell the phase's start the status had when the
	// last one began, and expired whether that one ran to its expiry;
	// writes counts the Preserved condition's writes during the current
	// one.
	begin, end, spell int64
	expired           bool
	writes            uint8
	// grant is when the machine got the limiter's preservation grant, 0
	// while it holds none.
	grant int64
	// reported: a check of the current preservation reported it.
	reported bool
}

// The bounds of the flows' writes the world counts: more means a loop.
const (
	// maxInPlaceWrites bounds the InPlaceUpdate condition's writes of one
	// update (five without faults).
	maxInPlaceWrites = 24
	// maxInPlaceDrains bounds the drains begun for one update (one
	// without faults).
	maxInPlaceDrains = 8
	// maxInPlaceEntries bounds the changes to InPlaceUpdating of one
	// update (one without faults; a status lost and adopted again may
	// add one).
	maxInPlaceEntries = 3
	// maxPreservedWrites bounds the Preserved condition's writes of one
	// preservation (two or three without faults).
	maxPreservedWrites = 12
)

// flowSetup decides which flows the world runs and checks.
func (w *shard) flowSetup() {
	w.ip = w.o.InPlace.Share > 0
	w.pv = w.o.Preserve.Share > 0 || w.o.Config.AutoPreserve > 0
	w.flows = w.ip || w.pv
}

// slackPass is how long the world gives the lifecycle for a pass or two,
// when a deadline of the flows passed or a fact it must act on appeared:
// a crash and its restart, writes retried, and the clock faults.
func (w *shard) slackPass() int64 {
	return w.tolerance + int64(2*time.Minute+retry.Short)
}

// slackResync is slackPass plus the longest requeue of a machine with
// nothing to do: a write that comes at the start of the next pass may
// wait that long.
func (w *shard) slackResync() int64 {
	jitter := retry.Long * time.Duration(w.cfg.Retry.JitterPercent) / 100
	return w.slackPass() + int64(retry.Long+jitter+retry.Medium)
}

// settledSince returns since when the lifecycle has surely been able to
// act on machine mi, given since, when what it must act on appeared: no
// earlier than the observer's last recovery, nor the end of a problem of
// the machine or of its class (the lifecycle waits meanwhile).
func (w *shard) settledSince(mi int32, since int64) int64 {
	return max(since, w.recovered, w.owners[w.machines[mi].owner].problemEnd, w.problemEnded[mi])
}

// frozen reports whether the lifecycle is kept from acting on machine mi
// now: the observer is degraded, or the machine or its class has a
// problem.
func (w *shard) frozen(mi int32) bool {
	m := &w.machines[mi]
	return w.observer.Degraded || m.problem != 0 || w.owners[m.owner].problem != 0
}

// flowView fills in what the lifecycle reads of node n's flows.
func (w *shard) flowView(n *node, v *lifecycle.Node) {
	v.Update = n.update
	if w.o.broken.hideVerdict {
		v.Update &^= lifecycle.UpdateSucceeded | lifecycle.UpdateFailed
	}
	if n.ann&annReason != 0 {
		v.UpdateFailedReason = agentFailedReason
	}
	if !w.o.broken.hideNodePreserve {
		v.Preserve = n.preserve
	}
	v.ScaleDownDisabled = n.ann&annScaleDownByMCM != 0
	v.OwnCordon = n.ann&annCordonMark != 0
}

// condition returns node n's condition of type typ, ok false without one.
func (n *node) condition(typ string) (lifecycle.Condition, bool) {
	for _, c := range n.extra {
		if c.Type == typ {
			return c, true
		}
	}
	return lifecycle.Condition{}, false
}

// setExtra sets node n's condition c (replacing one of its type), and
// its conditions with it: a new slice, since the statuses share the old
// one.
func (n *node) setExtra(c lifecycle.Condition) {
	extra := make([]lifecycle.Condition, 0, len(n.extra)+1)
	found := false
	for _, x := range n.extra {
		if x.Type == c.Type {
			x, found = c, true
		}
		extra = append(extra, x)
	}
	if !found {
		extra = append(extra, c)
	}
	n.extra = extra
	if len(n.conds) > 0 {
		n.conds = withExtra(n.conds[0], extra)
	}
}

// withExtra returns the conditions of a node: Ready, then extra.
func withExtra(ready lifecycle.Condition, extra []lifecycle.Condition) []lifecycle.Condition {
	return append([]lifecycle.Condition{ready}, extra...)
}

// clearFlowObject forgets what of the flows belonged to node n's object,
// which was deleted.
func (n *node) clearFlowObject() {
	n.update, n.preserve, n.ann, n.extra = 0, lifecycle.PreserveUnset, 0, nil
}

// cordonFlow returns who cordons machine mi's node now, by its saved
// status.
func (w *shard) cordonFlow(mi int32) uint8 {
	m := &w.machines[mi]
	switch {
	case m.deleting():
		return cordonDeletion
	case m.st.Phase == phase.Failed:
		return cordonPreserve
	}
	return cordonInPlace
}

// applyFlowNode carries out the flows' node effects on node i (n nil when
// it does not exist) for machine mi: a condition, a label of the in-place
// protocol, an annotation, their removal, the uncordon.
func (w *shard) applyFlowNode(mi, i int32, n *node, e *lifecycle.Effect) (lifecycle.Write, string) {
	switch e.Kind {
	case lifecycle.KindSetNodeCondition:
		if n == nil {
			break
		}
		inPlace := e.Key == lifecycle.ConditionInPlaceUpdate && w.ip
		switch {
		case inPlace:
			w.inPlaceConditionWritten(mi, i, e)
		case e.Key == lifecycle.ConditionPreserved && w.pv:
			w.preservedConditionWritten(mi, i, e)
		}
		n.setExtra(lifecycle.Condition{Type: e.Key, Status: e.Status, Reason: e.Value, Message: e.Message,
			Since: lifecycle.Stamp(w.now)})
		if inPlace && e.Value == lifecycle.ReasonReadyForUpdate {
			w.agentTold(i)
		}
	case lifecycle.KindLabelNode:
		if n == nil {
			return lifecycle.WriteNotFound, errNotFound
		}
		switch e.Key {
		case lifecycle.CandidateForUpdateLabel:
			if n.update == 0 && w.ip {
				w.inPlaceRound(mi)
			}
			n.update |= lifecycle.UpdateCandidate
		case lifecycle.SelectedForUpdateLabel:
			n.update |= lifecycle.UpdateSelected
		}
	case lifecycle.KindRemoveNodeLabel:
		if n != nil && e.Key != lifecycle.MachineNameLabel {
			w.updateLabelRemoved(i, e.Key)
		}
	case lifecycle.KindAnnotateNode:
		if n == nil {
			return lifecycle.WriteNotFound, errNotFound
		}
		n.ann |= scaleDownBit(e.Key)
	case lifecycle.KindRemoveNodeAnnotation:
		if n == nil || w.o.broken.keepScaleDown {
			break
		}
		if e.Key == lifecycle.PreserveAnnotation {
			n.preserve = lifecycle.PreserveUnset
		}
		n.ann &^= scaleDownBit(e.Key)
	case lifecycle.KindUncordon:
		if n != nil && !w.o.broken.noUncordon {
			w.uncordon(n)
			if e.Key == lifecycle.CordonMarkAnnotation {
				n.ann &^= annCordonMark
			}
		}
	}
	return lifecycle.WriteOK, ""
}

// scaleDownBit returns the annotation bit of a cluster-autoscaler key.
func scaleDownBit(key string) uint8 {
	switch key {
	case lifecycle.ScaleDownDisabledAnnotation:
		return annScaleDown
	case lifecycle.ScaleDownDisabledByAnnotation:
		return annScaleDownByMCM
	}
	return 0
}

// uncordon makes node n schedulable: without its startup taint, its
// workloads land on it again, and what a drain did to it is history.
func (w *shard) uncordon(n *node) {
	n.cordoned, n.cordonBy = false, cordonNone
	if !n.taints.Has(lifecycle.InstanceNotReady) {
		n.pods, n.evicted = podsPerNode, 0
		n.drained, n.forced = false, false
	}
}

// removeAnnotation carries out the removal of annotation e.Key from
// machine mi's object (the preserve annotation is the only one the
// lifecycle removes), the controller's own write, which its cache shows
// at once.
func (w *shard) removeAnnotation(mi int32, e *lifecycle.Effect) {
	if e.Key != lifecycle.PreserveAnnotation || w.o.broken.keepAnnotation {
		return
	}
	m := &w.machines[mi]
	m.obj.Preserve = lifecycle.PreserveUnset
	if m.bits&mLagged != 0 {
		if l, ok := w.lagged[mi]; ok {
			l.obj.Preserve = lifecycle.PreserveUnset
			w.lagged[mi] = l
		}
	}
}

// flowSaved records what a status save of machine mi at time now says of
// its flows, prev being the status saved before.
func (w *shard) flowSaved(mi int32, prev *lifecycle.Status, now int64) {
	st, rec := &w.machines[mi].st, &w.flow[mi]
	if prev.Phase != st.Phase {
		switch st.Phase {
		case phase.Running:
			rec.runningAt = now
		case phase.Failed:
			rec.failedAt = now
		}
	}
	if w.ip {
		w.inPlaceSaved(mi, prev, now)
	}
	if w.pv {
		w.preserveSaved(mi, prev, now)
	}
}

// flowScan is the world's check of the flows after every fleet pass (and
// at the end): every machine's in-place update and preservation
// (scanInPlace, scanPreserve), and each owner's auto-preserved machines.
func (w *shard) flowScan() {
	for oi := range w.owners {
		o := &w.owners[oi]
		auto := 0
		for _, mi := range o.list {
			m := &w.machines[mi]
			if m.gone() || m.deleting() {
				continue
			}
			if w.ip {
				w.scanInPlace(mi)
			}
			if w.pv {
				w.scanPreserve(mi)
				if w.autoPreserved(mi) {
					auto++
				}
			}
		}
		if w.pv {
			w.autoPreserveExceeded(int32(oi), auto)
		}
	}
}

// FlowStats count what the in-place update and the preservation did, as
// the world saw it. Merged over shards by adding, but for the maxima,
// which take the larger.
type FlowStats struct {
	// InPlaceAsked counts the in-place updates the owners asked,
	// ReadyTold the nodes told ReadyForUpdate (the first time in an
	// update); AgentOK, AgentFail and AgentHung the node agents' updates
	// that succeeded, failed and stalled; InPlaceDone the updates the
	// lifecycle recorded done, InPlaceFailed the machines saved
	// InPlaceUpdateFailed. DoneWait adds up, and DoneWaitMax is the
	// longest of, the times from the agent's success to the update
	// recorded done (labels off, node uncordoned).
	InPlaceAsked, ReadyTold, AgentOK, AgentFail, AgentHung, InPlaceDone, InPlaceFailed int64
	DoneWait, DoneWaitMax                                                              time.Duration
	// AnnotatedNow and AnnotatedWhenFailed count the preserve annotations
	// users set, OnNodes those of them set on the node; UserStops those the
	// users set to false or removed later.
	AnnotatedNow, AnnotatedWhenFailed, OnNodes, UserStops int64
	// Preservations counts those that began (the expiry saved),
	// PreservedFailed of them those of Failed machines, AutoPreserved those
	// no annotation asked; Expired those the world saw run to their expiry,
	// Stopped those cleared before it; OwnerKept the fleet passes in
	// which an owner kept a Failed machine for its preservation;
	// PreservedDrained the Preserved conditions written True for Failed
	// machines (whose nodes the world saw drained). AutoMax is the most
	// auto-preserved Failed machines one owner had at once.
	Preservations, PreservedFailed, AutoPreserved, Expired, Stopped, OwnerKept, PreservedDrained int64
	AutoMax                                                                                      int64
}

// reportFlows renders the flows' line, for a run that asks for them.
func (r *Result) reportFlows(p func(format string, a ...any)) {
	o, f := &r.Options, &r.Stats.Flows
	if o.InPlace.Share > 0 {
		mean := time.Duration(0)
		if f.InPlaceDone > 0 {
			mean = f.DoneWait / time.Duration(f.InPlaceDone)
		}
		p("in-place updates: %d asked, %d nodes told ReadyForUpdate; the node agent succeeded %d, failed %d, stalled %d; %d recorded done, %d machines InPlaceUpdateFailed; from the agent's success to the update done (labels off, uncordoned): mean %s, max %s\n",
			f.InPlaceAsked, f.ReadyTold, f.AgentOK, f.AgentFail, f.AgentHung, f.InPlaceDone, f.InPlaceFailed,
			mean.Round(time.Second), f.DoneWaitMax.Round(time.Second))
	}
	if o.Preserve.Share > 0 || o.Config.AutoPreserve > 0 {
		p("preservation: timeout %s, at most %d auto-preserved per owner; annotations %d now and %d when-failed (%d on nodes), %d stopped by the user; %d began (%d of Failed machines, %d auto-preserved, at most %d at once per owner), %d ran to their expiry, %d stopped before; Failed machines kept by their owner %d times; preserved nodes of Failed machines drained %d\n",
			o.Config.PreserveTimeout, o.Config.AutoPreserve, f.AnnotatedNow, f.AnnotatedWhenFailed, f.OnNodes, f.UserStops,
			f.Preservations, f.PreservedFailed, f.AutoPreserved, f.AutoMax, f.Expired, f.Stopped, f.OwnerKept, f.PreservedDrained)
	}
}

// flowViolation records a broken promise of the flows about machine mi,
// its text formatted as by fmt.Sprintf.
func (w *shard) flowViolation(mi int32, format string, a ...any) {
	w.violation(mi, fmt.Sprintf(format, a...))
}

// sinceStart returns a world time as the time since the start of the run.
func sinceStart(t int64) time.Duration { return time.Duration(t - epoch) }

// validateFlows reports, through bad, every problem of the flows'
// settings.
func (o *Options) validateFlows(bad func(format string, a ...any)) {
	for _, p := range []struct {
		name string
		v    float64
	}{
		{"inplace", o.InPlace.Share}, {"inplace-fail", o.InPlace.Fail}, {"inplace-stall", o.InPlace.Stall},
		{"inplace-down", o.InPlace.Down},
		{"preserve", o.Preserve.Share}, {"preserve-node", o.Preserve.Node}, {"preserve-stop", o.Preserve.Stop},
	} {
		if !(p.v >= 0 && p.v <= 1) {
			bad("%s must be a probability within 0..1, got %v", p.name, p.v)
		}
	}
	if o.InPlace.Fail+o.InPlace.Stall > 1 {
		bad("inplace-fail + inplace-stall must not exceed 1, got %v", o.InPlace.Fail+o.InPlace.Stall)
	}
	if (o.InPlace.Share > 0 || o.Preserve.Share > 0 || o.Config.AutoPreserve > 0) && o.Config.NoTargetCluster {
		bad("the in-place update and preservation need a target cluster")
	}
}

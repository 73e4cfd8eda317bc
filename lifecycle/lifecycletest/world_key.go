package lifecycletest

import (
	"fmt"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// wKey is the abstraction of a state: what decisions can tell apart, with
// times turned into "past this deadline or not" and counters into "zero or
// more". Two states with the same key are explored once. Its fields are
// ordered widest first so that it has no padding and hashes as one block.
type wKey struct {
	updateGeneration int64 // the object's desired generation
	attempt          uint32
	flags            lifecycle.Flags
	// adoptDesc is the description of a Terminating machine without a
	// deletion stage (one another controller was deleting), which names the
	// stage deletion resumes at, and of a CrashLoopBackOff machine without a
	// stage whose initialization failed, which is initialized again; zero
	// otherwise.
	adoptDesc lastop.Desc
	adoptStep lastop.Step
	phase     phase.Phase
	stage     lifecycle.Stage
	node      uint8 // 0 none, 1 own, 2 foreign
	volumes   uint8
	pods      uint8
	forced    bool // a forced drain was attempted on the own node
	problem   lifecycle.Problem
	stMeta    wMeta // the observed metadata (Status.Metadata)
	instMeta  wMeta // the instance's
	wantMeta  wMeta // the desired metadata (Object.Metadata)
	// The in-place update: the node's labels, its InPlaceUpdate
	// condition's reason and the one the status mirrors (indices of
	// inPlaceReasons).
	upd                lifecycle.UpdateLabels
	ipReason, stReason uint8
	// Preservation: the machine's and the node's preserve annotations,
	// the node's Preserved condition (its status, reason and message
	// class: presMessageClass) and the status the mirror gives it, who
	// cordoned the node.
	objPreserve, nodePreserve                               lifecycle.Preserve
	presStatus, presReason, presMsg, stPresStatus, cordonBy uint8
	// stReady is the status of the Ready condition the status mirrors (0
	// none, 1 True, 2 another) while a preservation is in play
	// (preservationInPlay): the drain of a preserved node is forced by a
	// mirror that says NotReady, and a decision that only brings a stale
	// mirror in line goes on with the pass, which without it looked like
	// the state before. Elsewhere it is 0: the other drains read the
	// mirror too, but telling their states apart by it grows the other
	// explorations by some 40%, and none of them meets that cycle.
	stReady uint8

	failCreate, failHealth, failDelete, failUpdate, failMetadata, failDrain bool
	providerID, nodeName, ownerIsUID, applied, rejected                     bool
	observed, observedStale, creating                                       bool

	finalizer, deleting, force, nodeLabel, specPID, priority, gone, held, token bool

	instExists, instInitialized, instAtGeneration, instOwned              bool
	oldInst, predecessor, healthy, taint, nodeReadFailed, degraded, grant bool
	// creationFrom: 0 unset, 1 ahead (a wait for the predecessor), 2 passed.
	creationFrom uint8

	pastCreation, pastHealth, pastDrain, pastPredecessor, retryWait, retrySet, observerSince, midPass bool
	// The drain under way: its next round due, its forced timeout and its
	// eviction rounds passed.
	drainRoundDue, pastForcedDrain, pastDrainRounds bool
	// The in-place update: the node cordoned, the force-drain label, the
	// drain before the update past its timeout, the in-place timeout
	// passed, and the in-place invariants' notes.
	cordoned, forceDrain, pastInPlaceDrain, pastInPlace, readyUndrained, agentUndrained bool
	// cordonMark: the node carries the lifecycle's mark of its own cordon.
	cordonMark bool
	// ownGeneration: the machine's spec asks an in-place update generation
	// its status does not record.
	ownGeneration bool
	// Preservation: the autoscaler's annotations on the node, the fleet's
	// grant, an expiry set and passed, and the window in which an
	// auto-preservation may begin still open.
	sdDisabled, sdByMCM, grantPreserve, preserveSet, pastPreserve, autoWindow bool

	out wOutcomeKey
}

// wOutcomeKey abstracts the outcome fed to the next step.
type wOutcomeKey struct {
	rule    lifecycle.Rule
	class   int16 // -2 none, -1 undecodable, else the code
	present bool
	// ran and effects are the effects carried out and the op's count: a
	// drain's outcome tells by them which of its writes failed.
	ran, effects uint8
	stopped      lifecycle.Write
	method       driverapi.Method
	persist      lifecycle.Write
	stale        bool
	identified   bool // the result names a providerID
}

func (s *wState) key() wKey {
	st, o := &s.st, &s.obj
	n := lifecycle.StampOf(s.now)
	after := func(since lifecycle.Stamp, d time.Duration) bool { return since != 0 && n.Sub(since) >= d }
	obs := lifecycle.StampOf(s.obsSince)
	base := func(x lifecycle.Stamp) lifecycle.Stamp {
		if obs > x {
			return obs
		}
		return x
	}
	in := &s.inst
	k := wKey{
		updateGeneration: o.UpdateGeneration, attempt: st.Attempt, flags: st.Flags, phase: st.Phase, stage: st.Stage,
		node: uint8(s.node), volumes: s.volumes, pods: s.pods, forced: s.forcedDrain, problem: s.problem, stMeta: metaOf(st.Metadata), instMeta: in.meta,
		failCreate: st.Failures.Create > 0, failHealth: st.Failures.Health > 0, failDelete: st.Failures.Delete > 0,
		failUpdate: st.Failures.Update > 0, failMetadata: st.Failures.Metadata > 0, failDrain: st.Failures.Drain > 0,
		providerID: st.ProviderID != "", nodeName: st.NodeName != "", ownerIsUID: st.OwnerUID == o.UID,
		applied: st.AppliedGeneration == o.UpdateGeneration, rejected: st.RejectedGeneration == o.UpdateGeneration,
		observed:      st.MetadataObserved != 0,
		observedStale: after(st.MetadataObserved, 10*time.Minute-time.Second),
		creating:      st.LastOp.Type == lastop.TypeCreate && st.LastOp.State != lastop.StateSuccessful,
		finalizer:     o.Finalizer, deleting: !o.DeletionTime.IsZero(), force: o.ForceDeletion, nodeLabel: o.NodeLabel != "",
		specPID: o.ProviderID != "", priority: o.Priority != "", wantMeta: metaOf(o.Metadata), gone: s.gone,
		held: s.held, token: s.token, instExists: in.exists, instInitialized: in.initialized,
		instAtGeneration: in.generation == o.UpdateGeneration, instOwned: in.owner == o.UID, oldInst: s.oldInst,
		predecessor: s.predecessor,
		healthy:     s.healthy, taint: s.taint, nodeReadFailed: s.nodeReadFailed, degraded: s.degraded, grant: s.grant,
		pastCreation: n.Sub(base(max(lifecycle.StampOf(o.CreationTime), st.CreationFrom))) >= wCfg.CreationTimeout,
		pastHealth:   after(base(st.PhaseSince), wCfg.HealthTimeout),
		pastDrain:    !o.DeletionTime.IsZero() && n.Sub(lifecycle.StampOf(o.DeletionTime)) >= wCfg.DrainTimeout,
		// The bound of the wait for the predecessor: the drain timeout.
		pastPredecessor: s.predecessor && n.Sub(lifecycle.StampOf(o.CreationTime)) >= wCfg.DrainTimeout,
		retryWait:       st.RetryAfter > n, retrySet: st.RetryAfter != 0, observerSince: obs != 0, midPass: s.steps > 0,
		upd: s.upd, ipReason: s.ipReason, stReason: statusReason(st), cordoned: s.cordoned,
		forceDrain: o.ForceDrain, readyUndrained: s.readyUndrained, agentUndrained: s.agentUndrained,
		ownGeneration: o.InPlaceGeneration != st.InPlaceGeneration,
	}
	if st.Flags.Has(lifecycle.FlagDraining) {
		k.drainRoundDue = after(st.StageSince, wCfg.EvictRetryInterval)
		k.pastForcedDrain = after(st.StageSince, wCfg.ForcedDrainTimeout)
		k.pastDrainRounds = after(st.StageSince, time.Duration(min(wCfg.MaxEvictRetries, int32(wCfg.DrainTimeout/wCfg.EvictRetryInterval)))*wCfg.EvictRetryInterval)
	}
	s.preserveKey(&k)
	if k.deleting {
		// Deletion reads nothing of the in-place update, and the node's
		// owner and agent leave the node of a deleted machine alone; it
		// ends the preservation too.
		k.upd, k.ipReason, k.stReason, k.cordoned, k.forceDrain, k.ownGeneration = 0, 0, 0, false, false, false
		k.cordonMark = false
		k.objPreserve, k.nodePreserve, k.presStatus, k.presReason, k.presMsg, k.stPresStatus, k.cordonBy =
			0, 0, 0, 0, 0, 0, 0
		k.sdDisabled, k.sdByMCM, k.grantPreserve, k.autoWindow = false, false, false, false
	}
	switch {
	case st.Stage == lifecycle.StageInPlaceDrain, st.Stage == lifecycle.StagePreserveDrain:
		// The drain's timeout counts from the stage's start (the field
		// serves the drain of a preserved node too).
		k.pastInPlaceDrain = after(st.StageSince, wCfg.DrainTimeout)
	case st.Phase == phase.InPlaceUpdating:
		k.pastInPlace = after(base(st.PhaseSince), wCfg.InPlaceUpdateTimeout)
	}
	switch {
	case st.CreationFrom > n:
		k.creationFrom = 1
	case st.CreationFrom != 0:
		k.creationFrom = 2
	}
	switch {
	case st.Phase == phase.Terminating && st.Stage == lifecycle.StageNone:
		k.adoptDesc, k.adoptStep = st.LastOp.Desc, lastop.StepOf(st.LastOp.Detail)
	case st.Phase == phase.CrashLoopBackOff && st.Stage == lifecycle.StageNone && st.LastOp.Desc == lastop.DescInitFailed:
		k.adoptDesc = st.LastOp.Desc
	}
	k.out.class = -2
	if oc := s.outcome; oc != nil {
		k.out = wOutcomeKey{rule: oc.OpID.Rule(), class: int16(oc.Result.Code), present: true,
			ran: uint8(oc.Ran), effects: uint8(oc.OpID.Effects()), stopped: oc.Stopped, method: oc.Result.Method,
			persist: oc.Persist, stale: oc.OpID.Seq() != st.Seq, identified: oc.Result.ProviderID != ""}
		if oc.Result.Undecodable {
			k.out.class = -1
		}
	}
	return k
}

// String shows a key for messages.
func (k wKey) String() string {
	type plain wKey
	return fmt.Sprintf("%+v", plain(k))
}

// preserveKey fills k's fields of preservation from s.
func (s *wState) preserveKey(k *wKey) {
	st := &s.st
	k.objPreserve, k.nodePreserve, k.sdDisabled, k.sdByMCM = s.obj.Preserve, s.nodePreserve, s.sdDisabled, s.sdByMCM
	k.presStatus, k.presMsg, k.stPresStatus, k.grantPreserve = s.presStatus, s.presMessageClass(), stPreserved(st), s.grantPreserve
	if s.presStatus != presNone {
		k.presReason = presReasonIndex(s.presReason)
	}
	if s.cordoned {
		k.cordonBy = s.cordonBy
	}
	k.cordonMark = s.cordonMark
	k.preserveSet, k.pastPreserve = st.PreserveUntil != 0, preservePastExpiry(st, s.now)
	for i := range st.Conditions {
		if c := &st.Conditions[i]; c.Type == lifecycle.ConditionReady && s.preservationInPlay() {
			k.stReady = 2
			if c.Status == lifecycle.ConditionTrue {
				k.stReady = 1
			}
		}
	}
	if s.grantPreserve || st.Phase == phase.Failed {
		k.autoWindow = s.autoWindowOpen()
	}
}

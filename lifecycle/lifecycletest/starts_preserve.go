package lifecycletest

import (
	"fmt"
	"time"

	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// preserveBase marks the start states of preserveStarts: the bits below it
// index preservePlaces.
const preserveBase Start = 1 << 8

// The expiries a preservation start may have (preservePlace.expiry).
const (
	expiryNone uint8 = iota
	expiryAhead
	expiryPassed
)

// preservePlace is where a machine is found preserved, or asked to be:
// its phase, the preserve annotations of the machine and of its node, its
// expiry (none, ahead, passed) and whether its node is Ready again; for
// the lifecycle's own bookkeeping found after lost writes (own), its
// stage and flags, the fleet's grant, and what the node shows: marked (the
// autoscaler's annotations and the Preserved condition True), cordoned by
// the preservation's drain, its pods.
type preservePlace struct {
	phase         phase.Phase
	machine, node lifecycle.Preserve
	expiry        uint8
	healthy       bool
	own           bool
	stage         lifecycle.Stage
	flags         lifecycle.Flags
	grant         bool
	marked        bool
	cordoned      bool
	pods          uint8
	// instGone: the instance vanished (its node, if any, NotReady for
	// good); nodeGone: its node went too; staleMirror: the status's
	// conditions are older than the node's (Ready).
	instGone, nodeGone, staleMirror bool
	// lost says what a start of the lifecycle's own bookkeeping lost, or
	// where it is, for its name.
	lost string
}

// preservePlaces are the places of preserveStarts, in their order: taken
// over from MCM, then the lifecycle's own after lost writes.
var preservePlaces = func() []preservePlace {
	var out []preservePlace
	values := []lifecycle.Preserve{lifecycle.PreserveNow, lifecycle.PreserveWhenFailed, lifecycle.PreserveAutoPreserved,
		lifecycle.PreserveFalse, lifecycle.PreserveInvalid}
	for _, onNode := range []bool{false, true} {
		for _, v := range values {
			for _, p := range []phase.Phase{phase.Running, phase.Failed} {
				for _, e := range []uint8{expiryNone, expiryAhead, expiryPassed} {
					pl := preservePlace{phase: p, machine: v, expiry: e}
					if onNode {
						pl.machine, pl.node = lifecycle.PreserveUnset, v
					}
					out = append(out, pl.adopted())
				}
			}
		}
	}
	for _, p := range []phase.Phase{phase.Running, phase.Failed} {
		for _, e := range []uint8{expiryAhead, expiryPassed} {
			out = append(out, preservePlace{phase: p, expiry: e}.adopted())
		}
	}
	out = append(out, preservePlace{phase: phase.Failed, machine: lifecycle.PreserveWhenFailed, healthy: true, pods: 1},
		preservePlace{phase: phase.Failed, instGone: true, nodeGone: true},
		preservePlace{phase: phase.Failed, machine: lifecycle.PreserveNow, expiry: expiryAhead, instGone: true, nodeGone: true},
		preservePlace{phase: phase.Failed, machine: lifecycle.PreserveWhenFailed, instGone: true, pods: 3},
		preservePlace{phase: phase.Failed, machine: lifecycle.PreserveNow, expiry: expiryAhead, marked: true, pods: 1,
			instGone: true, staleMirror: true})
	drain := func(flags lifecycle.Flags, cordoned bool, pods uint8, lost string) preservePlace {
		return preservePlace{phase: phase.Failed, machine: lifecycle.PreserveWhenFailed, expiry: expiryAhead, own: true,
			stage: lifecycle.StagePreserveDrain, flags: flags | lifecycle.FlagPreserveCordonMarked, cordoned: cordoned, pods: pods,
			lost: lost}
	}
	drained := func(pl preservePlace) preservePlace {
		if pl.flags&lifecycle.FlagPreserveCordoned == 0 {
			pl.flags |= lifecycle.FlagPreserveCordonMarked
		}
		if pl.phase == phase.Failed {
			pl.flags |= lifecycle.FlagPreserveDrained // the machine's leaving Failed forgets the drain
		}
		pl.expiry, pl.own, pl.marked, pl.cordoned = expiryAhead, true, true, true
		return pl
	}
	return append(out,
		drain(0, false, 1, "at the drain of its node, the op that began it saved but never run"),
		drain(0, true, 1, "at the drain of its node, the outcome of the op that began it lost"),
		drain(lifecycle.FlagDraining, true, 2, "draining its node, pods a disruption budget holds"),
		drain(lifecycle.FlagDraining|lifecycle.FlagDeletingPods, true, 1, "draining its node by force, pods left"),
		drain(lifecycle.FlagDraining, true, 0, "its node drained, the status read older than the record of it"),
		func() preservePlace {
			pl := drain(lifecycle.FlagDraining|lifecycle.FlagPreserveByNode, true, 1, "draining its node, by its node's annotation")
			pl.machine, pl.node = lifecycle.PreserveUnset, lifecycle.PreserveWhenFailed
			return pl
		}(),
		func() preservePlace {
			pl := drained(preservePlace{phase: phase.Failed, machine: lifecycle.PreserveWhenFailed,
				lost: "its node drained, not marked yet"})
			pl.marked = false
			return pl
		}(),
		drained(preservePlace{phase: phase.Failed, flags: lifecycle.FlagPreserveByNode,
			lost: "by its node's annotation, since removed"}),
		drained(preservePlace{phase: phase.Failed, flags: lifecycle.FlagAutoPreserved, grant: true,
			lost: "auto-preserved by the fleet"}),
		drained(preservePlace{phase: phase.Failed, flags: lifecycle.FlagAutoPreserved,
			lost: "auto-preserved, the fleet's grant taken back"}),
		drained(preservePlace{phase: phase.Running, machine: lifecycle.PreserveWhenFailed,
			lost: "Running again, its node still cordoned for the preservation"}),
		drained(preservePlace{phase: phase.Running, machine: lifecycle.PreserveWhenFailed,
			flags: lifecycle.FlagPreserveCordoned,
			lost:  "Running again, its node still cordoned by a preservation's cordon without a mark (MCM's, or an earlier version's)"}),
		drained(preservePlace{phase: phase.Failed, machine: lifecycle.PreserveWhenFailed,
			lost: "its node drained and marked"}),
		func() preservePlace {
			pl := drained(preservePlace{phase: phase.Failed, machine: lifecycle.PreserveWhenFailed,
				lost: "its node drained, not marked yet, its instance gone"})
			pl.marked, pl.instGone = false, true
			return pl
		}(),
		func() preservePlace {
			pl := drain(0, false, 3, "at the drain of its node, the op that began it saved but never run, pods stuck, its instance gone")
			pl.instGone = true
			return pl
		}(),
		func() preservePlace {
			pl := drain(lifecycle.FlagDraining|lifecycle.FlagDeletingPods, true, 3,
				"draining its node by force, pods stuck, its instance gone")
			pl.instGone = true
			return pl
		}(),
		drain(lifecycle.FlagDraining|lifecycle.FlagDeletingPods, true, 3, "draining its node by force, pods stuck"),
	)
}()

// adopted returns the place as MCM leaves it, with an annotation and an
// expiry: a preserved node (an expiry set) marked, and for a Failed
// machine cordoned and drained; else workloads on the node.
func (pl preservePlace) adopted() preservePlace {
	if pl.expiry != expiryNone {
		pl.marked, pl.cordoned = true, pl.phase == phase.Failed
	}
	if !pl.cordoned {
		pl.pods = 1
	}
	return pl
}

// preserveStarts returns the start states of preservation: machines found
// preserved or asked to be. Taken over from MCM (as the MCM adapter reads
// them, with spec.providerID and the node label, preserveExpiryTime as
// the expiry, and none of the lifecycle's own bookkeeping): Running and
// Failed, with each value of the preserve annotation (now, when-failed,
// auto-preserved, false, invalid) on the machine or on its node, without
// an expiry, with one ahead and with one passed; with an expiry and no
// annotation; and Failed, when-failed, its node Ready again. MCM's
// preserved node is marked (the autoscaler's annotations, the Preserved
// condition True with MCM's message), and a Failed machine's cordoned and
// drained; a node not preserved carries workloads. And the lifecycle's
// own status of a preserved Failed machine after lost writes: at the
// drain of its node (stage preserve-drain) before the op that began it
// ran, with its outcome lost, under way with pods a disruption budget
// holds, forced with pods left, done while the status read is older, and
// under way by its node's annotation; its node drained but not marked
// yet; preserved by its node's annotation since removed; auto-preserved
// with and without the fleet's grant; and Running again, its node still
// cordoned for the preservation (the lifecycle's own cordon, marked as
// its own, and one its status trusts without a mark: MCM's taken over,
// or an earlier version's). Each is an hour after the machine's
// creation, its instance initialized, its node NotReady if Failed and
// Ready if Running. They belong to worlds with a target cluster.
func preserveStarts() []Start {
	out := make([]Start, len(preservePlaces))
	for i := range out {
		out[i] = preserveBase | Start(i)
	}
	return out
}

// preserveStartsWhere returns the starts of preserveStarts whose place
// keep reports true for.
func preserveStartsWhere(keep func(pl *preservePlace) bool) []Start {
	var out []Start
	for i := range preservePlaces {
		if keep(&preservePlaces[i]) {
			out = append(out, preserveBase|Start(i))
		}
	}
	return out
}

// preservePlaceOf returns the place of a preservation start, ok false for
// a start that is not one.
func preservePlaceOf(p Start) (pl preservePlace, ok bool) {
	if p&preserveBase == 0 || int(p&^preserveBase) >= len(preservePlaces) {
		return preservePlace{}, false
	}
	return preservePlaces[p&^preserveBase], true
}

// preserveStartState returns the state of preservation start p, with
// variants v but for VariantNoTargetCluster; ok false for a start that is
// not one.
func preserveStartState(p Start, v Variants) (s wState, ok bool) {
	pl, ok := preservePlaceOf(p)
	if !ok {
		return wState{}, false
	}
	s = startState(StartRunning, v&^VariantNoTargetCluster)
	s.obj.Preserve, s.nodePreserve, s.grantPreserve = pl.machine, pl.node, pl.grant
	s.healthy = pl.phase == phase.Running || pl.healthy
	s.pods, s.cordoned = pl.pods, pl.cordoned
	if pl.cordoned {
		s.cordonBy = cordonPreserve
		// The lifecycle's own cordon carries its mark; MCM's, taken over
		// or not, carries none.
		s.cordonMark = pl.own && pl.flags.Has(lifecycle.FlagPreserveCordonMarked)
	}
	if pl.instGone {
		s.inst, s.healthy = wInstance{}, false
	}
	if pl.nodeGone {
		s.dropNode()
	}
	failedSince := lifecycle.StampOf(s.now.Add(-2 * time.Hour))
	var until lifecycle.Stamp
	switch pl.expiry {
	case expiryAhead:
		until = lifecycle.StampOf(s.now.Add(wCfg.PreserveTimeout - time.Hour))
	case expiryPassed:
		until = lifecycle.StampOf(s.now.Add(-time.Minute))
	}
	if pl.marked {
		reason := lifecycle.ReasonPreservedByUser
		if pl.machine == lifecycle.PreserveAutoPreserved || pl.flags.Has(lifecycle.FlagAutoPreserved) {
			reason = lifecycle.ReasonPreservedByMCM
		}
		s.sdDisabled, s.sdByMCM = true, true
		drained := pl.cordoned && (pl.phase == phase.Failed || pl.own)
		s.presStatus, s.presReason, s.presMsg = presTrue, reason, presMessage(until, drained)
	}
	conds := s.nodeObject().Conditions
	if pl.staleMirror {
		fresh := s
		fresh.healthy = true
		conds = fresh.nodeObject().Conditions
	}
	if pl.own {
		failedSince = lifecycle.StampOf(s.now.Add(-20 * time.Minute))
		s.st = lifecycle.Status{Phase: pl.phase, PhaseSince: failedSince,
			LastOp: lastop.Operation{Type: lastop.TypeHealthCheck, State: lastop.StateFailed, Desc: lastop.DescHealthConfirmed},
			Stage:  pl.stage, Flags: pl.flags, Seq: 5, ProviderID: wPID, NodeName: wNode, OwnerUID: wUID,
			MetadataObserved: lifecycle.StampOf(s.now), Conditions: conds, PreserveUntil: until}
		if pl.stage != lifecycle.StageNone {
			s.st.StageSince = lifecycle.StampOf(s.now.Add(-time.Minute))
		}
		if pl.phase == phase.Running {
			s.st.PhaseSince = lifecycle.StampOf(s.now.Add(-5 * time.Minute))
			s.st.LastOp = lastop.Operation{Type: lastop.TypeHealthCheck, State: lastop.StateSuccessful, Desc: lastop.DescRejoined}
		}
		return s, true
	}
	// Taken over from MCM: its status holds none of the lifecycle's own
	// fields.
	op := lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateSuccessful, Desc: lastop.DescJoined}
	since := s.st.PhaseSince
	if pl.phase == phase.Failed {
		op = lastop.Operation{Type: lastop.TypeHealthCheck, State: lastop.StateFailed, Desc: lastop.DescHealthTimeout,
			Elapsed: wCfg.HealthTimeout}
		since = failedSince
	}
	s.st = lifecycle.Status{Phase: pl.phase, PhaseSince: since, LastOp: op, ProviderID: wPID, NodeName: wNode,
		Conditions: conds, PreserveUntil: until}
	return s, true
}

// preserveStartString names preservation start p, "" for a start that is
// not one.
func preserveStartString(p Start) string {
	pl, ok := preservePlaceOf(p)
	switch {
	case !ok:
		return ""
	case pl.own:
		return fmt.Sprintf("%s machine preserved, %s", pl.phase.Label(), pl.lost)
	}
	asked := "without a preserve annotation"
	switch {
	case pl.machine != lifecycle.PreserveUnset:
		asked = "preserve=" + pl.machine.String() + " on the machine"
	case pl.node != lifecycle.PreserveUnset:
		asked = "preserve=" + pl.node.String() + " on its node"
	}
	expiry := [...]string{"no expiry", "its expiry ahead", "its expiry passed"}[pl.expiry]
	name := fmt.Sprintf("%s machine taken over, %s, %s", pl.phase.Label(), asked, expiry)
	switch {
	case pl.healthy:
		name += ", its node Ready again"
	case pl.nodeGone:
		name += ", its instance and node gone"
	case pl.staleMirror:
		name += ", its node marked while it ran, its instance gone, the status's conditions older than its node's"
	case pl.instGone:
		name += ", its instance gone, pods stuck on its node"
	}
	return name
}

package lifecycletest

import (
	"fmt"
	"time"

	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// inPlaceBase marks the start states of inPlaceStarts: the bits below it
// index inPlacePlaces.
const inPlaceBase Start = 1 << 7

// inPlacePlace is where a machine is found in the middle of an in-place
// update of its node: its phase, the reason of its node's InPlaceUpdate
// condition (an index of inPlaceReasons) and the node's labels; for the
// lifecycle's own bookkeeping found after lost writes, its stage and
// flags (StageNone for a machine taken over from MCM, whose status holds
// none); and the node's pods and cordon.
type inPlacePlace struct {
	phase    phase.Phase
	reason   uint8
	labels   lifecycle.UpdateLabels
	stage    lifecycle.Stage
	flags    lifecycle.Flags
	pods     uint8
	cordoned bool
	// lost says what a start of the lifecycle's own bookkeeping lost, for
	// its name.
	lost string
	// issue is the group of starts the start belongs to: a situation the
	// lifecycle once got wrong (CHANGELOG.md), explored on its own; 0 for
	// none.
	issue uint8
}

// The groups of in-place starts that each reproduce a situation the
// lifecycle once got wrong; each has its exploration in Explorations.
const (
	// issueReadyAgain: an InPlaceUpdating machine whose node's condition
	// does not say ReadyForUpdate, found once its owner finished the
	// update (which the condition UpdateSuccessful told it) before the
	// lifecycle read the agent's verdict: the lifecycle once told it
	// ReadyForUpdate again, the node no longer drained.
	issueReadyAgain uint8 = iota + 1
	// issueFailedRunning: the agent reported the update failed; the
	// machine, InPlaceUpdateFailed and Failed past its health timeout,
	// once turned Running again as its node is healthy (H3), for ever,
	// its node cordoned and labelled.
	issueFailedRunning
	// issueSuccessUnsaid: the agent reported success while the node's
	// condition says SelectedForUpdate (or CandidateForUpdate, or none,
	// which lead to it): the row that waits for the drain (U5) once came
	// before the one that says UpdateSuccessful (U6), so the condition
	// never said it and the owner never finished.
	issueSuccessUnsaid
)

// inPlacePlaces are the places of inPlaceStarts, in their order: Running
// before any update is asked, with workloads on its node; taken over from
// MCM while it drained a selected node; then at each in-place phase with
// the node's condition at each reason (none included); then the
// lifecycle's own status at the drain before an update after lost writes.
var inPlacePlaces = func() []inPlacePlace {
	selected := lifecycle.UpdateCandidate | lifecycle.UpdateSelected
	out := []inPlacePlace{{phase: phase.Running, pods: 1},
		{phase: phase.Running, reason: ipSelected, labels: selected, pods: 1, cordoned: true}}
	for _, p := range []phase.Phase{phase.InPlaceUpdating, phase.InPlaceUpdateSuccessful, phase.InPlaceUpdateFailed} {
		for r := range uint8(len(inPlaceReasons)) {
			pl := inPlacePlace{phase: p, reason: r, labels: selected | adoptedVerdict(p, r), cordoned: true}
			switch {
			case p == phase.InPlaceUpdating && r == ipSuccessful:
				pl.issue = issueReadyAgain
			case pl.labels.Has(lifecycle.UpdateFailed):
				pl.issue = issueFailedRunning
			case p == phase.InPlaceUpdateSuccessful && r <= ipSelected:
				pl.issue = issueSuccessUnsaid
			}
			out = append(out, pl)
		}
	}
	return append(out,
		inPlacePlace{phase: phase.Running, reason: ipCandidate, labels: selected, stage: lifecycle.StageInPlaceDrain, pods: 1,
			lost: "the op that began its drain was saved but never ran"},
		inPlacePlace{phase: phase.Running, reason: ipSelected, labels: selected, stage: lifecycle.StageInPlaceDrain, pods: 1,
			cordoned: true, lost: "the outcome of the op that began its drain was lost"},
		inPlacePlace{phase: phase.Running, reason: ipSelected, labels: selected, stage: lifecycle.StageInPlaceDrain,
			flags: lifecycle.FlagDraining, pods: 2, cordoned: true, lost: "draining, pods a disruption budget holds"},
		inPlacePlace{phase: phase.Running, reason: ipSelected, labels: selected, stage: lifecycle.StageInPlaceDrain,
			flags: lifecycle.FlagDraining | lifecycle.FlagDeletingPods, pods: 1, cordoned: true,
			lost: "draining by force, pods left"},
		inPlacePlace{phase: phase.Running, reason: ipReady, labels: selected, stage: lifecycle.StageInPlaceDrain,
			flags: lifecycle.FlagDraining, cordoned: true,
			lost: "drained and told ReadyForUpdate, the status read older than its InPlaceUpdating"},
	)
}()

// adoptedVerdict is the agent's verdict on the node of a machine MCM left
// at in-place phase p, its node's condition at reason r: success for
// InPlaceUpdateSuccessful or a condition UpdateSuccessful; failure for a
// condition UpdateFailed, or for InPlaceUpdateFailed unless the condition
// still says the agent may go on (DrainSuccessful, ReadyForUpdate: the
// in-place timeout failed it, H8); else none.
func adoptedVerdict(p phase.Phase, r uint8) lifecycle.UpdateLabels {
	switch {
	case p == phase.InPlaceUpdateSuccessful || r == ipSuccessful:
		return lifecycle.UpdateSucceeded
	case r == ipFailed || p == phase.InPlaceUpdateFailed && r != ipDrainSuccessful && r != ipReady:
		return lifecycle.UpdateFailed
	}
	return 0
}

// inPlaceStarts returns the start states of the in-place update that run
// into the known issue of the lifecycle issue (0: into none; see
// inPlacePlace.issue), or all of them when all is set. The first is a
// Running machine (as StartRunning) whose node carries workloads, which an
// update's drain must remove, before any update is asked; the others are
// machines found in the middle of an in-place update of their node. Taken
// over from MCM (as the MCM adapter reads them, with spec.providerID and the node label, and none
// of the lifecycle's own bookkeeping): Running while MCM drained the
// selected node (condition SelectedForUpdate), and InPlaceUpdating,
// InPlaceUpdateSuccessful and InPlaceUpdateFailed with the node's
// InPlaceUpdate condition at every reason or without it, the node drained
// and cordoned and its labels what the phase implies (candidate and
// selected, the agent's success for InPlaceUpdateSuccessful or a condition
// UpdateSuccessful, its failure for a condition UpdateFailed or for
// InPlaceUpdateFailed but after the in-place timeout). And the lifecycle's
// own status at the drain before an update (StageInPlaceDrain) after lost
// writes: the op that began the drain saved but never run, its outcome
// lost, the drain under way with pods a disruption budget holds (only the
// drain forced by its timeout removes them) and forced with pods left,
// and the drain done and ReadyForUpdate told while the status read is the
// one before. Each is an hour after the machine's creation, its
// instance initialized, its node healthy. They belong to worlds with a
// target cluster.
func inPlaceStarts(issue uint8, all bool) []Start {
	var out []Start
	for i, pl := range inPlacePlaces {
		if all || pl.issue == issue {
			out = append(out, inPlaceBase|Start(i))
		}
	}
	return out
}

// inPlacePlaceOf returns the place of an in-place start, ok false for a
// start that is not one.
func inPlacePlaceOf(p Start) (pl inPlacePlace, ok bool) {
	if p&inPlaceBase == 0 || int(p&^inPlaceBase) >= len(inPlacePlaces) {
		return inPlacePlace{}, false
	}
	return inPlacePlaces[p&^inPlaceBase], true
}

// inPlaceStartState returns the state of in-place start p, with variants
// v but for VariantNoTargetCluster; ok false for a start that is not one.
func inPlaceStartState(p Start, v Variants) (s wState, ok bool) {
	pl, ok := inPlacePlaceOf(p)
	if !ok {
		return wState{}, false
	}
	s = startState(StartRunning, v&^VariantNoTargetCluster)
	s.upd, s.ipReason, s.pods, s.cordoned = pl.labels, pl.reason, pl.pods, pl.cordoned
	if pl.labels == 0 {
		return s, true // StartRunning, its node's workloads aside
	}
	conds := s.nodeObject().Conditions
	joined := lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateSuccessful, Desc: lastop.DescJoined}
	if pl.stage != lifecycle.StageNone {
		// The lifecycle's own status, its drain begun a minute ago.
		s.st = lifecycle.Status{Phase: pl.phase, PhaseSince: lifecycle.StampOf(Epoch.Add(3 * time.Minute)),
			Stage: pl.stage, StageSince: lifecycle.StampOf(s.now.Add(-time.Minute)), Flags: pl.flags, Seq: 5,
			ProviderID: wPID, NodeName: wNode, OwnerUID: wUID, MetadataObserved: lifecycle.StampOf(s.now),
			LastOp: joined, Conditions: conds}
		return s, true
	}
	op := joined
	switch pl.phase {
	case phase.InPlaceUpdating:
		op = lastop.Operation{Type: lastop.TypeInPlaceUpdate, State: lastop.StateProcessing, Desc: lastop.DescInPlaceUpdating}
	case phase.InPlaceUpdateSuccessful:
		op = lastop.Operation{Type: lastop.TypeInPlaceUpdate, State: lastop.StateSuccessful, Desc: lastop.DescInPlaceUpdated}
	case phase.InPlaceUpdateFailed:
		op = lastop.Operation{Type: lastop.TypeInPlaceUpdate, State: lastop.StateFailed, Desc: lastop.DescInPlaceTimeout,
			Elapsed: wCfg.InPlaceUpdateTimeout}
		if pl.labels.Has(lifecycle.UpdateFailed) {
			op = lastop.Operation{Type: lastop.TypeInPlaceUpdate, State: lastop.StateFailed,
				Desc: lastop.DescInPlaceUpdateFailed, Detail: wFailedReason}
		}
	}
	s.st = lifecycle.Status{Phase: pl.phase, PhaseSince: lifecycle.StampOf(s.now.Add(-2 * time.Minute)), LastOp: op,
		ProviderID: wPID, NodeName: wNode, Conditions: conds}
	return s, true
}

// inPlaceStartString names in-place start p, "" for a start that is not
// one.
func inPlaceStartString(p Start) string {
	pl, ok := inPlacePlaceOf(p)
	switch {
	case !ok:
		return ""
	case pl.stage != lifecycle.StageNone:
		return "Running machine at its drain before an in-place update, " + pl.lost
	case pl.phase == phase.Running && pl.labels == 0:
		return "Running machine with workloads on its node"
	case pl.phase == phase.Running:
		return "Running machine taken over while its node was drained for an in-place update"
	}
	cond := "without an InPlaceUpdate condition"
	if pl.reason != 0 {
		cond = "its condition " + inPlaceReasons[pl.reason]
	}
	return fmt.Sprintf("machine taken over at %s, %s", pl.phase.Label(), cond)
}

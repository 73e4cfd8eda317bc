package lifecycletest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// AdoptedStatuses draws every phase MCM leaves a machine in and every
// deletion step its last operation names, with no bookkeeping of the
// lifecycle's own.
func TestAdoptedStatuses(t *testing.T) {
	phases := map[phase.Phase]bool{}
	steps := map[lastop.Step]bool{}
	g := AdoptedStatuses()
	for i := range 3000 {
		st := g.Example(i)
		phases[st.Phase] = true
		require.Equal(t, lifecycle.StageNone, st.Stage)
		require.Zero(t, st.Flags)
		require.Zero(t, st.Seq)
		require.Equal(t, lifecycle.Failures{}, st.Failures)
		require.Zero(t, st.RetryAfter)
		if st.Phase == phase.Terminating {
			steps[lastop.StepOf(st.LastOp.Describe(lastop.Args{Machine: "machine-1", Node: "node-1"}))] = true
		}
	}
	for _, p := range adoptedPhases {
		require.True(t, phases[p], "phase %s never drawn", p.Label())
	}
	for st := lastop.StepNone; st <= lastop.StepRemoveFinalizer; st++ {
		require.True(t, steps[st] || st == lastop.StepInitialize, "deletion step %s never drawn", st)
	}
}

// StatusesAfterLostWrites draws statuses whose bookkeeping does not match
// their phase: a deletion whose stage was lost, a machine past creation at
// a creation stage, a deleting machine at an older stage than its last
// operation names; and statuses of the in-place update: at the drain
// before it, and in its phases.
func TestStatusesAfterLostWrites(t *testing.T) {
	var lostDeletion, staleCreation, olderDeletion, inPlaceDrain, inPlacePhase int
	g := StatusesAfterLostWrites()
	for i := range 1500 {
		st := g.Example(i)
		switch {
		case st.Phase == phase.Terminating && st.Stage == lifecycle.StageNone && st.LastOp.Type == lastop.TypeDelete:
			lostDeletion++
		case st.Phase != phase.None && st.Phase != phase.CrashLoopBackOff && st.Phase != phase.Failed &&
			(st.Stage == lifecycle.StageCreating || st.Stage == lifecycle.StageInitializing):
			staleCreation++
		case st.Phase == phase.Terminating && st.Stage >= lifecycle.StageGetVMStatus && st.LastOp.Desc.Step() != lastop.StepNone &&
			stageOfStep(st.LastOp.Desc.Step()) > st.Stage:
			olderDeletion++
		}
		switch {
		case st.Stage == lifecycle.StageInPlaceDrain:
			inPlaceDrain++
		case st.Phase == phase.InPlaceUpdating || st.Phase == phase.InPlaceUpdateSuccessful || st.Phase == phase.InPlaceUpdateFailed:
			inPlacePhase++
		}
	}
	require.Positive(t, lostDeletion)
	require.Positive(t, staleCreation)
	require.Positive(t, olderDeletion)
	require.Positive(t, inPlaceDrain)
	require.Positive(t, inPlacePhase)
	t.Logf("of 1500: %d deletions whose stage was lost, %d machines past creation at a creation stage, "+
		"%d deletions at an older stage than their last operation, %d at the drain before an in-place update, "+
		"%d in an in-place phase", lostDeletion, staleCreation, olderDeletion, inPlaceDrain, inPlacePhase)
}

// stageOfStep is the deletion stage of an MCM deletion step.
func stageOfStep(s lastop.Step) lifecycle.Stage {
	switch s {
	case lastop.StepGetVMStatus:
		return lifecycle.StageGetVMStatus
	case lastop.StepDrain:
		return lifecycle.StageDrain
	case lastop.StepVolumeAttachments:
		return lifecycle.StageVolumes
	case lastop.StepDeleteVM:
		return lifecycle.StageDeleteVM
	case lastop.StepDeleteNode:
		return lifecycle.StageDeleteNode
	case lastop.StepRemoveFinalizer:
		return lifecycle.StageRemoveFinalizer
	}
	return lifecycle.StageNone
}

// Inputs draws nodes deleted out of band, nodes without conditions, desired
// metadata that adds keys to what the status observed and that drops keys
// from it, and outcomes whose call found the instance gone; and the
// in-place update: nodes selected with pods on them, told ReadyForUpdate,
// with the agent's verdict, machines with the force-drain label, at the
// drain before an update and InPlaceUpdating.
func TestInputsCoverTheWorldOutOfBand(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	var deletedNode, noConditions, added, removed, adopted int
	var selectedWithPods, ready, verdict, forceDrain, draining, updating int
	g := Inputs(cfg)
	for i := range 2000 {
		in := g.Example(i)
		if in.Node.Deleting {
			deletedNode++
		}
		if in.Node.Found() && len(in.Node.Conditions) == 0 {
			noConditions++
		}
		for k := range in.Object.Metadata {
			if _, ok := in.Status.Metadata[k]; !ok {
				added++
				break
			}
		}
		for k := range in.Status.Metadata {
			if _, ok := in.Object.Metadata[k]; !ok {
				removed++
				break
			}
		}
		if in.Status.Phase == phase.Terminating && in.Status.Stage == lifecycle.StageNone {
			adopted++
		}
		n := &in.Node
		if n.Update.Has(lifecycle.UpdateCandidate|lifecycle.UpdateSelected) && n.Pods > 0 {
			selectedWithPods++
		}
		for _, c := range n.Conditions {
			if c.Type == lifecycle.ConditionInPlaceUpdate && c.Reason == lifecycle.ReasonReadyForUpdate {
				ready++
			}
		}
		if n.Update&(lifecycle.UpdateSucceeded|lifecycle.UpdateFailed) != 0 {
			verdict++
		}
		if in.Object.ForceDrain {
			forceDrain++
		}
		if in.Status.Phase == phase.Running && in.Status.Stage == lifecycle.StageInPlaceDrain {
			draining++
		}
		if in.Status.Phase == phase.InPlaceUpdating {
			updating++
		}
	}
	for name, n := range map[string]int{"deleted node": deletedNode, "node without conditions": noConditions,
		"key to add": added, "key to remove": removed, "Terminating without a stage": adopted,
		"selected node with pods": selectedWithPods, "ReadyForUpdate": ready, "agent's verdict": verdict,
		"force-drain label": forceDrain, "Running at the in-place drain": draining, "InPlaceUpdating": updating} {
		require.Positive(t, n, name)
	}
}

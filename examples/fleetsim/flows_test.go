package fleetsim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// inPlaceRun returns the default options for n machines with the in-place
// setting CI runs: a third of the machines updated in place, and no node
// object deleted during a flap.
func inPlaceRun(n int) Options {
	o := small(n)
	o.InPlace.Share, o.NodeGone = 0.3, 0
	return o
}

// preserveRun returns the default options for n machines with the
// preservation setting CI runs: a third of the machines annotated, one
// auto-preserved Failed machine per owner, a 40-minute timeout, nodes that
// die but do not flap, and no clock jump, reused name, crash or failed
// write.
func preserveRun(n int) Options {
	o := small(n)
	o.Preserve.Share, o.Config.AutoPreserve, o.Config.PreserveTimeout = 0.3, DefaultAutoPreserve, DefaultPreserveTimeout
	o.Dead, o.Flap, o.ClockJump, o.Reuse, o.Crash, o.WriteFail = 0.05, 0, 0, 0, 0, 0
	return o
}

// In-place updates with every other fault on: each one ends, as the world
// sees it, and the node agents succeeded, failed and stalled.
func TestInPlaceUpdatesEnd(t *testing.T) {
	r := run(t, inPlaceRun(3000))
	require.True(t, r.OK(), r.Report())
	f := &r.Stats.Flows
	for name, n := range map[string]int64{"asked": f.InPlaceAsked, "told ReadyForUpdate": f.ReadyTold,
		"succeeded": f.AgentOK, "failed": f.AgentFail, "stalled": f.AgentHung, "done": f.InPlaceDone,
		"InPlaceUpdateFailed": f.InPlaceFailed} {
		require.Positive(t, n, name)
	}
	require.Positive(t, r.Stats.Transitions[phase.InPlaceUpdateFailed][phase.Failed])
	require.Positive(t, r.Stats.Transitions[phase.InPlaceUpdateSuccessful][phase.Running])
	require.Contains(t, r.Report(), "in-place updates: ")
}

// Preservation with every other fault on: machines preserved by their
// annotations, on the machine and on the node, and auto-preserved, kept
// by their owners, preserved until their expiry or stopped before.
func TestPreservationsEnd(t *testing.T) {
	r := run(t, preserveRun(3000))
	require.True(t, r.OK(), r.Report())
	f := &r.Stats.Flows
	for name, n := range map[string]int64{"annotated now": f.AnnotatedNow, "annotated when-failed": f.AnnotatedWhenFailed,
		"on nodes": f.OnNodes, "stopped by the user": f.UserStops, "begun": f.Preservations, "of Failed machines": f.PreservedFailed,
		"auto-preserved": f.AutoPreserved, "expired": f.Expired, "stopped": f.Stopped, "kept by the owner": f.OwnerKept,
		"drained": f.PreservedDrained} {
		require.Positive(t, n, name)
	}
	require.Equal(t, int64(1), f.AutoMax, "one auto-preserved machine per owner at most, and some owner had one")
	require.Contains(t, r.Report(), "preservation: timeout 40m0s")
}

// With the settings off, nothing of the flows is recorded or reported.
func TestFlowsOff(t *testing.T) {
	r := run(t, small(500))
	require.Equal(t, FlowStats{}, r.Stats.Flows)
	require.NotContains(t, r.Report(), "in-place updates:")
	require.NotContains(t, r.Report(), "preservation:")
}

// A shell that never counts the pods of a node lets the lifecycle tell the
// node agent ReadyForUpdate while the node still runs pods: the world's
// check of the write catches it.
func TestReadyForUpdateWithPodsIsCaught(t *testing.T) {
	o := inPlaceRun(1000)
	o.broken.fakeKeepDrain = true
	caught(t, o, "told ReadyForUpdate while 3 pods")
}

// A shell that does not carry out the cordon lets the agent be told
// ReadyForUpdate on a schedulable node.
func TestReadyForUpdateUncordonedIsCaught(t *testing.T) {
	o := inPlaceRun(1000)
	o.broken.noCordon = true
	caught(t, o, "cordoned false")
}

// A shell that never reads the agent's verdict leaves updates the agent
// finished hanging until their timeout and beyond: the world, which saw
// the verdict, catches it.
func TestVerdictNeverReadIsCaught(t *testing.T) {
	o := inPlaceRun(1000)
	o.broken.hideVerdict = true
	caught(t, o, "though its node agent")
}

// A shell that never uncordons leaves a node drained for its update
// cordoned once the update is done.
func TestNodeLeftCordonedIsCaught(t *testing.T) {
	o := inPlaceRun(1000)
	o.broken.noUncordon = true
	caught(t, o, "its in-place update is not done")
}

// A shell that never reads a node's preserve annotation: a machine whose
// node asked for its preservation fails without an expiry, and its owner
// replaces it.
func TestNodeAnnotationIgnoredIsCaught(t *testing.T) {
	o := preserveRun(3000)
	o.Preserve.Node = 1
	o.broken.hideNodePreserve = true
	caught(t, o, "asks for its preservation, which never began")
}

// A shell that grants every machine its preservation lets an owner have
// more auto-preserved Failed machines than the maximum.
func TestAutoPreserveBeyondItsMaximumIsCaught(t *testing.T) {
	o := preserveRun(2000)
	o.broken.preserveAll = true
	caught(t, o, "more than Config.AutoPreserve 1")
}

// A shell whose removal of the machine's annotation does nothing keeps a
// preservation asked past its expiry.
func TestPreservationPastItsExpiryIsCaught(t *testing.T) {
	o := preserveRun(1000)
	o.broken.keepAnnotation = true
	caught(t, o, "did not end by its expiry")
}

// A shell whose removal of the node's annotations does nothing keeps the
// node from the cluster autoscaler after the preservation stopped.
func TestNodeNotGivenBackIsCaught(t *testing.T) {
	o := preserveRun(1000)
	o.broken.keepScaleDown = true
	caught(t, o, "not given back")
}

// A shell that never counts the pods of a node lets a preserved Failed
// machine's node be marked Preserved (drained) with its pods on it. With a
// health timeout shorter than the five minutes after which a NotReady
// node's drain is forced, machines fail while their nodes' pods must
// still be evicted.
func TestPreservedNodeNotDrainedIsCaught(t *testing.T) {
	o := preserveRun(2000)
	o.Config.HealthTimeout = 3 * time.Minute
	o.broken.fakeKeepDrain = true
	caught(t, o, "marked Preserved while")
}

// A shell that hands the steps no preservation grant, while the owner
// keeps the machines the limiter chose: the preservation never begins.
func TestGrantedPreservationNeverBegunIsCaught(t *testing.T) {
	o := preserveRun(2000)
	o.broken.hidePreserveGrant = true
	caught(t, o, "granted its auto-preservation")
}

// The node's conditions of both flows are kept after Ready, each replaced
// by its next write, and in a new slice each time; the Terminating
// condition's write marks the node only.
func TestFlowConditions(t *testing.T) {
	var n node
	n.conds = []lifecycle.Condition{{Type: lifecycle.ConditionReady, Status: lifecycle.ConditionTrue}}
	before := n.conds
	n.setExtra(lifecycle.Condition{Type: lifecycle.ConditionInPlaceUpdate, Reason: lifecycle.ReasonCandidateForUpdate})
	n.setExtra(lifecycle.Condition{Type: lifecycle.ConditionPreserved, Status: lifecycle.ConditionTrue})
	n.setExtra(lifecycle.Condition{Type: lifecycle.ConditionInPlaceUpdate, Reason: lifecycle.ReasonSelectedForUpdate})
	require.Len(t, before, 1, "the old slice is left as it was")
	require.Equal(t, []string{lifecycle.ConditionReady, lifecycle.ConditionInPlaceUpdate, lifecycle.ConditionPreserved},
		[]string{n.conds[0].Type, n.conds[1].Type, n.conds[2].Type})
	c, ok := n.condition(lifecycle.ConditionInPlaceUpdate)
	require.True(t, ok)
	require.Equal(t, lifecycle.ReasonSelectedForUpdate, c.Reason)
	require.True(t, n.showsPreservation())
	n.clearFlowObject()
	require.False(t, n.showsPreservation())
	_, ok = n.condition(lifecycle.ConditionInPlaceUpdate)
	require.False(t, ok)
}

func TestFlowOptionsValidate(t *testing.T) {
	for name, change := range map[string]func(*Options){
		"inplace above one":       func(o *Options) { o.InPlace.Share = 1.5 },
		"fail and stall over one": func(o *Options) { o.InPlace.Fail, o.InPlace.Stall = 0.6, 0.6 },
		"negative down":           func(o *Options) { o.InPlace.Down = -0.1 },
		"preserve above one":      func(o *Options) { o.Preserve.Share = 2 },
		"preserve-stop above one": func(o *Options) { o.Preserve.Stop = 1.1 },
		"no target cluster":       func(o *Options) { o.Preserve.Share, o.Config.NoTargetCluster = 0.3, true },
		"negative auto-preserve":  func(o *Options) { o.Config.AutoPreserve = -1 },
		"negative timeout":        func(o *Options) { o.Config.PreserveTimeout = -time.Minute },
	} {
		t.Run(name, func(t *testing.T) {
			o := inPlaceRun(100)
			change(&o)
			require.Error(t, o.Validate())
		})
	}
	o := inPlaceRun(100)
	require.NoError(t, o.Validate())
	o = preserveRun(100)
	require.NoError(t, o.Validate())
}

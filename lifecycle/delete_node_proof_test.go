package lifecycle_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
)

// Deletion cordons, drains and deletes only a node it observed and proved
// to be its instance's. A node name alone proves nothing: the status may
// record one a provider's lookup named for an instance created on a stale
// node object, and node names are reused (an IP, a slot), so the node of
// that name may carry another instance. When the node cannot be read, the
// deletion waits; when it is read and not there, there is nothing of this
// machine to cordon, drain or delete.
func TestDeletionNeverActsOnANodeItDidNotProve(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	nodeKinds := map[lifecycle.Kind]bool{lifecycle.KindSetNodeCondition: true, lifecycle.KindCordon: true,
		lifecycle.KindDrain: true, lifecycle.KindRemoveNodeFinalizer: true, lifecycle.KindDeleteNode: true,
		lifecycle.KindDeleteVolumeAttachments: true}
	unreadable := func(in lifecycle.Input) lifecycle.Input {
		in.Node, in.NodeReadFailed = lifecycle.Node{}, true
		return in
	}
	absent := func(in lifecycle.Input) lifecycle.Input {
		in.Node = lifecycle.Node{}
		return in
	}
	const forced = lifecycle.FlagDrainForced
	for _, tc := range []struct {
		name string
		in   lifecycle.Input
		// wantRule: the rule decided.
		wantRule lifecycle.Rule
	}{
		// S1b records the node its label names, and the drain that follows
		// in the same decision waits.
		{"S1 the node cannot be read", unreadable(terminating(lifecycle.StageGetVMStatus, 0, lastop.DescTerminating)()),
			lifecycle.RuleDeleteNodeKnown},
		{"S2 the node cannot be read", unreadable(terminating(lifecycle.StageDrain, 0, lastop.DescInitiateDrain)()),
			lifecycle.RuleDeleteNodeUnreadable},
		{"S3 the node cannot be read", unreadable(terminating(lifecycle.StageVolumes, forced, lastop.DescForceDrainSucceeded)()),
			lifecycle.RuleDeleteNodeUnreadable},
		{"S5 the node cannot be read", unreadable(terminating(lifecycle.StageDeleteNode, forced|lifecycle.FlagTerminated, lastop.DescVMDeleted)()),
			lifecycle.RuleDeleteNodeUnreadable},
		{"S2 the node is not there", absent(terminating(lifecycle.StageDrain, 0, lastop.DescInitiateDrain)()),
			lifecycle.RuleDeleteDrained},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := step(t, cfg, tc.in)
			require.Equal(t, tc.wantRule.String(), d.Rule.String(), d.String())
			for _, e := range d.Effects.Slice() {
				require.False(t, nodeKinds[e.Kind], "acted on node %q, not proven the instance's: %s", e.Node, d.String())
			}
		})
	}
}

// A forced drain whose condition update or cordon failed, and whose node
// then cannot be read, waits for the node rather than going on to delete
// the instance without a drain having been tried.
func TestForcedDrainWaitsForAnUnreadableNode(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := terminating(lifecycle.StageDrain, 0, lastop.DescInitiateDrain)()
	in.Object.ForceDeletion = true
	in = writeStopped(in, 0, lifecycle.WriteFailed, "etcdserver: request timed out")
	in.Node, in.NodeReadFailed = lifecycle.Node{}, true
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleDeleteNodeUnreadable, d.Rule, d.String())
	require.Equal(t, lifecycle.StageDrain, d.Status.Stage)
	require.Zero(t, d.Effects.Len())
}

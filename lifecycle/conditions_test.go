package lifecycle_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/lifecycle"
)

// bigNode is the machine's node reporting n conditions of types nobody
// watches, in status Unknown (each one is looked up among the watched
// types), with a Ready condition first.
func bigNode(n int) lifecycle.Node {
	node := healthyNode()
	node.Conditions = make([]lifecycle.Condition, n)
	node.Conditions[0] = lifecycle.Condition{Type: lifecycle.ConditionReady, Status: lifecycle.ConditionTrue}
	for i := 1; i < n; i++ {
		node.Conditions[i] = lifecycle.Condition{Type: "Vendor" + strconv.Itoa(i), Status: lifecycle.ConditionUnknown}
	}
	return node
}

// The check of a node's conditions is linear in their number (the watched
// types are at most MaxNodeConditions) and allocates nothing, even for a
// node reporting a hundred thousand conditions; the node's conditions
// are mirrored by sharing the slice.
func TestConditionCheckAllocatesNothing(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	k := checked(t, cfg)
	in := runningInput()
	in.Node = bigNode(100_000)
	in.Object.Overrides.NodeConditions = make([]string, lifecycle.MaxNodeConditions)
	for i := range in.Object.Overrides.NodeConditions {
		in.Object.Overrides.NodeConditions[i] = "Watched" + strconv.Itoa(i)
	}
	var d lifecycle.Decision
	lifecycle.StepInto(&d, k, &in)
	require.Equal(t, lifecycle.RuleHealthConditions, d.Rule, d.Rule)
	in.Status = d.Status
	require.Zero(t, testing.AllocsPerRun(20, func() { lifecycle.StepInto(&d, k, &in) }))
}

// BenchmarkConditions measures a step of a Running machine whose node
// reports n conditions against the largest list of watched types: the
// cost per condition stays flat as n grows.
func BenchmarkConditions(b *testing.B) {
	cfg := lifecycle.DefaultConfig()
	k := checked(b, cfg)
	for _, n := range []int{100, 10_000, 100_000} {
		b.Run("conditions="+strconv.Itoa(n), func(b *testing.B) {
			in := runningInput()
			in.Node = bigNode(n)
			in.Object.Overrides.NodeConditions = make([]string, lifecycle.MaxNodeConditions)
			for i := range in.Object.Overrides.NodeConditions {
				in.Object.Overrides.NodeConditions[i] = "Watched" + strconv.Itoa(i)
			}
			in.Status.Conditions = in.Node.Conditions
			var d lifecycle.Decision
			b.ReportAllocs()
			for b.Loop() {
				lifecycle.StepInto(&d, k, &in)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/condition")
		})
	}
}

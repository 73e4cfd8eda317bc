package lifecycletest

import (
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// KnownIssueExplorations returns explorations that [Explorations] leaves
// out because the lifecycle breaks a promise or liveness in them, so that
// the model check guards the rest meanwhile. Each name says what it
// switches on; once the lifecycle is fixed it passes, and its events and
// starts belong in [Explorations]. Today they are preservation's
// (world_preserve.go): one or two for each of five issues, then the four
// explorations of preservation at large, each of which stops at the first
// promise it finds broken (the third, fourth or fifth issue's).
//
//  1. The cordon of a preservation's drain that did not finish stays
//     ("preservation of a machine that recovers"): only FlagPreserveDrained,
//     set once the node is drained, gives the cordon back, so a machine
//     that recovers during the drain (health makes it Running, which ends
//     the drain) runs on a node cordoned for good; so does one MCM had
//     preserved and cordoned before it was taken over. From a Failed
//     machine preserved, draining its node by force, pods stuck: crash;
//     node health flips; time passes the preservation's expiry; effects;
//     crash; time +11m0s; GetMachineStatus OK: Running, the node cordoned,
//     for ever.
//  2. An administrator's cordon lifted ("preservation with an
//     administrator's cordon"): FlagPreserveDrained records the drain, not
//     that the lifecycle's cordon changed the node, and the change to
//     Running gives the cordon back. From a Running machine with
//     workloads on its node: node health flips; crash; time +11m0s;
//     GetMachineStatus OK (Failed); crash; node health flips; a user
//     annotates the machine preserve=now; an administrator cordons the
//     node; effects (preserve.begin: cordon, drain); effects
//     (preserve.drained); health.rejoined: uncordon node-1.
//  3. The record of a drain trusted for a node that no longer shows it
//     ("preservation with the node re-created"): a preserved Failed
//     machine with FlagPreserveDrained is marked, Preserved True "Preserved
//     node drained successfully", without a look at its node. From a
//     Failed machine preserved, its node drained, not marked yet: node
//     gone; node registers (pods on it, schedulable); preserve.node writes
//     Preserved True. Also once the cordon was given back and the machine
//     fails again before a decision saw the node schedulable (the
//     uncordon's write failed at the change to Running and was made again
//     at the next pass start, in the pass that found the node NotReady):
//     the flag outlives the cordon, and preserve.begin writes Preserved
//     True on the schedulable node with its workloads ("preservation asked
//     on the machine").
//  4. A preservation an invalid node annotation freezes ("preservation
//     decided by an invalid node annotation"): a node's invalid value
//     decides nothing, as MCM's table says, so a machine preserved before
//     keeps its expiry past its end, and its node the autoscaler's
//     annotations and Preserved True, for ever: from a Running machine
//     taken over, preserve=invalid on its node, its expiry ahead: time
//     passes the expiry; the machine loops on metadata.synced.
//  5. An auto-preservation without FlagAutoPreserved stopped at the next
//     step ("auto-preservation of a machine whose annotation is invalid",
//     "preservation of a machine without its node, asked by its annotation
//     and granted by the fleet", "auto-preservation"): preserveAsked
//     auto-preserves a machine with the fleet's grant only with that flag
//     and an expiry, or without either; an expiry set without the flag is
//     stopped (preserve.stop clears it), and the owner sees a Failed
//     machine without an expiry until the next pass begins it again. The
//     flag is missing when the machine's annotation is invalid (preserve
//     sets it only for an unset one: preserve.begin, effects,
//     preserve.stop, at every pass until the window closes), when the
//     machine becomes Failed with the grant (preserveOnFailure sets the
//     expiry only), and when the annotation that preserved it is removed
//     while the grant holds.
//
// A sixth, the autoscaler's annotation left on the node after a partial
// write of the marks, was fixed: its exploration, "preservation's marks
// written in part", runs in [Explorations].
func KnownIssueExplorations() []Exploration {
	running := inPlaceStarts(0, true)[:1] // Running, workloads on its node
	where := preserveStartsWhere
	return []Exploration{
		{Name: "preservation of a machine that recovers", Events: EventsFair,
			Starts: where(func(pl *preservePlace) bool {
				return !pl.instGone && pl.own && (pl.pods == 3 || pl.marked && pl.machine != lifecycle.PreserveUnset)
			})},
		{Name: "preservation with an administrator's cordon",
			Events: EventsFair | eventPreserve | eventCordon | EventNodeHealth, Starts: running, MaxStates: 2_000_000},
		{Name: "preservation with the node re-created", Events: EventsFair | EventNodeGone,
			Starts: where(func(pl *preservePlace) bool { return pl.own && pl.flags.Has(lifecycle.FlagPreserveDrained) })},
		{Name: "preservation decided by an invalid node annotation", Events: EventsFair,
			Starts: where(func(pl *preservePlace) bool { return pl.node == lifecycle.PreserveInvalid })},
		{Name: "preservation of a machine without its node, asked by its annotation and granted by the fleet",
			Events: EventsFair | eventPreserve | eventAutoPreserve,
			Starts: where(func(pl *preservePlace) bool { return pl.nodeGone })},
		{Name: "auto-preservation of a machine whose annotation is invalid", Events: EventsFair | eventAutoPreserve,
			Starts: where(func(pl *preservePlace) bool {
				return pl.machine == lifecycle.PreserveInvalid && pl.phase == phase.Failed && pl.expiry == expiryNone
			})},
		{Name: "preservation asked on the machine", Events: EventsFair | eventPreserve | EventNodeHealth,
			Starts: running, MaxStates: 2_000_000},
		{Name: "preservation asked on the node", Events: EventsFair | eventPreserveNode | EventNodeHealth,
			Starts: running, MaxStates: 2_000_000},
		{Name: "auto-preservation", Events: EventsFair | eventAutoPreserve | EventNodeHealth,
			Starts: running, MaxStates: 2_000_000},
		{Name: "preservation of machines found preserved", Events: EventsFair | EventNodeHealth | EventDrainBlocked,
			Starts: preserveStarts(), MaxStates: 2_000_000},
	}
}

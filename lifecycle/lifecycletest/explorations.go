package lifecycletest

import (
	"fmt"
	"strings"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// The explorations: the events the world may produce between passes, the
// variants of the world, and the explorations the model check runs.

// Events is a set of the world's events an [Exploration] lets happen
// between reconcile passes.
type Events uint32

// The events of the world.
const (
	// EventsFair lets every fair event happen: time passing (6, 11 and 31
	// minutes), the node registering once the instance is initialized, the
	// node turning healthy while its instance exists, another instance's
	// node leaving, the node's volumes detaching once their attachments are
	// deleted, another controller's finalizer leaving a deleted object, and,
	// where their events let them go wrong, the observer recovering, the
	// limiter granting, a problem being solved and the node being readable
	// again. Fair events are fault free: the liveness check follows them.
	EventsFair Events = 1 << iota
	// EventNodeHealth lets the machine's node turn unhealthy (and healthy).
	EventNodeHealth
	// EventNodeGone lets the machine's node disappear. Without it the node
	// outlives its instance (NotReady) until the lifecycle deletes it.
	EventNodeGone
	// EventForeignNode lets a node of another instance appear under the
	// node name the status records or, before an instance is made, under
	// the name the provider will give it (a stale node object, MCM A5).
	EventForeignNode
	// EventDelete lets the machine object be deleted; without our
	// finalizer, another controller's may still hold it.
	EventDelete
	// EventForceDeletion lets a deleting machine get the force-deletion
	// label.
	EventForceDeletion
	// EventHotUpdate lets the desired hot-update generation move to 1.
	EventHotUpdate
	// EventMetadata lets the desired metadata become team=a, pool=b.
	EventMetadata
	// EventObserver lets the observer degrade (and recover).
	EventObserver
	// EventGrant lets the limiter withdraw its grant (and give it again).
	EventGrant
	// EventInstanceGone lets the instance vanish out of band (deleted by
	// hand, a spot instance reclaimed); its node, if any, stays NotReady.
	EventInstanceGone
	// EventProblem lets the shell find each [lifecycle.Problem] with the
	// machine or its class; the problem being solved is fair.
	EventProblem
	// EventNodeUnreadable lets the node become unreadable (Input.NodeReadFailed);
	// reading it again is fair.
	EventNodeUnreadable
	// EventMetadataKeyRemoved lets the key pool leave the desired metadata
	// once EventMetadata asked for it, so that the instance must lose it.
	EventMetadataKeyRemoved
	// EventDrainBlocked lets the pods of the machine's node resist its
	// drain: a disruption budget that refuses every eviction (only a
	// forced drain's deletion removes them), then pods that not even a
	// deletion removes (stuck on a finalizer). Neither clears by itself:
	// the drain's timeouts must end the wait.
	EventDrainBlocked
	// eventInPlace lets the node's owner and its agent play their parts of
	// the in-place update (world_inplace.go): the owner asks an update
	// (labels the node a candidate), withdraws its selection, and the
	// machine gets the force-drain label while its node is selected; the
	// agent reports failure where variantAgentFails lets it. The owner's
	// fair parts (selecting the node, finishing) happen with it, the
	// agent's success with the fair events. Under variantOwnUpdate the
	// machine's spec asks the update instead, and the node's owner plays
	// no part. Unexported: the explorations of [Explorations] use it, and
	// the exported set of events stays as it is.
	eventInPlace
	// eventPreserve lets a user ask and take back the machine's
	// preservation with the machine's preserve annotation
	// (world_preserve.go): set it to now, when-failed or false, or remove
	// it. Time passing a preservation's expiry, wherever one is set,
	// happens with the fair events. Unexported, as eventInPlace is, and so
	// are the next three.
	eventPreserve
	// eventPreserveNode lets a user do the same with the node's preserve
	// annotation, which decides once the node carried one.
	eventPreserveNode
	// eventAutoPreserve lets the fleet grant the machine auto-preservation
	// while its owner may choose it (a Failed machine no annotation
	// names, within its window, or one it auto-preserves), and take the
	// grant back; the fleet taking back a grant no longer due happens
	// with the fair events.
	eventAutoPreserve
	// eventCordon lets an administrator cordon the machine's node, a
	// cordon the lifecycle must leave.
	eventCordon
)

// eventsAll is the set of every event of the world.
const eventsAll = eventCordon | (eventCordon - 1)

// String lists the events of the set by name, joined by ", ".
func (e Events) String() string {
	names := []string{"fair events", "node health", "node gone", "foreign node", "deletion", "force deletion",
		"hot update", "metadata", "observer", "grant", "instance gone", "problem", "node unreadable",
		"metadata key removed", "drain blocked", "in-place update", "preservation", "preservation on the node", "auto-preservation",
		"an administrator's cordon"}
	var out []string
	for i, n := range names {
		if e&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	if rest := e &^ (1<<len(names) - 1); rest != 0 {
		out = append(out, fmt.Sprintf("Events(%#x)", uint32(rest)))
	}
	return strings.Join(out, ", ")
}

// Variants is a set of changes to the world of an [Exploration].
type Variants uint8

// The variants of the world.
const (
	// VariantNoTargetCluster decides with Config.NoTargetCluster: no node
	// ever registers, and a created machine becomes Available.
	VariantNoTargetCluster Variants = 1 << iota
	// VariantHealthTimeoutDisabled gives the machine
	// Overrides.DisableHealthTimeout.
	VariantHealthTimeoutDisabled
	// variantAgentFails lets the node agent report an in-place update
	// failed (a fault, with eventInPlace); without it the agent succeeds
	// or stalls. Unexported, as eventInPlace is.
	variantAgentFails
	// variantOwnUpdate makes the lifecycle the owner of the node's
	// in-place update, as for the project's controller: eventInPlace asks
	// an update through the machine's spec (Object.InPlaceGeneration), the
	// lifecycle labels the node and, once the update is done, takes the
	// labels off and uncordons it; the node's own owner plays no part.
	variantOwnUpdate
)

// String lists the variants of the set by name, joined by ", ".
func (v Variants) String() string {
	var out []string
	if v&VariantNoTargetCluster != 0 {
		out = append(out, "no target cluster")
	}
	if v&VariantHealthTimeoutDisabled != 0 {
		out = append(out, "health timeout disabled")
	}
	if v&variantAgentFails != 0 {
		out = append(out, "a node agent that may fail")
	}
	if v&variantOwnUpdate != 0 {
		out = append(out, "in-place updates asked through the machine's spec")
	}
	if rest := v &^ (VariantNoTargetCluster | VariantHealthTimeoutDisabled | variantAgentFails | variantOwnUpdate); rest != 0 {
		out = append(out, fmt.Sprintf("Variants(%#x)", uint8(rest)))
	}
	return strings.Join(out, ", ")
}

// config returns the configuration the world of variants v decides with.
func (v Variants) config() lifecycle.Config {
	c := wCfg
	c.NoTargetCluster = v&VariantNoTargetCluster != 0
	return c
}

// DefaultMaxStates bounds an exploration whose MaxStates is zero.
const DefaultMaxStates = 1_000_000

// Exploration is one bounded exploration: the events the world may
// produce, and where it starts.
type Exploration struct {
	// Name names the exploration in reports.
	Name string
	// Events are the world's events allowed between passes.
	Events Events
	// Starts are the start states.
	Starts []Start
	// Variants change the world: its configuration, the machine's spec.
	Variants Variants
	// MaxStates bounds the search; [Explore] fails when the world has at
	// least that many states. Zero means [DefaultMaxStates].
	MaxStates int
	// Decide, when set, decides in place of lifecycle.Step. A test sets it
	// to a deliberately broken lifecycle (lifecycle.Step with a decision
	// changed) to check that the exploration catches what it breaks.
	Decide func(cfg lifecycle.Config, in lifecycle.Input) lifecycle.Decision
	// Observe, when set, is called with every decision made (and the
	// configuration and input it was made from), once per explored state,
	// in the order of the search. The pointers are valid only during the
	// call, and what they point to must not be modified.
	Observe func(cfg *lifecycle.Config, in *lifecycle.Input, d *lifecycle.Decision)
}

// Explorations returns the explorations the lifecycle's model check runs
// and the documentation draws. Three explore the flows at large: creation,
// health and the limiter (from a new machine, with and without an older
// incarnation's instance, whose instance may vanish); deletion at any point
// (from a new and a Running machine, with a stale node of the instance's
// name); hot update and metadata (from a Running machine). Seven explore
// the in-place update of the node (world_inplace.go): asked by its owner,
// at large, from a Running machine and from machines found in the middle
// of one, taken over from MCM or after lost writes (starts_inplace.go);
// with a hot update; with the node re-created; from the places the
// lifecycle once got wrong (taken over at InPlaceUpdating its owner
// finishing first, at InPlaceUpdateSuccessful before the condition said
// so, with an agent that may fail); and asked through the machine's spec.
// Fourteen explore preservation (world_preserve.go): of a Failed machine
// without its node, asked and taken back through its annotation, and
// granted by the fleet, alone and together; of a preserved Failed machine
// whose node is marked, each write of the marks failing in turn; of
// machines whose node stays NotReady (their instance gone), found
// preserved or asked to be (starts_preserve.go), their drain held by pods
// or unforced at first; of machines that recover, whose node is made
// anew, whose node's annotation is invalid, whose own annotation is
// invalid while the fleet grants it; asked on the machine, on the node,
// and granted by the fleet, from a Running machine whose node fails and
// recovers, and asked on the machine while an administrator may cordon
// the node; and from every place a machine is found preserved. Three start from
// every state another controller or a lost write leaves a machine in:
// machines taken over from another controller at every phase
// ([AdoptedStarts]), while being created or running and while deleting,
// and machines whose status lost a write ([LostWriteStarts]). Five small
// ones explore what those worlds never show: no target cluster (from a new
// machine, and from the machines taken over or after lost writes),
// problems with the machine or its class, an unreadable node, and a
// disabled health timeout.
func Explorations() []Exploration {
	return []Exploration{
		{Name: "creation, health and the limiter",
			Events: EventsFair | EventNodeHealth | EventNodeGone | EventObserver | EventGrant | EventInstanceGone,
			Starts: []Start{StartNew, StartNewOverOldInstance, StartNewWhilePredecessorTerminates}, MaxStates: 2_000_000},
		{Name: "deletion at any point",
			Events: EventsFair | EventDelete | EventForceDeletion | EventNodeGone | EventForeignNode | EventDrainBlocked,
			Starts: []Start{StartNew, StartRunning}, MaxStates: 2_000_000},
		{Name: "hot update and metadata",
			Events: EventsFair | EventHotUpdate | EventMetadata | EventMetadataKeyRemoved | EventNodeHealth | EventDelete,
			Starts: []Start{StartRunning}, MaxStates: 2_000_000},
		{Name: "in-place update",
			Events: EventsFair | eventInPlace | EventNodeHealth | EventDelete | EventInstanceGone,
			Starts: append([]Start{StartRunning}, inPlaceStarts(0, false)...), MaxStates: 2_000_000},
		{Name: "in-place update and hot update",
			Events: EventsFair | eventInPlace | EventHotUpdate | EventDelete,
			Starts: inPlaceStarts(0, true)[:1]},
		{Name: "in-place update with the node re-created",
			Events: EventsFair | eventInPlace | EventNodeGone, Starts: []Start{StartRunning}, MaxStates: 2_000_000},
		{Name: "in-place update taken over at InPlaceUpdating, its owner finishing first",
			Events: EventsFair | eventInPlace, Starts: inPlaceStarts(issueReadyAgain, false), MaxStates: 2_000_000},
		{Name: "in-place update with an agent that may fail",
			Events: EventsFair | eventInPlace | EventNodeHealth | EventDelete, Variants: variantAgentFails,
			Starts: append([]Start{StartRunning}, inPlaceStarts(issueFailedRunning, false)...), MaxStates: 2_000_000},
		{Name: "in-place update taken over at InPlaceUpdateSuccessful before the condition said so",
			Events: EventsFair | eventInPlace | EventNodeHealth | EventDelete,
			Starts: inPlaceStarts(issueSuccessUnsaid, false), MaxStates: 2_000_000},
		{Name: "in-place update asked through the machine's spec",
			Events: EventsFair | eventInPlace | EventNodeHealth | EventDelete | EventInstanceGone, Variants: variantOwnUpdate,
			Starts: inPlaceStarts(0, true)[:1], MaxStates: 2_000_000},
		{Name: "preservation of a machine without its node",
			Events: EventsFair | eventPreserve,
			Starts: preserveStartsWhere(func(pl *preservePlace) bool { return pl.nodeGone })},
		{Name: "auto-preservation of a machine without its node",
			Events: EventsFair | eventAutoPreserve,
			Starts: preserveStartsWhere(func(pl *preservePlace) bool { return pl.nodeGone })},
		{Name: "preservation's marks written in part",
			Events: EventsFair,
			Starts: preserveStartsWhere(func(pl *preservePlace) bool {
				return pl.instGone && pl.flags.Has(lifecycle.FlagPreserveDrained)
			})},
		{Name: "preservation of a machine whose node stays NotReady",
			Events: EventsFair | EventDelete | EventDrainBlocked,
			Starts: preserveStartsWhere(func(pl *preservePlace) bool {
				return pl.instGone && !pl.nodeGone && !pl.flags.Has(lifecycle.FlagPreserveDrained)
			})},
		{Name: "preservation of a machine that recovers", Events: EventsFair,
			Starts: preserveStartsWhere(func(pl *preservePlace) bool {
				return !pl.instGone && pl.own && (pl.pods == 3 || pl.marked && pl.machine != lifecycle.PreserveUnset)
			})},
		{Name: "preservation with the node re-created", Events: EventsFair | EventNodeGone,
			Starts: preserveStartsWhere(func(pl *preservePlace) bool { return pl.own && pl.flags.Has(lifecycle.FlagPreserveDrained) })},
		{Name: "preservation decided by an invalid node annotation", Events: EventsFair,
			Starts: preserveStartsWhere(func(pl *preservePlace) bool { return pl.node == lifecycle.PreserveInvalid })},
		{Name: "preservation of a machine without its node, asked by its annotation and granted by the fleet",
			Events: EventsFair | eventPreserve | eventAutoPreserve,
			Starts: preserveStartsWhere(func(pl *preservePlace) bool { return pl.nodeGone })},
		{Name: "auto-preservation of a machine whose annotation is invalid", Events: EventsFair | eventAutoPreserve,
			Starts: preserveStartsWhere(func(pl *preservePlace) bool {
				return pl.machine == lifecycle.PreserveInvalid && pl.phase == phase.Failed && pl.expiry == expiryNone
			})},
		{Name: "preservation asked on the machine", Events: EventsFair | eventPreserve | EventNodeHealth,
			Starts: inPlaceStarts(0, true)[:1], MaxStates: 2_000_000},
		{Name: "preservation asked on the node", Events: EventsFair | eventPreserveNode | EventNodeHealth,
			Starts: inPlaceStarts(0, true)[:1], MaxStates: 2_000_000},
		{Name: "auto-preservation", Events: EventsFair | eventAutoPreserve | EventNodeHealth,
			Starts: inPlaceStarts(0, true)[:1], MaxStates: 2_000_000},
		{Name: "preservation with an administrator's cordon",
			Events: EventsFair | eventPreserve | eventCordon | EventNodeHealth, Starts: inPlaceStarts(0, true)[:1],
			MaxStates: 2_000_000},
		{Name: "preservation of machines found preserved", Events: EventsFair | EventNodeHealth | EventDrainBlocked,
			Starts: preserveStarts(), MaxStates: 2_000_000},
		{Name: "taken over from another controller",
			Events: EventsFair | EventNodeHealth | EventNodeGone | EventDelete | EventInstanceGone,
			Starts: append([]Start{StartAdoptedRunning}, adoptedStarts(false)...), MaxStates: 2_000_000},
		{Name: "taken over while deleting",
			Events: EventsFair | EventNodeHealth | EventNodeGone | EventForeignNode | EventForceDeletion | EventInstanceGone |
				EventDrainBlocked,
			Starts: append([]Start{StartAdoptedDeleting, StartAdoptedDeletingUnknownStep}, adoptedStarts(true)...)},
		{Name: "after lost writes",
			Events: EventsFair | EventNodeHealth | EventNodeGone | EventDelete | EventInstanceGone | EventGrant,
			Starts: LostWriteStarts()},
		{Name: "without a target cluster",
			Events: EventsFair | EventDelete, Variants: VariantNoTargetCluster,
			Starts: []Start{StartNew}},
		{Name: "taken over, or after lost writes, without a target cluster",
			Events: EventsFair | EventDelete | EventInstanceGone, Variants: VariantNoTargetCluster,
			Starts: append(AdoptedStarts(), LostWriteStarts()...)},
		{Name: "problems with the machine or its class",
			Events: EventsFair | EventProblem | EventDelete,
			Starts: []Start{StartRunning}},
		{Name: "an unreadable node",
			Events: EventsFair | EventNodeUnreadable | EventNodeHealth | EventDelete | EventForceDeletion,
			Starts: []Start{StartRunning}},
		{Name: "health timeout disabled",
			Events: EventsFair | EventNodeHealth | EventGrant, Variants: VariantHealthTimeoutDisabled,
			Starts: []Start{StartRunning}},
	}
}

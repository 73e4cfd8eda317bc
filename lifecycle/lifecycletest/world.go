package lifecycletest

import (
	"fmt"
	"strings"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// The bounded world of [Explore]: one machine "machine-1" (UID "uid-1",
// owner "ms", created at Epoch), its object, node, bootstrap token,
// observer, limiter grant, the problems the shell may find, and the
// provider's instances, the node's owner and agent in an in-place update,
// and the users and the fleet that ask the machine's preservation. This
// file holds the concrete states, what the shell would pass to Step in
// them, and which of them are end states or break an invariant;
// world_key.go holds their abstraction, world_driver.go the provider's
// answers, world_events.go the successors of a state, world_inplace.go
// the in-place update's part of all of these, world_preserve.go
// preservation's, and explore.go the search.

// The identity of the explored machine, its instance and its node.
const (
	wName = "machine-1"
	wUID  = "uid-1"
	wPID  = "test:///vm-1"
	// wNode is the name of the instance's node, and of any node of
	// another instance the world shows under that name: the provider names
	// nodes after something it may reuse (an IP, a slot).
	wNode = "node-1"
)

// wCfg is the configuration every exploration decides with unless a
// variant changes it: MCM's defaults with a 30-minute drain timeout, so
// that every deadline is within the world's time steps (6, 11 and 31
// minutes). A preservation lasts MCM's default, four days: time reaches
// its expiry by an event of its own.
var wCfg = func() lifecycle.Config {
	c := lifecycle.DefaultConfig()
	c.CreationTimeout = 20 * time.Minute
	c.HealthTimeout = 10 * time.Minute
	c.DrainTimeout = 30 * time.Minute
	return c
}()

// The instance metadata of the world: at most two keys, each with the one
// value the spec may ask, as a bit set (wMeta), so that a patch can take
// one key and drop the other.
type wMeta uint8

const (
	wMetaTeam wMeta = 1 << iota // team=a
	wMetaPool                   // pool=b
	wMetaAll  = wMetaTeam | wMetaPool
)

// wMetaKeys are the keys and values of the bits of a wMeta, in key order.
var wMetaKeys = [...]struct {
	bit        wMeta
	key, value string
}{
	{wMetaPool, "pool", "b"},
	{wMetaTeam, "team", "a"},
}

// metaOf returns the bits of the world's keys m holds with their value.
func metaOf(m map[string]string) wMeta {
	var b wMeta
	for _, k := range wMetaKeys {
		if v, ok := m[k.key]; ok && v == k.value {
			b |= k.bit
		}
	}
	return b
}

// metaMap returns the metadata of bits b, nil for none.
func metaMap(b wMeta) map[string]string {
	if b == 0 {
		return nil
	}
	m := make(map[string]string, 2)
	for _, k := range wMetaKeys {
		if b&k.bit != 0 {
			m[k.key] = k.value
		}
	}
	return m
}

// wInstance is the provider's view of this incarnation's instance.
type wInstance struct {
	exists, initialized bool
	generation          int64
	meta                wMeta
	owner               string
}

// wState is a concrete state of the world.
type wState struct {
	now     time.Time
	obj     lifecycle.Object
	st      lifecycle.Status
	gone    bool
	held    bool // the deleted object without our finalizer, held by another controller's
	token   bool
	inst    wInstance // this incarnation's instance
	oldInst bool      // an instance of an older incarnation of the name
	// predecessor: that older incarnation is still terminating (its node
	// still there), as the shell reports it (Input.PredecessorTerminating).
	predecessor bool
	node        int // 0 none, 1 own, 2 foreign (another instance's, named wNode)
	healthy     bool
	taint       bool
	// volumes of the own node: 0 none, 1 attached with live
	// VolumeAttachments, 2 attachments deleted but the volumes still
	// attached.
	volumes uint8
	// pods on the own node that a drain must remove: 0 none, 1 evictable,
	// 2 held by a disruption budget (only a forced drain removes them), 3
	// stuck (no drain removes them).
	pods uint8
	// forcedDrain: a forced drain was attempted on the own node, whatever
	// came of it (pods stuck on a finalizer may outlive it).
	forcedDrain    bool
	nodeReadFailed bool
	problem        lifecycle.Problem
	degraded       bool
	obsSince       time.Time
	grant          bool
	outcome        *lifecycle.Outcome // fed to the next step; nil between passes
	steps          int                // steps in the current pass
	// The in-place update of the own node (world_inplace.go): the
	// owner's labels and the agent's verdict, the node's InPlaceUpdate
	// condition (an index of inPlaceReasons, 0 for none), and whether the
	// node is cordoned.
	upd      lifecycle.UpdateLabels
	ipReason uint8
	cordoned bool
	// What the in-place invariants watch: ReadyForUpdate written to the
	// own node while pods a drain must remove were on it or while it was
	// not cordoned (readyUndrained), and the agent updating such a node
	// (agentUndrained).
	readyUndrained, agentUndrained bool
	// Preservation (world_preserve.go): the own node's preserve
	// annotation, the cluster autoscaler's annotations on it, its
	// Preserved condition (presStatus, with its reason and message), who
	// cordoned it (cordonBy, while cordoned), the lifecycle's mark of its
	// own cordon (cordonMark, lifecycle.CordonMarkAnnotation), and the
	// fleet's grant of auto-preservation.
	nodePreserve        lifecycle.Preserve
	sdDisabled, sdByMCM bool
	cordonMark          bool
	presStatus          uint8
	presReason, presMsg string
	cordonBy            uint8
	grantPreserve       bool
}

// input is what the shell would pass to Step in this state.
func (s *wState) input() lifecycle.Input {
	in := lifecycle.Input{Now: s.now, Object: s.obj, Status: s.st, TokenExists: s.token,
		Grant: lifecycle.Grant{Fail: s.grant, Preserve: s.grantPreserve}, Outcome: s.outcome, Problem: s.problem,
		PredecessorTerminating: s.predecessor}
	if s.gone {
		in.Object = lifecycle.Object{}
	}
	in.Observer = lifecycle.Observer{Degraded: s.degraded, Since: s.obsSince}
	if s.nodeReadFailed {
		in.NodeReadFailed = true
		return in
	}
	in.Node = s.nodeObject()
	if s.node == 1 && s.volumes == 1 {
		in.VolumeAttachments = 1
	}
	if o := s.outcome; o != nil && o.Result.Method == driverapi.MethodCreate && o.Result.NodeName == wNode {
		// The node the CreateMachine result names, for the stale-node
		// check (MCM A5), on a copy: the state's outcome stays as fed.
		withNode := *o
		withNode.CreatedNode = in.Node
		in.Outcome = &withNode
	}
	return in
}

// nodeObject is the node named wNode as the shell reads it, zero for none.
func (s *wState) nodeObject() lifecycle.Node {
	switch s.node {
	case 1:
		ready := lifecycle.ConditionFalse
		if s.healthy {
			ready = lifecycle.ConditionTrue
		}
		n := lifecycle.Node{Name: wNode, ProviderID: wPID, MachineName: wName,
			Conditions: []lifecycle.Condition{{Type: "Ready", Status: ready, Since: lifecycle.StampOf(Epoch)}}}
		if s.taint {
			n.Taints = lifecycle.InstanceNotReady
		}
		if s.volumes != 0 {
			n.VolumesAttached = 1
		}
		if s.pods != 0 {
			n.Pods = 1
		}
		s.inPlaceNode(&n)
		s.preserveNode(&n)
		return n
	case 2:
		return lifecycle.Node{Name: wNode, ProviderID: "test:///vm-other",
			Conditions: []lifecycle.Condition{{Type: "Ready", Status: lifecycle.ConditionTrue}}}
	}
	return lifecycle.Node{}
}

// end reports whether the state is an end state: gone, or deleting with our
// finalizer removed once the instance is gone; Running with its update applied
// (or refused) and its metadata in sync, as the lifecycle reports it and as
// the instance really carries it, and no in-place update asked or under way
// (inPlaceSettled); Available; or Failed; the last three with their
// preservation over, or never asked (preserveSettled): a machine kept until
// its expiry is not at its end.
func (s *wState) end() bool {
	st := &s.st
	switch {
	case s.gone:
		return true
	case !s.obj.DeletionTime.IsZero():
		return !s.obj.Finalizer && st.Stage == lifecycle.StageRemoveFinalizer
	case st.Phase == phase.Failed, st.Phase == phase.Available:
		return s.preserveSettled()
	case st.Phase == phase.Running:
		m := lifecycle.MemberOf(&wCfg, &lifecycle.Input{Object: s.obj, Status: *st})
		return (!m.UpdatePending() || st.Flags.Has(lifecycle.FlagNeedsReplacement)) && m.MetadataInSync() &&
			s.inst.exists && s.metadataApplied() && s.inPlaceSettled() && s.preserveSettled()
	}
	return false
}

// metadataApplied reports whether the instance really carries the desired
// metadata and the machine's UID as its owner.
func (s *wState) metadataApplied() bool {
	return s.inst.meta == metaOf(s.obj.Metadata) && s.inst.owner == s.obj.UID
}

// invariant returns what the state breaks of the world's promises: one
// instance per incarnation, never another owner's, none left once gone or
// once our finalizer is removed, no bootstrap token left once gone,
// metadata never reported in sync while the instance lacks a desired key,
// and the in-place update's (inPlaceInvariant).
func (s *wState) invariant() string {
	if msg := s.inPlaceInvariant(); msg != "" {
		return msg
	}
	if s.inst.exists && s.inst.owner != wUID && s.inst.owner != "" {
		return fmt.Sprintf("an instance of another owner was made: %+v", s.inst)
	}
	if s.gone && s.inst.exists {
		return "the machine is gone, its instance is left"
	}
	if s.gone && s.token {
		return "the machine is gone, its bootstrap token is left"
	}
	if !s.obj.DeletionTime.IsZero() && !s.obj.Finalizer && s.st.Stage == lifecycle.StageRemoveFinalizer && s.inst.exists {
		return "our finalizer is removed, the instance is left"
	}
	if s.inst.exists && !s.gone && !s.metadataApplied() && lifecycle.MemberOf(&wCfg, &lifecycle.Input{Object: s.obj, Status: s.st}).MetadataInSync() {
		return fmt.Sprintf("metadata reported in sync while the instance carries %v (owner %q), not %v",
			metaMap(s.inst.meta), s.inst.owner, s.obj.Metadata)
	}
	return ""
}

// The kinds of end state, as bits: what a machine ends as.
const (
	endRunning   uint8 = 1 << iota // Running and in sync
	endAvailable                   // Available (no target cluster)
	endFailed                      // Failed, awaiting replacement
	endGone                        // gone, or deleting with our finalizer removed
)

// endNames name the bits of the end kinds, in order.
var endNames = [...]string{"Running", "Available", "Failed", "gone"}

// endsString lists the end kinds of bits b, joined by "|".
func endsString(b uint8) string {
	var out []string
	for i, n := range endNames {
		if b&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "|")
}

// endKind returns the kind of end state s is, 0 when it is none.
func (s *wState) endKind() uint8 {
	if !s.end() {
		return 0
	}
	switch {
	case s.gone || !s.obj.DeletionTime.IsZero():
		return endGone
	case s.st.Phase == phase.Failed:
		return endFailed
	case s.st.Phase == phase.Available:
		return endAvailable
	}
	return endRunning
}

// expectedEnds returns the end states a machine in state s may end in by
// fault-free paths, under variants v: gone once its deletion was
// requested; else Running (Available without a target cluster) and, only
// where a timeout can legitimately fire, Failed. A machine whose instance
// exists and is initialized and whose own node is healthy, past creation
// (Pending, Running, Unknown), can only end Running: nothing fault-free
// makes its node unhealthy or its instance vanish, so no timeout may fail
// it; unless an in-place update is asked of its node or under way, where
// an agent that stalls lets the in-place timeout and then the health
// timeout fail it. A machine already Failed stays Failed, and so does one
// whose in-place update the agent reported failed (InPlaceUpdating or
// InPlaceUpdateFailed), or InPlaceUpdateFailed without the agent's success
// while its node's condition does not tell the agent to go on: it ends
// Failed after the health timeout. A Failed machine preserved until its
// expiry may also end Running: its node may recover first.
func (s *wState) expectedEnds(v Variants) uint8 {
	if s.gone || !s.obj.DeletionTime.IsZero() {
		return endGone
	}
	up := endRunning
	if v&VariantNoTargetCluster != 0 {
		up = endAvailable
	}
	switch s.st.Phase {
	case phase.Failed:
		if s.preserveSettled() {
			return endFailed
		}
		return up | endFailed
	case phase.InPlaceUpdating:
		if s.agentFailed() {
			return endFailed
		}
	case phase.InPlaceUpdateFailed:
		if s.agentFailed() || !s.upd.Has(lifecycle.UpdateSucceeded) && s.ipReason != ipReady {
			return endFailed
		}
	case phase.Pending, phase.Running, phase.Unknown:
		if s.inst.exists && s.inst.initialized && s.node == 1 && s.healthy && v&VariantNoTargetCluster == 0 &&
			!s.inPlaceAsked() {
			return up
		}
	}
	return up | endFailed
}

// saturated reports whether every deadline of s, whose key is k, has
// passed: time passing changes nothing the decisions read. A machine that
// cycles through such states without reaching an end state waits, or
// loops, forever.
func (s *wState) saturated(k wKey) bool {
	later := *s
	later.now = later.now.Add(1000 * time.Hour)
	return later.key() == k
}

// betweenPasses reports whether s is between two reconcile passes: the
// world's events happen here, and a step from here starts a pass.
func (s *wState) betweenPasses() bool { return s.outcome == nil && s.steps == 0 }

// wantedEnd returns the end a start state s should reach by some
// fault-free path, under variants v: of its expected ends, the one a
// timeout does not bring (gone once its deletion was requested, else
// Running, or Available without a target cluster), and Failed for a
// machine already Failed unless its instance runs and its node is
// healthy (it rejoins).
func (s *wState) wantedEnd(v Variants) uint8 {
	if s.st.Phase == phase.Failed && s.obj.DeletionTime.IsZero() && !s.gone && !(s.healthy && s.inst.exists && s.node == 1) {
		return endFailed
	}
	if e := s.expectedEnds(v); e != endFailed {
		return e &^ endFailed
	}
	return endFailed
}

package lifecycletest

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/pass"
)

// PassWorld is the world of one machine as [ShellCheck] drives it: the
// caller's pass.Shell acting on it, and what the checker needs besides the
// shell: the world's truth, read past any cache of the shell, to judge what
// the passes did, and the cluster's parts it plays (a kubelet registering
// a node, an owner deleting the machine).
type PassWorld interface {
	pass.Shell
	// Truth returns the world as it is now: the stored machine object and
	// status, the provider's instances, the nodes and the bootstrap token.
	Truth() WorldTruth
	// AddNode has a kubelet register node n. It exists from now on as
	// given, MachineName being its machine-name label, with as many live
	// VolumeAttachments as n.VolumesAttached. A drain that evicts its pods
	// detaches its volumes and deletes those attachments.
	AddNode(n lifecycle.Node)
	// RequestDeletion sets the machine object's deletionTimestamp to at, as
	// its owner does when it deletes the machine; the object stays until
	// its finalizer is removed.
	RequestDeletion(at time.Time)
}

// WriteRefuser is a [PassWorld] whose API can refuse writes. When the
// world implements it, [ShellCheck] has the world refuse single writes and
// checks that the shell reports each refusal instead of an ok.
type WriteRefuser interface {
	// RefuseWrites makes every write of the shell from now on (a status
	// save, a write of an effect to the object, a node or the token, but
	// not an event) fail with w, without being carried out, until it is
	// called with lifecycle.WriteOK.
	RefuseWrites(w lifecycle.Write)
}

// WorldSpec is the state a [PassWorld] starts in.
type WorldSpec struct {
	// Config is the lifecycle's configuration, for what the shell computes
	// with it: the fleet's grant (lifecycle.Limit) in Input.Grant.
	Config lifecycle.Config
	// Now is the time the world starts at.
	Now time.Time
	// Object is the machine object.
	Object lifecycle.Object
	// Status is the machine's persisted status.
	Status lifecycle.Status
	// Instances are the provider's instances in the order they were made,
	// deleted ones included (Instance.Deleted), with the fields of
	// [Instance] a world keeps: ProviderID, NodeName, MachineName,
	// CreatorUID, Attempt, OwnerUID, Generation, Metadata and Initialized.
	// Their providerIDs and node names are those a [NewProvider] gives,
	// test:///vm-N and node-N for the N-th, so a world over a NewProvider
	// makes them with [Provider.Add] in this order, and the instances the
	// provider makes later go on from there.
	Instances []Instance
	// Nodes are the nodes, as [PassWorld.AddNode] takes them.
	Nodes []lifecycle.Node
	// Token reports whether the machine's bootstrap token exists.
	Token bool
}

// WorldTruth is a [PassWorld] as it is, for judging.
type WorldTruth struct {
	// Object is the stored machine object, the zero Object once it is gone.
	Object lifecycle.Object
	// Status is the stored status.
	Status lifecycle.Status
	// Instances are the provider's instances not deleted, in the order
	// they were made.
	Instances []Instance
	// Nodes are the nodes that exist, MachineName being each one's
	// machine-name label.
	Nodes []lifecycle.Node
	// Token reports whether the machine's bootstrap token exists.
	Token bool
}

// node returns the node of that name, nil for none.
func (w *WorldTruth) node(name string) *lifecycle.Node {
	for i := range w.Nodes {
		if w.Nodes[i].Name == name {
			return &w.Nodes[i]
		}
	}
	return nil
}

// instance returns the live instance with that providerID, nil for none.
func (w *WorldTruth) instance(providerID string) *Instance {
	for i := range w.Instances {
		if w.Instances[i].ProviderID == providerID {
			return &w.Instances[i]
		}
	}
	return nil
}

// ReferenceWorld is a [PassWorld] in memory, and its pass.Shell the
// reference implementation of one: the machine object, its status, its
// nodes and its bootstrap token, and a [Provider] for the instances. It
// keeps the Shell's contract as written on pass.Shell and on the effect
// kinds: Observe reads the stored object and status, finds the node as
// lifecycle.Input says, reports the older incarnation that still
// terminates and the grant lifecycle.Limit gives a fleet of this one
// machine; Save and the effects write at once; a node effect on a node
// that no longer exists counts as done where its kind says so. It also
// implements [WriteRefuser]. It is not safe for concurrent use.
type ReferenceWorld struct {
	cfg    lifecycle.Config
	grants []lifecycle.Grant
	prov   *Provider
	obj    lifecycle.Object
	gone   bool
	status lifecycle.Status
	nodes  []refNode
	token  bool
	refuse lifecycle.Write
}

// refNode is a node of a ReferenceWorld.
type refNode struct {
	lifecycle.Node
	attachments   int
	unschedulable bool
	drained       bool
	finalizer     bool
	terminating   string
}

// NewReferenceWorld returns a ReferenceWorld in the state s describes, over
// a NewProvider whose clock is s.Now. It panics when the instances of s
// are not named as a NewProvider names them.
func NewReferenceWorld(s WorldSpec) *ReferenceWorld {
	w := &ReferenceWorld{cfg: s.Config, prov: NewProvider(), obj: s.Object, status: s.Status, token: s.Token}
	now := s.Now
	w.prov.Now = func() time.Time { return now }
	for _, i := range s.Instances {
		n := w.prov.Add(i)
		if made := w.prov.At(n); i.ProviderID != "" && made.ProviderID != i.ProviderID {
			panic(fmt.Sprintf("lifecycletest: NewReferenceWorld: instance %d of the spec is %s, its provider made %s",
				n, i.ProviderID, made.ProviderID))
		}
		if i.Deleted {
			w.prov.Remove(n)
		}
	}
	for _, n := range s.Nodes {
		w.AddNode(n)
	}
	return w
}

// Provider returns the world's provider, for a test that injects driver
// faults ([Provider.FailNext]) or reads it.
func (w *ReferenceWorld) Provider() *Provider { return w.prov }

// Observe implements pass.Shell.
func (w *ReferenceWorld) Observe(_ context.Context, now time.Time, in *lifecycle.Input) error {
	if w.gone {
		*in = lifecycle.Input{Now: now}
		return nil
	}
	*in = lifecycle.Input{Now: now, Object: w.obj, Status: w.status, TokenExists: w.token,
		PredecessorTerminating: w.predecessorTerminating()}
	if n := w.machineNode(); n != nil {
		in.Node, in.VolumeAttachments = n.Node, n.attachments
	}
	w.grants = lifecycle.Limit(w.grants, &w.cfg, now, in.Observer, []lifecycle.Member{lifecycle.MemberOf(&w.cfg, in)})
	in.Grant = w.grants[0]
	return nil
}

// machineNode finds the machine's node as lifecycle.Input says: by the
// machine's node label, else by the node name the status records, else by
// the node's machine-name label, else by the recorded providerID.
func (w *ReferenceWorld) machineNode() *refNode {
	if n := w.nodeNamed(w.obj.NodeLabel); n != nil && w.obj.NodeLabel != "" {
		return n
	}
	if n := w.nodeNamed(w.status.NodeName); n != nil && w.status.NodeName != "" {
		return n
	}
	for i := range w.nodes {
		if w.nodes[i].MachineName == w.obj.Name {
			return &w.nodes[i]
		}
	}
	if pid := w.status.ProviderID; pid != "" {
		for i := range w.nodes {
			if w.nodes[i].ProviderID == pid {
				return &w.nodes[i]
			}
		}
	}
	return nil
}

// predecessorTerminating reports an older incarnation of the machine's
// name that still terminates, as lifecycle.Input says a Kubernetes shell
// sees it: an instance of the name with another owner whose node still
// exists, or a node labelled with the name that carries another owner's
// instance and is not deleted yet.
func (w *ReferenceWorld) predecessorTerminating() bool {
	other := func(i *Instance) bool {
		return i.MachineName == w.obj.Name && i.CreatorUID != w.obj.UID && i.OwnerUID != w.obj.UID
	}
	for n := w.prov.Newest(w.obj.Name); n >= 0; n = w.prov.Older(n) {
		if i := w.prov.At(n); !i.Deleted && other(i) && w.nodeNamed(i.NodeName) != nil {
			return true
		}
	}
	for k := range w.nodes {
		n := &w.nodes[k]
		if n.MachineName != w.obj.Name || n.Deleting {
			continue
		}
		if i := w.prov.Lookup(n.ProviderID); i >= 0 && other(w.prov.At(i)) {
			return true
		}
	}
	return false
}

func (w *ReferenceWorld) nodeNamed(name string) *refNode {
	for i := range w.nodes {
		if w.nodes[i].Name == name {
			return &w.nodes[i]
		}
	}
	return nil
}

// Save implements pass.Shell.
func (w *ReferenceWorld) Save(_ context.Context, st *lifecycle.Status) lifecycle.Write {
	if w.refuse != lifecycle.WriteOK {
		return w.refuse
	}
	if w.gone {
		return lifecycle.WriteNotFound
	}
	w.status = *st
	return lifecycle.WriteOK
}

// Apply implements pass.Shell.
func (w *ReferenceWorld) Apply(_ context.Context, e *lifecycle.Effect) (lifecycle.Write, string) {
	if e.Kind == lifecycle.KindEvent {
		return lifecycle.WriteOK, ""
	}
	if w.refuse != lifecycle.WriteOK {
		return w.refuse, "the API server refused the write"
	}
	if w.gone && objectEffect(e.Kind) {
		return lifecycle.WriteNotFound, "the machine object is gone"
	}
	if applied, gone := ApplyToObject(&w.obj, e); applied {
		w.gone = w.gone || gone
		return lifecycle.WriteOK, ""
	}
	switch e.Kind {
	case lifecycle.KindEnsureBootstrapToken:
		w.token = true
		return lifecycle.WriteOK, ""
	case lifecycle.KindDeleteBootstrapToken:
		w.token = false
		return lifecycle.WriteOK, ""
	}
	n := w.nodeNamed(e.Node)
	switch e.Kind {
	case lifecycle.KindLabelNode, lifecycle.KindDeleteNode:
		if n == nil {
			return lifecycle.WriteNotFound, fmt.Sprintf("nodes %q not found", e.Node)
		}
	default:
		if n == nil {
			return lifecycle.WriteOK, "" // a node that no longer exists counts as done
		}
	}
	return w.applyToNode(n, e)
}

// applyToNode carries out node effect e on node n.
func (w *ReferenceWorld) applyToNode(n *refNode, e *lifecycle.Effect) (lifecycle.Write, string) {
	switch e.Kind {
	case lifecycle.KindLabelNode:
		if e.Key == lifecycle.MachineNameLabel {
			n.MachineName = e.Value
		}
	case lifecycle.KindRemoveTaint:
		switch e.Key {
		case lifecycle.TaintInstanceNotReady:
			n.Taints &^= lifecycle.InstanceNotReady
		case lifecycle.TaintCriticalComponentsNotReady:
			n.Taints &^= lifecycle.CriticalComponentsNotReady
		}
	case lifecycle.KindSetNodeCondition:
		n.terminating = e.Value
	case lifecycle.KindCordon:
		n.unschedulable = true
	case lifecycle.KindDrain:
		n.drained = true
		if !e.Force {
			// Evicted pods detach their volumes; deleted ones leave the
			// attachments behind.
			n.VolumesAttached, n.attachments = 0, 0
		}
	case lifecycle.KindDeleteVolumeAttachments:
		n.VolumesAttached, n.attachments = 0, 0
	case lifecycle.KindRemoveNodeFinalizer:
		n.finalizer = false
	case lifecycle.KindDeleteNode:
		k := slices.IndexFunc(w.nodes, func(m refNode) bool { return m.Name == n.Name })
		w.nodes = slices.Delete(w.nodes, k, k+1)
	default:
		return lifecycle.WriteFailed, "unknown effect " + e.Kind.String()
	}
	return lifecycle.WriteOK, ""
}

// objectEffect reports whether effects of kind k write the machine object.
func objectEffect(k lifecycle.Kind) bool {
	switch k {
	case lifecycle.KindEnsureFinalizer, lifecycle.KindRemoveFinalizer, lifecycle.KindEnsureNodeLabel,
		lifecycle.KindEnsureProviderID, lifecycle.KindEnsurePriority:
		return true
	}
	return false
}

// Invoke implements pass.Shell: the provider answers the call as plain
// data.
func (w *ReferenceWorld) Invoke(_ context.Context, c *driverapi.Call, res *driverapi.Result) {
	w.prov.InvokeInto(res, c)
}

// Node implements pass.Shell.
func (w *ReferenceWorld) Node(_ context.Context, name string) lifecycle.Node {
	if n := w.nodeNamed(name); n != nil && name != "" {
		return n.Node
	}
	return lifecycle.Node{}
}

// Truth implements [PassWorld].
func (w *ReferenceWorld) Truth() WorldTruth {
	t := WorldTruth{Status: w.status, Instances: w.prov.Instances(), Token: w.token}
	if !w.gone {
		t.Object = w.obj
	}
	for _, n := range w.nodes {
		t.Nodes = append(t.Nodes, n.Node)
	}
	return t
}

// AddNode implements [PassWorld].
func (w *ReferenceWorld) AddNode(n lifecycle.Node) {
	n.Conditions = slices.Clone(n.Conditions)
	w.nodes = append(w.nodes, refNode{Node: n, attachments: n.VolumesAttached, finalizer: true})
}

// RequestDeletion implements [PassWorld].
func (w *ReferenceWorld) RequestDeletion(at time.Time) {
	if !w.gone && w.obj.DeletionTime.IsZero() {
		w.obj.DeletionTime = at
	}
}

// RefuseWrites implements [WriteRefuser].
func (w *ReferenceWorld) RefuseWrites(r lifecycle.Write) { w.refuse = r }

// String renders the world for messages, as its truth renders.
func (w *ReferenceWorld) String() string { return w.Truth().String() }

// String renders the truth for messages, one part a line: the object, the
// status, the nodes, the token and the instances.
func (w WorldTruth) String() string {
	var b []byte
	o := &w.Object
	if o.Name == "" {
		b = append(b, "machine: gone"...)
	} else {
		b = fmt.Appendf(b, "machine %s uid=%s finalizer=%t node-label=%q providerID=%q", o.Name, o.UID, o.Finalizer,
			o.NodeLabel, o.ProviderID)
		if !o.DeletionTime.IsZero() {
			b = append(b, " deleting"...)
		}
	}
	st := &w.Status
	b = fmt.Appendf(b, "\nstatus: phase=%s stage=%s seq=%d attempt=%d providerID=%q node=%q", st.Phase.Label(),
		st.Stage, st.Seq, st.Attempt, st.ProviderID, st.NodeName)
	for _, n := range w.Nodes {
		b = fmt.Appendf(b, "\nnode %s providerID=%s machine=%q ready=%t taints=%d volumes=%d", n.Name, n.ProviderID,
			n.MachineName, readyNode(&n), n.Taints, n.VolumesAttached)
	}
	if len(w.Nodes) == 0 {
		b = append(b, "\nno nodes"...)
	}
	b = fmt.Appendf(b, "\nbootstrap token: %t", w.Token)
	if len(w.Instances) == 0 {
		b = append(b, "\nno instances"...)
	}
	for _, i := range w.Instances {
		b = fmt.Appendf(b, "\ninstance %s machine=%s creator=%s owner=%s node=%s initialized=%t", i.ProviderID,
			i.MachineName, i.CreatorUID, i.OwnerUID, i.NodeName, i.Initialized)
		if len(i.Metadata) > 0 {
			b = append(b, " metadata="+mapString(i.Metadata)...)
		}
	}
	return string(b)
}

// readyNode reports whether the node's Ready condition is True.
func readyNode(n *lifecycle.Node) bool {
	for _, c := range n.Conditions {
		if c.Type == lifecycle.ConditionReady {
			return c.Status == lifecycle.ConditionTrue
		}
	}
	return false
}

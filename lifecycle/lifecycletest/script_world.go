package lifecycletest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
)

// This file is the world of a Script outside the provider: the nodes, the
// object and token writes the effects make, and the renderings of the
// status, the MCM record and the world.

// scriptNode is a node object.
type scriptNode struct {
	name, providerID string
	machine          string // the node.gardener.cloud/machine-name label
	ready            lifecycle.ConditionStatus
	readySince       lifecycle.Stamp
	taints           lifecycle.Taints
	unschedulable    bool
	finalizer        bool   // MCM's node finalizer
	terminating      string // the reason of the Terminating condition, "" if unset
	drained          bool   // a drain round left no pods on the node
	pods             int    // pods a drain must remove
	volumes          int    // status.volumesAttached
	attachments      int    // live VolumeAttachments
}

// view is the node as the lifecycle reads it.
func (n *scriptNode) view() lifecycle.Node {
	return lifecycle.Node{Name: n.name, ProviderID: n.providerID, MachineName: n.machine, Taints: n.taints,
		VolumesAttached: n.volumes, Pods: n.pods,
		Conditions: []lifecycle.Condition{{Type: lifecycle.ConditionReady, Status: n.ready, Since: n.readySince}}}
}

func (n *scriptNode) String() string {
	s := fmt.Sprintf("%s providerID=%s Ready=%s", n.name, n.providerID, n.ready)
	if n.machine != "" {
		s += " machine=" + n.machine
	}
	if n.taints.Has(lifecycle.InstanceNotReady) {
		s += " taint=startup"
	}
	if n.taints.Has(lifecycle.CriticalComponentsNotReady) {
		s += " taint=critical"
	}
	if n.unschedulable {
		s += " cordoned"
	}
	if n.terminating != "" {
		s += " Terminating=" + n.terminating
	}
	if n.drained {
		s += " drained"
	} else if n.unschedulable && n.pods > 0 {
		s += fmt.Sprintf(" pods=%d", n.pods)
	}
	if n.finalizer {
		s += " finalizer"
	}
	return s + fmt.Sprintf(" volumes=%d attachments=%d", n.volumes, n.attachments)
}

func (e *scriptEnv) nodeNamed(name string) *scriptNode {
	for _, n := range e.nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

// machineNode finds the machine's node as the shell must: by the machine's
// node label, else by the recorded node name, else by the node's
// machine-name label, else by the recorded providerID.
func (e *scriptEnv) machineNode() *scriptNode {
	if n := e.nodeNamed(e.obj.NodeLabel); n != nil && e.obj.NodeLabel != "" {
		return n
	}
	if n := e.nodeNamed(e.status.NodeName); n != nil && e.status.NodeName != "" {
		return n
	}
	for _, n := range e.nodes {
		if n.machine == e.obj.Name {
			return n
		}
	}
	if pid := e.status.ProviderID; pid != "" {
		for _, n := range e.nodes {
			if n.providerID == pid {
				return n
			}
		}
	}
	return nil
}

// instance returns the machine's instance at the provider: the recorded
// one, else the newest one created for this incarnation; nil for none.
func (e *scriptEnv) instance() *Instance {
	if pid := e.status.ProviderID; pid != "" {
		if n := e.prov.Lookup(pid); n >= 0 && !e.prov.At(n).Deleted {
			return e.prov.At(n)
		}
		return nil
	}
	for n := e.prov.Newest(e.obj.Name); n >= 0; n = e.prov.Older(n) {
		if i := e.prov.At(n); !i.Deleted && i.OwnerUID == e.obj.UID {
			return i
		}
	}
	return nil
}

func (e *scriptEnv) cmdNode(c *scriptCmd) (string, error) {
	if len(c.pos) == 0 && len(c.args) == 0 {
		return e.nodesString(), nil
	}
	if c.has("pdb") {
		e.pdb = c.args["pdb"] == "true"
		if e.pdb {
			return "a pod disruption budget blocks every eviction", nil
		}
		return "the pod disruption budget allows evictions", nil
	}
	if len(c.pos) > 0 && c.pos[0] == "add" {
		n := &scriptNode{name: c.str("name", ""), providerID: c.str("provider-id", ""), machine: c.str("machine", ""),
			ready: lifecycle.ConditionFalse, readySince: lifecycle.StampOf(e.now), finalizer: true}
		if c.str("ready", "true") == "true" {
			n.ready = lifecycle.ConditionTrue
		}
		if n.name == "" {
			return "", errors.New("node add needs name=")
		}
		e.nodes = append(e.nodes, n)
		return "node " + n.String(), nil
	}
	if len(c.pos) > 0 && c.pos[0] == "register" {
		i := e.instance()
		if i == nil {
			return "", errors.New("the machine has no instance whose node could register")
		}
		volumes, err := strconv.Atoi(c.str("volumes", "1"))
		if err != nil {
			return "", err
		}
		pods, err := strconv.Atoi(c.str("pods", "1"))
		if err != nil {
			return "", err
		}
		n := &scriptNode{name: i.NodeName, providerID: i.ProviderID, ready: lifecycle.ConditionFalse,
			readySince: lifecycle.StampOf(e.now), taints: lifecycle.InstanceNotReady, finalizer: true,
			volumes: volumes, attachments: volumes, pods: pods}
		e.nodes = append(e.nodes, n)
		return "node " + n.String(), nil
	}
	n := e.machineNode()
	if n == nil {
		return "", errors.New("the machine has no node")
	}
	taint := func(v string) (lifecycle.Taints, error) {
		switch v {
		case "startup":
			return lifecycle.InstanceNotReady, nil
		case "critical":
			return lifecycle.CriticalComponentsNotReady, nil
		}
		return 0, fmt.Errorf("unknown taint %q (startup, critical)", v)
	}
	switch {
	case c.has("pods"):
		// The pods left on the node (the budget lets some go, say).
		pods, err := strconv.Atoi(c.args["pods"])
		if err != nil {
			return "", err
		}
		n.pods = pods
	case c.has("taint"):
		t, err := taint(c.args["taint"])
		if err != nil {
			return "", err
		}
		n.taints |= t
	case c.has("untaint"):
		t, err := taint(c.args["untaint"])
		if err != nil {
			return "", err
		}
		n.taints &^= t
	case len(c.pos) == 1 && (c.pos[0] == "ready" || c.pos[0] == "not-ready"):
		s := lifecycle.ConditionTrue
		if c.pos[0] == "not-ready" {
			s = lifecycle.ConditionFalse
		}
		if n.ready != s {
			n.ready, n.readySince = s, lifecycle.StampOf(e.now)
		}
	case len(c.pos) == 1 && c.pos[0] == "gone":
		for i, m := range e.nodes {
			if m == n {
				e.nodes = append(e.nodes[:i], e.nodes[i+1:]...)
				break
			}
		}
		return "node " + n.name + " deleted", nil
	default:
		return "", fmt.Errorf("unknown node command %v", c.pos)
	}
	return "node " + n.String(), nil
}

// apply carries out one effect that is not a driver call.
func (e *scriptEnv) apply(eff lifecycle.Effect) (lifecycle.Write, error) {
	node := func() (*scriptNode, lifecycle.Write, error) {
		n := e.nodeNamed(eff.Node)
		if n == nil {
			return nil, lifecycle.WriteNotFound, fmt.Errorf("nodes %q not found", eff.Node)
		}
		return n, lifecycle.WriteOK, nil
	}
	if applied, gone := ApplyToObject(&e.obj, &eff); applied {
		e.gone = e.gone || gone
		return lifecycle.WriteOK, nil
	}
	switch eff.Kind {
	case lifecycle.KindEnsureBootstrapToken:
		e.token, e.expiry = true, eff.Expiry
	case lifecycle.KindDeleteBootstrapToken:
		e.token = false
	case lifecycle.KindEvent:
	case lifecycle.KindLabelNode:
		n, w, err := node()
		if n == nil {
			return w, err
		}
		n.machine = eff.Value
	case lifecycle.KindDeleteNode:
		n, w, err := node()
		if n == nil {
			return w, err
		}
		for i, m := range e.nodes {
			if m == n {
				e.nodes = append(e.nodes[:i], e.nodes[i+1:]...)
				break
			}
		}
	default:
		// The node writes for which a missing node counts as done.
		n := e.nodeNamed(eff.Node)
		if n == nil {
			return lifecycle.WriteOK, nil
		}
		switch eff.Kind {
		case lifecycle.KindRemoveTaint:
			if eff.Key == lifecycle.TaintInstanceNotReady {
				n.taints &^= lifecycle.InstanceNotReady
			} else if eff.Key == lifecycle.TaintCriticalComponentsNotReady {
				n.taints &^= lifecycle.CriticalComponentsNotReady
			}
		case lifecycle.KindSetNodeCondition:
			n.terminating = eff.Value
		case lifecycle.KindCordon:
			n.unschedulable = true
		case lifecycle.KindDrain:
			if e.pdb && !eff.Force {
				// The budget refuses the evictions: the round is done
				// and the pods stay.
				break
			}
			n.pods, n.drained = 0, true
			if !eff.Force {
				// Evicted pods detach their volumes; deleted ones leave the
				// attachments behind.
				n.volumes, n.attachments = 0, 0
			}
		case lifecycle.KindDeleteVolumeAttachments:
			n.volumes, n.attachments = 0, 0
		case lifecycle.KindRemoveNodeFinalizer:
			n.finalizer = false
		default:
			return lifecycle.WriteFailed, fmt.Errorf("unknown effect %s", eff.Kind)
		}
	}
	return lifecycle.WriteOK, nil
}

// ---- renderings ----------------------------------------------------------

// scriptOp renders a status' last operation as MCM would show it.
func scriptOp(st *lifecycle.Status, machine string) string {
	op := st.LastOp
	s := op.Type.String() + "/" + op.State.String()
	if op.ErrorCode != "" {
		s += " " + op.ErrorCode
	}
	return s + " " + strconv.Quote(lifecycle.Describe(st, machine))
}

// scriptResult renders a driver result, with the provider's note.
func scriptResult(r driverapi.Result, note string) string {
	var parts []string
	switch {
	case r.Undecodable:
		parts = append(parts, "undecodable "+strconv.Quote(r.Message))
	case r.Code != driverapi.OK:
		parts = append(parts, r.Code.String()+" "+strconv.Quote(r.Message))
	default:
		parts = append(parts, "OK")
	}
	if r.ProviderID != "" {
		parts = append(parts, "providerID="+r.ProviderID)
	}
	if r.NodeName != "" {
		parts = append(parts, "node="+r.NodeName)
	}
	if r.OwnerUID != "" {
		parts = append(parts, "owner="+r.OwnerUID)
	}
	if r.Generation != 0 {
		parts = append(parts, "generation="+strconv.FormatInt(r.Generation, 10))
	}
	if r.Method == driverapi.MethodGetStatus && r.ProviderID != "" {
		parts = append(parts, "metadata="+mapString(r.Metadata))
	}
	s := strings.Join(parts, " ")
	if note != "" {
		s += " [provider: " + note + "]"
	}
	return s
}

// statusString renders the persisted status compactly: only what is set.
func (e *scriptEnv) statusString() string {
	st := &e.status
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s since %s stage=%s seq=%d attempt=%d", st.Phase.Label(), e.rel(st.PhaseSince.Time()),
		st.Stage, st.Seq, st.Attempt)
	if st.ProviderID != "" || st.NodeName != "" {
		fmt.Fprintf(&b, "\ninstance=%s node=%s", st.ProviderID, st.NodeName)
		if st.OwnerUID != "" {
			b.WriteString(" owner=" + st.OwnerUID)
		}
	}
	if f := st.Flags.String(); f != "" {
		b.WriteString("\nflags=" + f)
	}
	fl := st.Failures
	if fl != (lifecycle.Failures{}) {
		fmt.Fprintf(&b, "\nfailures: create=%d health=%d delete=%d update=%d metadata=%d",
			fl.Create, fl.Health, fl.Delete, fl.Update, fl.Metadata)
	}
	if !st.RetryAfter.IsZero() {
		b.WriteString("\nretry-after=" + e.rel(st.RetryAfter.Time()))
	}
	if st.AppliedGeneration != 0 || st.RejectedGeneration != 0 {
		fmt.Fprintf(&b, "\ngeneration applied=%d rejected=%d", st.AppliedGeneration, st.RejectedGeneration)
	}
	if !st.MetadataObserved.IsZero() {
		fmt.Fprintf(&b, "\nmetadata=%s observed %s", mapString(st.Metadata), e.rel(st.MetadataObserved.Time()))
	}
	if len(st.Conditions) > 0 {
		var cs []string
		for _, c := range st.Conditions {
			cs = append(cs, c.Type+"="+c.Status.String())
		}
		b.WriteString("\nconditions: " + strings.Join(cs, " "))
	}
	if st.LastOp.Type != 0 || st.LastOp.Desc != 0 {
		b.WriteString("\nlastop: " + scriptOp(st, e.obj.Name))
	}
	return b.String()
}

// mcmString renders what MCM's Machine status shows: the phase and the
// LastOperation record.
func (e *scriptEnv) mcmString() string {
	lo := lifecycle.LastOperation(&e.status, e.obj.Name, e.savedAt)
	var b strings.Builder
	fmt.Fprintf(&b, "phase: %q\nlastOperation:\n  type: %s\n  state: %s", e.status.Phase.String(), lo.Type, lo.State)
	if lo.ErrorCode != "" { // omitempty, as in MCM's API
		b.WriteString("\n  errorCode: " + lo.ErrorCode)
	}
	fmt.Fprintf(&b, "\n  description: %s\n  lastUpdateTime: %s", lo.Description, e.rel(lo.LastUpdateTime))
	return b.String()
}

func (e *scriptEnv) nodesString() string {
	if len(e.nodes) == 0 {
		return "no nodes"
	}
	var lines []string
	for _, n := range e.nodes {
		lines = append(lines, "node "+n.String())
	}
	return strings.Join(lines, "\n")
}

// worldString renders the object, the token, the nodes and the provider.
func (e *scriptEnv) worldString() string {
	var b strings.Builder
	o := &e.obj
	if e.gone {
		b.WriteString("machine " + o.Name + ": gone")
	} else {
		fmt.Fprintf(&b, "machine %s uid=%s finalizer=%t node-label=%q providerID=%q priority=%q", o.Name, o.UID,
			o.Finalizer, o.NodeLabel, o.ProviderID, o.Priority)
		if !o.DeletionTime.IsZero() {
			b.WriteString(" deleting since " + e.rel(o.DeletionTime))
		}
		if o.ForceDeletion {
			b.WriteString(" force-deletion")
		}
	}
	if e.token {
		b.WriteString("\nbootstrap token: exists, expires " + e.rel(e.expiry.Time()))
	} else {
		b.WriteString("\nbootstrap token: none")
	}
	b.WriteString("\n" + e.nodesString())
	b.WriteString("\n" + e.prov.String())
	return b.String()
}

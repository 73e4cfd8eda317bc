// Package memworld is an in-memory cluster for the examples: a shell.World
// holding one machine, the nodes its provider's instances register in
// simulated time, and bootstrap tokens, next to the in-memory provider of
// package lifecycletest. Faults are scripted, so every run is reproducible.
package memworld

import (
	"fmt"
	"time"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
)

// NewProvider returns the in-memory provider of package lifecycletest,
// naming instances as this cloud does: providerIDs mem:///zone-a/vm-N,
// nodes node-vm-N.
func NewProvider() *lifecycletest.Provider {
	p := lifecycletest.NewProvider()
	p.IDPrefix, p.NodePrefix = "mem:///zone-a/vm-", "node-vm-"
	return p
}

// Machine is a machine object with its persisted lifecycle status.
type Machine struct {
	Object lifecycle.Object
	Status lifecycle.Status
	// Gone is set once the object was deleted (its finalizer removed while
	// deleting).
	Gone bool
	// Saves counts status writes.
	Saves int
}

// Node is a node object of the cluster.
type Node struct {
	lifecycle.Node
	// Labels holds labels the lifecycle writes (the machine-name label).
	Labels map[string]string
	// Unschedulable is set by a cordon.
	Unschedulable bool
	// Finalizer reports the lifecycle's node finalizer.
	Finalizer bool
	// Terminating is the reason of the Terminating condition, "" if unset.
	Terminating string
	// Written are the conditions the lifecycle wrote other than
	// Terminating (InPlaceUpdate, Preserved), by type; the node reports
	// them with its own.
	Written map[string]lifecycle.Condition
	// Annotations holds annotations the lifecycle writes (the cluster
	// autoscaler's, when it preserves the machine, and the mark of its
	// cordon).
	Annotations map[string]string
	// VolumeAttachments counts live VolumeAttachments of the node.
	VolumeAttachments int
}

// Cluster is an in-memory cluster holding one machine, the nodes its
// provider's instances register, and bootstrap tokens. It implements
// shell.World. Its clock is the simulated time Tick sets.
type Cluster struct {
	Machine  *Machine
	Nodes    map[string]*Node
	Tokens   map[string]time.Time // machine name -> expiry
	Provider *lifecycletest.Provider
	// BootDelay is how long an instance takes to register its node.
	BootDelay time.Duration
	// ReadyDelay is how long a registered node takes to turn Ready.
	ReadyDelay time.Duration
	// Events are the events recorded, as "Type Reason".
	Events []string
	// FailDrains makes a disruption budget refuse the evictions of the next
	// FailDrains rounds of unforced drains: the pods stay.
	FailDrains int
	// NoNodes keeps instances from ever registering nodes.
	NoNodes bool
	// Agent plays the node agent of the in-place update: a node whose
	// InPlaceUpdate condition says ReadyForUpdate is updated within the
	// next Tick, and labelled update-result=successful.
	Agent bool

	now time.Time
}

// NewCluster returns a cluster with one new machine, created at created,
// and the provider, whose clock becomes the cluster's unless it has one.
func NewCluster(p *lifecycletest.Provider, name, uid string, created time.Time) *Cluster {
	c := &Cluster{
		Machine:    &Machine{Object: lifecycle.Object{Name: name, UID: uid, CreationTime: created}},
		Nodes:      map[string]*Node{},
		Tokens:     map[string]time.Time{},
		Provider:   p,
		BootDelay:  90 * time.Second,
		ReadyDelay: 30 * time.Second,
		now:        created,
	}
	if p.Now == nil {
		p.Now = c.Now
	}
	return c
}

// Now returns the cluster's clock: the time of the last Tick, at first the
// machine's creation.
func (c *Cluster) Now() time.Time { return c.now }

// Tick advances the world to now: instances that booted register their
// nodes (with the instance-not-ready startup taint), and registered nodes
// turn Ready.
func (c *Cluster) Tick(now time.Time) {
	c.now = now
	for _, i := range c.Provider.Instances() {
		if !i.Initialized || now.Sub(i.Created) < c.BootDelay {
			continue
		}
		if c.NoNodes {
			continue
		}
		n, ok := c.Nodes[i.NodeName]
		if !ok {
			n = &Node{Node: lifecycle.Node{Name: i.NodeName, ProviderID: i.ProviderID,
				Taints: lifecycle.InstanceNotReady}, Labels: map[string]string{}, Finalizer: true,
				VolumeAttachments: 1, Written: map[string]lifecycle.Condition{}, Annotations: map[string]string{}}
			n.VolumesAttached, n.Pods = 1, 3 // workloads land on it
			c.Nodes[i.NodeName] = n
		}
		if c.Agent && n.Written[lifecycle.ConditionInPlaceUpdate].Reason == lifecycle.ReasonReadyForUpdate &&
			n.Labels[lifecycle.UpdateResultLabel] == "" {
			n.Labels[lifecycle.UpdateResultLabel] = lifecycle.UpdateResultSuccessful
		}
		ready := now.Sub(i.Created) >= c.BootDelay+c.ReadyDelay
		status := lifecycle.ConditionFalse
		if ready {
			status = lifecycle.ConditionTrue
		}
		if len(n.Conditions) == 0 || n.Conditions[0].Status != status {
			since := i.Created.Add(c.BootDelay)
			if ready {
				since = since.Add(c.ReadyDelay)
			}
			n.Conditions = []lifecycle.Condition{
				{Type: lifecycle.ConditionReady, Status: status, Since: lifecycle.StampOf(since)},
				{Type: "DiskPressure", Status: lifecycle.ConditionFalse, Since: lifecycle.StampOf(i.Created.Add(c.BootDelay))},
			}
		}
	}
}

// Observe implements shell.World.
func (c *Cluster) Observe(now time.Time) lifecycle.Input {
	m := c.Machine
	if m.Gone {
		return lifecycle.Input{Now: now}
	}
	in := lifecycle.Input{Now: now, Object: m.Object, Status: m.Status}
	_, in.TokenExists = c.Tokens[m.Object.Name]
	in.Node = c.findNode()
	if n, ok := c.Nodes[in.Node.Name]; ok {
		in.VolumeAttachments = n.VolumeAttachments
	}
	return in
}

// Delete requests the machine's deletion at now.
func (c *Cluster) Delete(now time.Time) {
	if c.Machine.Object.DeletionTime.IsZero() {
		c.Machine.Object.DeletionTime = now
	}
}

// findNode finds the machine's node by its node label, else by the
// recorded node name, else by the node's machine-name label, else by the
// recorded providerID.
func (c *Cluster) findNode() lifecycle.Node {
	m := c.Machine
	if n, ok := c.Nodes[m.Object.NodeLabel]; ok && m.Object.NodeLabel != "" {
		return c.view(n)
	}
	if n, ok := c.Nodes[m.Status.NodeName]; ok && m.Status.NodeName != "" {
		return c.view(n)
	}
	for _, n := range c.Nodes {
		if n.Labels[lifecycle.MachineNameLabel] == m.Object.Name {
			return c.view(n)
		}
	}
	if pid := m.Status.ProviderID; pid != "" {
		for _, n := range c.Nodes {
			if n.ProviderID == pid {
				return c.view(n)
			}
		}
	}
	return lifecycle.Node{}
}

func (c *Cluster) view(n *Node) lifecycle.Node {
	v := n.Node
	v.MachineName = n.Labels[lifecycle.MachineNameLabel]
	v.Update = lifecycle.UpdateLabelsOf(n.Labels)
	v.Unschedulable = n.Unschedulable
	v.ScaleDownDisabled = n.Annotations[lifecycle.ScaleDownDisabledByAnnotation] == "true"
	v.OwnCordon = n.Annotations[lifecycle.CordonMarkAnnotation] != ""
	if len(n.Written) > 0 {
		v.Conditions = append([]lifecycle.Condition(nil), v.Conditions...)
		for _, typ := range []string{lifecycle.ConditionInPlaceUpdate, lifecycle.ConditionPreserved} {
			if cond, ok := n.Written[typ]; ok {
				v.Conditions = append(v.Conditions, cond)
			}
		}
	}
	return v
}

// NodeNamed implements shell.World.
func (c *Cluster) NodeNamed(name string) lifecycle.Node {
	if n, ok := c.Nodes[name]; ok {
		return c.view(n)
	}
	return lifecycle.Node{}
}

// SaveStatus implements shell.World.
func (c *Cluster) SaveStatus(st lifecycle.Status) lifecycle.Write {
	c.Machine.Status = st
	c.Machine.Saves++
	return lifecycle.WriteOK
}

// Apply implements shell.World.
func (c *Cluster) Apply(e lifecycle.Effect) (lifecycle.Write, error) {
	if applied, gone := lifecycletest.ApplyToObject(&c.Machine.Object, &e); applied {
		c.Machine.Gone = c.Machine.Gone || gone
		return lifecycle.WriteOK, nil
	}
	switch e.Kind {
	case lifecycle.KindLabelNode:
		n, ok := c.Nodes[e.Node]
		if !ok {
			return lifecycle.WriteNotFound, fmt.Errorf("nodes %q not found", e.Node)
		}
		n.Labels[e.Key] = e.Value
	case lifecycle.KindRemoveTaint:
		if n, ok := c.Nodes[e.Node]; ok && e.Key == lifecycle.TaintInstanceNotReady {
			n.Taints &^= lifecycle.InstanceNotReady
		}
	case lifecycle.KindEnsureBootstrapToken:
		c.Tokens[e.Value] = e.Expiry.Time()
	case lifecycle.KindDeleteBootstrapToken:
		delete(c.Tokens, e.Value)
	case lifecycle.KindSetNodeCondition:
		n, ok := c.Nodes[e.Node]
		switch {
		case !ok:
		case e.Key == lifecycle.ConditionTerminating:
			n.Terminating = e.Value
		default:
			n.Written[e.Key] = lifecycle.Condition{Type: e.Key, Status: e.Status, Reason: e.Value, Message: e.Message,
				Since: lifecycle.StampOf(c.now)}
		}
	case lifecycle.KindCordon, lifecycle.KindUncordon:
		if n, ok := c.Nodes[e.Node]; ok {
			if e.Key != "" {
				// The lifecycle's mark of its own cordon: set when this
				// write makes the cordon, removed otherwise.
				delete(n.Annotations, e.Key)
				if e.Kind == lifecycle.KindCordon && !n.Unschedulable {
					n.Annotations[e.Key] = e.Value
				}
			}
			n.Unschedulable = e.Kind == lifecycle.KindCordon
		}
	case lifecycle.KindRemoveNodeLabel:
		if n, ok := c.Nodes[e.Node]; ok {
			delete(n.Labels, e.Key)
		}
	case lifecycle.KindAnnotateNode:
		n, ok := c.Nodes[e.Node]
		if !ok {
			return lifecycle.WriteNotFound, fmt.Errorf("nodes %q not found", e.Node)
		}
		n.Annotations[e.Key] = e.Value
	case lifecycle.KindRemoveNodeAnnotation:
		if n, ok := c.Nodes[e.Node]; ok {
			delete(n.Annotations, e.Key)
		}
	case lifecycle.KindDrain:
		n, ok := c.Nodes[e.Node]
		if !ok {
			return lifecycle.WriteOK, nil // nothing to drain
		}
		if !e.Force && c.FailDrains > 0 {
			// A disruption budget refuses this round's evictions: the
			// pods stay (Node.Pods) until a later round or the forced
			// drain.
			c.FailDrains--
			return lifecycle.WriteOK, nil
		}
		n.Pods = 0
		if !e.Force {
			// Evicted pods detach their volumes; deleted ones leave the
			// attachments behind.
			n.VolumesAttached = 0
			n.VolumeAttachments = 0
		}
	case lifecycle.KindDeleteVolumeAttachments:
		if n, ok := c.Nodes[e.Node]; ok {
			n.VolumeAttachments = 0
		}
	case lifecycle.KindRemoveNodeFinalizer:
		if n, ok := c.Nodes[e.Node]; ok {
			n.Finalizer = false
		}
	case lifecycle.KindDeleteNode:
		if _, ok := c.Nodes[e.Node]; !ok {
			return lifecycle.WriteNotFound, fmt.Errorf("nodes %q not found", e.Node)
		}
		delete(c.Nodes, e.Node)
	case lifecycle.KindEvent:
		typ := "Normal"
		if e.Warning {
			typ = "Warning"
		}
		c.Events = append(c.Events, typ+" "+e.Rule.Event())
	default:
		return lifecycle.WriteFailed, fmt.Errorf("unknown effect %s", e.Kind)
	}
	return lifecycle.WriteOK, nil
}

package memworld

import (
	"time"

	"github.com/purelifecycle/machine/lifecycle"
)

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
}

// Cluster is an in-memory cluster holding one machine, the nodes its
// provider's instances register, and bootstrap tokens. It implements
// shell.World.
type Cluster struct {
	Machine  *Machine
	Nodes    map[string]*Node
	Tokens   map[string]time.Time // machine name -> expiry
	Provider *Provider
	// BootDelay is how long an instance takes to register its node.
	BootDelay time.Duration
	// ReadyDelay is how long a registered node takes to turn Ready.
	ReadyDelay time.Duration
	// Events are the events recorded, as "Type Reason".
	Events []string
}

// NewCluster returns a cluster with one new machine and the provider.
func NewCluster(p *Provider, name, uid string, created time.Time) *Cluster {
	return &Cluster{
		Machine:    &Machine{Object: lifecycle.Object{Name: name, UID: uid, CreationTime: created}},
		Nodes:      map[string]*Node{},
		Tokens:     map[string]time.Time{},
		Provider:   p,
		BootDelay:  90 * time.Second,
		ReadyDelay: 30 * time.Second,
	}
}

// Tick advances the world to now: instances that booted register their
// nodes (with the instance-not-ready startup taint), and registered nodes
// turn Ready.
func (c *Cluster) Tick(now time.Time) {
	c.Provider.SetNow(now)
	for _, i := range c.Provider.Instances() {
		if !i.Initialized || now.Sub(i.Created) < c.BootDelay {
			continue
		}
		n, ok := c.Nodes[i.NodeName]
		if !ok {
			n = &Node{Node: lifecycle.Node{Name: i.NodeName, ProviderID: i.ProviderID,
				Taints: lifecycle.InstanceNotReady}, Labels: map[string]string{}}
			c.Nodes[i.NodeName] = n
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
	return in
}

// findNode finds the machine's node by its node label, else by the node's
// machine-name label, else by the recorded providerID.
func (c *Cluster) findNode() lifecycle.Node {
	m := c.Machine
	if n, ok := c.Nodes[m.Object.NodeLabel]; ok && m.Object.NodeLabel != "" {
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
func (c *Cluster) Apply(e lifecycle.Effect) lifecycle.Write {
	o := &c.Machine.Object
	switch e.Kind {
	case lifecycle.KindEnsureFinalizer:
		o.Finalizer = true
	case lifecycle.KindRemoveFinalizer:
		o.Finalizer = false
		if !o.DeletionTime.IsZero() {
			c.Machine.Gone = true
		}
	case lifecycle.KindEnsureNodeLabel:
		o.NodeLabel = e.Value
	case lifecycle.KindEnsurePriority:
		o.Priority = e.Value
	case lifecycle.KindEnsureProviderID:
		o.ProviderID = e.Value
	case lifecycle.KindLabelNode:
		n, ok := c.Nodes[e.Node]
		if !ok {
			return lifecycle.WriteNotFound
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
	case lifecycle.KindEvent:
		typ := "Normal"
		if e.Warning {
			typ = "Warning"
		}
		c.Events = append(c.Events, typ+" "+e.Rule.Event())
	default:
		return lifecycle.WriteFailed
	}
	return lifecycle.WriteOK
}

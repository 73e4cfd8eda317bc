package machines

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/kubeshell"
	"github.com/purelifecycle/machine/lifecycle"
)

// Field indexes of the manager's cache.
const (
	nodeProviderIDIndex = "spec.providerID"
	vaNodeIndex         = "spec.nodeName"
	machineNameIndex    = "machine.name"
	machineNodeIndex    = "machine.node"
	machineProviderID   = "machine.providerID"
)

// objectOf returns the machine object as the lifecycle reads it, and the
// problem found reading it.
func objectOf(m *v1alpha1.Machine) (lifecycle.Object, lifecycle.Problem) {
	o := lifecycle.Object{
		Name:              m.Name,
		UID:               string(m.UID),
		CreationTime:      m.CreationTimestamp.Time,
		Finalizer:         controllerutil.ContainsFinalizer(m, lifecycle.Finalizer),
		NodeLabel:         m.Labels[lifecycle.NodeLabel],
		ProviderID:        m.Spec.ProviderID,
		Priority:          m.Annotations[lifecycle.PriorityAnnotation],
		UpdateGeneration:  m.Spec.UpdateGeneration,
		InPlaceGeneration: m.Spec.InPlaceGeneration,
		Metadata:          m.Spec.InstanceMetadata,
	}
	if ref := metav1.GetControllerOf(m); ref != nil {
		o.Owner = string(ref.UID)
	}
	if m.DeletionTimestamp != nil {
		o.DeletionTime = m.DeletionTimestamp.Time
	}
	if b, err := strconv.ParseBool(m.Labels[lifecycle.ForceDeletionLabel]); err == nil {
		o.ForceDeletion = b
	}
	o.ForceDrain = m.Labels[lifecycle.ForceDrainLabel] == "True"
	problem := lifecycle.ProblemNone
	c := &m.Spec.MachineConfiguration
	ov := &o.Overrides
	if c.MachineCreationTimeout != nil {
		ov.CreationTimeout = c.MachineCreationTimeout.Duration
	}
	if a, ok := m.Annotations[lifecycle.CreationTimeoutAnnotation]; ok {
		d, err := time.ParseDuration(a)
		if err != nil || d < 0 {
			problem = lifecycle.ProblemInvalidMachine
		} else {
			ov.CreationTimeout = d
		}
	}
	if c.MachineHealthTimeout != nil {
		ov.HealthTimeout = c.MachineHealthTimeout.Duration
	}
	if c.MachineDrainTimeout != nil {
		ov.DrainTimeout = c.MachineDrainTimeout.Duration
	}
	if c.MaxEvictRetries != nil {
		ov.MaxEvictRetries = *c.MaxEvictRetries
	}
	if c.MachineInPlaceUpdateTimeout != nil {
		ov.InPlaceUpdateTimeout = c.MachineInPlaceUpdateTimeout.Duration
	}
	if c.MachinePreserveTimeout != nil {
		ov.PreserveTimeout = c.MachinePreserveTimeout.Duration
	}
	v, ok := m.Annotations[lifecycle.PreserveAnnotation]
	if m.Spec.Preserve != "" {
		v, ok = m.Spec.Preserve, true
	}
	o.Preserve = lifecycle.ParsePreserve(v, ok)
	if c.DisableHealthTimeout != nil {
		ov.DisableHealthTimeout = *c.DisableHealthTimeout
	}
	if c.NodeConditions != nil {
		ov.NodeConditions = []string{}
		for _, t := range strings.Split(*c.NodeConditions, ",") {
			if t = strings.TrimSpace(t); t != "" {
				ov.NodeConditions = append(ov.NodeConditions, t)
			}
		}
	}
	if ov.CreationTimeout < 0 || ov.HealthTimeout < 0 || ov.DrainTimeout < 0 || ov.MaxEvictRetries < 0 ||
		ov.InPlaceUpdateTimeout < 0 || ov.PreserveTimeout < 0 {
		problem = lifecycle.ProblemInvalidMachine
	}
	return o, problem
}

// observe fills in the input of a step from the pass's machine and the
// caches; st is the status the step is given (for the providerID lookup of
// the node).
func (r *Reconciler) observe(ctx context.Context, p *pass, st *lifecycle.Status, in *lifecycle.Input) {
	in.Object, in.Problem = objectOf(p.m)
	if p.nameHolder != "" {
		in.Problem = lifecycle.ProblemInvalidMachine
		r.nameInUse(p)
	} else if p.instanceHolder != "" {
		in.Problem = lifecycle.ProblemInvalidMachine
		r.instanceInUse(p)
	}
	in.Grant = r.grants.Of(p.m.UID)
	if in.Problem == lifecycle.ProblemNone {
		in.Problem = r.classOf(ctx, p).problem
	}
	node, err := r.findNode(ctx, p.m, st)
	if err == nil && node != nil && p.nodeWritten {
		// A step after one that wrote the node decides on what was
		// written, which the cache may not show yet.
		node, err = kubeshell.ReadNode(ctx, r.reader, node.Name)
	}
	if err != nil {
		p.log.Info("reading the node failed", "error", err.Error())
		in.NodeReadFailed = true
	} else if node != nil {
		in.Node = nodeView(node)
		if in.Node.ProviderID != "" && in.Node.ProviderID == st.ProviderID {
			p.zone = in.Node.Zone // a node proven the instance's
		}
		if lifecycle.NeedsPods(st, &in.Object, &in.Node) {
			// The pods a drain must remove: the drain is done when none
			// is left.
			pods, err := r.nodes.PodsToDrain(ctx, node.Name)
			if err != nil {
				p.log.Info("listing the node's pods failed", "error", err.Error())
				in.NodeReadFailed = true
			}
			in.Node.Pods = len(pods)
		}
		var vas storagev1.VolumeAttachmentList
		if err := r.client.List(ctx, &vas, client.MatchingFields{vaNodeIndex: node.Name}); err == nil {
			for i := range vas.Items {
				if vas.Items[i].DeletionTimestamp == nil {
					in.VolumeAttachments++
				}
			}
		}
	}
	in.TokenExists = r.tokenExists(ctx, p.m, in.Now)
}

// findNode finds the machine's node in the cache (kubeshell.FindNode).
func (r *Reconciler) findNode(ctx context.Context, m *v1alpha1.Machine, st *lifecycle.Status) (*corev1.Node, error) {
	return kubeshell.FindNode(ctx, r.client, kubeshell.NodeOf{Label: m.Labels[lifecycle.NodeLabel], Recorded: st.NodeName,
		Machine: m.Name, ProviderID: st.ProviderID})
}

// nodeNamed returns the node of that name, read from the API server, or the
// zero Node (the stale-node check after CreateMachine).
func (r *Reconciler) nodeNamed(ctx context.Context, name string) lifecycle.Node {
	n := &corev1.Node{}
	if err := r.reader.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		return lifecycle.Node{}
	}
	return nodeView(n)
}

// nodeView returns what the lifecycle reads of a node.
func nodeView(n *corev1.Node) lifecycle.Node {
	v := lifecycle.Node{
		Name:               n.Name,
		ProviderID:         n.Spec.ProviderID,
		MachineName:        n.Labels[lifecycle.MachineNameLabel],
		Zone:               n.Labels[lifecycle.ZoneLabel],
		Deleting:           n.DeletionTimestamp != nil,
		VolumesAttached:    len(n.Status.VolumesAttached),
		Update:             lifecycle.UpdateLabelsOf(n.Labels),
		UpdateFailedReason: n.Annotations[lifecycle.UpdateFailedReasonAnnotation],
		ScaleDownDisabled:  n.Annotations[lifecycle.ScaleDownDisabledByAnnotation] == "true",
		Unschedulable:      n.Spec.Unschedulable,
		OwnCordon:          n.Annotations[lifecycle.CordonMarkAnnotation] != "",
	}
	pv, ok := n.Annotations[lifecycle.PreserveAnnotation]
	v.Preserve = lifecycle.ParsePreserve(pv, ok)
	for _, c := range n.Status.Conditions {
		cs := lifecycle.ConditionUnknown
		switch c.Status {
		case corev1.ConditionTrue:
			cs = lifecycle.ConditionTrue
		case corev1.ConditionFalse:
			cs = lifecycle.ConditionFalse
		}
		v.Conditions = append(v.Conditions, lifecycle.Condition{Type: string(c.Type), Status: cs,
			Since: lifecycle.StampOf(c.LastTransitionTime.Time), Reason: c.Reason, Message: c.Message})
	}
	for _, t := range n.Spec.Taints {
		switch {
		case t.Key == lifecycle.TaintCriticalComponentsNotReady && t.Effect == corev1.TaintEffectNoSchedule:
			v.Taints |= lifecycle.CriticalComponentsNotReady
		case t.Key == lifecycle.TaintInstanceNotReady:
			v.Taints |= lifecycle.InstanceNotReady
		}
	}
	return v
}

// classFor returns the provider configuration of a driver call: the
// machine's class (classOf), with the bootstrap token the pass made sure of
// in the user data of a CreateMachine (the token effect comes right before
// the call in the same decision). It fails on a class that cannot be used.
func (r *Reconciler) classFor(ctx context.Context, p *pass, call *driverapi.Call) (driverapi.Class, error) {
	c := r.classOf(ctx, p)
	if c.problem != lifecycle.ProblemNone {
		return driverapi.Class{}, c.err
	}
	class := c.class
	ud, ok := class.Secret["userData"]
	if call.Method != driverapi.MethodCreate || !ok || p.token == "" || !strings.Contains(string(ud), BootstrapTokenPlaceholder) {
		return class, nil
	}
	class.Secret = maps.Clone(class.Secret)
	class.Secret["userData"] = []byte(strings.ReplaceAll(string(ud), BootstrapTokenPlaceholder, p.token))
	return class, nil
}

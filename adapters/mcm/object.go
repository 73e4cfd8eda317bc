package mcm

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/purelifecycle/machine/lifecycle"
)

// ObjectFrom returns the fields of an MCM Machine the lifecycle reads:
// its name and UID, the UID of its controlling owner (its MachineSet),
// its creation and deletion times, whether it carries [lifecycle.Finalizer],
// its node label, spec.providerID, the priority annotation, the
// force-deletion label (as strconv.ParseBool reads it; anything else is
// false, as in MCM) and the per-machine overrides of its inline
// MachineConfiguration.
//
// The creation-timeout annotation ([lifecycle.CreationTimeoutAnnotation]),
// when it holds a positive Go duration, wins over spec creationTimeout; an
// annotation that does not parse is ignored. spec nodeConditions is split on
// commas as MCM splits it (no trimming); empty entries are dropped, and an
// explicitly empty list stays empty (non-nil), so only Ready counts, as in
// MCM.
//
// UpdateGeneration and Metadata stay zero: an MCM Machine has no hot-update
// generation and no desired instance metadata (its tags live in the class's
// providerSpec); a shell that supports them fills them itself. A nil
// machine gives the zero Object, which tells the lifecycle the machine is
// gone.
func ObjectFrom(m *v1alpha1.Machine) lifecycle.Object {
	if m == nil {
		return lifecycle.Object{}
	}
	o := lifecycle.Object{
		Name:         m.Name,
		UID:          string(m.UID),
		CreationTime: m.CreationTimestamp.Time,
		Finalizer:    slices.Contains(m.Finalizers, lifecycle.Finalizer),
		NodeLabel:    m.Labels[lifecycle.NodeLabel],
		ProviderID:   m.Spec.ProviderID,
		Priority:     m.Annotations[lifecycle.PriorityAnnotation],
		Overrides:    overridesFrom(m),
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
		o.Owner = string(ref.UID)
	}
	if m.DeletionTimestamp != nil {
		o.DeletionTime = m.DeletionTimestamp.Time
	}
	if v, ok := m.Labels[lifecycle.ForceDeletionLabel]; ok {
		b, err := strconv.ParseBool(v)
		o.ForceDeletion = err == nil && b
	}
	o.ForceDrain = m.Labels[lifecycle.ForceDrainLabel] == "True"
	v, ok := m.Annotations[lifecycle.PreserveAnnotation]
	o.Preserve = lifecycle.ParsePreserve(v, ok)
	return o
}

// overridesFrom reads the per-machine settings of m.
func overridesFrom(m *v1alpha1.Machine) lifecycle.Overrides {
	var o lifecycle.Overrides
	if c := m.Spec.MachineConfiguration; c != nil {
		o.DrainTimeout = duration(c.MachineDrainTimeout)
		o.HealthTimeout = duration(c.MachineHealthTimeout)
		o.CreationTimeout = duration(c.MachineCreationTimeout)
		o.InPlaceUpdateTimeout = duration(c.MachineInPlaceUpdateTimeout)
		o.PreserveTimeout = duration(c.MachinePreserveTimeout)
		if c.MaxEvictRetries != nil {
			o.MaxEvictRetries = *c.MaxEvictRetries
		}
		if c.DisableHealthTimeout != nil {
			o.DisableHealthTimeout = *c.DisableHealthTimeout
		}
		if c.NodeConditions != nil {
			o.NodeConditions = splitConditions(*c.NodeConditions)
		}
	}
	if v, ok := m.Annotations[lifecycle.CreationTimeoutAnnotation]; ok {
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			o.CreationTimeout = d
		}
	}
	return o
}

func duration(d *metav1.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.Duration
}

// splitConditions splits MCM's comma-separated nodeConditions, dropping
// empty entries. The result is never nil.
func splitConditions(s string) []string {
	out := []string{}
	for c := range strings.SplitSeq(s, ",") {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

// NodeFrom returns what the lifecycle reads of a node: its name,
// spec.providerID, the [lifecycle.MachineNameLabel] label, its conditions,
// the two taints the lifecycle knows ([lifecycle.TaintCriticalComponentsNotReady]
// with effect NoSchedule, [lifecycle.TaintInstanceNotReady] with any effect),
// whether it is being deleted, and how many volumes it reports attached.
// A nil node gives the zero Node (no node found).
//
// A condition whose lastTransitionTime lies outside the years a
// [lifecycle.Stamp] holds ([lifecycle.InStampRange]) is read without a
// transition time, as MCM reads the zero time, rather than as the nearest
// stamp: mirrored into the machine's status, that stamp would make
// [StatusFrom] refuse the status.
func NodeFrom(n *corev1.Node) lifecycle.Node {
	if n == nil {
		return lifecycle.Node{}
	}
	conditions, _ := conditionsFrom(n.Status.Conditions, nil) // a time out of range reads as unset
	out := lifecycle.Node{
		Name:               n.Name,
		ProviderID:         n.Spec.ProviderID,
		MachineName:        n.Labels[lifecycle.MachineNameLabel],
		Zone:               n.Labels[lifecycle.ZoneLabel],
		Conditions:         conditions,
		Deleting:           n.DeletionTimestamp != nil,
		VolumesAttached:    len(n.Status.VolumesAttached),
		Update:             lifecycle.UpdateLabelsOf(n.Labels),
		UpdateFailedReason: n.Annotations[lifecycle.UpdateFailedReasonAnnotation],
		ScaleDownDisabled:  n.Annotations[lifecycle.ScaleDownDisabledByAnnotation] == "true",
		Unschedulable:      n.Spec.Unschedulable,
		OwnCordon:          n.Annotations[lifecycle.CordonMarkAnnotation] != "",
	}
	v, ok := n.Annotations[lifecycle.PreserveAnnotation]
	out.Preserve = lifecycle.ParsePreserve(v, ok)
	for _, t := range n.Spec.Taints {
		switch {
		case t.Key == lifecycle.TaintCriticalComponentsNotReady && t.Effect == corev1.TaintEffectNoSchedule:
			out.Taints |= lifecycle.CriticalComponentsNotReady
		case t.Key == lifecycle.TaintInstanceNotReady:
			out.Taints |= lifecycle.InstanceNotReady
		}
	}
	return out
}

// conditionsFrom converts Kubernetes node conditions, nil for none.
// Since is the lastTransitionTime; nanos, when it has one entry per
// condition, restores the sub-second part that the API's JSON (whole
// seconds) drops. A transition time outside the years a stamp holds gives
// an unset Since, and the error names the first such time (StatusFrom
// refuses it, NodeFrom reads it as unset). The heartbeat time is not kept.
func conditionsFrom(cs []corev1.NodeCondition, nanos []int32) ([]lifecycle.Condition, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	if len(nanos) != len(cs) {
		nanos = nil
	}
	var bad error
	out := make([]lifecycle.Condition, len(cs))
	for i, c := range cs {
		t := c.LastTransitionTime.Time
		if nanos != nil && !t.IsZero() {
			t = t.Truncate(time.Second).Add(time.Duration(nanos[i]))
		}
		since, err := stampOf(t)
		if err != nil && bad == nil {
			bad = fmt.Errorf("status.conditions[%d].lastTransitionTime: %w", i, err)
		}
		out[i] = lifecycle.Condition{
			Type:    string(c.Type),
			Status:  conditionStatus(c.Status),
			Since:   since,
			Reason:  c.Reason,
			Message: c.Message,
		}
	}
	return out, bad
}

// conditionStatus reads Kubernetes' status text; anything but True and
// False is Unknown, which counts as unhealthy.
func conditionStatus(s corev1.ConditionStatus) lifecycle.ConditionStatus {
	switch s {
	case corev1.ConditionTrue:
		return lifecycle.ConditionTrue
	case corev1.ConditionFalse:
		return lifecycle.ConditionFalse
	}
	return lifecycle.ConditionUnknown
}

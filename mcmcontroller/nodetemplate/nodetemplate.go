// Package nodetemplate keeps a node in line with its machine's node
// template, as MCM's machine controller does for a machine with a node:
// the labels, annotations and taints of the machine's
// spec.nodeTemplate are set on the node, and those an earlier template set
// and the current one dropped are removed from it; the virtual capacity of
// the MachineClass's node template is set in the node's status capacity.
// What was applied is recorded in the node's annotations MCM records it
// in, in MCM's format, so either controller can take the node over from
// the other.
//
// It also validates a MachineClass's node template as MCM does: a
// template, when present, names its capacity's cpu, gpu and memory, its
// instance type, region and zone (the lifecycle's
// ProblemInvalidNodeTemplate when not).
//
// Unlike MCM, the taints are written in a stable order (the node's own
// first, in their order, then the template's new ones in the template's
// order), so a node in line is never rewritten, and a change is computed
// on a copy: the caller's node is not modified.
package nodetemplate

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The node annotations that record what was applied, MCM's.
const (
	// AppliedAnnotation holds the machine's node template last applied
	// (JSON of v1alpha1.NodeTemplateSpec).
	AppliedAnnotation = "node.machine.sapcloud.io/last-applied-anno-labels-taints"
	// AppliedCapacityAnnotation holds the class's virtual capacity last
	// applied (JSON of a corev1.ResourceList).
	AppliedCapacityAnnotation = "node.machine.sapcloud.io/last-applied-virtual-capacity"
)

// Sync is what a node needs to be in line with its templates.
type Sync struct {
	// Node is the node as it should be, a copy of the node Sync was
	// computed from; nil when Update and UpdateStatus are both false.
	Node *corev1.Node
	// Update: the node's labels, annotations or taints need writing (an
	// update of the node).
	Update bool
	// UpdateStatus: the node's status capacity needs writing (an update of
	// its status, which comes first: MCM writes it first, then records
	// it in the annotation the node's update carries).
	UpdateStatus bool
}

// Plan computes what node needs to carry the machine's node template and
// the class's virtual capacity (capacity may be nil: the class has no node
// template). It reads the annotations of what was applied before; an
// annotation that cannot be decoded is an error, as in MCM, and nothing is
// planned.
func Plan(template *v1alpha1.NodeTemplateSpec, capacity corev1.ResourceList, node *corev1.Node) (Sync, error) {
	var last v1alpha1.NodeTemplateSpec
	if s, ok := node.Annotations[AppliedAnnotation]; ok {
		if err := json.Unmarshal([]byte(s), &last); err != nil {
			return Sync{}, fmt.Errorf("nodetemplate: node %q: annotation %s: %w", node.Name, AppliedAnnotation, err)
		}
	}
	var lastCapacity corev1.ResourceList
	if s, ok := node.Annotations[AppliedCapacityAnnotation]; ok {
		if err := json.Unmarshal([]byte(s), &lastCapacity); err != nil {
			return Sync{}, fmt.Errorf("nodetemplate: node %q: annotation %s: %w", node.Name, AppliedCapacityAnnotation, err)
		}
	}

	n := node.DeepCopy()
	update := n.Annotations == nil // MCM writes the record on a node without annotations
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	update = syncMap(n.Annotations, template.Annotations, last.Annotations) || update
	update = syncMap(n.Labels, template.Labels, last.Labels) || update
	if taints, changed := syncTaints(n.Spec.Taints, template.Spec.Taints, last.Spec.Taints); changed {
		n.Spec.Taints, update = taints, true
	}
	if update {
		applied, err := json.Marshal(template)
		if err != nil {
			return Sync{}, fmt.Errorf("nodetemplate: node %q: %w", node.Name, err)
		}
		n.Annotations[AppliedAnnotation] = string(applied)
	}

	status := false
	if capacity != nil || lastCapacity != nil {
		if n.Status.Capacity == nil {
			n.Status.Capacity = corev1.ResourceList{}
		}
		status = syncCapacity(n.Status.Capacity, capacity, lastCapacity)
		if status {
			update = true // the record of the capacity applied
			if len(capacity) == 0 {
				delete(n.Annotations, AppliedCapacityAnnotation)
			} else {
				applied, err := json.Marshal(capacity)
				if err != nil {
					return Sync{}, fmt.Errorf("nodetemplate: node %q: %w", node.Name, err)
				}
				n.Annotations[AppliedCapacityAnnotation] = string(applied)
			}
		}
	}
	if !update && !status {
		return Sync{}, nil
	}
	return Sync{Node: n, Update: update, UpdateStatus: status}, nil
}

// syncEntries sets every entry of want in have and removes from have the
// keys of last that want dropped; same compares two values, clone copies
// one into have. It reports whether have changed.
func syncEntries[M ~map[K]V, K comparable, V any](have, want, last M, same func(V, V) bool, clone func(V) V) bool {
	changed := false
	for k := range last {
		if _, ok := want[k]; !ok {
			if _, on := have[k]; on {
				delete(have, k)
				changed = true
			}
		}
	}
	for k, v := range want {
		if got, ok := have[k]; !ok || !same(got, v) {
			have[k] = clone(v)
			changed = true
		}
	}
	return changed
}

// syncMap is syncEntries for labels and annotations.
func syncMap(have, want, last map[string]string) bool {
	return syncEntries(have, want, last, func(a, b string) bool { return a == b }, func(v string) string { return v })
}

// taintKey identifies a taint on a node: a node carries one taint of a key
// and effect.
type taintKey struct {
	key    string
	effect corev1.TaintEffect
}

func keyOf(t *corev1.Taint) taintKey { return taintKey{t.Key, t.Effect} }

// syncTaints returns the node's taints with want's set (a value or time
// that differs is replaced in place) and last's that want dropped removed:
// the node's own taints first, in their order, then want's new ones in
// want's order. It reports whether they changed.
func syncTaints(have, want, last []corev1.Taint) ([]corev1.Taint, bool) {
	wanted := make(map[taintKey]*corev1.Taint, len(want))
	for i := range want {
		wanted[keyOf(&want[i])] = &want[i]
	}
	dropped := make(map[taintKey]bool, len(last))
	for i := range last {
		if k := keyOf(&last[i]); wanted[k] == nil {
			dropped[k] = true
		}
	}
	out := make([]corev1.Taint, 0, len(have)+len(want))
	on := make(map[taintKey]bool, len(have))
	changed := false
	for i := range have {
		t := have[i]
		k := keyOf(&t)
		if dropped[k] {
			changed = true
			continue
		}
		if w := wanted[k]; w != nil && (w.Value != t.Value || !sameTime(w, &t)) {
			t, changed = *w, true
		}
		on[k] = true
		out = append(out, t)
	}
	for i := range want {
		if k := keyOf(&want[i]); !on[k] {
			on[k] = true
			out = append(out, want[i])
			changed = true
		}
	}
	return out, changed
}

// sameTime reports whether two taints of one key and effect were added at
// one time, comparing the times (MCM compares their pointers, so a template
// taint with a time is written again at every pass).
func sameTime(a, b *corev1.Taint) bool {
	if a.TimeAdded == nil || b.TimeAdded == nil {
		return a.TimeAdded == nil && b.TimeAdded == nil
	}
	return a.TimeAdded.Equal(b.TimeAdded)
}

// syncCapacity is syncEntries for the status capacity.
func syncCapacity(have, want, last corev1.ResourceList) bool {
	return syncEntries(have, want, last, func(a, b resource.Quantity) bool { return a.Equal(b) }, resource.Quantity.DeepCopy)
}

// ErrInvalid is wrapped by every error Validate returns.
var ErrInvalid = errors.New("invalid node template")

// Validate checks a MachineClass's node template as MCM does: nil is
// valid; otherwise its capacity names cpu, gpu and memory, and its
// instance type, region and zone are set. Every problem is reported.
func Validate(t *v1alpha1.NodeTemplate) error {
	if t == nil {
		return nil
	}
	var errs []error
	for _, r := range []corev1.ResourceName{"cpu", "gpu", "memory"} {
		if _, ok := t.Capacity[r]; !ok {
			errs = append(errs, fmt.Errorf("%w: its capacity has no %s", ErrInvalid, r))
		}
	}
	for _, f := range []struct{ name, value string }{{"instance type", t.InstanceType}, {"region", t.Region}, {"zone", t.Zone}} {
		if f.value == "" {
			errs = append(errs, fmt.Errorf("%w: its %s is empty", ErrInvalid, f.name))
		}
	}
	return errors.Join(errs...)
}

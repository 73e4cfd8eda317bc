// Package owner names the owner under which the fleet limiter counts a
// machine's replacements (lifecycle.Object.Owner): machines of one owner
// are marked Failed, and so replaced, a few at a time.
//
// MCM counts per MachineDeployment, finding a deployment's machines by the
// label "name" its machine template is expected to carry. A deployment
// whose template lacks the label counts none of its machines, so MCM's
// limit never holds for it and an outage can fail all of them at once
// (github.com/gardener/machine-controller-manager/issues/1077); two
// deployments whose templates carry one name share a budget. [ByDeployment],
// the default here, follows the owner references instead: the machine's
// controller, a MachineSet, and that set's controller, a MachineDeployment.
// During a rolling update the old and the new MachineSet of a deployment
// then share one budget, as in MCM; counting per MachineSet ([ByMachineSet],
// what the lifecycle's MCM adapter reads without a lookup) gives a rolling
// deployment one budget per set, twice MCM's.
package owner

import (
	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// By is how a machine's owner is derived.
type By uint8

const (
	// ByDeployment: the UID of the MachineDeployment that controls the
	// machine's MachineSet; the set's UID when the set has no deployment
	// or cannot be read (a cache that has not seen it yet); "" for a
	// machine no MachineSet controls.
	ByDeployment By = iota
	// ByMachineSet: the UID of the MachineSet that controls the machine;
	// "" for a machine no MachineSet controls.
	ByMachineSet
	// ByNameLabel: MCM's, the value of the machine's "name" label, which
	// MCM expects to be its MachineDeployment's name; "" without the
	// label, which puts the machine with the other machines without an
	// owner (one group, where MCM limits such machines not at all).
	ByNameLabel
)

// NameLabel is the label MCM reads a machine's MachineDeployment from.
const NameLabel = "name"

// Sets finds a MachineSet by namespace and name, as a cache's lister does;
// false when it has none of that name.
type Sets func(namespace, name string) (*v1alpha1.MachineSet, bool)

// Of returns the owner of machine m, derived as by says; sets is read only
// by ByDeployment. Owners derived in different ways never compare equal: a
// name label's owner is prefixed so it cannot be taken for a UID.
func Of(m *v1alpha1.Machine, by By, sets Sets) string {
	switch by {
	case ByNameLabel:
		if name := m.Labels[NameLabel]; name != "" {
			return "name:" + name
		}
		return ""
	case ByMachineSet:
		return controllerUID(m, "MachineSet")
	}
	ref := metav1.GetControllerOfNoCopy(m)
	if ref == nil || ref.Kind != "MachineSet" {
		return ""
	}
	if sets != nil {
		if set, ok := sets(m.Namespace, ref.Name); ok && set.UID == ref.UID {
			if d := controllerUID(set, "MachineDeployment"); d != "" {
				return d
			}
		}
	}
	return string(ref.UID)
}

// controllerUID returns the UID of o's controller when it is of kind, ""
// otherwise.
func controllerUID(o metav1.Object, kind string) string {
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil && ref.Kind == kind {
		return string(ref.UID)
	}
	return ""
}

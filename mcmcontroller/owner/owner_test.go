package owner

import (
	"testing"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func controlledBy(kind, name, uid string) []metav1.OwnerReference {
	yes := true
	return []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "not-the-controller", UID: "cm"},
		{APIVersion: "machine.sapcloud.io/v1alpha1", Kind: kind, Name: name, UID: types.UID(uid), Controller: &yes},
	}
}

func machine(set, setUID string, labels map[string]string) *v1alpha1.Machine {
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "shoot--p", Name: "worker-a-1", Labels: labels}}
	if set != "" {
		m.OwnerReferences = controlledBy("MachineSet", set, setUID)
	}
	return m
}

// A rolling update: the old and the new MachineSet of one deployment.
func rolling() Sets {
	sets := map[string]*v1alpha1.MachineSet{}
	for _, s := range []struct{ name, uid string }{{"worker-a-old", "set-old"}, {"worker-a-new", "set-new"}} {
		sets[s.name] = &v1alpha1.MachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shoot--p", Name: s.name,
			UID: types.UID(s.uid), OwnerReferences: controlledBy("MachineDeployment", "worker-a", "deploy-a")}}
	}
	sets["lone"] = &v1alpha1.MachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shoot--p", Name: "lone", UID: "set-lone"}}
	return func(ns, name string) (*v1alpha1.MachineSet, bool) {
		s, ok := sets[name]
		return s, ok && ns == "shoot--p"
	}
}

// During a rolling update both sets' machines count under their
// deployment, as MCM counts them, without the name label.
func TestByDeploymentGroupsARollingUpdate(t *testing.T) {
	old, newer := machine("worker-a-old", "set-old", nil), machine("worker-a-new", "set-new", nil)
	if a, b := Of(old, ByDeployment, rolling()), Of(newer, ByDeployment, rolling()); a != "deploy-a" || b != "deploy-a" {
		t.Fatalf("owners %q and %q, want the deployment's UID", a, b)
	}
	if a, b := Of(old, ByMachineSet, nil), Of(newer, ByMachineSet, nil); a != "set-old" || b != "set-new" {
		t.Fatalf("by set: %q and %q", a, b)
	}
}

// MCM's name label: machines without it count under no owner, which is
// the hazard the deployment's owner references avoid.
func TestByNameLabel(t *testing.T) {
	with := machine("worker-a-old", "set-old", map[string]string{NameLabel: "worker-a"})
	without := machine("worker-a-new", "set-new", nil)
	if got := Of(with, ByNameLabel, nil); got != "name:worker-a" {
		t.Fatalf("owner %q", got)
	}
	if got := Of(without, ByNameLabel, nil); got != "" {
		t.Fatalf("owner without the label %q", got)
	}
	if got := Of(without, ByDeployment, rolling()); got != "deploy-a" {
		t.Fatalf("by deployment without the label: %q", got)
	}
}

// A set the cache does not show, a set of another UID under the same name
// (deleted and made again), and a set no deployment controls: the set's
// own UID.
func TestByDeploymentFallsBackToTheSet(t *testing.T) {
	for name, m := range map[string]*v1alpha1.Machine{
		"unknown set":       machine("not-in-cache", "set-x", nil),
		"set made again":    machine("worker-a-old", "set-before", nil),
		"set without owner": machine("lone", "set-lone", nil),
		"no lister at all":  machine("worker-a-old", "set-old", nil),
	} {
		sets := rolling()
		if name == "no lister at all" {
			sets = nil
		}
		if got, want := Of(m, ByDeployment, sets), string(metav1.GetControllerOf(m).UID); got != want {
			t.Errorf("%s: owner %q, want the set's %q", name, got, want)
		}
	}
}

// A machine no MachineSet controls has no owner: none, or a controller of
// another kind.
func TestMachinesWithoutASet(t *testing.T) {
	bare := machine("", "", map[string]string{})
	other := machine("", "", nil)
	other.OwnerReferences = controlledBy("MachineDeployment", "worker-a", "deploy-a")
	for _, m := range []*v1alpha1.Machine{bare, other} {
		for _, by := range []By{ByDeployment, ByMachineSet, ByNameLabel} {
			if got := Of(m, by, rolling()); got != "" {
				t.Errorf("%v: owner %q", by, got)
			}
		}
	}
}

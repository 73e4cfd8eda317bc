package mcmworld

import (
	"slices"
	"strings"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
)

// ClassFinalizer is the finalizer MCM's machine controller puts on a
// MachineClass its machines use; it does not reconcile the machines of a
// class without it.
const ClassFinalizer = "machine.sapcloud.io/machine-controller-manager"

// UserData is the user data of the Secret of a class [World.CreateClass]
// makes: both placeholders MCM fills in.
const UserData = "#!/bin/sh\n# machine <<MACHINE_NAME>>\necho <<BOOTSTRAP_TOKEN>> >/var/lib/bootstrap-token\n"

// PoolLabel is the label of the node template of a MachineDeployment
// [World.CreateDeployment] makes, with the deployment's name as its value,
// as Gardener labels a worker pool's nodes.
const PoolLabel = "worker.gardener.cloud/pool"

// CreateClass creates a MachineClass and its Secret (named name+"-secret",
// with [UserData] as userData), the class with [ClassFinalizer], provider
// "mcmworld", an empty providerSpec and a node template of 2 CPUs, no GPU
// and 8Gi of memory. Edits, if any, change the class before it is created.
func (w *World) CreateClass(name string, edits ...func(*v1alpha1.MachineClass)) *v1alpha1.MachineClass {
	w.t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-secret", Namespace: w.Namespace},
		Data: map[string][]byte{"userData": []byte(UserData)}}
	if _, err := w.Core.CoreV1().Secrets(w.Namespace).Create(w.Ctx, secret, metav1.CreateOptions{}); err != nil {
		w.t.Fatalf("creating the secret of class %s: %v", name, err)
	}
	class := &v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.Namespace, Finalizers: []string{ClassFinalizer}},
		NodeTemplate: &v1alpha1.NodeTemplate{
			// MCM's machine controller wants CPU, GPU and memory.
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"),
				"gpu": resource.MustParse("0"), corev1.ResourceMemory: resource.MustParse("8Gi")},
			InstanceType: "fake.small", Region: "region-a", Zone: "zone-a",
		},
		ProviderSpec: runtime.RawExtension{Raw: []byte(`{}`)},
		SecretRef:    &corev1.SecretReference{Name: secret.Name, Namespace: w.Namespace},
		Provider:     "mcmworld",
	}
	for _, e := range edits {
		e(class)
	}
	created, err := w.Machines.MachineV1alpha1().MachineClasses(w.Namespace).Create(w.Ctx, class, metav1.CreateOptions{})
	if err != nil {
		w.t.Fatalf("creating class %s: %v", name, err)
	}
	return created
}

// CreateDeployment creates a MachineDeployment of the given replicas of
// class: strategy RollingUpdate with maxSurge 1 and maxUnavailable 0,
// selector and template labelled name=<name>, and a node template that
// labels the nodes [PoolLabel]=<name>. Edits, if any, change it before it
// is created.
func (w *World) CreateDeployment(name, class string, replicas int32, edits ...func(*v1alpha1.MachineDeployment)) *v1alpha1.MachineDeployment {
	w.t.Helper()
	surge, unavailable := intstr.FromInt32(1), intstr.FromInt32(0)
	labels := map[string]string{"name": name}
	d := &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.Namespace},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: v1alpha1.MachineDeploymentStrategy{
				Type: v1alpha1.RollingUpdateMachineDeploymentStrategyType,
				RollingUpdate: &v1alpha1.RollingUpdateMachineDeployment{UpdateConfiguration: v1alpha1.UpdateConfiguration{
					MaxSurge: &surge, MaxUnavailable: &unavailable}},
			},
			Template: v1alpha1.MachineTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1alpha1.MachineSpec{
					Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: class},
					NodeTemplateSpec: v1alpha1.NodeTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{PoolLabel: name}},
					},
				},
			},
		},
	}
	for _, e := range edits {
		e(d)
	}
	created, err := w.Machines.MachineV1alpha1().MachineDeployments(w.Namespace).Create(w.Ctx, d, metav1.CreateOptions{})
	if err != nil {
		w.t.Fatalf("creating MachineDeployment %s: %v", name, err)
	}
	return created
}

// UpdateDeployment applies edit to the MachineDeployment as the API server
// has it and writes it, again on a conflict (MCM's controllers write it
// too), and returns what was written.
func (w *World) UpdateDeployment(name string, edit func(*v1alpha1.MachineDeployment)) *v1alpha1.MachineDeployment {
	w.t.Helper()
	c := w.Machines.MachineV1alpha1().MachineDeployments(w.Namespace)
	var out *v1alpha1.MachineDeployment
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		d, err := c.Get(w.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		edit(d)
		out, err = c.Update(w.Ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		w.t.Fatalf("updating MachineDeployment %s: %v", name, err)
	}
	return out
}

// UpdateMachine applies edit to the Machine as the API server has it and
// writes it, again on a conflict, and returns what was written.
func (w *World) UpdateMachine(name string, edit func(*v1alpha1.Machine)) *v1alpha1.Machine {
	w.t.Helper()
	return w.updateMachine(name, edit, false)
}

// UpdateMachineStatus applies edit to the Machine as the API server has it
// and writes its status, again on a conflict, and returns what was
// written: a test that plays the machine controller.
func (w *World) UpdateMachineStatus(name string, edit func(*v1alpha1.Machine)) *v1alpha1.Machine {
	w.t.Helper()
	return w.updateMachine(name, edit, true)
}

// updateMachine is UpdateMachine, or UpdateMachineStatus with status.
func (w *World) updateMachine(name string, edit func(*v1alpha1.Machine), status bool) *v1alpha1.Machine {
	w.t.Helper()
	c := w.Machines.MachineV1alpha1().Machines(w.Namespace)
	var out *v1alpha1.Machine
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		m, err := c.Get(w.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		edit(m)
		if status {
			out, err = c.UpdateStatus(w.Ctx, m, metav1.UpdateOptions{})
		} else {
			out, err = c.Update(w.Ctx, m, metav1.UpdateOptions{})
		}
		return err
	})
	if err != nil {
		w.t.Fatalf("updating machine %s: %v", name, err)
	}
	return out
}

// Scale sets the MachineDeployment's replicas.
func (w *World) Scale(name string, replicas int32) {
	w.t.Helper()
	w.UpdateDeployment(name, func(d *v1alpha1.MachineDeployment) { d.Spec.Replicas = replicas })
}

// SetClass makes the MachineDeployment's machines of class: a change of
// its template, which MCM's MachineDeployment controller rolls out as a
// new MachineSet.
func (w *World) SetClass(name, class string) {
	w.t.Helper()
	w.UpdateDeployment(name, func(d *v1alpha1.MachineDeployment) { d.Spec.Template.Spec.Class.Name = class })
}

// Deployment returns the MachineDeployment as the API server has it.
func (w *World) Deployment(name string) *v1alpha1.MachineDeployment {
	w.t.Helper()
	d, err := w.Machines.MachineV1alpha1().MachineDeployments(w.Namespace).Get(w.Ctx, name, metav1.GetOptions{})
	if err != nil {
		w.t.Fatalf("getting MachineDeployment %s: %v", name, err)
	}
	return d
}

// MachineList returns the Machines of the control namespace, by name.
func (w *World) MachineList() []v1alpha1.Machine {
	w.t.Helper()
	l, err := w.Machines.MachineV1alpha1().Machines(w.Namespace).List(w.Ctx, metav1.ListOptions{})
	if err != nil {
		w.t.Fatalf("listing machines: %v", err)
	}
	slices.SortFunc(l.Items, func(a, b v1alpha1.Machine) int { return strings.Compare(a.Name, b.Name) })
	return l.Items
}

// MachineSetList returns the MachineSets of the control namespace, by
// name.
func (w *World) MachineSetList() []v1alpha1.MachineSet {
	w.t.Helper()
	l, err := w.Machines.MachineV1alpha1().MachineSets(w.Namespace).List(w.Ctx, metav1.ListOptions{})
	if err != nil {
		w.t.Fatalf("listing machine sets: %v", err)
	}
	slices.SortFunc(l.Items, func(a, b v1alpha1.MachineSet) int { return strings.Compare(a.Name, b.Name) })
	return l.Items
}

// NodeList returns the Nodes, by name.
func (w *World) NodeList() []corev1.Node {
	w.t.Helper()
	l, err := w.Core.CoreV1().Nodes().List(w.Ctx, metav1.ListOptions{})
	if err != nil {
		w.t.Fatalf("listing nodes: %v", err)
	}
	slices.SortFunc(l.Items, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return l.Items
}

// DeploymentAvailable reports whether MCM's MachineDeployment controller
// calls the deployment's rollout done: its status counts spec.replicas
// machines, all updated (of the newest MachineSet) and available (Running
// or Available), for the current generation, and its Available condition
// is True.
func DeploymentAvailable(d *v1alpha1.MachineDeployment) bool {
	s := d.Status
	if s.ObservedGeneration < d.Generation || s.Replicas != d.Spec.Replicas ||
		s.UpdatedReplicas != d.Spec.Replicas || s.AvailableReplicas != d.Spec.Replicas {
		return false
	}
	for _, c := range s.Conditions {
		if c.Type == v1alpha1.MachineDeploymentAvailable {
			return c.Status == v1alpha1.ConditionTrue
		}
	}
	return false
}

// Running returns the machines in phase Running.
func Running(ms []v1alpha1.Machine) []v1alpha1.Machine {
	var out []v1alpha1.Machine
	for _, m := range ms {
		if m.Status.CurrentStatus.Phase == v1alpha1.MachineRunning {
			out = append(out, m)
		}
	}
	return out
}

// Live returns the machines without a deletion timestamp.
func Live(ms []v1alpha1.Machine) []v1alpha1.Machine {
	var out []v1alpha1.Machine
	for _, m := range ms {
		if m.DeletionTimestamp == nil {
			out = append(out, m)
		}
	}
	return out
}

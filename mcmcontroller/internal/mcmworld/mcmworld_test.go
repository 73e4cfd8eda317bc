package mcmworld_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/purelifecycle/machine/mcmcontroller/internal/mcmworld"
	"github.com/purelifecycle/machine/mcmcontroller/mcmfake"
)

// Without a machine controller, MCM's MachineDeployment controller makes a
// MachineSet and its MachineSet controller the machines, which stay
// without a phase or finalizer; scaled down, the MachineSet controller
// deletes the surplus, which is gone at once.
func TestControlControllersScaleAFleetWithoutAMachineController(t *testing.T) {
	w := mcmworld.Start(t)
	w.CreateClass("class-a")
	w.CreateDeployment("pool-a", "class-a", 3)

	w.WaitFor("a MachineSet of 3 and 3 machines", func() bool {
		sets := w.MachineSetList()
		return len(sets) == 1 && sets[0].Spec.Replicas == 3 && len(w.MachineList()) == 3
	})
	set := w.MachineSetList()[0]
	if !strings.HasPrefix(set.Name, "pool-a-") || set.Spec.Template.Spec.Class.Name != "class-a" {
		t.Fatalf("MachineSet %s of class %s", set.Name, set.Spec.Template.Spec.Class.Name)
	}
	for _, m := range w.MachineList() {
		if owner := metav1.GetControllerOf(&m); owner == nil || owner.UID != set.UID {
			t.Errorf("machine %s is not controlled by MachineSet %s: %v", m.Name, set.Name, m.OwnerReferences)
		}
		if m.Status.CurrentStatus.Phase != "" {
			t.Errorf("machine %s has phase %q without a machine controller", m.Name, m.Status.CurrentStatus.Phase)
		}
		if m.Spec.Class.Name != "class-a" || m.Spec.NodeTemplateSpec.Labels[mcmworld.PoolLabel] != "pool-a" {
			t.Errorf("machine %s: class %q, node template %v", m.Name, m.Spec.Class.Name, m.Spec.NodeTemplateSpec.Labels)
		}
	}
	w.WaitFor("the MachineSet's finalizer and status", func() bool {
		s := w.MachineSetList()[0]
		return len(s.Finalizers) > 0 && s.Status.Replicas == 3 && s.Status.AvailableReplicas == 0
	})

	w.Scale("pool-a", 1)
	// The machine controller puts MCM's finalizer on a machine when it
	// first reconciles it: without one, the machines the MachineSet
	// controller deletes are gone at once.
	for _, m := range w.MachineList() {
		if len(m.Finalizers) != 0 {
			t.Errorf("machine %s has finalizers %v without a machine controller", m.Name, m.Finalizers)
		}
	}
	w.WaitFor("2 of the 3 machines gone", func() bool {
		return len(w.MachineList()) == 1
	})
	if d := w.Deployment("pool-a"); mcmworld.DeploymentAvailable(d) {
		t.Errorf("MachineDeployment available without a machine controller: %+v", d.Status)
	}
}

// With MCM's own machine controller, the fake cloud and the fake kubelet,
// a MachineDeployment of 2 gets 2 Running machines on Ready nodes, and a
// change of class rolls them over to new ones: the world works as MCM
// does, so a replacement machine controller can be tried in it.
func TestMCMMachineControllerRunsAndRollsAFleet(t *testing.T) {
	w := mcmworld.Start(t)
	cloud := mcmfake.New()
	w.StartMCMMachineController(cloud)
	kubelet := w.StartKubelet(cloud)
	w.CreateClass("class-a")
	w.CreateClass("class-b")
	// A surge of 2 rolls both machines over at once: MCM's machine
	// controller takes about 30 s to delete a machine (six steps, 5 s
	// apart), and a rollout one machine at a time would wait for two.
	w.CreateDeployment("pool-a", "class-a", 2, func(d *v1alpha1.MachineDeployment) {
		surge := intstr.FromInt32(2)
		d.Spec.Strategy.RollingUpdate.MaxSurge = &surge
	})

	w.WaitFor("2 Running machines on Ready nodes, the deployment available", func() bool {
		return fleetReady(w, "pool-a", "class-a", 2)
	})
	type machine struct{ node string }
	old := map[string]machine{}
	for _, m := range w.MachineList() {
		old[m.Name] = machine{node: m.Labels["node"]}
	}

	w.SetClass("pool-a", "class-b")
	// MCM's MachineDeployment controller reaches the nodes of the old
	// machines through the machines' node label: it taints them
	// PreferNoSchedule and keeps the autoscaler off them during the
	// rollout.
	tainted, annotated := map[string]bool{}, map[string]bool{}
	w.WaitFor("the rollout to class-b done", func() bool {
		for _, n := range w.NodeList() {
			for _, taint := range n.Spec.Taints {
				if taint.Key == "deployment.machine.sapcloud.io/prefer-no-schedule" && taint.Effect == corev1.TaintEffectPreferNoSchedule {
					tainted[n.Name] = true
				}
			}
			if n.Annotations["cluster-autoscaler.kubernetes.io/scale-down-disabled"] == "true" {
				annotated[n.Name] = true
			}
		}
		if !fleetReady(w, "pool-a", "class-b", 2) {
			return false
		}
		for _, m := range w.MachineList() {
			if _, ok := old[m.Name]; ok {
				return false
			}
		}
		return len(cloud.Instances()) == 2
	})
	for _, m := range old {
		if !tainted[m.node] || !annotated[m.node] {
			t.Errorf("old node %s: tainted %v, annotated for the autoscaler %v during the rollout", m.node, tainted[m.node], annotated[m.node])
		}
	}
	// It lifts the annotations in the reconcile after the one that found
	// the rollout complete.
	w.WaitFor("the autoscaler's annotations lifted", func() bool {
		for _, n := range w.NodeList() {
			if _, ok := n.Annotations["cluster-autoscaler.kubernetes.io/scale-down-disabled"]; ok {
				return false
			}
		}
		return true
	})
	for _, inst := range cloud.Instances() {
		if inst.Class != "class-b" {
			t.Errorf("instance %s of class %q after the rollout", inst.ProviderID, inst.Class)
		}
	}
	w.WaitFor("the nodes of the old instances gone", func() bool {
		return len(w.NodeList()) == 2
	})
	if err := kubelet.LastError(); err != nil {
		t.Errorf("the kubelet's last error: %v", err)
	}
}

// fleetReady reports whether the deployment is available with n machines,
// all Running, of class, each on a Ready node with the machine's
// providerID, and n live instances in the cloud.
func fleetReady(w *mcmworld.World, deployment, class string, n int) bool {
	if !mcmworld.DeploymentAvailable(w.Deployment(deployment)) {
		return false
	}
	ms := w.MachineList()
	if len(ms) != n || len(mcmworld.Running(ms)) != n {
		return false
	}
	nodes := map[string]bool{}
	for _, node := range w.NodeList() {
		if node.DeletionTimestamp == nil && mcmworld.NodeReady(&node) {
			nodes[node.Name+" "+node.Spec.ProviderID] = true
		}
	}
	for _, m := range ms {
		if m.Spec.Class.Name != class || !nodes[m.Labels["node"]+" "+m.Spec.ProviderID] {
			return false
		}
	}
	return true
}

// A node that turns unhealthy (KernelDeadlock) makes MCM's machine
// controller mark its machine Unknown and, after the health timeout,
// Failed; MCM's MachineSet controller then deletes it and makes a
// replacement, and the deployment is available again.
func TestMCMReplacesTheMachineOfAnUnhealthyNode(t *testing.T) {
	w := mcmworld.Start(t)
	cloud := mcmfake.New()
	safety := mcmworld.MachineSafetyDefaults()
	safety.MachineHealthTimeout = metav1.Duration{Duration: 2 * time.Second}
	w.StartMCMMachineControllerWith(cloud, safety)
	kubelet := w.StartKubelet(cloud)
	w.CreateClass("class-a")
	w.CreateDeployment("pool-a", "class-a", 1)
	w.WaitFor("1 Running machine, the deployment available", func() bool {
		return fleetReady(w, "pool-a", "class-a", 1)
	})
	sick := w.MachineList()[0]

	kubelet.SetCondition(sick.Labels["node"], "KernelDeadlock", corev1.ConditionTrue)
	var phases []v1alpha1.MachinePhase
	w.WaitFor("the machine of the unhealthy node Failed or deleting", func() bool {
		for _, m := range w.MachineList() {
			if m.Name != sick.Name {
				continue
			}
			if p := m.Status.CurrentStatus.Phase; len(phases) == 0 || phases[len(phases)-1] != p {
				phases = append(phases, p)
			}
			return m.Status.CurrentStatus.Phase == v1alpha1.MachineFailed || m.DeletionTimestamp != nil
		}
		return true
	})
	t.Logf("phases of the unhealthy machine: %v", phases)
	w.WaitFor("a replacement Running, the unhealthy machine gone", func() bool {
		ms := w.MachineList()
		return fleetReady(w, "pool-a", "class-a", 1) && ms[0].Name != sick.Name
	})
}

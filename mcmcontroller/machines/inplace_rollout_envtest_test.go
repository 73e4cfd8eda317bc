package machines_test

import (
	"context"
	"testing"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/mcmcontroller/internal/mcmworld"
	"github.com/purelifecycle/machine/mcmcontroller/mcmfake"
)

// startAgent plays the node agent of MCM's in-place update on every node
// until the test ends: a node whose InPlaceUpdate condition says
// ReadyForUpdate is updated at once, and labelled update-result=successful.
// It records every node it was told to update while it was not cordoned.
func startAgent(t *testing.T, core kubernetes.Interface) (uncordoned func() []string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var bad []string
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			nodes, err := core.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err == nil {
				for i := range nodes.Items {
					n := &nodes.Items[i]
					if !readyForUpdate(n) || n.Labels[lifecycle.UpdateResultLabel] != "" {
						continue
					}
					if !n.Spec.Unschedulable {
						bad = append(bad, n.Name)
					}
					_ = retry.RetryOnConflict(retry.DefaultRetry, func() error {
						cur, err := core.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
						if err != nil {
							return err
						}
						cur.Labels[lifecycle.UpdateResultLabel] = lifecycle.UpdateResultSuccessful
						_, err = core.CoreV1().Nodes().Update(ctx, cur, metav1.UpdateOptions{})
						return err
					})
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return func() []string { cancel(); <-done; return bad }
}

func readyForUpdate(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if string(c.Type) == lifecycle.ConditionInPlaceUpdate {
			return c.Reason == lifecycle.ReasonReadyForUpdate
		}
	}
	return false
}

// setOfClass returns the name of the MachineSet whose machines are of the
// class, "" when none is.
func setOfClass(sets []v1alpha1.MachineSet, class string) string {
	for _, s := range sets {
		if s.Spec.Template.Spec.Class.Name == class {
			return s.Name
		}
	}
	return ""
}

// MCM's own MachineDeployment controller rolls a deployment over in place
// with the drop-in controller in MCM's machine controller's place: it
// labels the nodes candidate and selects them one at a time, the drop-in
// drains each and tells the agent ReadyForUpdate only once it is cordoned,
// the agent reports success, and the deployment moves the machines to the
// new MachineSet (of the new class; the machines keep their spec, which
// the agent's update stands for). No machine is replaced: the instances
// are the same.
func TestInPlaceRolloutWithMCMsDeployment(t *testing.T) {
	w := mcmworld.Start(t)
	cloud := mcmfake.New()
	startDropIn(t, w.ControllerConfig("drop-in"), w.Namespace, cloud)
	w.StartKubelet(cloud)
	agentDone := startAgent(t, w.Core)
	w.CreateClass("class-a")
	w.CreateClass("class-b")
	one := intstr.FromInt32(1)
	zero := intstr.FromInt32(0)
	w.CreateDeployment("pool", "class-a", 2, func(d *v1alpha1.MachineDeployment) {
		d.Spec.Strategy = v1alpha1.MachineDeploymentStrategy{Type: v1alpha1.InPlaceUpdateMachineDeploymentStrategyType,
			InPlaceUpdate: &v1alpha1.InPlaceUpdateMachineDeployment{OrchestrationType: v1alpha1.OrchestrationTypeAuto,
				UpdateConfiguration: v1alpha1.UpdateConfiguration{MaxUnavailable: &one, MaxSurge: &zero}}}
	})
	w.WaitFor("the deployment available with 2 Running machines", func() bool {
		return mcmworld.DeploymentAvailable(w.Deployment("pool")) && running(w) == 2
	})
	before := map[string]string{}
	for _, m := range w.MachineList() {
		before[m.Name] = m.Spec.ProviderID
	}
	w.SetClass("pool", "class-b")
	mcmworld.WaitForWithin(t, 3*time.Minute, "the rollout done in place: the same machines Running in the new set", func() bool {
		ms := w.MachineList()
		if len(ms) != 2 || !mcmworld.DeploymentAvailable(w.Deployment("pool")) {
			return false
		}
		newSet := setOfClass(w.MachineSetList(), "class-b")
		for _, m := range ms {
			owner := metav1.GetControllerOf(&m)
			if before[m.Name] != m.Spec.ProviderID || m.Status.CurrentStatus.Phase != v1alpha1.MachineRunning ||
				owner == nil || newSet == "" || owner.Name != newSet {
				return false
			}
		}
		return true
	})
	if bad := agentDone(); len(bad) > 0 {
		t.Fatalf("nodes told ReadyForUpdate while schedulable: %v", bad)
	}
	if n := cloud.Count(mcmfake.MethodCreate, ""); n != 2 {
		t.Fatalf("%d CreateMachine calls: the in-place rollout replaced machines", n)
	}
	for _, n := range w.NodeList() {
		if _, ok := n.Labels[lifecycle.CandidateForUpdateLabel]; ok || n.Spec.Unschedulable {
			t.Fatalf("node %s after the rollout: labels %v, unschedulable %v", n.Name, n.Labels, n.Spec.Unschedulable)
		}
	}
}

package mcmworld

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultTimeout is how long [WaitFor] and [World.WaitFor] wait.
const DefaultTimeout = 45 * time.Second

// PollInterval is how often [WaitFor] and [World.WaitFor] check.
const PollInterval = 100 * time.Millisecond

// WaitFor waits up to [DefaultTimeout] for cond to hold, checking every
// [PollInterval], and fails the test, naming desc, when it does not.
func WaitFor(t testing.TB, desc string, cond func() bool) {
	t.Helper()
	WaitForWithin(t, DefaultTimeout, desc, cond)
}

// WaitForWithin is [WaitFor] with its own timeout.
func WaitForWithin(t testing.TB, timeout time.Duration, desc string, cond func() bool) {
	t.Helper()
	if !poll(timeout, cond) {
		t.Fatalf("timed out after %v waiting for %s", timeout, desc)
	}
}

// poll checks cond until it holds or timeout passes, and reports whether
// it held.
func poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(PollInterval)
	}
}

// WaitFor waits for cond to hold (up to the world's timeout, see
// [WithTimeout]) and logs how long it took; when it does not hold in time,
// it fails the test, naming desc, with the world's state ([World.Dump]).
func (w *World) WaitFor(desc string, cond func() bool) {
	w.t.Helper()
	start := time.Now()
	if !poll(w.settings.timeout, cond) {
		w.t.Fatalf("timed out after %v waiting for %s; the world:\n%s", w.settings.timeout, desc, w.Dump())
	}
	w.t.Logf("%s after %v", desc, time.Since(start).Round(10*time.Millisecond))
}

// Dump describes the world's MachineDeployments, MachineSets, Machines and
// Nodes, a line each, for failure messages.
func (w *World) Dump() string {
	var b strings.Builder
	mc := w.Machines.MachineV1alpha1()
	if l, err := mc.MachineDeployments(w.Namespace).List(w.Ctx, metav1.ListOptions{}); err != nil {
		fmt.Fprintf(&b, "  machine deployments: %v\n", err)
	} else {
		for _, d := range l.Items {
			s := d.Status
			fmt.Fprintf(&b, "  MachineDeployment %s: gen %d/%d, spec %d, replicas %d, updated %d, ready %d, available %d, unavailable %d, labels %v",
				d.Name, s.ObservedGeneration, d.Generation, d.Spec.Replicas, s.Replicas, s.UpdatedReplicas, s.ReadyReplicas,
				s.AvailableReplicas, s.UnavailableReplicas, d.Labels)
			for _, c := range s.Conditions {
				fmt.Fprintf(&b, ", %s=%s (%s)", c.Type, c.Status, c.Reason)
			}
			b.WriteString("\n")
		}
	}
	if l, err := mc.MachineSets(w.Namespace).List(w.Ctx, metav1.ListOptions{}); err != nil {
		fmt.Fprintf(&b, "  machine sets: %v\n", err)
	} else {
		for _, s := range l.Items {
			st := s.Status
			fmt.Fprintf(&b, "  MachineSet %s: class %s, spec %d, replicas %d, ready %d, available %d, labels %v",
				s.Name, s.Spec.Template.Spec.Class.Name, s.Spec.Replicas, st.Replicas, st.ReadyReplicas, st.AvailableReplicas, s.Labels)
			for _, c := range st.Conditions {
				fmt.Fprintf(&b, ", %s=%s (%s)", c.Type, c.Status, c.Reason)
			}
			b.WriteString("\n")
		}
	}
	if l, err := mc.Machines(w.Namespace).List(w.Ctx, metav1.ListOptions{}); err != nil {
		fmt.Fprintf(&b, "  machines: %v\n", err)
	} else {
		for _, m := range l.Items {
			del := ""
			if m.DeletionTimestamp != nil {
				del = ", deleting"
			}
			lo := m.Status.LastOperation
			fmt.Fprintf(&b, "  Machine %s: phase %q%s, node %q, providerID %q, last operation %s/%s %q\n",
				m.Name, m.Status.CurrentStatus.Phase, del, m.Labels["node"], m.Spec.ProviderID, lo.Type, lo.State, lo.Description)
		}
	}
	if l, err := w.Core.CoreV1().Nodes().List(w.Ctx, metav1.ListOptions{}); err != nil {
		fmt.Fprintf(&b, "  nodes: %v\n", err)
	} else {
		for _, n := range l.Items {
			del := ""
			if n.DeletionTimestamp != nil {
				del = ", deleting"
			}
			var conds []string
			for _, c := range n.Status.Conditions {
				conds = append(conds, fmt.Sprintf("%s=%s", c.Type, c.Status))
			}
			fmt.Fprintf(&b, "  Node %s%s: providerID %q, unschedulable %v, conditions %s, finalizers %v\n",
				n.Name, del, n.Spec.ProviderID, n.Spec.Unschedulable, strings.Join(conds, ","), n.Finalizers)
		}
	}
	return b.String()
}

// NodeReady reports whether the node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

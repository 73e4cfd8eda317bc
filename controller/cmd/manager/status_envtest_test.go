package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/jsonpath"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/controller/fakecloud"
)

// requireObserved fails unless the machine's status and each of its
// conditions observed its current generation.
func requireObserved(t *testing.T, m *v1alpha1.Machine) {
	t.Helper()
	require.Equal(t, m.Generation, m.Status.ObservedGeneration)
	for _, c := range m.Status.Conditions {
		require.Equal(t, m.Generation, c.ObservedGeneration, "condition %s", c.Type)
	}
}

// The conditions follow the machine by the API conventions: Ready and one
// per wait, the observed generation following the spec, the transition
// time kept while the status stays.
func TestConditionsFollowTheMachine(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	ctx := context.Background()
	_, inst := bringUp(t, ns, "m-cond", time.Minute)
	m := waitCondition(t, ns, "m-cond", v1alpha1.ConditionReady, metav1.ConditionTrue, "", 10*time.Second)
	requireObserved(t, m)
	join := condition(m, "WaitingForNodeJoin")
	require.NotNil(t, join, "%+v", m.Status.Conditions)
	require.Equal(t, metav1.ConditionFalse, join.Status)
	require.Nil(t, m.Status.Wait)
	ready := *condition(m, v1alpha1.ConditionReady)
	require.Regexp(t, `^[A-Z][A-Za-z]+$`, ready.Reason)
	require.NotEmpty(t, ready.Message)

	// A new generation of the spec is observed; Ready keeps its transition.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		m := getMachine(t, ns, "m-cond")
		m.Spec.InstanceMetadata = map[string]string{"team": "storage"}
		return k8s.Update(ctx, m)
	}))
	eventually(t, 20*time.Second, "new generation observed", func() (bool, string) {
		m = getMachine(t, ns, "m-cond")
		for _, c := range m.Status.Conditions {
			if c.ObservedGeneration != m.Generation {
				return false, fmt.Sprintf("generation %d, %+v", m.Generation, m.Status.Conditions)
			}
		}
		return m.Status.ObservedGeneration == m.Generation, fmt.Sprintf("generation %d, observed %d", m.Generation, m.Status.ObservedGeneration)
	})
	require.Greater(t, m.Generation, int64(1))
	after := condition(m, v1alpha1.ConditionReady)
	require.Equal(t, metav1.ConditionTrue, after.Status)
	require.Equal(t, ready.LastTransitionTime, after.LastTransitionTime)

	// Unhealthy: no longer Ready, waiting for the recovery until the
	// health timeout.
	require.NoError(t, fakecloud.SetReady(ctx, k8s, inst.NodeName, corev1.ConditionFalse))
	m = waitCondition(t, ns, "m-cond", "WaitingForRecovery", metav1.ConditionTrue, "HealthUnhealthy", 20*time.Second)
	requireObserved(t, m)
	notReady := condition(m, v1alpha1.ConditionReady)
	require.Equal(t, metav1.ConditionFalse, notReady.Status)
	require.Equal(t, "HealthUnhealthy", notReady.Reason)
	require.True(t, notReady.LastTransitionTime.After(ready.LastTransitionTime.Time) || notReady.LastTransitionTime.Equal(&ready.LastTransitionTime))
	require.Contains(t, notReady.Message, "Node conditions: Ready=False (KubeletReady)")
	require.Equal(t, "recovery", m.Status.Wait.For)
	require.Equal(t, "health.unhealthy", m.Status.Wait.Rule)
	require.NotNil(t, m.Status.Wait.Until)
	require.Contains(t, condition(m, "WaitingForRecovery").Message, "The wait ends at "+m.Status.Wait.Until.UTC().Format(time.RFC3339)+", 1m after it began.")
	require.Equal(t, "Unknown", m.Status.CurrentStatus.Phase)
}

// printerColumns returns the Machine CRD's printer columns as the API
// server serves them.
func printerColumns(t *testing.T) []apiextensionsv1.CustomResourceColumnDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKey{Name: "machines." + v1alpha1.GroupVersion.Group}, crd))
	for _, v := range crd.Spec.Versions {
		if v.Name == v1alpha1.GroupVersion.Version {
			return v.AdditionalPrinterColumns
		}
	}
	t.Fatal("no version " + v1alpha1.GroupVersion.Version)
	return nil
}

// columnValues evaluates the printer columns on the machine, as the API
// server does for kubectl get.
func columnValues(t *testing.T, cols []apiextensionsv1.CustomResourceColumnDefinition, ns, name string) map[string]string {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Machine"))
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u))
	out := map[string]string{}
	for _, c := range cols {
		jp := jsonpath.New(c.Name).AllowMissingKeys(true)
		require.NoError(t, jp.Parse("{"+c.JSONPath+"}"))
		var b strings.Builder
		require.NoError(t, jp.Execute(&b, u.Object))
		out[c.Name] = b.String()
	}
	return out
}

// kubectl get machines shows the phase, what the machine waits for and
// until when, and its age; -o wide adds its node and providerID.
func TestPrinterColumnsShowPhaseWaitAndAge(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	cols := printerColumns(t)
	var shape []string
	for _, c := range cols {
		shape = append(shape, fmt.Sprintf("%s:%s:%d", c.Name, c.Type, c.Priority))
	}
	require.Equal(t, []string{"Phase:string:0", "Waiting For:string:0", "Until:string:0", "Node:string:1",
		"ProviderID:string:1", "Age:date:0"}, shape)

	newMachine(t, ns, "m-cols", time.Minute)
	m := waitPhase(t, ns, "m-cols", "Pending", 30*time.Second)
	eventually(t, 10*time.Second, "the wait for the node shown", func() (bool, string) {
		m = getMachine(t, ns, "m-cols")
		return m.Status.Wait != nil && m.Status.Wait.For == "node-join", fmt.Sprintf("%+v", m.Status.Wait)
	})
	inst, ok := provider.InstanceOf("m-cols")
	require.True(t, ok)
	created := m.CreationTimestamp.UTC()
	require.Equal(t, map[string]string{
		"Phase":       "Pending",
		"Waiting For": "node-join",
		"Until":       created.Add(2 * time.Minute).Format(time.RFC3339), // newMachine's creation timeout
		"Node":        inst.NodeName,
		"ProviderID":  inst.ProviderID,
		"Age":         created.Format(time.RFC3339),
	}, columnValues(t, cols, ns, "m-cols"))

	// Running, it waits for nothing.
	require.NoError(t, fakecloud.RegisterNode(context.Background(), k8s, inst))
	waitPhase(t, ns, "m-cols", "Running", 30*time.Second)
	eventually(t, 10*time.Second, "no wait shown", func() (bool, string) {
		v := columnValues(t, cols, ns, "m-cols")
		return v["Phase"] == "Running" && v["Waiting For"] == "" && v["Until"] == "", fmt.Sprint(v)
	})
}

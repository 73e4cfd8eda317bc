package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/controller/machines"
	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
)

// fakeClassName names the MachineClass of the fake provider that
// machineSpec's machines name.
const fakeClassName = "fake"

// fakeClass makes sure the namespace holds the MachineClass fakeClassName
// of the fake provider, with its Secret, and returns its name.
func fakeClass(t *testing.T, ns string) string {
	t.Helper()
	createClass(t, ns, fakeClassName, `{"image":"fake-image"}`, validTemplate())
	return fakeClassName
}

// validTemplate returns a node template that passes validation.
func validTemplate() *v1alpha1.NodeTemplate {
	return &v1alpha1.NodeTemplate{InstanceType: "fake.small", Region: "fake-1", Zone: "fake-1a",
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")}}
}

// createClass creates the MachineClass name and its Secret name+"-secret"
// (user data asking for the bootstrap token, and a credential) unless they
// exist.
func createClass(t *testing.T, ns, name, providerSpec string, template *v1alpha1.NodeTemplate) {
	t.Helper()
	ctx := context.Background()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-secret"},
		Data: map[string][]byte{
			"userData": []byte("#!/bin/sh\n# join the cluster with bootstrap token " + machines.BootstrapTokenPlaceholder + "\n"),
			"apiKey":   []byte("key-of-" + name),
		},
	}
	if err := k8s.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	class := &v1alpha1.MachineClass{
		ObjectMeta:   metav1.ObjectMeta{Namespace: ns, Name: name},
		ProviderSpec: runtime.RawExtension{Raw: []byte(providerSpec)},
		SecretRef:    &corev1.LocalObjectReference{Name: secret.Name},
		NodeTemplate: template,
	}
	if err := k8s.Create(ctx, class); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}

// condition returns the machine's condition of that type, or nil.
func condition(m *v1alpha1.Machine, typ string) *metav1.Condition {
	return meta.FindStatusCondition(m.Status.Conditions, typ)
}

// waitCondition waits until the machine's condition typ has status and
// reason, and returns the machine.
func waitCondition(t *testing.T, ns, name, typ string, status metav1.ConditionStatus, reason string, timeout time.Duration) *v1alpha1.Machine {
	t.Helper()
	var m *v1alpha1.Machine
	eventually(t, timeout, fmt.Sprintf("%s: %s=%s (%s)", name, typ, status, reason), func() (bool, string) {
		m = getMachine(t, ns, name)
		c := condition(m, typ)
		return c != nil && c.Status == status && (reason == "" || c.Reason == reason), fmt.Sprintf("%+v", m.Status.Conditions)
	})
	return m
}

// A machine is created with its own class: the class's provider spec and
// Secret reach the driver, the bootstrap token in the user data.
func TestMachineIsCreatedWithItsOwnClass(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	createClass(t, ns, "big", `{"image":"big-image","size":"xl"}`, validTemplate())
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "m-big"},
		Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", APIGroup: v1alpha1.GroupVersion.Group, Name: "big"}},
	}
	require.NoError(t, k8s.Create(context.Background(), m))
	m = waitPhase(t, ns, "m-big", "Pending", 30*time.Second)
	inst, ok := provider.InstanceOf("m-big")
	require.True(t, ok)
	require.Equal(t, "big", inst.Class.Name)
	require.JSONEq(t, `{"image":"big-image","size":"xl"}`, string(inst.Class.ProviderSpec))
	require.Equal(t, "key-of-big", string(inst.Class.Secret["apiKey"]))
	ud := string(inst.Class.Secret["userData"])
	require.NotContains(t, ud, machines.BootstrapTokenPlaceholder)
	require.NotEmpty(t, m.Status.BootstrapTokenID)
	require.Contains(t, ud, "bootstrap token "+m.Status.BootstrapTokenID+".")
	require.Equal(t, ud, inst.UserData)
}

// A machine whose class is missing waits for it, says so, and goes on once
// the class exists; a broken node template, and a reference to another
// kind, keep it waiting too.
func TestMachineWaitsForItsClass(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	ctx := context.Background()
	newMachineOfClass := func(name string, ref v1alpha1.ClassSpec) {
		require.NoError(t, k8s.Create(ctx, &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.MachineSpec{Class: ref}}))
	}

	newMachineOfClass("m-later", v1alpha1.ClassSpec{Name: "later"})
	m := waitCondition(t, ns, "m-later", "WaitingForProblem", metav1.ConditionTrue, "DispatchClassUnavailable", 20*time.Second)
	require.Equal(t, "problem", m.Status.Wait.For)
	require.Equal(t, metav1.ConditionFalse, condition(m, v1alpha1.ConditionReady).Status)
	require.Equal(t, m.Generation, condition(m, "WaitingForProblem").ObservedGeneration)
	require.Equal(t, 0, provider.Calls("m-later", driverapi.MethodGetStatus), "no driver call without a class")
	eventually(t, 20*time.Second, "ClassUnavailable event", func() (bool, string) {
		got := eventReasons(t, ns, "m-later")
		return contains(got, "Warning "+lifecycle.RuleClassUnavailable.Event()), fmt.Sprint(got)
	})
	// The event says which object is missing: "the machine class or its
	// secret" alone left a user to guess which, and of which name.
	requireNote(t, ns, "m-later", lifecycle.RuleClassUnavailable.Event(), `MachineClass later`, "not found")
	// So do the condition and the wait, which outlast the event.
	require.Contains(t, condition(m, "WaitingForProblem").Message, "MachineClass later")
	require.Contains(t, m.Status.Wait.Detail, "MachineClass later")

	// The class appears: the machine is created without waiting for its
	// requeue, and its wait for the class has ended.
	createClass(t, ns, "later", `{}`, nil)
	m = waitPhase(t, ns, "m-later", "Pending", 30*time.Second)
	require.Equal(t, metav1.ConditionFalse, condition(m, "WaitingForProblem").Status)
	require.Equal(t, metav1.ConditionTrue, condition(m, "WaitingForNodeJoin").Status)

	createClass(t, ns, "broken", `{}`, &v1alpha1.NodeTemplate{InstanceType: "fake.small"})
	newMachineOfClass("m-broken", v1alpha1.ClassSpec{Name: "broken"})
	waitCondition(t, ns, "m-broken", "WaitingForProblem", metav1.ConditionTrue, "DispatchInvalidNodeTemplate", 20*time.Second)

	newMachineOfClass("m-alien", v1alpha1.ClassSpec{Kind: "AlienMachineClass", Name: "fake"})
	waitCondition(t, ns, "m-alien", "WaitingForProblem", metav1.ConditionTrue, "DispatchInvalidMachine", 20*time.Second)
	requireNote(t, ns, "m-alien", lifecycle.RuleInvalidMachine.Event(), `"AlienMachineClass"`)

	// The class's Secret goes missing: a deletion waits for it too.
	createClass(t, ns, "secretless", `{}`, nil)
	require.NoError(t, k8s.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "secretless-secret"}}))
	newMachineOfClass("m-secretless", v1alpha1.ClassSpec{Name: "secretless"})
	m = waitCondition(t, ns, "m-secretless", "WaitingForProblem", metav1.ConditionTrue, "DispatchClassUnavailable", 20*time.Second)
	require.True(t, strings.HasPrefix(m.Status.Wait.Rule, "dispatch."), m.Status.Wait.Rule)
	requireNote(t, ns, "m-secretless", lifecycle.RuleClassUnavailable.Event(), "Secret secretless-secret of MachineClass secretless")
}

// requireNote waits for an event of the machine with that reason whose
// note holds every one of parts.
func requireNote(t *testing.T, ns, machine, reason string, parts ...string) {
	t.Helper()
	eventually(t, 20*time.Second, reason+" event naming "+fmt.Sprint(parts), func() (bool, string) {
		notes := eventNotes(t, ns, machine, reason)
		for _, n := range notes {
			if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(n, p) }) {
				return true, ""
			}
		}
		return false, fmt.Sprint(notes)
	})
}

// A MachineClass in use is kept until no machine names it, as MCM keeps
// its classes: deleted while a machine of it exists, it stays, the machine
// does not wait for it and its deletion is handed it, and then the class
// goes; a class no machine names goes at once. Found by hand: 'kubectl
// delete machineclass' went through at once, every machine of the class
// (Running ones too) then waited with ClassUnavailable, and so would their
// deletions, for a class that was not coming back.
func TestClassInUseIsKeptUntilItsMachinesAreGone(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	createClass(t, ns, "idle", `{}`, nil)
	newMachine(t, ns, "m-classy", time.Minute)
	waitPhase(t, ns, "m-classy", "Pending", 30*time.Second)

	key := client.ObjectKey{Namespace: ns, Name: fakeClassName}
	eventually(t, 20*time.Second, "the class in use has the finalizer", func() (bool, string) {
		c := &v1alpha1.MachineClass{}
		require.NoError(t, k8s.Get(ctx, key, c))
		return slices.Contains(c.Finalizers, lifecycle.Finalizer), fmt.Sprint(c.Finalizers)
	})
	require.NoError(t, k8s.Delete(ctx, &v1alpha1.MachineClass{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fakeClassName}}))
	require.NoError(t, k8s.Delete(ctx, &v1alpha1.MachineClass{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "idle"}}))
	eventually(t, 20*time.Second, "the idle class gone", func() (bool, string) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "idle"}, &v1alpha1.MachineClass{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	c := &v1alpha1.MachineClass{}
	require.NoError(t, k8s.Get(ctx, key, c), "the class in use went")
	require.NotNil(t, c.DeletionTimestamp)
	m := getMachine(t, ns, "m-classy")
	if w := condition(m, "WaitingForProblem"); w != nil {
		require.Equal(t, metav1.ConditionFalse, w.Status, w.Message)
	}

	require.NoError(t, k8s.Delete(ctx, m))
	eventually(t, 60*time.Second, "m-classy gone", func() (bool, string) {
		s := machineState(t, ns, "m-classy")
		return s == "gone", s
	})
	require.Positive(t, provider.Calls("m-classy", driverapi.MethodDelete), "the deletion was not handed the class")
	eventually(t, 20*time.Second, "the class gone with its last machine", func() (bool, string) {
		err := k8s.Get(ctx, key, &v1alpha1.MachineClass{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

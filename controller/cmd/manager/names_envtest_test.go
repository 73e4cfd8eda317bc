package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/controller/machines"
	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
)

// Two machines of one name in two namespaces. A provider finds instances,
// and a node is found by its machine-name label, by the machine's name, so
// the second would take the first's instance for one of an older
// incarnation of its own and delete it (found by hand: twelve machines
// of one namespace lost their instances to their namesakes of another).
// The machine that came second waits, with an event naming the first,
// calls no driver and touches nothing; once the first is gone it is
// created.
func TestNameUsedInAnotherNamespaceWaits(t *testing.T) {
	needEnv(t)
	t.Parallel()
	first, second := newNamespace(t), newNamespace(t)
	_, inst := bringUp(t, first, "m-twin", time.Minute)

	newMachine(t, second, "m-twin", time.Minute)
	m := waitCondition(t, second, "m-twin", "WaitingForProblem", metav1.ConditionTrue, "DispatchInvalidMachine", 20*time.Second)
	require.Equal(t, "problem", m.Status.Wait.For)
	eventually(t, 20*time.Second, "NameInUse event", func() (bool, string) {
		notes := eventNotes(t, second, "m-twin", machines.ReasonNameInUse)
		return len(notes) > 0 && strings.Contains(notes[0], first+"/m-twin"), fmt.Sprint(eventReasons(t, second, "m-twin"))
	})
	// It stays so, and the first machine keeps its instance and node; the
	// rule's own event, which would call the machine invalid, is not
	// recorded.
	time.Sleep(3 * time.Second)
	require.NotContains(t, eventReasons(t, second, "m-twin"), "Warning "+lifecycle.RuleInvalidMachine.Event())
	require.Equal(t, "", getMachine(t, second, "m-twin").Status.CurrentStatus.Phase)
	require.Equal(t, "Running", getMachine(t, first, "m-twin").Status.CurrentStatus.Phase)
	now, ok := provider.InstanceOf("m-twin")
	require.True(t, ok, "the first machine's instance is gone")
	require.Equal(t, inst.ProviderID, now.ProviderID)
	require.Zero(t, provider.Calls("m-twin", driverapi.MethodDelete), "a DeleteMachine for the name")
	_, ok = getNode(t, inst.NodeName)
	require.True(t, ok, "the first machine's node is gone")

	// The first goes: the second is created, with an instance of its own.
	require.NoError(t, k8s.Delete(context.Background(), getMachine(t, first, "m-twin")))
	eventually(t, 60*time.Second, "the first machine is gone", func() (bool, string) {
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: first, Name: "m-twin"}, &v1alpha1.Machine{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	waitPhase(t, second, "m-twin", "Pending", 60*time.Second)
	again, ok := provider.InstanceOf("m-twin")
	require.True(t, ok)
	require.NotEqual(t, inst.ProviderID, again.ProviderID)
	require.Equal(t, string(getMachine(t, second, "m-twin").UID), again.OwnerUID)
}

// A machine copied from another with kubectl (its YAML under a new name:
// spec.providerID and the node label come along) would take the other's
// instance and node. Found by hand: the copy adopted the instance, made
// itself its owner through UpdateMetadata, and the two machines relabelled
// the node in turn without end (thousands of passes a minute, which
// starved a deletion of its worker). The copy waits instead, with an
// event and its wait's detail naming the machine whose instance it names;
// it calls no driver and touches no node.
func TestCopiedMachineDoesNotTakeTheInstance(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	orig, inst := bringUp(t, ns, "m-orig", time.Minute)

	cp := machineSpec(ns, "m-copy", time.Minute)
	cp.Spec.ProviderID = inst.ProviderID
	cp.Labels = map[string]string{lifecycle.NodeLabel: inst.NodeName}
	require.NoError(t, k8s.Create(ctx, cp))
	m := waitCondition(t, ns, "m-copy", "WaitingForProblem", metav1.ConditionTrue, "DispatchInvalidMachine", 20*time.Second)
	require.Contains(t, m.Status.Wait.Detail, ns+"/m-orig")
	requireNote(t, ns, "m-copy", machines.ReasonInstanceInUse, ns+"/m-orig", inst.ProviderID)

	// It stays so, told by InstanceInUse and not by the rule's event, which
	// would call it invalid; the original keeps its instance, its
	// ownership and its node.
	time.Sleep(3 * time.Second)
	require.NotContains(t, eventReasons(t, ns, "m-copy"), "Warning "+lifecycle.RuleInvalidMachine.Event())
	require.Equal(t, "", getMachine(t, ns, "m-copy").Status.CurrentStatus.Phase)
	for _, method := range []driverapi.Method{driverapi.MethodGetStatus, driverapi.MethodUpdateMetadata, driverapi.MethodDelete} {
		require.Zero(t, provider.Calls("m-copy", method), "the copy called %s", method)
	}
	now, ok := provider.InstanceOf("m-orig")
	require.True(t, ok, "the original's instance is gone")
	require.Equal(t, string(orig.UID), now.OwnerUID)
	n, ok := getNode(t, inst.NodeName)
	require.True(t, ok, "the original's node is gone")
	require.Equal(t, "m-orig", n.Labels[lifecycle.MachineNameLabel])
	require.Equal(t, "Running", getMachine(t, ns, "m-orig").Status.CurrentStatus.Phase)
}

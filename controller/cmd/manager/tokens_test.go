package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/purelifecycle/machine/controller/machines"
	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
)

// With MCM's derivation, worker-1 to worker-9 derive one token ID, and a
// secret of that ID already belongs to another machine. Each machine must
// get a token of its own, recorded in its status and baked into its user
// data, and each join must delete that machine's token alone, once; the
// other machine's token stays. The machines join through the fake kubelet
// of the command, which reads through the manager's cache.
func TestCollidingTokenIDsGetTokensOfTheirOwnAndEachJoinDeletesItsOwn(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	shared := lifecycle.BootstrapTokenID("worker-1")
	for i := 2; i <= 9; i++ {
		require.Equal(t, shared, lifecycle.BootstrapTokenID(fmt.Sprintf("worker-%d", i)), "the names must collide")
	}
	foreign := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: lifecycle.BootstrapTokenNamespace, Name: "bootstrap-token-" + shared,
			Labels: map[string]string{machines.TokenMachineUIDLabel: "uid-of-another-machine"}},
		Type: corev1.SecretTypeBootstrapToken,
		Data: map[string][]byte{"token-id": []byte(shared), "token-secret": []byte("0123456789abcdef")},
	}
	require.NoError(t, k8s.Create(ctx, foreign))
	t.Cleanup(func() { _ = k8s.Delete(ctx, foreign) })

	var deletes deleteCounter
	p := newProvider("zone-tokens")
	startManager(t, "tokens", p, func(o *options) {
		o.tokenIDs = "name"
		o.fakeKubelet = true
		o.tweak = deletes.wrap
	})
	for i := 1; i <= 9; i++ {
		newGroupMachine(t, "tokens", ns, fmt.Sprintf("worker-%d", i), time.Minute)
	}

	ids := map[string]string{} // token ID -> machine
	for i := 1; i <= 9; i++ {
		name := fmt.Sprintf("worker-%d", i)
		m := waitPhase(t, ns, name, "Running", 60*time.Second)
		id := m.Status.BootstrapTokenID
		require.NotEmpty(t, id, name)
		require.NotEqual(t, shared, id, "%s took the token ID of another machine's secret", name)
		require.Empty(t, ids[id], "%s and %s share token ID %s", name, ids[id], id)
		ids[id] = name
		inst, ok := p.InstanceOf(name)
		require.True(t, ok)
		require.Contains(t, inst.UserData, "bootstrap token "+id+".", "%s's user data carries its own token", name)
		require.Equal(t, 1, p.Calls(name, driverapi.MethodCreate))
	}
	for id, name := range ids {
		eventually(t, 20*time.Second, name+"'s token deleted", func() (bool, string) {
			err := k8s.Get(ctx, tokenKeyOf(id), &corev1.Secret{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	}
	// The deletes ran in the passes that saw the joins; a pass after them
	// must not delete again on a cache that still shows a token.
	time.Sleep(2 * time.Second)
	for id, name := range ids {
		require.Equal(t, 1, deletes.count("bootstrap-token-"+id), "deletes of %s's token", name)
	}
	require.NoError(t, k8s.Get(ctx, tokenKeyOf(shared), &corev1.Secret{}), "the other machine's token was deleted")
	require.Zero(t, deletes.count("bootstrap-token-"+shared), "the other machine's token was asked to be deleted")
}

// The default derivation is from the UID: even machines whose names MCM
// would give one ID get different ones, without a clash. Each user data
// carries the token its machine's status records.
func TestTokenIDsFromUIDsDoNotCollide(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	var names []string
	for i := 1; i <= 3; i++ {
		names = append(names, fmt.Sprintf("uidtok-%d", i))
		newMachine(t, ns, names[i-1], time.Minute)
	}
	seen := map[string]bool{}
	for _, name := range names {
		m := waitPhase(t, ns, name, "Pending", 30*time.Second)
		id := m.Status.BootstrapTokenID
		require.Equal(t, machines.TokenIDFromUID(m), id, name)
		require.False(t, seen[id], "token ID %s twice", id)
		seen[id] = true
		inst, ok := provider.InstanceOf(name)
		require.True(t, ok)
		require.True(t, strings.Contains(inst.UserData, "bootstrap token "+id+"."), "user data %q", inst.UserData)
	}
}

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
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/controller/fakecloud"
	"github.com/purelifecycle/machine/controller/machines"
	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
)

// A drain that a PodDisruptionBudget blocks holds no worker: with one
// worker, two deleted machines whose pods no budget lets go stay at their
// drain, asking again every round, while 20 machines created meanwhile
// reach Running. Then one budget allows the disruptions and the other
// machine's drain timeout is cut short, which forces its drain: both
// machines go, and each one's instance is deleted only once its node holds
// no pod a drain removes (its DaemonSet pod stays).
func TestDrainBlockedByABudgetHoldsNoWorker(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	p := newProvider("zone-drain")
	cfg := lifecycle.DefaultConfig()
	cfg.EvictRetryInterval = time.Second
	cfg.WaitCheck = 5 * time.Second
	check := newChecker(cfg)
	check.reportOnFailure(t)
	deletes := newDeleteRecorder(p)
	startManager(t, "drain", p, func(o *options) {
		o.workers = 1
		// A drain round that waited for its pods would hold the one worker
		// for this long.
		o.callTimeout = time.Minute
		o.config = &cfg
		o.observer = check
		o.driver = func(p *fakecloud.Provider) driverapi.Driver { return &recordingDriver{Provider: p, deletes: deletes} }
	})
	kubelet := newNodeKubelet(p, 200*time.Millisecond)
	kubelet.start(t)
	reaper := startPodReaper(t, ns, 100*time.Millisecond)

	// Two Running machines, each node with three pods under a budget that
	// allows no disruption, and a DaemonSet's pod.
	const released, forced = "m-budget", "m-timeout"
	blocked := map[string]*v1alpha1.Machine{}
	for _, name := range []string{released, forced} {
		m := machineSpec(ns, name, time.Minute)
		m.Labels = map[string]string{managerLabel: "drain"}
		m.Spec.MachineDrainTimeout = &metav1.Duration{Duration: 10 * time.Minute}
		require.NoError(t, k8s.Create(ctx, m))
	}
	for _, name := range []string{released, forced} {
		m := waitPhase(t, ns, name, "Running", 60*time.Second)
		blocked[name] = m
		for i := range 3 {
			newPod(t, ns, fmt.Sprintf("%s-app-%d", name, i), name, m.Status.Node, false)
		}
		newPod(t, ns, name+"-daemon", name+"-daemon", m.Status.Node, true)
		newBudget(t, ns, name, 3)
	}

	for _, m := range blocked {
		require.NoError(t, kubelet.requestDeletion(ctx, m))
	}
	for name, m := range blocked {
		eventually(t, 30*time.Second, name+" drains", func() (bool, string) {
			n := check.count(name, lifecycle.RuleDeleteDrainRound)
			return n >= 2, fmt.Sprintf("%d drain rounds; %s; DeleteMachine calls %+v", n, machineState(t, ns, name),
				deletes.of(m.UID))
		})
	}
	// Each says which pod a budget keeps: the conditions say only that the
	// node is draining, waiting for its pods to go.
	for name := range blocked {
		requireNote(t, ns, name, machines.ReasonEvictionBlocked, ns+"/"+name+"-app-", "disruption budget")
	}
	roundsBefore := map[string]int{}
	for name := range blocked {
		roundsBefore[name] = check.count(name, lifecycle.RuleDeleteDrainRound)
	}

	// Meanwhile 20 machines come up, through the one worker.
	start := time.Now()
	for i := range 20 {
		m := machineSpec(ns, fmt.Sprintf("m-new-%02d", i), time.Minute)
		m.Labels = map[string]string{managerLabel: "drain"}
		require.NoError(t, k8s.Create(ctx, m))
	}
	eventually(t, time.Minute, "20 machines Running", func() (bool, string) {
		var list v1alpha1.MachineList
		require.NoError(t, k8s.List(ctx, &list, client.InNamespace(ns)))
		running := 0
		for _, m := range list.Items {
			if m.Status.CurrentStatus.Phase == "Running" && strings.HasPrefix(m.Name, "m-new-") {
				running++
			}
		}
		return running == 20, fmt.Sprint(running, " of 20 Running")
	})
	t.Logf("20 machines Running in %s while the drains were blocked", time.Since(start).Round(time.Millisecond))

	// The blocked machines are still at their drain, rounds went on, and
	// no pod was evicted.
	for name, m := range blocked {
		got := getMachine(t, ns, name)
		require.Equal(t, "Terminating", got.Status.CurrentStatus.Phase, name)
		st, err := got.Status.ToLifecycle()
		require.NoError(t, err)
		require.Equal(t, lifecycle.StageDrain, st.Stage, "%s: %+v", name, got.Status.LastOperation)
		require.Greater(t, check.count(name, lifecycle.RuleDeleteDrainRound), roundsBefore[name],
			"%s: no drain round while the others came up", name)
		pods, err := podsOn(ctx, m.Status.Node)
		require.NoError(t, err)
		require.Len(t, pods, 3, name)
		for _, pod := range pods {
			require.Nil(t, pod.DeletionTimestamp, "%s: pod %s evicted despite its budget", name, pod.Name)
		}
		require.Empty(t, deletes.of(m.UID), "%s: DeleteMachine while its pods are there", name)
		_, ok := p.InstanceOf(name)
		require.True(t, ok, name)
	}

	// One budget allows the disruptions; the other machine's drain timeout
	// is cut to a second, long past since its deletion.
	allowDisruptions(t, ns, released, 3)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		m := getMachine(t, ns, forced)
		m.Spec.MachineDrainTimeout = &metav1.Duration{Duration: time.Second}
		return k8s.Update(ctx, m)
	}))
	for name := range blocked {
		eventually(t, 60*time.Second, name+" gone", func() (bool, string) {
			s := machineState(t, ns, name)
			return s == "gone", s
		})
	}

	for name, m := range blocked {
		calls := deletes.of(m.UID)
		require.NotEmpty(t, calls, "%s: no DeleteMachine", name)
		for _, c := range calls {
			require.Empty(t, c.podsLeft, "%s: DeleteMachine with pods on %s", name, c.node)
		}
		for i := range 3 {
			err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("%s-app-%d", name, i)}, &corev1.Pod{})
			require.True(t, apierrors.IsNotFound(err), "%s: pod %d: %v", name, i, err)
		}
		daemon := &corev1.Pod{}
		require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-daemon"}, daemon))
		require.Nil(t, daemon.DeletionTimestamp, "%s: the DaemonSet's pod was drained", name)
		_, ok := getNode(t, m.Status.Node)
		require.False(t, ok, "%s: node %s left", name, m.Status.Node)
		_, ok = p.InstanceOf(name)
		require.False(t, ok, "%s: instance left", name)
	}
	// The released machine's pods were evicted (they went through the
	// reaper, terminating) before its instance was deleted; the forced
	// one's drain was forced, the other's not.
	first := deletes.of(blocked[released].UID)[0].at
	for i := range 3 {
		pod := fmt.Sprintf("%s-app-%d", released, i)
		at, ok := reaper.goneAt(pod)
		require.True(t, ok, "%s was not evicted", pod)
		require.True(t, at.Before(first), "%s gone at %s, after DeleteMachine at %s", pod, at, first)
	}
	require.Positive(t, check.count(forced, lifecycle.RuleDeleteDrainForce), "the drain timeout forced no drain")
	require.Zero(t, check.count(released, lifecycle.RuleDeleteDrainForce), "the released drain was forced")
	check.requireNoViolation(t)
}

// machineState describes the machine: "gone", or its phase, stage and last
// operation.
func machineState(t *testing.T, ns, name string) string {
	t.Helper()
	m := &v1alpha1.Machine{}
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, m)
	if apierrors.IsNotFound(err) {
		return "gone"
	}
	require.NoError(t, err)
	stage := ""
	if m.Status.Lifecycle != nil {
		stage = m.Status.Lifecycle.Stage
	}
	return fmt.Sprintf("phase %q stage %q lastOperation %+v", m.Status.CurrentStatus.Phase, stage, m.Status.LastOperation)
}

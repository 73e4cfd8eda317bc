package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/controller/fakecloud"
	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
)

// Short leases, so that a handover takes seconds; long enough that a
// leader starved of CPU (the race detector, tests in parallel, two cores)
// still renews in time.
func shortLease(o *options, id string) {
	o.leaderElect = true
	o.leaderElectionID = id
	o.leaderElectionNamespace = "default"
	o.leaseDuration, o.renewDeadline, o.retryPeriod = 8*time.Second, 6*time.Second, 500*time.Millisecond
}

// recordedInstance returns the providerID the machine's status records.
func recordedInstance(m *v1alpha1.Machine) string {
	if m.Status.Lifecycle == nil {
		return ""
	}
	return m.Status.Lifecycle.ProviderID
}

// A manager stopped while a CreateMachine is in flight lets the pass finish
// it: the answer is recorded in the machine's status before the manager
// returns, so the manager started after it goes on from the record and the
// instance is created once.
func TestStoppedManagerFinishesTheCallInFlightAndSavesItsAnswer(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	p := newProvider("zone-restart")
	gate := newGatedDriver(p, "m-restart")
	first := startManager(t, "restart", p, func(o *options) {
		o.driver = func(*fakecloud.Provider) driverapi.Driver { return gate }
	})
	newGroupMachine(t, "restart", ns, "m-restart", time.Minute)
	waitClosed(t, gate.entered, 30*time.Second, "CreateMachine called")
	// The other workers go on while one waits for its call.
	newGroupMachine(t, "restart", ns, "m-restart-other", time.Minute)
	waitPhase(t, ns, "m-restart-other", "Pending", 30*time.Second)

	// Stop the manager while the call is in flight; it waits for the pass.
	first.cancel()
	select {
	case err := <-first.done:
		t.Fatalf("manager stopped with a pass in flight: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	close(gate.release)
	require.NoError(t, first.stop(t, 30*time.Second))

	inst, ok := p.InstanceOf("m-restart")
	require.True(t, ok)
	m := getMachine(t, ns, "m-restart")
	require.Equal(t, inst.ProviderID, recordedInstance(m), "the answer of the call in flight is saved")

	startManager(t, "restart", p, func(o *options) { o.fakeKubelet = true })
	waitPhase(t, ns, "m-restart", "Running", 30*time.Second)
	require.Equal(t, 1, p.Calls("m-restart", driverapi.MethodCreate))
	require.Len(t, p.Instances(), 2)
}

// Two managers with leader election: one leads and reconciles, the other
// waits; when the leader stops, the other takes over.
func TestOneOfTwoManagersLeads(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	pa, pb := newProvider("zone-lead-a"), newProvider("zone-lead-b")
	var seenA, seenB decisionCounter
	a := startManager(t, "lead", pa, func(o *options) {
		shortLease(o, "test-one-leads")
		o.observer = &seenA
	})
	b := startManager(t, "lead", pb, func(o *options) {
		shortLease(o, "test-one-leads")
		o.observer = &seenB
		o.fromAPIServer = true
	})

	var leader, follower *testManager
	var seenByLeader, seenByFollower *decisionCounter
	select {
	case <-a.mgr.Elected():
		leader, follower, seenByLeader, seenByFollower = a, b, &seenA, &seenB
	case <-b.mgr.Elected():
		leader, follower, seenByLeader, seenByFollower = b, a, &seenB, &seenA
	case <-time.After(30 * time.Second):
		t.Fatal("no manager elected")
	}
	newGroupMachine(t, "lead", ns, "m-lead-1", time.Minute)
	waitPhase(t, ns, "m-lead-1", "Pending", 30*time.Second)
	_, ok := leader.provider.InstanceOf("m-lead-1")
	require.True(t, ok, "the leader creates the instance")
	require.Empty(t, follower.provider.Instances(), "the follower reconciles nothing")
	require.Positive(t, seenByLeader.of("m-lead-1"), "the leader's observer saw its decisions")
	require.Zero(t, seenByFollower.of("m-lead-1"), "the follower decided")
	select {
	case <-follower.mgr.Elected():
		t.Fatal("both managers lead")
	default:
	}

	// The leader steps down (it releases the lease); the other leads.
	require.NoError(t, leader.stop(t, 30*time.Second))
	waitClosed(t, follower.mgr.Elected(), 30*time.Second, "the follower elected")
	newGroupMachine(t, "lead", ns, "m-lead-2", time.Minute)
	waitPhase(t, ns, "m-lead-2", "Pending", 30*time.Second)
	_, ok = follower.provider.InstanceOf("m-lead-2")
	require.True(t, ok, "the new leader creates the instance")
	require.Positive(t, seenByFollower.of("m-lead-2"))
	var l coordinationv1.Lease
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "test-one-leads"}, &l))
	require.NotNil(t, l.Spec.HolderIdentity)
}

// A leader that loses its lease in the middle of a pass (its lease's API
// calls fail) stops leading while its CreateMachine is in flight; as a
// replica exits then, its answer is never recorded. The manager that takes
// over finds the instance by the creation's idempotency key and does not
// create another; the old leader's late save, when its call returns after
// all, is refused (optimistic concurrency) and changes nothing.
func TestLeaderLostMidPassCreatesNoSecondInstance(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	p := newProvider("zone-lost")
	gate := newGatedDriver(p, "m-lost")
	var cut atomic.Bool
	leaseCfg := rest.CopyConfig(restCfg)
	leaseCfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if cut.Load() {
				return nil, errors.New("test: the leader's lease calls are cut")
			}
			return rt.RoundTrip(req)
		})
	}
	old := startManager(t, "lost", p, func(o *options) {
		shortLease(o, "test-lost-mid-pass")
		o.driver = func(*fakecloud.Provider) driverapi.Driver { return gate }
		o.tweak = func(mo *ctrl.Options) { mo.LeaderElectionConfig = leaseCfg }
	})
	waitClosed(t, old.mgr.Elected(), 30*time.Second, "the first manager elected")
	next := startManager(t, "lost", p, func(o *options) {
		shortLease(o, "test-lost-mid-pass")
		o.fakeKubelet = true
	})

	newGroupMachine(t, "lost", ns, "m-lost", time.Minute)
	waitClosed(t, gate.entered, 30*time.Second, "CreateMachine called")
	cut.Store(true)
	select {
	case err := <-old.done:
		old.done <- err
		require.ErrorContains(t, err, "leader election lost")
	case <-time.After(30 * time.Second):
		t.Fatal("the leader did not lose its lease")
	}
	waitClosed(t, next.mgr.Elected(), 30*time.Second, "the second manager elected")

	m := waitPhase(t, ns, "m-lost", "Running", 60*time.Second)
	inst, ok := p.InstanceOf("m-lost")
	require.True(t, ok)
	require.Equal(t, inst.ProviderID, recordedInstance(m))
	require.Equal(t, 1, p.Calls("m-lost", driverapi.MethodCreate), "a second CreateMachine")
	require.Len(t, p.Instances(), 1)

	// The old leader's call returns now; its pass saves on a machine read
	// before the new leader's writes.
	close(gate.release)
	time.Sleep(2 * time.Second)
	after := getMachine(t, ns, "m-lost")
	require.Equal(t, "Running", after.Status.CurrentStatus.Phase)
	require.Equal(t, inst.ProviderID, recordedInstance(after))
	require.Equal(t, 1, p.Calls("m-lost", driverapi.MethodCreate))
	require.Len(t, p.Instances(), 1, fmt.Sprint(p.Instances()))
}

// decisionCounter is an observer of decisions (Options.Observer) that
// counts them by machine, from every worker at once.
type decisionCounter struct {
	mu sync.Mutex
	n  map[string]int
}

// Decided implements pass.Observer.
func (c *decisionCounter) Decided(in *lifecycle.Input, _ *lifecycle.Decision) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[in.Object.Name]++
}

// of returns how many decisions about the machine it saw.
func (c *decisionCounter) of(machine string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[machine]
}

// roundTripper is a function that is an http.RoundTripper.
type roundTripper func(*http.Request) (*http.Response, error)

// RoundTrip implements http.RoundTripper.
func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

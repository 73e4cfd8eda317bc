package main

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/controller/fakecloud"
	"github.com/purelifecycle/machine/driverapi"
)

// A test that stops, restarts or elects managers runs managers of its own
// (startManager), built as the command builds its manager, over the
// machines labelled managerLabel=<group>; the shared manager leaves those
// alone. Each has a controller name of its own, as controller-runtime
// wants them unique in a process, and no machine metrics of its own (the
// shared manager's are registered).

var managerSeq atomic.Int32

// testManager is a manager a test started.
type testManager struct {
	mgr      ctrl.Manager
	provider *fakecloud.Provider
	cancel   context.CancelFunc
	done     chan error // Start's result
}

// startManager starts a manager over the machines of group with provider,
// and stops it when the test ends. edit changes the options first.
func startManager(t *testing.T, group string, provider *fakecloud.Provider, edit func(*options)) *testManager {
	t.Helper()
	o := defaultOptions()
	o.metricsAddr, o.probeAddr, o.installCRD = "0", "0", false
	o.orphanInterval = 0
	o.fleetInterval = time.Second
	o.selector = managerLabel + "=" + group
	o.name = fmt.Sprintf("machine-%s-%d", group, managerSeq.Add(1))
	o.registerer = nil
	if edit != nil {
		edit(&o)
	}
	mgr, _, err := newManager(restCfg, o, provider)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	tm := &testManager{mgr: mgr, provider: provider, cancel: cancel, done: make(chan error, 1)}
	go func() { tm.done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-tm.done:
		case <-time.After(time.Minute):
			t.Errorf("manager %s did not stop", o.name)
		}
	})
	return tm
}

// stop stops the manager and returns what Start returned.
func (tm *testManager) stop(t *testing.T, within time.Duration) error {
	t.Helper()
	tm.cancel()
	select {
	case err := <-tm.done:
		tm.done <- err // for the cleanup
		return err
	case <-time.After(within):
		t.Fatalf("manager did not stop within %s", within)
		return nil
	}
}

// newProvider returns a fake cloud whose node names no other test's share.
func newProvider(zone string) *fakecloud.Provider {
	p := fakecloud.New()
	p.Zone = zone
	return p
}

// newGroupMachine creates a machine for the managers of group.
func newGroupMachine(t *testing.T, group, ns, name string, health time.Duration) *v1alpha1.Machine {
	t.Helper()
	m := machineSpec(ns, name, health)
	m.Labels = map[string]string{managerLabel: group}
	require.NoError(t, k8s.Create(context.Background(), m))
	return m
}

// freeAddr returns a local address no one listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// gatedDriver is the fake provider with one machine's CreateMachine held:
// the provider creates the instance, then the answer waits until release
// is closed, as a call in flight does.
type gatedDriver struct {
	*fakecloud.Provider
	machine string
	entered chan struct{} // closed when the held call arrived
	release chan struct{}
	once    sync.Once
}

func newGatedDriver(p *fakecloud.Provider, machine string) *gatedDriver {
	return &gatedDriver{Provider: p, machine: machine, entered: make(chan struct{}), release: make(chan struct{})}
}

// CreateMachine creates the instance and holds the answer for the gated
// machine.
func (g *gatedDriver) CreateMachine(ctx context.Context, req *driverapi.CreateMachineRequest) (*driverapi.CreateMachineResponse, error) {
	resp, err := g.Provider.CreateMachine(ctx, req)
	if req.Machine.Name == g.machine {
		g.once.Do(func() { close(g.entered) })
		<-g.release
	}
	return resp, err
}

// waitClosed waits for ch to be closed.
func waitClosed(t *testing.T, ch <-chan struct{}, within time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(within):
		t.Fatalf("%s: not within %s", what, within)
	}
}

// deleteCounter counts the deletes of secrets a manager's client asks, by
// name (a test's managers share one).
type deleteCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

// count returns how often the secret was asked to be deleted.
func (d *deleteCounter) count(name string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.counts[name]
}

// wrap makes the manager's client count its deletes of secrets.
func (d *deleteCounter) wrap(o *ctrl.Options) {
	o.NewClient = func(cfg *rest.Config, opts client.Options) (client.Client, error) {
		c, err := client.New(cfg, opts)
		return &countingClient{Client: c, d: d}, err
	}
}

type countingClient struct {
	client.Client
	d *deleteCounter
}

// Delete counts a secret's delete, then deletes.
func (c *countingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if s, ok := obj.(*corev1.Secret); ok {
		c.d.mu.Lock()
		if c.d.counts == nil {
			c.d.counts = map[string]int{}
		}
		c.d.counts[s.Name]++
		c.d.mu.Unlock()
	}
	return c.Client.Delete(ctx, obj, opts...)
}

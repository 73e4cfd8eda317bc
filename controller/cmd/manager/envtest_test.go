package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/controller/config"
	"github.com/purelifecycle/machine/controller/fakecloud"
	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
)

// The tests run the controller as main runs it, against a real
// kube-apiserver and etcd started by envtest from KUBEBUILDER_ASSETS
// (tools/envtest/build.sh builds them). Without KUBEBUILDER_ASSETS they
// skip.
var (
	k8s      client.Client // uncached, for the tests' own reads and writes
	cached   client.Client // the shared manager's client, reading from its cache
	restCfg  *rest.Config  // the API server's, for the tests' own managers
	provider *fakecloud.Provider
	envErr   error
	nsSeq    atomic.Int32
)

func TestMain(m *testing.M) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		os.Exit(m.Run())
	}
	// The tests mostly wait for the API server and the controller, so more
	// of them run at once than there are CPUs, unless -test.parallel says.
	flag.Parse()
	parallel := false
	flag.Visit(func(f *flag.Flag) { parallel = parallel || f.Name == "test.parallel" })
	if !parallel {
		_ = flag.Set("test.parallel", "8")
	}
	stop, err := startEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "envtest:", err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

// startEnv starts the API server, installs the CRD and runs the controller.
func startEnv() (stop func(), err error) {
	level := slog.LevelInfo
	if os.Getenv("CONTROLLER_TEST_DEBUG") != "" {
		level = slog.LevelDebug - 1
	}
	ctrl.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
	crds, err := config.CRDs()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{CRDs: crds, ErrorIfCRDPathMissing: true}
	start := time.Now()
	cfg, err := env.Start()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "envtest: API server up in %s\n", time.Since(start).Round(time.Millisecond))
	restCfg = cfg
	ctx, cancel := context.WithCancel(context.Background())
	stop = func() {
		cancel()
		_ = env.Stop()
	}
	scheme := Scheme()
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		stop()
		return nil, err
	}
	provider = fakecloud.New()
	mgr, _, err := newManager(cfg, sharedOptions(), provider)
	if err != nil {
		stop()
		return nil, err
	}
	cached = mgr.GetClient()
	go func() {
		if err := mgr.Start(ctx); err != nil {
			envErr = err
		}
	}()
	return stop, nil
}

// managerLabel is the machine label that hands a machine to a test's own
// manager (startManager) instead of the shared one.
const managerLabel = "test.purelifecycle.dev/manager"

// sharedOptions are the options of the manager every test shares: as the
// command's defaults, with no servers, no orphan collection, grants every
// second, and the machines no test's own manager takes.
func sharedOptions() options {
	o := defaultOptions()
	o.metricsAddr, o.probeAddr, o.installCRD = "0", "0", false
	o.orphanInterval = 0
	o.fleetInterval = time.Second
	o.selector = "!" + managerLabel
	return o
}

// needEnv skips the test without an API server.
func needEnv(t *testing.T) {
	t.Helper()
	if k8s == nil {
		t.Skip("KUBEBUILDER_ASSETS is not set; run tools/envtest/build.sh (see README)")
	}
	require.NoError(t, envErr)
}

// newNamespace returns a fresh namespace, so each test's machines form
// their own fleet, holding the fake provider's MachineClass (fakeClass),
// which machineSpec's machines name.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := newBareNamespace(t)
	fakeClass(t, ns)
	return ns
}

// newBareNamespace returns a fresh namespace that holds nothing.
func newBareNamespace(t *testing.T) string {
	t.Helper()
	ns := fmt.Sprintf("test-%d", nsSeq.Add(1))
	require.NoError(t, k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	return ns
}

// newMachine creates a machine with short timeouts, for the shared
// manager.
func newMachine(t *testing.T, ns, name string, health time.Duration) *v1alpha1.Machine {
	t.Helper()
	m := machineSpec(ns, name, health)
	require.NoError(t, k8s.Create(context.Background(), m))
	return m
}

// machineSpec returns a machine with short timeouts, of the MachineClass
// fakeClassName (newNamespace makes it).
func machineSpec(ns, name string, health time.Duration) *v1alpha1.Machine {
	return &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.MachineSpec{
			Class: v1alpha1.ClassSpec{Name: fakeClassName},
			MachineConfiguration: v1alpha1.MachineConfiguration{
				MachineCreationTimeout: &metav1.Duration{Duration: 2 * time.Minute},
				MachineHealthTimeout:   &metav1.Duration{Duration: health},
				MachineDrainTimeout:    &metav1.Duration{Duration: 20 * time.Second},
			},
		},
	}
}

// eventually polls cond until it holds, failing after timeout with the
// last thing cond said.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; last: %s", what, timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func getMachine(t *testing.T, ns, name string) *v1alpha1.Machine {
	t.Helper()
	m := &v1alpha1.Machine{}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, m))
	return m
}

// waitPhase waits until the machine is in phase p and returns it.
func waitPhase(t *testing.T, ns, name, p string, timeout time.Duration) *v1alpha1.Machine {
	t.Helper()
	var m *v1alpha1.Machine
	eventually(t, timeout, name+" reaches "+p, func() (bool, string) {
		m = getMachine(t, ns, name)
		return m.Status.CurrentStatus.Phase == p, fmt.Sprintf("phase %q, lastOperation %+v",
			m.Status.CurrentStatus.Phase, m.Status.LastOperation)
	})
	return m
}

// bringUp creates a machine and plays its kubelet: once the provider
// created and initialized the instance, the test registers the node the
// instance announces, Ready and with the startup taint. It returns the
// Running machine and its instance.
func bringUp(t *testing.T, ns, name string, health time.Duration) (*v1alpha1.Machine, fakecloud.Instance) {
	t.Helper()
	newMachine(t, ns, name, health)
	waitPhase(t, ns, name, "Pending", 30*time.Second)
	inst, ok := provider.InstanceOf(name)
	require.True(t, ok, "no instance for %s", name)
	require.True(t, inst.Initialized)
	require.NoError(t, fakecloud.RegisterNode(context.Background(), k8s, inst))
	return waitPhase(t, ns, name, "Running", 30*time.Second), inst
}

func getNode(t *testing.T, name string) (*corev1.Node, bool) {
	t.Helper()
	n := &corev1.Node{}
	err := k8s.Get(context.Background(), client.ObjectKey{Name: name}, n)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	require.NoError(t, err)
	return n, true
}

func eventReasons(t *testing.T, ns, machine string) []string {
	t.Helper()
	var out []string
	for _, e := range machineEvents(t, ns, machine) {
		out = append(out, e.Type+" "+e.Reason)
	}
	return out
}

// machineEvents returns the events regarding the machine.
func machineEvents(t *testing.T, ns, machine string) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	require.NoError(t, k8s.List(context.Background(), &list, client.InNamespace(ns)))
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == machine {
			out = append(out, e)
		}
	}
	return out
}

func TestMachineReachesRunningAndItsNodeIsFreed(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	m, inst := bringUp(t, ns, "m-run", time.Minute)

	require.Equal(t, inst.ProviderID, m.Spec.ProviderID)
	require.Equal(t, inst.NodeName, m.Labels[lifecycle.NodeLabel])
	require.Equal(t, inst.NodeName, m.Status.Node)
	require.Contains(t, m.Finalizers, lifecycle.Finalizer)
	require.Equal(t, lifecycle.DefaultPriority, m.Annotations[lifecycle.PriorityAnnotation])
	require.Equal(t, "Create", m.Status.LastOperation.Type)
	require.Equal(t, "Successful", m.Status.LastOperation.State)
	st, err := m.Status.ToLifecycle()
	require.NoError(t, err)
	require.Equal(t, lifecycle.Describe(&st, m.Name), m.Status.LastOperation.Description)
	require.NotEmpty(t, m.Status.NodeConditions, "the node's conditions are mirrored")

	// The startup taint goes, the node is labelled with its machine, the
	// bootstrap token is deleted.
	eventually(t, 20*time.Second, "node freed", func() (bool, string) {
		n, ok := getNode(t, inst.NodeName)
		if !ok {
			return false, "node gone"
		}
		tainted := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == lifecycle.TaintInstanceNotReady })
		return !tainted && n.Labels[lifecycle.MachineNameLabel] == "m-run",
			fmt.Sprintf("taints %v, labels %v", n.Spec.Taints, n.Labels)
	})
	require.NotEmpty(t, m.Status.BootstrapTokenID, "the token's ID is recorded")
	eventually(t, 20*time.Second, "token deleted", func() (bool, string) {
		err := k8s.Get(context.Background(), tokenKeyOf(m.Status.BootstrapTokenID), &corev1.Secret{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	require.Equal(t, 1, provider.Calls("m-run", driverapi.MethodCreate))

	// Events from the decisions, and the metrics.
	eventually(t, 20*time.Second, "events recorded", func() (bool, string) {
		got := eventReasons(t, ns, "m-run")
		return contains(got, "Normal "+lifecycle.RuleCreatePending.Event()) &&
			contains(got, "Normal "+lifecycle.RuleHealthJoined.Event()), fmt.Sprint(got)
	})
	require.GreaterOrEqual(t, metricValue(t, "purelifecycle_decisions_total", "rule", "health.joined"), 1.0)
	// Passes and driver calls are counted as they happen.
	require.GreaterOrEqual(t, metricValue(t, "purelifecycle_passes_total", "end", "done"), 1.0)
	require.GreaterOrEqual(t, metricValue(t, "purelifecycle_driver_calls_total", "code", "OK"), 1.0)
	// The fleet summary is the leader's fleet pass's, up to a fleet
	// interval old.
	eventually(t, 5*time.Second, "the fleet summary counts it", func() (bool, string) {
		v := metricValue(t, "purelifecycle_machines", "phase", "Running")
		return v >= 1, fmt.Sprint(v, " Running")
	})
}

func TestDeletedMachineLosesFinalizerInstanceAndNode(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	m, inst := bringUp(t, ns, "m-del", time.Minute)

	require.NoError(t, k8s.Delete(context.Background(), m))
	eventually(t, 30*time.Second, "machine gone", func() (bool, string) {
		m := &v1alpha1.Machine{}
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "m-del"}, m)
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprintf("phase %q finalizers %v lastOperation %+v", m.Status.CurrentStatus.Phase,
			m.Finalizers, m.Status.LastOperation)
	})
	_, ok := getNode(t, inst.NodeName)
	require.False(t, ok, "node %s still exists", inst.NodeName)
	_, ok = provider.InstanceOf("m-del")
	require.False(t, ok, "instance still exists")
	require.Contains(t, eventReasons(t, ns, "m-del"), "Normal "+lifecycle.RuleDeleteBegins.Event())
}

func TestUnhealthyNodeMakesMachineUnknownThenFailed(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	const health = 3 * time.Second
	_, inst := bringUp(t, ns, "m-sick", health)

	require.NoError(t, fakecloud.SetReady(context.Background(), k8s, inst.NodeName, corev1.ConditionFalse))
	m := waitPhase(t, ns, "m-sick", "Unknown", 20*time.Second)
	require.Equal(t, "HealthCheck", m.Status.LastOperation.Type)
	unknown, err := m.Status.ToLifecycle()
	require.NoError(t, err)

	m = waitPhase(t, ns, "m-sick", "Failed", 30*time.Second)
	require.Equal(t, "Failed", m.Status.LastOperation.State)
	st, err := m.Status.ToLifecycle()
	require.NoError(t, err)
	require.GreaterOrEqual(t, st.PhaseSince.Sub(unknown.PhaseSince), health, "failed before the health timeout")
	require.Equal(t, lifecycle.Describe(&st, m.Name), m.Status.LastOperation.Description)
	require.GreaterOrEqual(t, provider.Calls("m-sick", driverapi.MethodGetStatus), 1, "the provider is asked before Failed")
	require.Contains(t, eventReasons(t, ns, "m-sick"), "Warning "+lifecycle.RuleHealthUnhealthy.Event())

	// A Failed machine is deleted like any other.
	require.NoError(t, k8s.Delete(context.Background(), m))
	eventually(t, 30*time.Second, "failed machine gone", func() (bool, string) {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(m), &v1alpha1.Machine{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

func TestFailingDriverPutsMachineInCrashLoopBackOff(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	provider.FailCreate("m-crash", driverapi.Unavailable)
	newMachine(t, ns, "m-crash", time.Minute)

	m := waitPhase(t, ns, "m-crash", "CrashLoopBackOff", 30*time.Second)
	require.Equal(t, "Unavailable", m.Status.LastOperation.ErrorCode)
	require.Equal(t, "Create", m.Status.LastOperation.Type)
	require.Equal(t, "Failed", m.Status.LastOperation.State)
	require.Contains(t, m.Status.LastOperation.Description, "machine codes error: code = [Unavailable]")

	// It keeps failing, retried after the short period, and stays there.
	eventually(t, 30*time.Second, "second create attempt", func() (bool, string) {
		n := provider.Calls("m-crash", driverapi.MethodCreate)
		return n >= 2, fmt.Sprint(n, " creates")
	})
	m = waitPhase(t, ns, "m-crash", "CrashLoopBackOff", 5*time.Second)
	require.Equal(t, "Unavailable", m.Status.LastOperation.ErrorCode)
	_, ok := provider.InstanceOf("m-crash")
	require.False(t, ok)

	// Once the provider recovers the machine is created.
	provider.FailCreate("m-crash", driverapi.OK)
	waitPhase(t, ns, "m-crash", "Pending", 30*time.Second)
}

func TestStampAheadOfTheClockIsClampedAndReported(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	bringUp(t, ns, "m-clamp", time.Minute)
	key := client.ObjectKey{Namespace: ns, Name: "m-clamp"}
	ctx := context.Background()
	before := metricValue(t, "purelifecycle_anomalies_total", "anomaly", "stamp-clamped")

	// Write a phase start an hour ahead, as a controller whose clock runs
	// ahead would.
	ahead := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		m := &v1alpha1.Machine{}
		if err := k8s.Get(ctx, key, m); err != nil {
			return err
		}
		m.Status.Lifecycle.PhaseSince = ahead.Format(time.RFC3339Nano)
		m.Status.CurrentStatus.LastUpdateTime = metav1.NewTime(ahead)
		return k8s.Status().Update(ctx, m)
	}))
	// A status write does not start a pass; an annotation does.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		m := &v1alpha1.Machine{}
		if err := k8s.Get(ctx, key, m); err != nil {
			return err
		}
		metav1.SetMetaDataAnnotation(&m.ObjectMeta, "test.purelifecycle.dev/poke", "clamp")
		return k8s.Update(ctx, m)
	}))

	eventually(t, 20*time.Second, "phase start clamped", func() (bool, string) {
		m := getMachine(t, ns, "m-clamp")
		st, err := m.Status.ToLifecycle()
		return err == nil && st.PhaseSince.Time().Before(ahead), fmt.Sprintf("phaseSince %q, error %v",
			m.Status.Lifecycle.PhaseSince, err)
	})
	eventually(t, 20*time.Second, "anomaly event recorded", func() (bool, string) {
		notes := eventNotes(t, ns, "m-clamp", "StatusStampClamped")
		return len(notes) > 0, fmt.Sprint(eventReasons(t, ns, "m-clamp"))
	})
	note := eventNotes(t, ns, "m-clamp", "StatusStampClamped")[0]
	require.Contains(t, note, "stamp-clamped: ")
	require.Contains(t, note, "(rule ")
	require.Contains(t, eventReasons(t, ns, "m-clamp"), "Warning StatusStampClamped")
	require.GreaterOrEqual(t, metricValue(t, "purelifecycle_anomalies_total", "anomaly", "stamp-clamped"), before+1)
	require.Equal(t, "Running", getMachine(t, ns, "m-clamp").Status.CurrentStatus.Phase)
}

// eventNotes returns the notes of the machine's events with reason.
func eventNotes(t *testing.T, ns, machine, reason string) []string {
	t.Helper()
	var out []string
	for _, e := range machineEvents(t, ns, machine) {
		if e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out
}

// tokenKeyOf names the secret of a bootstrap token ID.
func tokenKeyOf(id string) client.ObjectKey {
	return client.ObjectKey{Namespace: lifecycle.BootstrapTokenNamespace, Name: "bootstrap-token-" + id}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// metricValue returns the value of one series of the controller's metrics
// (a gauge or a counter) from controller-runtime's registry.
func metricValue(t *testing.T, name, label, value string) float64 {
	t.Helper()
	mfs, err := metrics.Registry.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetGauge().GetValue() + m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no series %s{%s=%q}", name, label, value)
	return 0
}

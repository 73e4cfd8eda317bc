package mcmworld

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/client/clientset/versioned"
	machineinformers "github.com/gardener/machine-controller-manager/pkg/client/informers/externalversions"
	mcmcontroller "github.com/gardener/machine-controller-manager/pkg/controller"
	mcmoptions "github.com/gardener/machine-controller-manager/pkg/options"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// DefaultNamespace is the control namespace of a World started without
// [WithNamespace], named as Gardener names a shoot's namespace in its seed.
const DefaultNamespace = "shoot--world"

// World is a Kubernetes API server with MCM's CRDs and MCM's own
// MachineSet, MachineDeployment and safety controllers running against it;
// make one with [Start]. The control cluster (where Machines, MachineSets,
// MachineDeployments, MachineClasses and their Secrets live) and the target
// cluster (where Nodes live) are the same API server, as in many of MCM's
// own tests: Config, Core and Machines reach both.
//
// A World belongs to the test that started it: its methods report failures
// through that test and must be called from its goroutine.
type World struct {
	// Config reaches the API server as its administrator.
	Config *rest.Config
	// Core is a client of the API server's built-in resources.
	Core kubernetes.Interface
	// Machines is MCM's clientset, for Machines, MachineSets,
	// MachineDeployments and MachineClasses.
	Machines versioned.Interface
	// Namespace is the control namespace: the Machines, MachineSets,
	// MachineDeployments, MachineClasses and Secrets of the world, and the
	// only namespace MCM's controllers watch.
	Namespace string
	// Ctx is canceled when the test ends, before the API server stops.
	Ctx context.Context

	t        testing.TB
	settings settings
	// stopped is closed when the test ends: the controllers' clients then
	// fail every request (see gate).
	stopped chan struct{}
}

// settings are what the options set.
type settings struct {
	namespace   string
	workers     int
	safety      mcmoptions.SafetyOptions
	timeout     time.Duration
	controllers bool
}

// Option changes how [Start] makes a World.
type Option func(*settings)

// WithNamespace makes the control namespace ns instead of
// [DefaultNamespace].
func WithNamespace(ns string) Option { return func(s *settings) { s.namespace = ns } }

// WithWorkers runs each of MCM's control controllers with n workers
// (MCM's --concurrent-syncs, 10 by default; the World's default is 5).
func WithWorkers(n int) Option { return func(s *settings) { s.workers = n } }

// WithControlSafety gives MCM's control controllers these safety options
// (the overshooting limits of the safety controller) instead of
// [ControlSafetyDefaults].
func WithControlSafety(o mcmoptions.SafetyOptions) Option {
	return func(s *settings) { s.safety = o }
}

// WithTimeout makes [World.WaitFor] give up after d instead of
// [DefaultTimeout].
func WithTimeout(d time.Duration) Option { return func(s *settings) { s.timeout = d } }

// WithoutControllers starts no MCM controller: the World is the API server
// with MCM's CRDs and the namespace.
func WithoutControllers() Option { return func(s *settings) { s.controllers = false } }

// ControlSafetyDefaults returns the safety options of MCM's control
// controllers as MCM's command line defaults them: --safety-up 2,
// --safety-down 1, --machine-safety-overshooting-period 1m.
func ControlSafetyDefaults() mcmoptions.SafetyOptions {
	return mcmoptions.SafetyOptions{SafetyUp: 2, SafetyDown: 1,
		MachineSafetyOvershootingPeriod: metav1.Duration{Duration: time.Minute}}
}

// Start starts an API server (envtest, from the binaries in
// KUBEBUILDER_ASSETS) with MCM v0.62.1's CRDs, creates the control
// namespace and starts MCM's own control controllers
// (pkg/controller.NewController: MachineSets, MachineDeployments and the
// overshooting safety check) watching it. Everything stops when the test
// ends. Without KUBEBUILDER_ASSETS the test is skipped.
//
// No machine controller runs: start MCM's with
// [World.StartMCMMachineController], or another.
func Start(t testing.TB, opts ...Option) *World {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("KUBEBUILDER_ASSETS is not set; run tools/envtest/build.sh (see README)")
	}
	s := settings{namespace: DefaultNamespace, workers: 5, safety: ControlSafetyDefaults(),
		timeout: DefaultTimeout, controllers: true}
	for _, o := range opts {
		o(&s)
	}
	setUpKlog()
	crds, err := CRDDir()
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{crds}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting the API server: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Logf("stopping the API server: %v", err)
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	w := &World{Config: cfg, Core: kubernetes.NewForConfigOrDie(cfg), Machines: versioned.NewForConfigOrDie(cfg),
		Namespace: s.namespace, Ctx: ctx, t: t, settings: s, stopped: make(chan struct{})}
	t.Cleanup(func() {
		close(w.stopped)
		cancel()
	})
	if _, err := w.Core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.namespace}},
		metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", s.namespace, err)
	}
	if s.controllers {
		w.startControlControllers()
	}
	return w
}

// ControllerConfig returns a copy of the world's rest config with the
// user agent agent, whose requests fail once the test has ended. MCM's
// controllers cannot be stopped (their Run waits for workers that wait for
// queues Run shuts down only after they return), so their goroutines
// outlive the test, and must not reach anything from then on; the World
// gives them such configs, and a test gives one to any controller of its
// own that it cannot stop either.
func (w *World) ControllerConfig(agent string) *rest.Config {
	return w.gatedConfig(agent, nil)
}

// gatedConfig is ControllerConfig whose requests fail also once halt
// (nil: never) is closed.
func (w *World) gatedConfig(agent string, halt <-chan struct{}) *rest.Config {
	cfg := rest.AddUserAgent(rest.CopyConfig(w.Config), agent)
	stopped := w.stopped
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return gate{rt: rt, stopped: stopped, halt: halt}
	})
	return cfg
}

// gate is a round tripper that fails every request once stopped or halt
// is closed.
type gate struct {
	rt            http.RoundTripper
	stopped, halt <-chan struct{}
}

// RoundTrip fails once the world or the controller is stopped, and sends
// the request otherwise.
func (g gate) RoundTrip(r *http.Request) (*http.Response, error) {
	select {
	case <-g.stopped:
		return nil, fmt.Errorf("mcmworld: the world's test has ended")
	case <-g.halt:
		return nil, fmt.Errorf("mcmworld: the controller was stopped")
	default:
		return g.rt.RoundTrip(r)
	}
}

// startControlControllers starts MCM's MachineSet, MachineDeployment and
// safety controllers as MCM's controller manager does (app.StartControllers),
// with informers on the control namespace and a target node informer, and
// with MCM's default --autoscaler-scaledown-annotation-during-rollout:
// during a rollout the nodes of the deployment's machines are annotated
// cluster-autoscaler.kubernetes.io/scale-down-disabled.
func (w *World) startControlControllers() {
	w.t.Helper()
	cfg := w.ControllerConfig("machine-controller-manager")
	machines := versioned.NewForConfigOrDie(cfg)
	core := kubernetes.NewForConfigOrDie(cfg)
	machineFactory := machineinformers.NewFilteredSharedInformerFactory(machines, 0, w.Namespace, nil)
	targetFactory := coreinformers.NewSharedInformerFactory(core, 0)
	informers := machineFactory.Machine().V1alpha1()
	ctl, err := mcmcontroller.NewController(w.Namespace, machines.MachineV1alpha1(), core, core, targetFactory,
		informers.Machines(), informers.MachineSets(), informers.MachineDeployments(),
		record.NewFakeRecorder(1000), w.settings.safety, true)
	if err != nil {
		w.t.Fatalf("MCM's control controllers: %v", err)
	}
	w.run("MCM's control controllers", ctl, w.Ctx.Done(), machineFactory, targetFactory)
}

// runner is a controller of MCM's: Run blocks until stop is closed (and,
// in MCM v0.62.1, beyond).
type runner interface {
	Run(workers int, stop <-chan struct{})
}

// starter is an informer factory.
type starter interface {
	Start(stop <-chan struct{})
}

// run starts the factories, waits for their caches, and runs ctl in a
// goroutine until stop is closed. At the end, ctl's metrics collector,
// which its Run registers with Prometheus's default registry, is
// unregistered, so the next World's controller can register its own.
func (w *World) run(name string, ctl runner, stop <-chan struct{}, factories ...starter) {
	w.t.Helper()
	for _, f := range factories {
		f.Start(stop)
	}
	for _, f := range factories {
		var synced map[string]bool
		switch f := f.(type) {
		case machineinformers.SharedInformerFactory:
			synced = typeNames(f.WaitForCacheSync(stop))
		case coreinformers.SharedInformerFactory:
			synced = typeNames(f.WaitForCacheSync(stop))
		}
		for typ, ok := range synced {
			if !ok {
				w.t.Fatalf("%s: the cache of %s did not sync", name, typ)
			}
		}
	}
	go ctl.Run(w.settings.workers, stop)
	// Run registers the collector as soon as its caches synced, which
	// they have: it is registered long before the test ends.
	collector, _ := ctl.(prometheus.Collector)
	w.t.Cleanup(func() {
		if collector == nil {
			return
		}
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if prometheus.Unregister(collector) {
				return
			}
		}
		w.t.Logf("%s: its metrics collector was never registered", name)
	})
}

// typeNames turns a factory's cache sync report into one keyed by name.
func typeNames[K comparable](m map[K]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[fmt.Sprint(k)] = v
	}
	return out
}

// klogOnce sets up klog once per process.
var klogOnce sync.Once

// setUpKlog silences MCM's logs (klog), which are many, unless the
// environment variable MCMWORLD_KLOG is set: then they go to standard
// error at that verbosity (MCMWORLD_KLOG=2, say).
func setUpKlog() {
	klogOnce.Do(func() {
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		v := os.Getenv("MCMWORLD_KLOG")
		if v == "" {
			_ = fs.Set("logtostderr", "false")
			_ = fs.Set("alsologtostderr", "false")
			_ = fs.Set("stderrthreshold", "FATAL")
			klog.SetOutput(io.Discard)
			return
		}
		if _, err := strconv.Atoi(v); err == nil {
			_ = fs.Set("v", v)
		}
	})
}

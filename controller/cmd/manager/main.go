// Command manager runs the Machine controller (package machines) against
// the cluster of a kubeconfig (--kubeconfig, else $KUBECONFIG, else
// in-cluster), with an in-process fake cloud provider:
//
//	go run ./cmd/manager --kubeconfig ~/.kube/config --fake-kubelet
//
// It installs the Machine and MachineClass CRDs
// (machine.purelifecycle.dev/v1alpha1), then decides every Machine's
// lifecycle with the purelifecycle core, with --max-concurrent-reconciles
// workers, each machine's driver calls handed the MachineClass its
// spec.class names. With --fake-kubelet it also
// registers a Ready node for every instance the fake provider creates, so
// machines reach Running without real VMs.
//
// The fake provider's instances live in the manager's memory: a manager
// stopped and started again has forgotten them, and its machines' recorded
// instances no longer exist (a Pending machine then waits for a node that
// never comes; a deleted one finds its instance gone). With --fake-state
// FILE they are kept in that file too, and a restarted manager finds them
// again, as it would at a real cloud.
//
// Replicas elect a leader with --leader-elect (a Lease named
// --leader-election-id in --leader-election-namespace, which out of a
// cluster must be given); only the leader reconciles and runs the fleet
// pass (the fleet limiter's grants, the fleet summary, the orphan
// collection). Every replica serves the health probes on
// --health-probe-bind-address (/healthz; /readyz once its caches synced)
// and the metrics on --metrics-bind-address at /metrics, over HTTPS by
// default, to clients the API server authenticates (a bearer token,
// through a TokenReview) and authorizes to get the non-resource URL
// /metrics (through a SubjectAccessReview): decisions by rule, anomalies,
// driver calls, passes and the fleet summary (doc/metrics.md lists them).
// Every rule's declared event is recorded on the machine, and so is every
// anomaly and refused input, as a Warning event (see the machines
// package).
//
// On SIGTERM the passes in flight finish the effects they started and save
// what they did, within --graceful-shutdown-timeout, and then the lease is
// released. A leader that fails to renew its lease exits at once
// (controller-runtime skips the graceful shutdown then, as another replica
// may lead already): a pass it cuts off in the middle is taken up by the
// next leader from the status saved before each effect, and a write it
// still makes on a machine the next leader wrote is refused as a conflict.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/controller/config"
	"github.com/purelifecycle/machine/controller/fakecloud"
	"github.com/purelifecycle/machine/controller/machines"
	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/pass"
)

func main() {
	o := defaultOptions()
	o.bind(flag.CommandLine)
	flag.Parse()

	level := slog.LevelInfo
	if o.verbose {
		level = slog.LevelDebug - 1 // logr's V(1)
	}
	ctrl.SetLogger(logr.FromSlogHandler(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
	log := ctrl.Log.WithName("main")
	if err := run(ctrl.SetupSignalHandler(), o); err != nil {
		log.Error(err, "controller failed")
		os.Exit(1)
	}
}

// options are the command's settings: its flags, and a few the tests set.
type options struct {
	metricsAddr    string
	secureMetrics  bool
	probeAddr      string
	installCRD     bool
	fakeKubelet    bool
	fakeState      string
	verbose        bool
	workers        int
	fleetInterval  time.Duration
	orphanInterval time.Duration
	callTimeout    time.Duration
	shutdown       time.Duration
	fromAPIServer  bool
	tokenIDs       string
	selector       string
	// zoneOutage and autoPreserve are the lifecycle's fleet settings an
	// operator sets on the command line (lifecycle.Config.ZoneOutage and
	// AutoPreserve); the machines' own settings are in their specs.
	zoneOutage   lifecycle.ZoneOutage
	autoPreserve int

	leaderElect                               bool
	leaderElectionID, leaderElectionNamespace string
	leaseDuration, renewDeadline, retryPeriod time.Duration

	// Set by the tests only.
	//
	// name names the controller (unique in a process); registerer
	// registers the controller's metrics (nil: none); driver wraps the
	// fake provider; observer sees every decision; config is the
	// lifecycle's configuration (nil: lifecycle.DefaultConfig); tweak
	// changes the manager's options last.
	name       string
	registerer prometheus.Registerer
	driver     func(*fakecloud.Provider) driverapi.Driver
	observer   pass.Observer
	config     *lifecycle.Config
	tweak      func(*ctrl.Options)
}

// defaultOptions returns the flags' defaults.
func defaultOptions() options {
	return options{
		metricsAddr: ":8443", secureMetrics: true, probeAddr: ":8081", installCRD: true,
		workers: 4, fleetInterval: 10 * time.Second, orphanInterval: 10 * time.Minute,
		callTimeout: 30 * time.Second, shutdown: time.Minute, tokenIDs: "uid",
		leaderElectionID: "purelifecycle-machine-controller",
		leaseDuration:    15 * time.Second, renewDeadline: 10 * time.Second, retryPeriod: 2 * time.Second,
		registerer: metrics.Registry,
	}
}

// bind defines the command's flags on fs, defaulting to o.
func (o *options) bind(fs *flag.FlagSet) {
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", o.metricsAddr, "address the metrics endpoint binds to; 0 disables it")
	fs.BoolVar(&o.secureMetrics, "metrics-secure", o.secureMetrics,
		"serve metrics over HTTPS to clients the API server authenticates and authorizes for /metrics; false serves plain HTTP to anyone")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", o.probeAddr, "address the /healthz and /readyz probes bind to; 0 disables them")
	fs.BoolVar(&o.installCRD, "install-crd", o.installCRD, "create or update the Machine and MachineClass CRDs before starting")
	fs.BoolVar(&o.fakeKubelet, "fake-kubelet", o.fakeKubelet, "register a Ready node for every instance of the fake provider")
	fs.StringVar(&o.fakeState, "fake-state", o.fakeState,
		"file the fake provider keeps its instances in, so they outlive a restart; without it they are forgotten when the manager stops")
	fs.BoolVar(&o.verbose, "v", o.verbose, "log every decision, also those that change nothing")
	fs.IntVar(&o.workers, "max-concurrent-reconciles", o.workers, "how many machines are reconciled at once")
	fs.DurationVar(&o.fleetInterval, "fleet-interval", o.fleetInterval,
		"how often the leader computes the fleet limiter's grants and the fleet summary")
	fs.DurationVar(&o.orphanInterval, "orphan-interval", o.orphanInterval, "how often to collect orphan instances; 0 disables it")
	fs.DurationVar(&o.callTimeout, "call-timeout", o.callTimeout, "bound of each API call and driver call of a pass")
	fs.DurationVar(&o.shutdown, "graceful-shutdown-timeout", o.shutdown,
		"how long the passes in flight are given to finish when the controller stops")
	fs.BoolVar(&o.fromAPIServer, "read-from-apiserver", o.fromAPIServer,
		"read each machine from the API server at the start of a pass, instead of from the cache with the controller's own writes")
	fs.StringVar(&o.tokenIDs, "bootstrap-token-ids", o.tokenIDs,
		"how a machine's bootstrap token ID is derived: uid (from the machine's UID) or name (MCM's, from its name)")
	fs.StringVar(&o.selector, "machine-selector", o.selector,
		"label selector of the machines this controller manages (all when empty); needs -orphan-interval 0")
	fs.BoolVar(&o.leaderElect, "leader-elect", o.leaderElect, "elect a leader among the replicas; only the leader reconciles")
	fs.StringVar(&o.leaderElectionID, "leader-election-id", o.leaderElectionID, "name of the Lease of the leader election")
	fs.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", o.leaderElectionNamespace,
		"namespace of the Lease (in a cluster: the pod's namespace when empty)")
	fs.DurationVar(&o.leaseDuration, "leader-election-lease-duration", o.leaseDuration,
		"how long a replica waits to take over a lease not renewed")
	fs.DurationVar(&o.renewDeadline, "leader-election-renew-deadline", o.renewDeadline,
		"how long the leader tries to renew its lease before it stops leading (and exits)")
	fs.DurationVar(&o.retryPeriod, "leader-election-retry-period", o.retryPeriod, "how often replicas try to take or renew the lease")
	fs.IntVar(&o.zoneOutage.Count, "zone-outage-machines", o.zoneOutage.Count, "the least number of an owner's unhealthy "+
		"machines in one zone (the nodes' topology.kubernetes.io/zone label) that makes the zone look down as a whole, so "+
		"that its machines are not marked Failed for --zone-outage-hold past their health timeout; 0 turns it off")
	fs.IntVar(&o.zoneOutage.Percent, "zone-outage-percent", o.zoneOutage.Percent,
		"the least share, 0 to 100, of an owner's unhealthy machines that must be in that zone as well")
	fs.DurationVar(&o.zoneOutage.Hold, "zone-outage-hold", o.zoneOutage.Hold,
		"how long past its health timeout a machine of a zone that looks down is held at most; needed with --zone-outage-machines")
	fs.IntVar(&o.autoPreserve, "auto-preserve-max", o.autoPreserve, "how many Failed machines of one owner are kept "+
		"preserved for diagnosis, until their preservation timeout, without being asked; 0 turns it off")
}

// lifecycleConfig returns the lifecycle's configuration: the tests' own,
// or the defaults with the fleet settings of the flags.
func (o options) lifecycleConfig() *lifecycle.Config {
	if o.config != nil {
		return o.config
	}
	cfg := lifecycle.DefaultConfig()
	cfg.ZoneOutage, cfg.AutoPreserve = o.zoneOutage, o.autoPreserve
	return &cfg
}

func run(ctx context.Context, o options) error {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	if o.installCRD {
		if err := InstallCRDs(ctx, cfg, Scheme()); err != nil {
			return err
		}
	}
	provider := fakecloud.New()
	if o.fakeState != "" {
		if provider, err = fakecloud.Open(o.fakeState); err != nil {
			return err
		}
	}
	mgr, _, err := newManager(cfg, o, provider)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// newManager returns the manager running the controller over provider,
// set up as o says: leader election, probes, metrics, the fake kubelet.
func newManager(cfg *rest.Config, o options, provider *fakecloud.Provider) (ctrl.Manager, *machines.Reconciler, error) {
	tokenID, err := tokenIDs(o.tokenIDs)
	if err != nil {
		return nil, nil, err
	}
	cacheOpts, err := cacheOptions(o.selector)
	if err != nil {
		return nil, nil, err
	}
	if o.selector != "" && o.orphanInterval > 0 {
		return nil, nil, errors.New("-machine-selector needs -orphan-interval 0: orphan collection must see the whole fleet")
	}
	mo := ctrl.Options{
		Scheme: Scheme(),
		Cache:  cacheOpts,
		Metrics: metricsserver.Options{
			BindAddress:   o.metricsAddr,
			SecureServing: o.secureMetrics,
			// HTTP/2 off: its stream handling has been the way to exhaust
			// servers (CVE-2023-44487, CVE-2023-39325).
			TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }},
		},
		HealthProbeBindAddress:        o.probeAddr,
		LeaderElection:                o.leaderElect,
		LeaderElectionID:              o.leaderElectionID,
		LeaderElectionNamespace:       o.leaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true, // the process ends when the manager stops
		LeaseDuration:                 &o.leaseDuration,
		RenewDeadline:                 &o.renewDeadline,
		RetryPeriod:                   &o.retryPeriod,
		GracefulShutdownTimeout:       &o.shutdown,
	}
	if o.secureMetrics {
		mo.Metrics.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	if o.tweak != nil {
		o.tweak(&mo)
	}
	mgr, err := ctrl.NewManager(cfg, mo)
	if err != nil {
		return nil, nil, err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, nil, err
	}
	if err := mgr.AddReadyzCheck("informers", informersSynced(mgr.GetCache())); err != nil {
		return nil, nil, err
	}
	var driver driverapi.Driver = provider
	if o.driver != nil {
		driver = o.driver(provider)
	}
	// A class may ask the fake provider for faults (fakecloud.ClassFaults).
	driver = fakecloud.WithClassFaults(driver)
	r, err := machines.New(mgr, machines.Options{
		Driver: driver,
		// The orphan collection's calls; a machine's own calls are handed
		// the MachineClass its spec.class names.
		Class:                   driverapi.Class{Name: "fake"},
		Name:                    o.name,
		MaxConcurrentReconciles: o.workers,
		ReadFromAPIServer:       o.fromAPIServer,
		CallTimeout:             o.callTimeout,
		FleetInterval:           o.fleetInterval,
		OrphanInterval:          orphanInterval(o.orphanInterval),
		TokenID:                 tokenID,
		Registerer:              o.registerer,
		Observer:                o.observer,
		Config:                  o.lifecycleConfig(),
	})
	if err != nil {
		return nil, nil, err
	}
	if o.fakeKubelet {
		if err := mgr.Add(&fakecloud.Kubelet{Provider: provider, Client: mgr.GetClient(), Interval: 2 * time.Second}); err != nil {
			return nil, nil, err
		}
	}
	return mgr, r, nil
}

// orphanInterval maps the flag (0 disables) to machines.Options (negative
// disables).
func orphanInterval(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// tokenIDs returns the token ID derivation the flag names.
func tokenIDs(name string) (machines.TokenIDFunc, error) {
	switch name {
	case "uid":
		return machines.TokenIDFromUID, nil
	case "name":
		return machines.TokenIDFromName, nil
	}
	return nil, fmt.Errorf("-bootstrap-token-ids: %q is neither uid nor name", name)
}

// cacheOptions returns the manager's cache options: the controller's, and
// the machines restricted to selector.
func cacheOptions(selector string) (cache.Options, error) {
	opts := machines.CacheOptions()
	if selector == "" {
		return opts, nil
	}
	sel, err := labels.Parse(selector)
	if err != nil {
		return opts, fmt.Errorf("-machine-selector: %w", err)
	}
	opts.ByObject[&v1alpha1.Machine{}] = cache.ByObject{Label: sel}
	return opts, nil
}

// informersSynced is the readiness check: the manager's caches have synced.
func informersSynced(c cache.Cache) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("informers not synced")
		}
		return nil
	}
}

// Scheme returns the scheme of the controller: client-go's types and the
// Machine.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// InstallCRDs creates the example's CRDs, or updates them, and waits until
// they are established.
func InstallCRDs(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme) error {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	crds, err := config.CRDs()
	if err != nil {
		return err
	}
	for _, crd := range crds {
		old := &apiextensionsv1.CustomResourceDefinition{}
		switch err := c.Get(ctx, client.ObjectKeyFromObject(crd), old); {
		case apierrors.IsNotFound(err):
			err = c.Create(ctx, crd)
			if err != nil {
				return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
			}
		case err != nil:
			return err
		default:
			crd.ResourceVersion = old.ResourceVersion
			if err := c.Update(ctx, crd); err != nil {
				return fmt.Errorf("updating CRD %s: %w", crd.Name, err)
			}
		}
		for {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(crd), got); err == nil && established(got) {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

package machines

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/kubeshell"
	"github.com/purelifecycle/machine/lifecycle"
	lpass "github.com/purelifecycle/machine/lifecycle/pass"
)

// Options configure the controller New builds. Only Driver is required.
type Options struct {
	// Driver is the cloud provider the lifecycle's driver calls go to.
	Driver driverapi.Driver
	// Class is the provider configuration of the driver calls that concern
	// no one machine: the orphan collection's ListMachines and its deletes
	// of orphans. A machine's own calls are handed its MachineClass, the
	// one its spec.class names in its namespace (see class.go); the text
	// BootstrapTokenPlaceholder in the userData of the class's Secret is
	// replaced with the machine's bootstrap token for CreateMachine.
	Class driverapi.Class
	// Config is the lifecycle configuration; nil means
	// lifecycle.DefaultConfig(). New checks it (lifecycle.Config.Check) and
	// keeps a copy.
	Config *lifecycle.Config

	// Name names the controller (its logs and controller-runtime's
	// metrics); "" means "machine". Names are unique in a process.
	Name string
	// MaxConcurrentReconciles is how many machines are reconciled at once
	// (0 means 1). A machine is never in two workers at once.
	MaxConcurrentReconciles int
	// ReadFromAPIServer makes every pass read its machine from the API
	// server (one GET per pass) instead of from the manager's cache with
	// the controller's own last write laid over it. The cache needs
	// resource versions that are numbers to tell which is newer, as API
	// servers backed by etcd give; a machine whose are not is read from
	// the API server either way.
	ReadFromAPIServer bool
	// CallTimeout bounds each API call and driver call of a pass; 0 means
	// 30 seconds. These calls go on when the manager stops, so a pass ends
	// having saved what it did (see the package doc).
	CallTimeout time.Duration

	// FleetInterval is how often the elected leader computes the fleet
	// limiter's grants and the fleet summary; 0 means 10 seconds. A machine
	// past its health timeout waits at most about this long for a grant.
	FleetInterval time.Duration
	// OrphanInterval is how often the leader deletes the provider's
	// instances no machine owns (lifecycle.Orphans); 0 means 10 minutes, a
	// negative value never. The collection needs the whole fleet: with a
	// manager whose cache sees only some of the machines, disable it.
	OrphanInterval time.Duration

	// TokenID derives a machine's bootstrap token ID the first time the
	// machine needs a token; nil means TokenIDFromUID. TokenIDFromName is
	// MCM's derivation. Whichever it is, a clash with another machine's
	// token is detected and the ID used is recorded in the machine's
	// status (status.bootstrapTokenID).
	TokenID TokenIDFunc

	// Observer, when set, sees every decision of every pass, before it is
	// carried out (lifecycle/pass.Observer), for checkers, logs and
	// metrics of one's own. It is called from every worker at once, so it
	// must be safe for concurrent use, and it must not keep or change what
	// it is shown.
	Observer lpass.Observer
	// Registerer, when set, registers the controller's metrics (see
	// Metrics; the driver's calls are counted through Metrics.Instrument);
	// controller-runtime's metrics.Registry is what its metrics server
	// serves.
	Registerer prometheus.Registerer
	// EventSource names the controller in the events it records; "" means
	// "purelifecycle-machine-controller".
	EventSource string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// New builds the Machine controller on mgr: the cache indexes it reads
// with, the controller (Machines, and the Nodes and MachineClasses mapped to
// their machines, reconciled by Options.MaxConcurrentReconciles workers), and the leader's
// fleet pass. Status-only changes of a Machine (the controller's own
// status writes) do not start a pass; the decision's requeue does. It
// fails on Options without a Driver or with a Config that does not pass
// lifecycle's Validate. The manager's cache should be configured with
// CacheOptions (or their ByObject entry for Secrets), so that it holds only
// bootstrap token secrets.
func New(mgr ctrl.Manager, opts Options) (*Reconciler, error) {
	r, err := newReconciler(mgr.GetClient(), mgr.GetAPIReader(), opts)
	if err != nil {
		return nil, err
	}
	source := opts.EventSource
	if source == "" {
		source = "purelifecycle-machine-controller"
	}
	r.recorder = mgr.GetEventRecorder(source)
	if opts.Registerer != nil {
		if r.metrics, err = NewMetrics(opts.Registerer, mgr.GetClient(), &r.config, r.now); err != nil {
			return nil, err
		}
		r.driver = r.metrics.Instrument(r.driver)
	}
	f := &fleetRunnable{r: r, interval: orDefault(opts.FleetInterval, 10*time.Second),
		orphanInterval: orDefault(opts.OrphanInterval, 10*time.Minute), enqueue: make(chan event.GenericEvent, 64)}
	if opts.OrphanInterval < 0 {
		f.orphanInterval = 0
	}
	if err := mgr.Add(f); err != nil {
		return nil, err
	}
	name := opts.Name
	if name == "" {
		name = "machine"
	}
	if err := r.setup(mgr, name, max(opts.MaxConcurrentReconciles, 1), f.enqueue); err != nil {
		return nil, err
	}
	return r, nil
}

// newReconciler returns the reconciler of opts that reads and writes
// through c (the manager's client) and reader (its API reader), without
// its recorder and metrics.
func newReconciler(c client.Client, reader client.Reader, opts Options) (*Reconciler, error) {
	if opts.Driver == nil {
		return nil, errors.New("machines: Options.Driver is nil")
	}
	cfg := lifecycle.DefaultConfig()
	if opts.Config != nil {
		cfg = *opts.Config
		cfg.NodeConditions = append([]string(nil), cfg.NodeConditions...)
	}
	checked, err := cfg.Check()
	if err != nil {
		return nil, fmt.Errorf("machines: %w", err)
	}
	r := &Reconciler{
		client:        c,
		reader:        reader,
		nodes:         kubeshell.Nodes{Reader: reader, Writer: c},
		driver:        opts.Driver,
		class:         opts.Class,
		config:        cfg,
		checked:       checked,
		observer:      opts.Observer,
		now:           opts.Now,
		tokenID:       opts.TokenID,
		fromAPIServer: opts.ReadFromAPIServer,
		callTimeout:   orDefault(opts.CallTimeout, 30*time.Second),
		writes:        newOwnWrites(),
		grants:        &kubeshell.Grants{},
	}
	r.workers.New = func() any { return &worker{} }
	if r.now == nil {
		r.now = time.Now
	}
	if r.tokenID == nil {
		r.tokenID = TokenIDFromUID
	}
	return r, nil
}

// orDefault returns d, or def when d is not positive.
func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// CacheOptions returns the manager cache options the controller needs: the
// cached Secrets restricted to the bootstrap tokens of kube-system, the
// only secrets it reads, so the manager neither lists every secret of the
// cluster nor needs the right to.
func CacheOptions() cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Secret{}: {
			Namespaces: map[string]cache.Config{lifecycle.BootstrapTokenNamespace: {}},
			Field:      fields.OneTermEqualSelector("type", string(corev1.SecretTypeBootstrapToken)),
		},
	}}
}

// Package app runs the drop-in machine controller for MCM's providers the
// way MCM's app.Run runs MCM's: a provider's main reads MCM's flags with
// package options and hands them and its driver.Driver to Run.
//
//	func main() {
//		o := options.New()
//		o.AddFlags(pflag.CommandLine)
//		pflag.Parse()
//		ctx := ctrl.SetupSignalHandler()
//		if err := app.Run(ctx, o, myprovider.NewDriver()); err != nil {
//			klog.Fatal(err)
//		}
//	}
//
// Run validates the options (MCM's checks, then the lifecycle's), connects
// to the control cluster (--control-kubeconfig; "inClusterConfig" for the
// pod's service account, empty for the target cluster's) and the target
// cluster (--target-kubeconfig; empty for the pod's service account, "none"
// for none), and runs, in one controller-runtime manager with MCM's leader
// election settings: the machine controller of package machines with
// --concurrent-syncs workers, its fleet pass and orphan collection
// (--machine-safety-orphan-vms-period), the class controller, and the
// API-server freeze check of package safety, which the lifecycle sees as
// its observer. Metrics and the health check are served on --address and
// --port (/metrics, /healthz), with the Go profiler under /debug/pprof/
// when --profiling is set.
package app

import (
	"context"
	"fmt"
	"net/http"
	"net/http/pprof"
	goruntime "runtime"
	"strings"
	"sync"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/driver"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/mcmcontroller/machines"
	"github.com/purelifecycle/machine/mcmcontroller/options"
	"github.com/purelifecycle/machine/mcmcontroller/safety"
)

// Name is the name of the controller, of its leader election lease and of
// the user agent of its clients, MCM's.
const Name = "machine-controller"

// Run runs the machine controller with provider until ctx ends, and
// returns the first error that stops it.
func Run(ctx context.Context, o *options.Options, provider driver.Driver) error {
	if err := o.Validate(); err != nil {
		return err
	}
	mgr, err := NewManager(o, provider)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// NewManager returns the manager Run starts, with everything Run runs
// added to it: for a caller that adds its own runnables or starts it
// itself. The options are not validated.
func NewManager(o *options.Options, provider driver.Driver) (ctrl.Manager, error) {
	ctl := o.Controller()
	cfg := o.Config()
	control, target, err := restConfigs(ctl)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	inNamespace := cache.ByObject{Namespaces: map[string]cache.Config{ctl.Namespace: {}}}
	le := ctl.LeaderElection
	mgr, err := ctrl.NewManager(control, ctrl.Options{
		Scheme: scheme,
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&v1alpha1.Machine{}: inNamespace, &v1alpha1.MachineClass{}: inNamespace, &v1alpha1.MachineSet{}: inNamespace,
		}},
		Metrics:                    metricsserver.Options{BindAddress: ctl.Serve, ExtraHandlers: handlers(ctl)},
		LeaderElection:             le.Enabled,
		LeaderElectionID:           Name,
		LeaderElectionNamespace:    ctl.Namespace,
		LeaderElectionResourceLock: le.ResourceLock,
		LeaseDuration:              &le.LeaseDuration,
		RenewDeadline:              &le.RenewDeadline,
		RetryPeriod:                &le.RetryPeriod,
	})
	if err != nil {
		return nil, fmt.Errorf("the control cluster's manager: %w", err)
	}
	var tc cluster.Cluster
	if target != nil && target != control {
		if tc, err = cluster.New(target, func(co *cluster.Options) { co.Scheme = scheme }); err != nil {
			return nil, fmt.Errorf("the target cluster: %w", err)
		}
	}
	fc := &freezeCheck{check: safety.Check{Period: ctl.APIServerCheck, DownFor: ctl.APIServerDownFor}}
	for _, c := range []*rest.Config{control, target} {
		if c != nil {
			d, err := discovery.NewDiscoveryClientForConfig(c)
			if err != nil {
				return nil, err
			}
			fc.servers = append(fc.servers, d)
		}
	}
	if err := mgr.Add(fc); err != nil {
		return nil, err
	}
	_, err = machines.Setup(mgr, tc, Name, ctl.Workers, machines.Options{
		Provider:         provider,
		Config:           &cfg,
		Namespace:        ctl.Namespace,
		TokenExtraGroups: strings.Join(ctl.TokenAuthExtraGroups, ","),
		Observer:         fc.observer,
		OrphanInterval:   ctl.OrphanCollection,
	})
	return mgr, err
}

// handlers are the HTTP endpoints served beside /metrics, as MCM serves
// them: /healthz, and the Go profiler under /debug/pprof/ with
// --profiling (with lock contention profiles with
// --contention-profiling).
func handlers(ctl options.Controller) map[string]http.Handler {
	h := map[string]http.Handler{"/healthz": &healthz.CheckHandler{Checker: healthz.Ping}}
	if ctl.Profiling {
		h["/debug/pprof/"] = http.HandlerFunc(pprof.Index)
		h["/debug/pprof/profile"] = http.HandlerFunc(pprof.Profile)
		h["/debug/pprof/symbol"] = http.HandlerFunc(pprof.Symbol)
		h["/debug/pprof/trace"] = http.HandlerFunc(pprof.Trace)
		if ctl.ContentionProfiling {
			goruntime.SetBlockProfileRate(1)
		}
	}
	return h
}

// restConfigs returns the clients' configurations of the control and the
// target cluster as MCM builds them; target is nil without a target
// cluster, and control is target when no control kubeconfig is given.
func restConfigs(ctl options.Controller) (control, target *rest.Config, err error) {
	if ctl.TargetKubeconfig != options.NoTargetCluster {
		if target, err = clientcmd.BuildConfigFromFlags("", ctl.TargetKubeconfig); err != nil {
			return nil, nil, fmt.Errorf("--target-kubeconfig: %w", err)
		}
	}
	switch ctl.ControlKubeconfig {
	case "":
		control = target
	case "inClusterConfig":
		control, err = clientcmd.BuildConfigFromFlags("", "")
	default:
		control, err = clientcmd.BuildConfigFromFlags("", ctl.ControlKubeconfig)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("--control-kubeconfig: %w", err)
	}
	if control == nil {
		return nil, nil, fmt.Errorf("no control cluster: --control-kubeconfig is empty and --target-kubeconfig is %q", options.NoTargetCluster)
	}
	for _, c := range []*rest.Config{control, target} {
		if c != nil {
			// --kube-api-content-type is not applied, as MCM does not
			// apply it: its default, protobuf, cannot encode MCM's
			// custom resources.
			c.QPS, c.Burst, c.UserAgent = ctl.QPS, ctl.Burst, Name
		}
	}
	return control, target, nil
}

// freezeCheck probes the API servers (safety.Check) and gives the
// lifecycle's observer. It implements manager.Runnable, in every replica:
// a replica that leads next knows the API servers' state.
type freezeCheck struct {
	servers []discovery.DiscoveryInterface

	mu    sync.Mutex
	check safety.Check
}

// NeedLeaderElection reports false: every replica probes.
func (fc *freezeCheck) NeedLeaderElection() bool { return false }

// Start probes until ctx ends.
func (fc *freezeCheck) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("apiserver-check")
	for {
		up := true
		for _, s := range fc.servers {
			if _, err := s.ServerVersion(); err != nil {
				up = false
				log.Info("an API server does not answer", "error", err.Error())
			}
		}
		fc.mu.Lock()
		wasFrozen := fc.check.Frozen()
		next := fc.check.Probed(time.Now(), up)
		if fc.check.Frozen() != wasFrozen {
			log.Info("the machine controller's observations", "frozen", fc.check.Frozen())
		}
		fc.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(next):
		}
	}
}

// observer returns the lifecycle's observer now.
func (fc *freezeCheck) observer() lifecycle.Observer {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.check.Observer()
}

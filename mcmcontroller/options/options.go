// Package options reads the command line of MCM's machine controller (the
// machine-controller command every out-of-tree provider of Gardener's
// machine-controller-manager builds, v0.62.1) and turns it into the
// lifecycle's Config and the settings of the controller that replaces MCM's.
//
// The flags are MCM's own: [Options.AddFlags] registers MCM's options
// struct with MCM's own code, so every name, default and help text is the
// one an operator's deployment already passes, and [Options.Validate] runs
// MCM's validation before the lifecycle's. [Flags] says, for every flag MCM
// registers, where its value goes or why it is accepted and not used; a test
// fails when MCM registers a flag the table does not name. Three flags are
// this controller's own, for what MCM does not have: the limiter's
// protection of a zone that looks down as a whole ([OwnFlags]).
package options

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	mcmoptions "github.com/gardener/machine-controller-manager/pkg/util/provider/app/options"
	"github.com/spf13/pflag"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/retry"
)

// NoTargetCluster is the value of --target-kubeconfig that runs without a
// cluster for nodes: machines become Available, no node is awaited.
const NoTargetCluster = "none"

// Options is the machine controller's command line: MCM's options, read by
// MCM's own flag definitions.
type Options struct {
	// MCM holds MCM's options as MCM's flag set fills them.
	MCM *mcmoptions.MCServer
	// ZoneOutage is the limiter's protection of a zone that looks down as
	// a whole (lifecycle.Config.ZoneOutage; --zone-outage-machines,
	// --zone-outage-percent, --zone-outage-hold), which MCM does not have;
	// its zero value, the default, turns it off.
	ZoneOutage lifecycle.ZoneOutage
}

// New returns the options with MCM's defaults.
func New() *Options {
	return &Options{MCM: mcmoptions.NewMCServer()}
}

// AddFlags registers MCM's machine-controller flags on fs, with MCM's
// names, defaults and help texts.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.MCM.AddFlags(fs)
	z := &o.ZoneOutage
	fs.IntVar(&z.Count, "zone-outage-machines", z.Count, "the least number of a MachineSet's unhealthy machines in one "+
		"zone (the nodes' topology.kubernetes.io/zone label) that makes the zone look down as a whole, so that its "+
		"machines are not marked Failed for --zone-outage-hold past their health timeout; 0 turns the protection off")
	fs.IntVar(&z.Percent, "zone-outage-percent", z.Percent, "the least share, 0 to 100, of a MachineSet's unhealthy "+
		"machines that must be in that zone as well")
	fs.DurationVar(&z.Hold, "zone-outage-hold", z.Hold, "how long past its health timeout a machine of a zone that "+
		"looks down is held at most; needed with --zone-outage-machines")
}

// Validate reports every problem of the options: MCM's own checks, then
// the lifecycle's checks of the Config they make. Each problem is wrapped
// in the returned error.
func (o *Options) Validate() error {
	var errs []error
	if err := o.MCM.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("MCM's checks: %w", err))
	}
	cfg := o.Config()
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Config returns the lifecycle's configuration the options give: MCM's
// timeouts, eviction retries, node conditions, ResourceExhausted period and
// target cluster, the zone protection of this controller's own flags, and
// the lifecycle's defaults for what MCM hard-codes.
// VerifyOwner is off: MCM's providers report no instance's owner, so an
// owner could never be verified.
func (o *Options) Config() lifecycle.Config {
	s := &o.MCM.SafetyOptions
	cfg := lifecycle.DefaultConfig()
	cfg.VerifyOwner = false
	cfg.CreationTimeout = s.MachineCreationTimeout.Duration
	cfg.HealthTimeout = s.MachineHealthTimeout.Duration
	cfg.DrainTimeout = s.MachineDrainTimeout.Duration
	cfg.InPlaceUpdateTimeout = s.MachineInPlaceUpdateTimeout.Duration
	cfg.PreserveTimeout = s.MachinePreserveTimeout.Duration
	cfg.MaxEvictRetries = s.MaxEvictRetries
	cfg.NodeConditions = NodeConditions(o.MCM.NodeConditions)
	cfg.NoTargetCluster = o.MCM.TargetKubeconfig == NoTargetCluster
	cfg.ZoneOutage = o.ZoneOutage
	cfg.Retry.ResourceExhausted = o.MCM.ResourceExhaustedRetry.Duration
	if cfg.Retry.ResourceExhausted == 0 {
		// MCM: 0 means its long retry, which is the lifecycle's too.
		cfg.Retry.ResourceExhausted = retry.Long
	}
	return cfg
}

// NodeConditions splits MCM's --node-conditions value, a comma-separated
// list of condition types, into the lifecycle's list. MCM splits on commas
// and compares each part with the node's condition types as it is; an
// empty part, which matches no condition type there, is left out here
// (the lifecycle refuses empty types). Spaces are kept, as MCM keeps them.
func NodeConditions(list string) []string { return splitList(list) }

// splitList splits a comma-separated list, leaving out empty parts.
func splitList(list string) []string {
	if list == "" {
		return []string{}
	}
	parts := strings.Split(list, ",")
	out := parts[:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Controller is what the options say about the controller itself, apart
// from the lifecycle's decisions.
type Controller struct {
	// Namespace is where the controller reads Machines, MachineClasses and
	// their Secrets in the control cluster (--namespace).
	Namespace string
	// ControlKubeconfig is the kubeconfig file of the control cluster,
	// "inClusterConfig" for the pod's service account, or "" for the
	// target cluster's (--control-kubeconfig).
	ControlKubeconfig string
	// TargetKubeconfig is the kubeconfig file of the cluster the nodes
	// join; "" means the pod's service account (--target-kubeconfig), and
	// NoTargetCluster means none.
	TargetKubeconfig string
	// Workers is how many machines are reconciled at once
	// (--concurrent-syncs).
	Workers int
	// Resync is how often every machine is reconciled at the least
	// (--min-resync-period): the informers' resync period.
	Resync time.Duration
	// OrphanCollection is how often the provider's instances are listed
	// for orphans (--machine-safety-orphan-vms-period).
	OrphanCollection time.Duration
	// APIServerCheck and APIServerDownFor: every APIServerCheck the
	// control and target API servers are probed; when either has not
	// answered for APIServerDownFor, the observer is degraded and no
	// machine is marked Failed
	// (--machine-safety-apiserver-statuscheck-period and -timeout).
	APIServerCheck, APIServerDownFor time.Duration
	// TokenAuthExtraGroups are the groups a bootstrap token's
	// auth-extra-groups field lists (--bootstrap-token-auth-extra-groups).
	TokenAuthExtraGroups []string
	// LeaderElection is the leader election of the controller's replicas
	// (--leader-elect and its companions).
	LeaderElection LeaderElection
	// QPS and Burst shape the clients' requests (--kube-api-qps,
	// --kube-api-burst).
	QPS   float32
	Burst int
	// Serve is the address of the controller's HTTP endpoints: metrics and
	// probes (--address and --port).
	Serve string
	// Profiling serves the Go profiler under /debug/pprof (--profiling),
	// with lock contention profiles when ContentionProfiling is set too
	// (--contention-profiling).
	Profiling, ContentionProfiling bool
}

// LeaderElection is the leader election of the controller's replicas.
type LeaderElection struct {
	// Enabled runs the controller only in the replica that leads
	// (--leader-elect).
	Enabled bool
	// LeaseDuration, RenewDeadline and RetryPeriod time the lease
	// (--leader-elect-lease-duration, -renew-deadline, -retry-period).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// ResourceLock is the kind of object that holds the lease
	// (--leader-elect-resource-lock; "leases").
	ResourceLock string
}

// Controller returns the controller's settings the options give.
func (o *Options) Controller() Controller {
	m := o.MCM
	s := &m.SafetyOptions
	le := &m.LeaderElection
	return Controller{
		Namespace:            m.Namespace,
		ControlKubeconfig:    m.ControlKubeconfig,
		TargetKubeconfig:     m.TargetKubeconfig,
		Workers:              int(m.ConcurrentNodeSyncs),
		Resync:               m.MinResyncPeriod.Duration,
		OrphanCollection:     s.MachineSafetyOrphanVMsPeriod.Duration,
		APIServerCheck:       s.MachineSafetyAPIServerStatusCheckPeriod.Duration,
		APIServerDownFor:     s.MachineSafetyAPIServerStatusCheckTimeout.Duration,
		TokenAuthExtraGroups: splitList(m.BootstrapTokenAuthExtraGroups),
		LeaderElection: LeaderElection{
			Enabled:       le.LeaderElect,
			LeaseDuration: le.LeaseDuration.Duration,
			RenewDeadline: le.RenewDeadline.Duration,
			RetryPeriod:   le.RetryPeriod.Duration,
			ResourceLock:  le.ResourceLock,
		},
		QPS:       m.KubeAPIQPS,
		Burst:     int(m.KubeAPIBurst),
		Serve:     net.JoinHostPort(m.Address, strconv.Itoa(int(m.Port))),
		Profiling: m.EnableProfiling,

		ContentionProfiling: m.EnableContentionProfiling,
	}
}

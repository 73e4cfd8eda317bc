package machines

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/driver"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/purelifecycle/machine/kubeshell"
	"github.com/purelifecycle/machine/lifecycle"
	lpass "github.com/purelifecycle/machine/lifecycle/pass"
	"github.com/purelifecycle/machine/mcmcontroller/owner"
)

// Options configure a Reconciler.
type Options struct {
	// Provider is the MCM provider the machines are made with.
	Provider driver.Driver
	// Config is the lifecycle's configuration (options.Options.Config
	// turns MCM's flags into it); nil means lifecycle.DefaultConfig with
	// VerifyOwner off, as MCM's providers report no instance owner and
	// have no UpdateMetadata.
	Config *lifecycle.Config
	// Namespace is the control cluster's namespace of the Machines, their
	// classes and the classes' Secrets.
	Namespace string
	// TokenExtraGroups are the groups a bootstrap token authenticates as
	// besides the bootstrappers' (MCM's --bootstrap-token-auth-extra-groups,
	// comma-separated as given).
	TokenExtraGroups string
	// Observer, when set, gives each step the observer's health (the
	// API-server freeze check of package safety); nil means healthy.
	Observer func() lifecycle.Observer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Random draws the bootstrap tokens' secrets; nil means crypto/rand.
	Random io.Reader
	// CallTimeout bounds each write, read and provider call of a pass;
	// 0 means 5 minutes, MCM's bound of a provider call.
	CallTimeout time.Duration
	// Owner is how a machine's owner is derived for the fleet limiter
	// (owner.ByDeployment, the zero value, follows the owner references up
	// to the MachineDeployment).
	Owner owner.By
	// FleetInterval is how often the leader computes the fleet limiter's
	// grants; 0 means 30 seconds.
	FleetInterval time.Duration
	// OrphanInterval is how often the leader deletes the instances no
	// machine owns (MCM's --machine-safety-orphan-vms-period); 0 means
	// never.
	OrphanInterval time.Duration
}

// Clients are the clients of the two clusters: the control cluster holds
// the Machines, MachineClasses and Secrets, the target cluster the nodes,
// pods, volume attachments and bootstrap tokens. Each has a client that
// reads from a cache and writes to the API server, and a reader that goes
// to the API server. The target's cache must index nodes by
// spec.providerID and volume attachments by spec.nodeName (Indexes).
type Clients struct {
	Control, Target             client.Client
	ControlReader, TargetReader client.Reader
	// Recorder records events on the Machines.
	Recorder record.EventRecorder
}

// Reconciler reconciles MCM Machines: one pass of lifecycle/pass per
// reconcile. Make one with New.
type Reconciler struct {
	// noTarget: there is no target cluster (Config.NoTargetCluster, MCM's
	// --target-kubeconfig=none): no node is read or written and no
	// bootstrap token is made.
	noTarget bool
	opts     Options
	c        Clients
	nodes    kubeshell.Nodes
	checked  lifecycle.Checked
	config   lifecycle.Config
	grants   kubeshell.Grants // the fleet pass's (fleet.go)
	fleet    *fleet
}

// New returns a Reconciler of the machines of opts.Namespace.
func New(c Clients, opts Options) (*Reconciler, error) {
	if opts.Provider == nil {
		return nil, errors.New("machines: no provider")
	}
	if opts.Namespace == "" {
		return nil, errors.New("machines: no namespace")
	}
	cfg := lifecycle.DefaultConfig()
	cfg.VerifyOwner = false
	if opts.Config != nil {
		cfg = *opts.Config
	}
	checked, err := cfg.Check()
	if err != nil {
		return nil, fmt.Errorf("machines: %w", err)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Random == nil {
		opts.Random = rand.Reader
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 5 * time.Minute
	}
	if opts.FleetInterval <= 0 {
		opts.FleetInterval = 30 * time.Second
	}
	r := &Reconciler{noTarget: cfg.NoTargetCluster, opts: opts, c: c, nodes: kubeshell.Nodes{Reader: c.TargetReader, Writer: c.Target},
		checked: checked, config: cfg}
	r.fleet = &fleet{r: r}
	return r, nil
}

// Reconcile runs one pass for the machine req names.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rep := r.Pass(ctx, req.NamespacedName, r.opts.Now())
	return kubeshell.ResultOf(logf.FromContext(ctx), rep)
}

// Pass runs one pass of the machine key names at now, and what the pass
// did: Reconcile's work, for a caller that brings its own clock (a test
// that compares this controller with MCM's reconcile by reconcile).
func (r *Reconciler) Pass(ctx context.Context, key types.NamespacedName, now time.Time) lpass.Report {
	p := &pass{r: r, key: key, now: now, log: logf.FromContext(ctx).WithValues("machine", key.String())}
	var s lpass.Scratch
	rep := lpass.Run(ctx, &r.checked, p, now, &s, p)
	if rep.End == lpass.EndDone && !p.gone && p.m.DeletionTimestamp == nil {
		p.syncNodeTemplate(ctx)
	}
	return rep
}

// pass is one reconcile pass of one machine, and its shell (lpass.Shell)
// and observer (lpass.Observer).
type pass struct {
	r   *Reconciler
	key types.NamespacedName
	now time.Time
	log logr.Logger

	// m is the machine as this pass last read or wrote it; gone reports
	// that it no longer exists.
	m        *v1alpha1.Machine
	gone     bool
	observed bool
	// class is what the pass read of the machine's class, at its first
	// observation.
	class *classRead
	// decision is the pass's current decision.
	decision *lifecycle.Decision
	// token is the bootstrap token ("<id>.<secret>") the pass made sure
	// of, for the CreateMachine that follows.
	token string
	// nodeWritten reports that the pass wrote a node: its later steps
	// read the node from the API server, not from the cache, which may
	// not show the write yet.
	nodeWritten bool
}

// errGone is the error of a write to a machine that is gone.
var errGone = errors.New("machine is gone")

// io returns the context of a pass's write, read or provider call: detached
// from ctx's cancellation, so that a pass the manager stops finishes what
// it started, and bounded by Options.CallTimeout.
func (p *pass) io(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), p.r.opts.CallTimeout)
}

// readMachine reads the machine from the control cluster's API server;
// nil when it is gone.
func (r *Reconciler) readMachine(ctx context.Context, key types.NamespacedName) (*v1alpha1.Machine, error) {
	m := &v1alpha1.Machine{}
	if err := r.c.ControlReader.Get(ctx, key, m); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return m, nil
}

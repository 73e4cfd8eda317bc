package difftest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	mcmadapter "github.com/purelifecycle/machine/adapters/mcm"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/mcmcontroller/machines"
	"github.com/purelifecycle/machine/mcmcontroller/options"
)

// DropIn is the project's controller (mcmcontroller/machines) as a
// [Controller]: a Reconciler over the caches of one scenario's namespace,
// whose reconcile is the leader's fleet pass (the limiter's grants) and
// one pass of the machine, at the time given.
type DropIn struct {
	env    *Env
	cancel context.CancelFunc
	c      cluster.Cluster
	r      *machines.Reconciler
}

// Name implements Controller.
func (d *DropIn) Name() string { return "dropin" }

// Start implements Controller: the controller's configuration is MCM's
// flags of env.Settings as package options maps them.
func (d *DropIn) Start(ctx context.Context, env *Env) error {
	d.env = env
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	inNamespace := cache.ByObject{Namespaces: map[string]cache.Config{env.Namespace: {}}}
	c, err := cluster.New(env.Config, func(o *cluster.Options) {
		o.Scheme = scheme
		o.Cache.ByObject = map[client.Object]cache.ByObject{
			&v1alpha1.Machine{}: inNamespace, &v1alpha1.MachineClass{}: inNamespace, &v1alpha1.MachineSet{}: inNamespace}
	})
	if err != nil {
		return err
	}
	for _, ix := range machines.Indexes() {
		if err := c.GetFieldIndexer().IndexField(ctx, ix.Object, ix.Field, ix.Extract); err != nil {
			return err
		}
	}
	o := options.New()
	s := env.Settings
	o.MCM.SafetyOptions.MachineCreationTimeout.Duration = s.CreationTimeout
	o.MCM.SafetyOptions.MachineHealthTimeout.Duration = s.HealthTimeout
	o.MCM.SafetyOptions.MachineDrainTimeout.Duration = s.DrainTimeout
	o.MCM.SafetyOptions.MachineInPlaceUpdateTimeout.Duration = s.InPlaceUpdateTimeout
	o.MCM.SafetyOptions.MachinePreserveTimeout.Duration = s.PreserveTimeout
	o.MCM.SafetyOptions.MaxEvictRetries = s.MaxEvictRetries
	o.MCM.NodeConditions = s.NodeConditions
	if env.NoTarget {
		o.MCM.TargetKubeconfig = options.NoTargetCluster
	}
	cfg := o.Config()
	// Both controllers must time in-place updates and preservations
	// alike: the Config the options give must carry MCM's
	// --machine-inplace-update-timeout and --machine-preserve-timeout.
	if cfg.InPlaceUpdateTimeout != s.InPlaceUpdateTimeout {
		return fmt.Errorf("the drop-in's in-place update timeout is %v, MCM's --machine-inplace-update-timeout %v",
			cfg.InPlaceUpdateTimeout, s.InPlaceUpdateTimeout)
	}
	if cfg.PreserveTimeout != s.PreserveTimeout {
		return fmt.Errorf("the drop-in's preservation timeout is %v, MCM's --machine-preserve-timeout %v",
			cfg.PreserveTimeout, s.PreserveTimeout)
	}
	opts := machines.Options{Provider: env.Driver, Config: &cfg, Namespace: env.Namespace}
	if env.Frozen {
		since := time.Now()
		opts.Observer = func() lifecycle.Observer { return lifecycle.Observer{Degraded: true, Since: since} }
	}
	d.r, err = machines.New(machines.Clients{Control: c.GetClient(), ControlReader: c.GetAPIReader(),
		Target: c.GetClient(), TargetReader: c.GetAPIReader(), Recorder: record.NewFakeRecorder(1000)}, opts)
	if err != nil {
		return err
	}
	ctx, d.cancel = context.WithCancel(ctx)
	go func() { _ = c.Start(ctx) }()
	// The informers the pass reads through, started together before the
	// first reconcile waits for them (one by one, each would wait for its
	// own sync).
	for _, o := range []client.Object{&v1alpha1.Machine{}, &v1alpha1.MachineClass{}, &v1alpha1.MachineSet{},
		&corev1.Node{}, &storagev1.VolumeAttachment{}} {
		if _, err := c.GetCache().GetInformer(ctx, o, cache.BlockUntilSynced(false)); err != nil {
			return err
		}
	}
	if !c.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("the caches did not sync")
	}
	d.c = c
	return nil
}

// Reconcile implements Controller: once the caches show what the API
// server has, one fleet pass and one pass of the machine at now.
func (d *DropIn) Reconcile(ctx context.Context, machine string, now time.Time) (Result, error) {
	if err := d.waitSynced(ctx); err != nil {
		return Result{}, fmt.Errorf("waiting for the caches: %w", err)
	}
	// The pass's log names the rule of each decision: the report's
	// detail lists them.
	var rules []string
	log := funcr.NewJSON(func(obj string) {
		var line struct{ Rule string }
		if json.Unmarshal([]byte(obj), &line) == nil && line.Rule != "" {
			rules = append(rules, line.Rule)
		}
	}, funcr.Options{Verbosity: 1})
	ctx = logf.IntoContext(ctx, log)
	d.r.FleetPass(ctx, now, false)
	rep := d.r.Pass(ctx, types.NamespacedName{Namespace: d.env.Namespace, Name: machine}, now)
	return Result{Requeue: rep.Requeue, Detail: rep.End.String() + " " + strings.Join(rules, ",")}, rep.Err
}

// waitSynced waits until the caches show the API server's machines,
// classes, nodes and volume attachments.
func (d *DropIn) waitSynced(ctx context.Context) error {
	ns := client.InNamespace(d.env.Namespace)
	pairs := []struct {
		list func() client.ObjectList
		opts []client.ListOption
	}{
		{func() client.ObjectList { return &v1alpha1.MachineList{} }, []client.ListOption{ns}},
		{func() client.ObjectList { return &v1alpha1.MachineClassList{} }, []client.ListOption{ns}},
		{func() client.ObjectList { return &corev1.NodeList{} }, nil},
		{func() client.ObjectList { return &storagev1.VolumeAttachmentList{} }, nil},
	}
	return wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, p := range pairs {
			api, cached := p.list(), p.list()
			if err := d.c.GetAPIReader().List(ctx, api, p.opts...); err != nil {
				return false, err
			}
			if err := d.c.GetClient().List(ctx, cached, p.opts...); err != nil {
				return false, err
			}
			a, err := versions(api, nil)
			if err != nil {
				return false, err
			}
			b, err := versions(cached, nil)
			if err != nil {
				return false, err
			}
			if !sameVersions(a, b) {
				return false, nil
			}
		}
		return true, nil
	})
}

// sameVersions reports whether two listings of names and
// resourceVersions (versions) are the same.
func sameVersions(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Stop implements Controller.
func (d *DropIn) Stop() {
	if d.cancel != nil {
		d.cancel()
	}
}

// BackdateObject implements Backdater: the stamps of the lifecycle's state
// annotation move back by d; a machine without it (one MCM left) keeps
// none.
func (d *DropIn) BackdateObject(m *v1alpha1.Machine, by time.Duration) {
	if _, ok := m.Annotations[mcmadapter.StateAnnotation]; !ok {
		return
	}
	st, err := mcmadapter.StatusFrom(m)
	if err != nil {
		return
	}
	back := func(s *lifecycle.Stamp) {
		if !s.IsZero() {
			*s = s.Add(-by)
		}
	}
	for _, s := range []*lifecycle.Stamp{&st.PhaseSince, &st.StageSince, &st.RetryAfter, &st.MetadataObserved,
		&st.MetadataSince, &st.CreationFrom, &st.PreserveUntil} {
		back(s)
	}
	for i := range st.Conditions {
		back(&st.Conditions[i].Since)
	}
	mm := m.DeepCopy()
	mcmadapter.ApplyStatus(st, mm, time.Now())
	m.Annotations[mcmadapter.StateAnnotation] = mm.Annotations[mcmadapter.StateAnnotation]
}

// BackdateStatus implements Backdater: the status's stamps MCM keeps are
// moved back by Env.Advance itself.
func (d *DropIn) BackdateStatus(*v1alpha1.Machine, time.Duration) {}

// versions returns the names and resourceVersions of a list's items.
func versions(list runtime.Object, err error) (map[string]string, error) {
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, x := range items {
		o, err := meta.Accessor(x)
		if err != nil {
			return nil, err
		}
		out[o.GetName()] = o.GetResourceVersion()
	}
	return out, nil
}

var (
	_ Controller = (*DropIn)(nil)
	_ Backdater  = (*DropIn)(nil)
)

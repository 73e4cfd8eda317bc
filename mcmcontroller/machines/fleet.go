package machines

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	mcmadapter "github.com/purelifecycle/machine/adapters/mcm"
	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/kubeshell"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/mcmcontroller/mcmdriver"
	"github.com/purelifecycle/machine/mcmcontroller/owner"
)

// FleetPass makes one pass of the leader's fleet pass at now: the fleet
// limiter's grants, and the orphan collection when collectOrphans is set.
// A controller Setup makes runs it periodically; a caller that runs passes
// itself (Reconciler.Pass) calls it before them.
func (r *Reconciler) FleetPass(ctx context.Context, now time.Time, collectOrphans bool) {
	r.fleet.runAt(ctx, now, collectOrphans)
}

// fleet is the leader's periodic pass over the namespace's machines: every
// Options.FleetInterval it computes the fleet limiter's grants
// (lifecycle.Limit, each machine's owner derived as Options.Owner says),
// and every Options.OrphanInterval (0: never) it deletes the provider's
// instances of the namespace's classes that no machine owns
// (lifecycle.Orphans), as MCM's safety controller does. A machine granted
// now is reconciled at once, as its grant is new input. It implements
// manager.Runnable and runs only while elected.
type fleet struct {
	r *Reconciler
	// enqueue takes the machines granted now; nil: they are not sent.
	enqueue chan event.GenericEvent

	mu sync.Mutex // one pass at a time

	machs   []*v1alpha1.Machine
	members []lifecycle.Member
	out     []lifecycle.Grant
}

// NeedLeaderElection reports true: grants are computed by one controller.
func (f *fleet) NeedLeaderElection() bool { return true }

// Start runs fleet passes until ctx ends (kubeshell.RunFleet).
func (f *fleet) Start(ctx context.Context) error {
	ctx = logf.IntoContext(ctx, logf.FromContext(ctx).WithName("fleet"))
	return kubeshell.RunFleet(ctx, f.r.opts.FleetInterval, f.r.opts.OrphanInterval, f.run)
}

// run makes one fleet pass, collecting orphans when asked.
func (f *fleet) run(ctx context.Context, collectOrphans bool) {
	f.runAt(ctx, f.r.opts.Now(), collectOrphans)
}

// runAt makes one fleet pass at now.
func (f *fleet) runAt(ctx context.Context, now time.Time, collectOrphans bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.observe(ctx); err != nil {
		logf.FromContext(ctx).Error(err, "listing machines")
		return
	}
	f.grant(ctx, now)
	if collectOrphans {
		f.collectOrphans(ctx, now)
	}
}

// observe lists the namespace's machines from the cache, sorted by name,
// into f.machs and f.members; a machine whose status cannot be read is
// left to its own reconcile.
func (f *fleet) observe(ctx context.Context) error {
	r := f.r
	var list v1alpha1.MachineList
	// The listed objects are the cache's own: read, never changed.
	if err := r.c.Control.List(ctx, &list, client.InNamespace(r.opts.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	f.machs, f.members = f.machs[:0], f.members[:0]
	for i := range list.Items {
		f.machs = append(f.machs, &list.Items[i])
	}
	slices.SortFunc(f.machs, func(a, b *v1alpha1.Machine) int { return cmp.Compare(a.Name, b.Name) })
	keep := f.machs[:0]
	for _, m := range f.machs {
		st, err := mcmadapter.StatusFrom(m)
		if err != nil {
			continue
		}
		o := mcmadapter.ObjectFrom(m)
		o.Owner = owner.Of(m, r.opts.Owner, r.machineSet(ctx))
		node := o.NodeLabel
		if r.noTarget {
			node = ""
		}
		f.members = append(f.members, lifecycle.MemberOf(&r.config, &lifecycle.Input{Object: o, Status: st,
			Node: lifecycle.Node{Name: node, Zone: kubeshell.ZoneOf(ctx, r.c.Target, node)}}))
		keep = append(keep, m)
	}
	f.machs = keep
	return nil
}

// machineSet returns the cache's lookup of MachineSets for owner.Of.
func (r *Reconciler) machineSet(ctx context.Context) owner.Sets {
	return func(namespace, name string) (*v1alpha1.MachineSet, bool) {
		ms := &v1alpha1.MachineSet{}
		if err := r.c.Control.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, ms); err != nil {
			return nil, false
		}
		return ms, true
	}
}

// grant computes the grants, publishes them and reconciles the machines
// granted now.
func (f *fleet) grant(ctx context.Context, now time.Time) {
	r := f.r
	var obs lifecycle.Observer
	if r.opts.Observer != nil {
		obs = r.opts.Observer()
	}
	f.out = lifecycle.Limit(f.out[:0], &r.config, now, obs, f.members)
	granted := r.grants.Replace(kubeshell.GrantsOf(f.out, func(i int) types.UID { return f.machs[i].UID }))
	if f.enqueue == nil {
		return
	}
	for _, m := range f.machs {
		if !granted[m.UID] {
			continue
		}
		ev := event.GenericEvent{Object: &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name}}}
		select {
		case f.enqueue <- ev:
		case <-ctx.Done():
			return
		}
	}
}

// collectOrphans lists the provider's instances of each class of the
// namespace and deletes those no machine owns.
func (f *fleet) collectOrphans(ctx context.Context, now time.Time) {
	log := logf.FromContext(ctx).WithName("orphans")
	r := f.r
	var classes v1alpha1.MachineClassList
	if err := r.c.Control.List(ctx, &classes, client.InNamespace(r.opts.Namespace)); err != nil {
		log.Error(err, "listing classes")
		return
	}
	for i := range classes.Items {
		mc := &classes.Items[i]
		cr := r.classData(ctx, mc, false)
		if cr.problem != lifecycle.ProblemNone {
			log.Info("class unusable; its instances are not listed", "class", mc.Name, "error", cr.err.Error())
			continue
		}
		drv := mcmdriver.For(r.opts.Provider, mcmdriver.Objects{Class: mc, Secret: cr.secret})
		class := driverapi.Class{Name: mc.Name, ProviderSpec: mc.ProviderSpec.Raw, Secret: cr.data}
		res := driverapi.Invoke(ctx, drv, driverapi.Call{Method: driverapi.MethodList}, class)
		if !res.OK() {
			log.Info("listing instances failed", "class", mc.Name, "error", res.ErrorText())
			continue
		}
		for _, c := range lifecycle.Orphans(nil, &r.config, now, f.members, res.Instances) {
			res := driverapi.Invoke(ctx, drv, c, class)
			log.Info("deleted orphan instance", "call", lifecycle.CallString(c), "code", res.Code.String(), "error", res.ErrorText())
		}
	}
}

package machines

import (
	"cmp"
	"context"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/kubeshell"
	"github.com/purelifecycle/machine/lifecycle"
)

// fleetRunnable is the leader's periodic pass over the whole fleet: every
// interval it computes the fleet limiter's grants (lifecycle.Limit, per
// namespace) and the fleet summary (lifecycle.Summarize, for the metrics),
// and every orphanInterval (0: never) it deletes the provider's instances
// no machine owns (lifecycle.Orphans). The fleet is the cache's machines
// with the controller's own writes laid over them, so it shows every
// status the controller saved. A machine granted now is reconciled at
// once, as its grant is new input. It implements manager.Runnable and
// runs only while elected (manager.LeaderElectionRunnable).
type fleetRunnable struct {
	r                        *Reconciler
	interval, orphanInterval time.Duration
	enqueue                  chan event.GenericEvent

	// Reused from pass to pass.
	members []lifecycle.Member
	machs   []*v1alpha1.Machine
	out     []lifecycle.Grant
	orphans int
	// zones holds the zone each machine's node last showed to the fleet
	// pass, by the machine's UID: a machine whose node object is gone or
	// cannot be read (deleted during an outage, say) still counts in its
	// zone for the limiter's protection per failure domain. Its status's
	// Zone, which its reconcile records when it writes the status with the
	// node at hand, comes first, and outlives the process; this map covers
	// a zone seen since the last status write. A machine no longer listed
	// is forgotten.
	zones map[types.UID]string
}

// NeedLeaderElection reports true: grants are computed by one controller.
func (f *fleetRunnable) NeedLeaderElection() bool { return true }

// Start runs fleet passes until ctx ends (kubeshell.RunFleet).
func (f *fleetRunnable) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("fleet")
	ctx = logf.IntoContext(ctx, log)
	return kubeshell.RunFleet(ctx, f.interval, f.orphanInterval, f.run)
}

// run makes one fleet pass, collecting orphans when asked.
func (f *fleetRunnable) run(ctx context.Context, collectOrphans bool) {
	log := logf.FromContext(ctx)
	r := f.r
	now := r.now()
	if err := f.observe(ctx, now); err != nil {
		log.Error(err, "listing machines")
		return
	}
	f.grant(ctx, now)
	if collectOrphans {
		f.collectOrphans(ctx, now)
	}
	if r.metrics != nil {
		r.metrics.setSummary(lifecycle.Summarize(&r.config, now, f.members, f.orphans))
	}
	r.writes.prune(now)
}

// observe lists the fleet from the cache, sorted by namespace and name,
// with the controller's own writes laid over it, into f.machs and
// f.members.
func (f *fleetRunnable) observe(ctx context.Context, now time.Time) error {
	r := f.r
	var list v1alpha1.MachineList
	// The listed objects are the cache's own: read, never changed.
	if err := r.client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	f.machs = f.machs[:0]
	for i := range list.Items {
		m := &list.Items[i]
		if newest, ok := r.writes.newest(m, now); ok {
			m = newest
		}
		f.machs = append(f.machs, m)
	}
	slices.SortFunc(f.machs, func(a, b *v1alpha1.Machine) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	f.members = f.members[:0]
	keep := f.machs[:0]
	zones := make(map[types.UID]string, len(f.zones))
	for _, m := range f.machs {
		st, err := m.Status.ToLifecycle()
		if err != nil {
			continue // left alone by its own reconcile
		}
		o, problem := objectOf(m)
		node := cmp.Or(m.Status.Node, o.NodeLabel)
		zone := cmp.Or(kubeshell.ZoneOf(ctx, r.client, node), m.Status.Zone, f.zones[m.UID])
		if zone != "" {
			zones[m.UID] = zone
		}
		f.members = append(f.members, lifecycle.MemberOf(&r.config, &lifecycle.Input{Object: o, Status: st, Problem: problem,
			Node: lifecycle.Node{Name: node, Zone: zone}}))
		keep = append(keep, m)
	}
	f.machs, f.zones = keep, zones
	return nil
}

// grant computes the grants, per namespace (as MCM limits each namespace's
// machines on its own), publishes them and reconciles the machines granted
// now.
func (f *fleetRunnable) grant(ctx context.Context, now time.Time) {
	r := f.r
	f.out = slices.Grow(f.out[:0], len(f.members))[:len(f.members)]
	for lo := 0; lo < len(f.machs); {
		hi := lo + 1
		for hi < len(f.machs) && f.machs[hi].Namespace == f.machs[lo].Namespace {
			hi++
		}
		lifecycle.Limit(f.out[lo:lo], &r.config, now, lifecycle.Observer{}, f.members[lo:hi])
		lo = hi
	}
	granted := r.grants.Replace(kubeshell.GrantsOf(f.out, func(i int) types.UID { return f.machs[i].UID }))
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

// collectOrphans deletes the provider's instances no machine owns.
func (f *fleetRunnable) collectOrphans(ctx context.Context, now time.Time) {
	log := logf.FromContext(ctx).WithName("orphans")
	r := f.r
	res := driverapi.Invoke(ctx, r.driver, driverapi.Call{Method: driverapi.MethodList}, r.class)
	if !res.OK() {
		log.Info("listing instances failed", "error", res.ErrorText())
		return
	}
	calls := lifecycle.Orphans(nil, &r.config, now, f.members, res.Instances)
	f.orphans = len(calls)
	if r.metrics != nil {
		r.metrics.SetOrphans(f.orphans)
	}
	for _, c := range calls {
		res := driverapi.Invoke(ctx, r.driver, c, r.class)
		log.Info("deleted orphan instance", "call", lifecycle.CallString(c), "code", res.Code.String(), "error", res.ErrorText())
	}
}

// setSummary records the fleet summary of the leader's fleet pass; the
// scrapes export it from then on.
func (m *Metrics) setSummary(s lifecycle.Summary) { m.fleet.summary.Store(&s) }

// summarize returns the summary of the leader's last fleet pass, or one
// computed now from the cache.
func (f *fleetCollector) summarize() (lifecycle.Summary, error) {
	if s := f.summary.Load(); s != nil {
		return *s, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fleet, err := members(ctx, f.client, f.cfg, "")
	if err != nil {
		return lifecycle.Summary{}, err
	}
	return lifecycle.Summarize(f.cfg, f.now(), fleet, int(f.orphans.Load())), nil
}

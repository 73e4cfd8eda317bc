package machines

import (
	"context"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/purelifecycle/machine/lifecycle"
)

// The field indexes of the control cluster's cache.
const (
	machineClassIndex = "spec.class.name"
	machineNodeIndex  = "machine.node"
)

// Setup builds a Reconciler on the manager of the control cluster and the
// target cluster (nil: the manager's cluster is the target too, or there
// is none when the Config says so), registers the caches' indexes, and adds to
// the manager the controller named name with workers workers (MCM's
// --concurrent-syncs), the leader's fleet pass (fleet.go), the
// controller name+"-class" that removes the finalizers of classes and
// Secrets no longer in use (classes.go), and the controller name+"-node"
// that keeps MCM's finalizer on the machines' nodes and deletes the
// machine of a node that is deleted (nodes.go). A
// target cluster other than the manager's is added to the manager, which
// starts it.
func Setup(mgr ctrl.Manager, target cluster.Cluster, name string, workers int, opts Options) (*Reconciler, error) {
	noTarget := opts.Config != nil && opts.Config.NoTargetCluster
	if target == nil {
		target = mgr
	} else if err := mgr.Add(target); err != nil {
		return nil, err
	}
	ctx := context.Background() // bounds only the informers' creation
	if !noTarget {
		for _, ix := range Indexes() {
			if err := target.GetFieldIndexer().IndexField(ctx, ix.Object, ix.Field, ix.Extract); err != nil {
				return nil, err
			}
		}
	}
	ci := mgr.GetFieldIndexer()
	if err := ci.IndexField(ctx, &v1alpha1.Machine{}, machineClassIndex, func(o client.Object) []string {
		return []string{o.(*v1alpha1.Machine).Spec.Class.Name}
	}); err != nil {
		return nil, err
	}
	if err := ci.IndexField(ctx, &v1alpha1.Machine{}, machineNodeIndex, func(o client.Object) []string {
		if n := o.(*v1alpha1.Machine).Labels[lifecycle.NodeLabel]; n != "" {
			return []string{n}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	r, err := New(Clients{Control: mgr.GetClient(), ControlReader: mgr.GetAPIReader(),
		Target: target.GetClient(), TargetReader: target.GetAPIReader(),
		Recorder: mgr.GetEventRecorderFor(name)}, opts)
	if err != nil {
		return nil, err
	}
	if err := setupClasses(mgr, name+"-class", opts.Namespace); err != nil {
		return nil, err
	}
	if !noTarget {
		if err := setupNodes(mgr, target, name+"-node", opts.Namespace); err != nil {
			return nil, err
		}
	}
	f := r.fleet
	f.enqueue = make(chan event.GenericEvent)
	if err := mgr.Add(f); err != nil {
		return nil, err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(&v1alpha1.Machine{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{},
			predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}, deletionRequested))).
		Watches(&v1alpha1.MachineClass{}, handler.EnqueueRequestsFromMapFunc(r.machinesOfClass)).
		WatchesRawSource(source.Channel(f.enqueue, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1)})
	if !noTarget {
		b = b.WatchesRawSource(source.Kind(target.GetCache(), client.Object(&corev1.Node{}),
			handler.EnqueueRequestsFromMapFunc(r.machinesOfNode)))
	}
	return r, b.Complete(r)
}

// deletionRequested passes the update that marks an object for deletion.
var deletionRequested = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	return e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil
}}

// machinesOfClass maps a MachineClass to the machines that use it.
func (r *Reconciler) machinesOfClass(ctx context.Context, o client.Object) []reconcile.Request {
	return r.requests(ctx, client.InNamespace(o.GetNamespace()), client.MatchingFields{machineClassIndex: o.GetName()})
}

// machinesOfNode maps a node to the machines it belongs to: the machine
// its machine-name label names, and the machines whose node label names
// it.
func (r *Reconciler) machinesOfNode(ctx context.Context, o client.Object) []reconcile.Request {
	reqs := r.requests(ctx, client.InNamespace(r.opts.Namespace), client.MatchingFields{machineNodeIndex: o.GetName()})
	if m := o.GetLabels()[lifecycle.MachineNameLabel]; m != "" {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: r.opts.Namespace, Name: m}})
	}
	return reqs
}

// requests lists the machines opts select, as requests.
func (r *Reconciler) requests(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
	var list v1alpha1.MachineList
	if err := r.c.Control.List(ctx, &list, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing machines")
		return nil
	}
	reqs := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		reqs[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}
	}
	return reqs
}

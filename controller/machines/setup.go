package machines

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/lifecycle"
)

// setup registers the cache indexes the reconciler reads with, the
// controller named name with its workers: Machines, the Nodes and
// MachineClasses mapped to their machines, and the machines the fleet pass
// sends on granted; and the controller name+"-class" that keeps the
// finalizer of the classes in use (classfinalizer.go).
func (r *Reconciler) setup(mgr ctrl.Manager, name string, workers int, granted <-chan event.GenericEvent) error {
	// The indexes are registered before the manager starts; the context
	// only bounds the informers' creation, which does not wait.
	ctx := context.Background()
	idx := mgr.GetFieldIndexer()
	for _, ix := range cacheIndexes() {
		if err := idx.IndexField(ctx, ix.obj, ix.field, ix.fn); err != nil {
			return err
		}
	}
	if err := setupClassFinalizer(mgr, name+"-class", r.client, r.reader); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(&v1alpha1.Machine{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{},
			predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}, deletionRequested))).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.machinesOfNode)).
		Watches(&v1alpha1.Machine{}, handler.EnqueueRequestsFromMapFunc(r.namesakes), builder.WithPredicates(machineGone)).
		Watches(&v1alpha1.MachineClass{}, handler.EnqueueRequestsFromMapFunc(r.machinesOfClass)).
		WatchesRawSource(source.Channel(granted, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// cacheIndex is a field index of the manager's cache.
type cacheIndex struct {
	obj   client.Object
	field string
	fn    client.IndexerFunc
}

// cacheIndexes returns the field indexes the reconciler reads with.
func cacheIndexes() []cacheIndex {
	return []cacheIndex{
		{&corev1.Node{}, nodeProviderIDIndex, func(o client.Object) []string {
			return nonEmpty(o.(*corev1.Node).Spec.ProviderID)
		}},
		{&storagev1.VolumeAttachment{}, vaNodeIndex, func(o client.Object) []string {
			return nonEmpty(o.(*storagev1.VolumeAttachment).Spec.NodeName)
		}},
		{&v1alpha1.Machine{}, machineNameIndex, func(o client.Object) []string { return []string{o.GetName()} }},
		{&v1alpha1.Machine{}, machineNodeIndex, func(o client.Object) []string {
			m := o.(*v1alpha1.Machine)
			return nonEmpty(m.Labels[lifecycle.NodeLabel], m.Status.Node)
		}},
		{&v1alpha1.Machine{}, machineProviderID, func(o client.Object) []string {
			m := o.(*v1alpha1.Machine)
			pid := ""
			if m.Status.Lifecycle != nil {
				pid = m.Status.Lifecycle.ProviderID
			}
			return nonEmpty(m.Spec.ProviderID, pid)
		}},
		{&v1alpha1.Machine{}, machineClassIndex, func(o client.Object) []string {
			return nonEmpty(o.(*v1alpha1.Machine).Spec.Class.Name)
		}},
	}
}

// deletionRequested passes the update that sets the deletion timestamp.
var deletionRequested = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil
	},
}

// machineGone passes only the deletion of a machine.
var machineGone = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	UpdateFunc:  func(event.UpdateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// nonEmpty returns the distinct non-empty values.
func nonEmpty(vs ...string) []string {
	var out []string
	for _, v := range vs {
		if v != "" && (len(out) == 0 || out[len(out)-1] != v) {
			out = append(out, v)
		}
	}
	return out
}

// machinesOfNode maps a node to the machines it may belong to: by the node's
// machine-name label, by the machines' node label or recorded node name, and
// by providerID.
func (r *Reconciler) machinesOfNode(ctx context.Context, o client.Object) []reconcile.Request {
	n := o.(*corev1.Node)
	seen := map[types.NamespacedName]bool{}
	var out []reconcile.Request
	add := func(field, value string) {
		if value == "" {
			return
		}
		var list v1alpha1.MachineList
		if err := r.client.List(ctx, &list, client.MatchingFields{field: value}); err != nil {
			logf.FromContext(ctx).Error(err, "mapping a node to its machines", "node", n.Name)
			return
		}
		for i := range list.Items {
			k := client.ObjectKeyFromObject(&list.Items[i])
			if !seen[k] {
				seen[k] = true
				out = append(out, reconcile.Request{NamespacedName: k})
			}
		}
	}
	add(machineNameIndex, n.Labels[lifecycle.MachineNameLabel])
	add(machineNodeIndex, n.Name)
	add(machineProviderID, n.Spec.ProviderID)
	return out
}

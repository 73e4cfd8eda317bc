package machines

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/lifecycle"
)

// A MachineClass that machines name is kept from going while they exist,
// as MCM keeps its classes: without it, each of them would wait for the
// class (ProblemClassUnavailable), Running ones too, and so would their
// deletions, which hand the class to DeleteMachine. The class gets the
// finalizer ClassFinalizer once a machine the controller sees names it; a
// class being deleted loses it once no machine of its namespace names it,
// as the API server lists them (not the cache: under a machine selector
// the cache holds this controller's machines only, and another's may name
// the class). A class no machine named is deleted at once.

// ClassFinalizer is the finalizer of a MachineClass in use: MCM's, which
// it puts on its classes too.
const ClassFinalizer = lifecycle.Finalizer

// classFinalizer keeps the finalizer of the MachineClasses.
type classFinalizer struct {
	client client.Client // the manager's: reads from the cache
	reader client.Reader // the API server
}

// setupClassFinalizer registers the controller named name that keeps the
// classes' finalizer: it sees each class, and the class a machine names
// when the machine is created, deleted or names another class.
func setupClassFinalizer(mgr ctrl.Manager, name string, client client.Client, reader client.Reader) error {
	c := &classFinalizer{client: client, reader: reader}
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(&v1alpha1.MachineClass{}).
		Watches(&v1alpha1.Machine{}, handler.EnqueueRequestsFromMapFunc(classOfMachine), builder.WithPredicates(classNamed)).
		Complete(c)
}

// classOfMachine maps a machine to the class it names.
func classOfMachine(_ context.Context, o client.Object) []reconcile.Request {
	m := o.(*v1alpha1.Machine)
	if m.Spec.Class.Name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: m.Namespace, Name: m.Spec.Class.Name}}}
}

// classNamed passes a machine's creation and deletion, and the updates
// that change the class it names (the old class is left to its own next
// event: it keeps its finalizer until it is deleted).
var classNamed = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.(*v1alpha1.Machine).Spec.Class.Name != e.ObjectNew.(*v1alpha1.Machine).Spec.Class.Name
	},
}

// Reconcile adds the finalizer to a class in use, and removes it from a
// class being deleted that no machine names.
func (c *classFinalizer) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	mc := &v1alpha1.MachineClass{}
	if err := c.client.Get(ctx, req.NamespacedName, mc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	has := controllerutil.ContainsFinalizer(mc, ClassFinalizer)
	if mc.DeletionTimestamp.IsZero() {
		if has {
			return reconcile.Result{}, nil
		}
		var list v1alpha1.MachineList
		if err := c.client.List(ctx, &list, client.InNamespace(mc.Namespace), client.MatchingFields{machineClassIndex: mc.Name}); err != nil {
			return reconcile.Result{}, err
		}
		if len(list.Items) == 0 {
			return reconcile.Result{}, nil
		}
		controllerutil.AddFinalizer(mc, ClassFinalizer)
		return reconcile.Result{}, ignoreGone(c.client.Update(ctx, mc))
	}
	if !has {
		return reconcile.Result{}, nil
	}
	var list v1alpha1.MachineList
	if err := c.reader.List(ctx, &list, client.InNamespace(mc.Namespace)); err != nil {
		return reconcile.Result{}, err
	}
	for i := range list.Items {
		if list.Items[i].Spec.Class.Name == mc.Name {
			return reconcile.Result{}, nil // its deletion brings the class back here
		}
	}
	controllerutil.RemoveFinalizer(mc, ClassFinalizer)
	return reconcile.Result{}, ignoreGone(c.client.Update(ctx, mc))
}

// ignoreGone drops the error of a write to a class deleted meanwhile.
func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

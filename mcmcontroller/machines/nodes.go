package machines

import (
	"context"
	"fmt"
	"slices"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/purelifecycle/machine/lifecycle"
)

// NotManagedAnnotation on a node keeps the node controller away from it,
// as MCM's.
const NotManagedAnnotation = "node.machine.sapcloud.io/not-managed-by-mcm"

// The node controller does for the target cluster's nodes what MCM's
// machine controller does: the node of a machine (the one machine of the
// namespace whose node label names it) carries lifecycle.NodeFinalizer
// while the machine is not being deleted, so the node is not deleted
// behind the machine's back; a node that is being deleted, or is gone,
// while its machine is not being deleted has the machine deleted, so the
// machine is drained, its instance deleted and, through its MachineSet,
// replaced (a node the cloud controller manager removed, say). The
// machine's deletion takes the finalizer off (the lifecycle's
// KindRemoveNodeFinalizer).
type nodeController struct {
	control   client.Client // the control cluster's, cached
	target    client.Client // the target cluster's, cached
	namespace string
}

// setupNodes adds the node controller named name to the manager, on the
// target cluster's nodes.
func setupNodes(mgr ctrl.Manager, target cluster.Cluster, name, namespace string) error {
	nc := &nodeController{control: mgr.GetClient(), target: target.GetClient(), namespace: namespace}
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WatchesRawSource(source.Kind(target.GetCache(), client.Object(&corev1.Node{}), &handler.EnqueueRequestForObject{})).
		Complete(nc)
}

// Reconcile keeps the finalizer of the node req names, or deletes the
// node's machine when the node is being deleted or gone.
func (nc *nodeController) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	node := &corev1.Node{}
	err := nc.target.Get(ctx, req.NamespacedName, node)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	gone := apierrors.IsNotFound(err)
	if !gone {
		if _, skip := node.Annotations[NotManagedAnnotation]; skip {
			return ctrl.Result{}, nil
		}
	}
	var machines v1alpha1.MachineList
	if err := nc.control.List(ctx, &machines, client.InNamespace(nc.namespace), client.MatchingFields{machineNodeIndex: req.Name}); err != nil {
		return ctrl.Result{}, err
	}
	switch len(machines.Items) {
	case 0:
		return ctrl.Result{}, nil
	case 1:
	default:
		return ctrl.Result{}, fmt.Errorf("node %s: %d machines name it in their node label", req.Name, len(machines.Items))
	}
	m := &machines.Items[0]
	if m.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	if gone || node.DeletionTimestamp != nil {
		logf.FromContext(ctx).Info("the node is being deleted; deleting its machine", "node", req.Name, "machine", m.Name)
		return ctrl.Result{}, client.IgnoreNotFound(nc.control.Delete(ctx, m))
	}
	if slices.Contains(node.Finalizers, lifecycle.NodeFinalizer) {
		return ctrl.Result{}, nil
	}
	node.Finalizers = append(node.Finalizers, lifecycle.NodeFinalizer)
	return ctrl.Result{}, client.IgnoreNotFound(nc.target.Update(ctx, node))
}

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
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/purelifecycle/machine/retry"
)

// The finalizers of classes and Secrets. A pass gives the class its
// machine uses, and the class's Secrets, their finalizers (class.go), so a
// class is not deleted under its machines. The class controller takes
// them off again: a class being deleted loses ClassFinalizer once no
// machine uses it, and a Secret loses SecretFinalizer once no class of the
// namespace names it, as MCM's class and secret controllers do.

// classController removes the finalizers of the classes and Secrets of
// one namespace that nothing uses.
type classController struct {
	c         client.Client // reads from the cache
	secrets   client.Reader // reads Secrets from the API server
	namespace string
}

// setupClasses adds the class controller named name to the manager: it
// reconciles MachineClasses, and is asked again for a class whose
// machines change.
func setupClasses(mgr ctrl.Manager, name, namespace string) error {
	cc := &classController{c: mgr.GetClient(), secrets: mgr.GetAPIReader(), namespace: namespace}
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(&v1alpha1.MachineClass{}).
		Watches(&v1alpha1.Machine{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			m := o.(*v1alpha1.Machine)
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.Class.Name}}}
		})).
		Complete(cc)
}

// Reconcile removes the finalizer of the class req names when it is being
// deleted and no machine uses it, then the finalizers of its Secrets that
// no other class names.
func (cc *classController) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	mc := &v1alpha1.MachineClass{}
	if err := cc.c.Get(ctx, req.NamespacedName, mc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if mc.DeletionTimestamp == nil || !slices.Contains(mc.Finalizers, ClassFinalizer) {
		return ctrl.Result{}, nil
	}
	var machines v1alpha1.MachineList
	if err := cc.c.List(ctx, &machines, client.InNamespace(mc.Namespace), client.MatchingFields{machineClassIndex: mc.Name}); err != nil {
		return ctrl.Result{}, err
	}
	if len(machines.Items) > 0 {
		// Asked again when a machine of the class changes or goes; the
		// period is a backstop.
		return ctrl.Result{RequeueAfter: retry.Long}, nil
	}
	for _, sr := range []*corev1.SecretReference{mc.SecretRef, mc.CredentialsSecretRef} {
		if sr != nil {
			if err := cc.releaseSecret(ctx, mc, sr); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	mc.Finalizers = slices.DeleteFunc(mc.Finalizers, func(f string) bool { return f == ClassFinalizer })
	return ctrl.Result{}, client.IgnoreNotFound(cc.c.Update(ctx, mc))
}

// releaseSecret removes the finalizer of the Secret sr of class mc when
// no other class of the namespace names it.
func (cc *classController) releaseSecret(ctx context.Context, mc *v1alpha1.MachineClass, sr *corev1.SecretReference) error {
	ns := sr.Namespace
	if ns == "" {
		ns = mc.Namespace
	}
	var classes v1alpha1.MachineClassList
	if err := cc.c.List(ctx, &classes, client.InNamespace(mc.Namespace)); err != nil {
		return err
	}
	for i := range classes.Items {
		other := &classes.Items[i]
		if other.UID == mc.UID || other.DeletionTimestamp != nil {
			continue
		}
		for _, o := range []*corev1.SecretReference{other.SecretRef, other.CredentialsSecretRef} {
			if o != nil && o.Name == sr.Name && (o.Namespace == sr.Namespace || o.Namespace == "" && ns == mc.Namespace) {
				return nil // another class names it
			}
		}
	}
	s := &corev1.Secret{}
	if err := cc.secrets.Get(ctx, client.ObjectKey{Namespace: ns, Name: sr.Name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("secret %s/%s of class %s: %w", ns, sr.Name, mc.Name, err)
	}
	if !slices.Contains(s.Finalizers, SecretFinalizer) {
		return nil
	}
	s.Finalizers = slices.DeleteFunc(s.Finalizers, func(f string) bool { return f == SecretFinalizer })
	return client.IgnoreNotFound(cc.c.Update(ctx, s))
}

package machines

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
)

// A machine's driver calls are handed its class: the MachineClass its
// spec.class names in its namespace, read through the manager's cache, with
// the data of the Secret the class names, read from the API server (the
// cache holds bootstrap tokens only). A pass reads the class once, at its
// first observation. What keeps the class from being used becomes the
// input's Problem, so the lifecycle decides on it (the machine waits, and
// so does its deletion):
//
//   - a reference to another kind or group than MachineClass of
//     machine.purelifecycle.dev, or without a name: ProblemInvalidMachine;
//   - a class or Secret that does not exist: ProblemClassUnavailable;
//   - a class or Secret that could not be read now: ProblemClassNotReady,
//     which is asked again after the short period;
//   - a node template that fails NodeTemplate.Validate:
//     ProblemInvalidNodeTemplate.

// classRead is a machine's class as one pass read it.
type classRead struct {
	// class is what the driver is handed, when problem is ProblemNone.
	class driverapi.Class
	// problem keeps the class from being used; err says why.
	problem lifecycle.Problem
	err     error
}

// classOf returns the class of the pass's machine, read at the first call
// of the pass.
func (r *Reconciler) classOf(ctx context.Context, p *pass) *classRead {
	if p.class == nil {
		c := r.readClass(ctx, p.m)
		p.class = &c
		if c.problem != lifecycle.ProblemNone {
			p.log.V(1).Info("machine class unusable", "problem", c.problem.String(), "error", c.err.Error())
		}
	}
	return p.class
}

// readClass reads the class machine m names.
func (r *Reconciler) readClass(ctx context.Context, m *v1alpha1.Machine) classRead {
	ref := m.Spec.Class
	if ref.Kind != "" && ref.Kind != "MachineClass" || ref.APIGroup != "" && ref.APIGroup != v1alpha1.GroupVersion.Group || ref.Name == "" {
		return classRead{problem: lifecycle.ProblemInvalidMachine,
			err: fmt.Errorf("spec.class must name a MachineClass of %s, not %q of kind %q in group %q",
				v1alpha1.GroupVersion.Group, ref.Name, ref.Kind, ref.APIGroup)}
	}
	var mc v1alpha1.MachineClass
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: ref.Name}, &mc); err != nil {
		return classUnreadable("MachineClass "+ref.Name, err)
	}
	if t := mc.NodeTemplate; t != nil {
		if err := t.Validate(); err != nil {
			return classRead{problem: lifecycle.ProblemInvalidNodeTemplate, err: fmt.Errorf("MachineClass %s: %w", mc.Name, err)}
		}
	}
	c := driverapi.Class{Name: mc.Name, ProviderSpec: mc.ProviderSpec.Raw}
	if mc.SecretRef != nil {
		var s corev1.Secret
		if err := r.reader.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: mc.SecretRef.Name}, &s); err != nil {
			return classUnreadable("Secret "+mc.SecretRef.Name+" of MachineClass "+mc.Name, err)
		}
		c.Secret = s.Data
	}
	return classRead{class: c}
}

// classUnreadable is the class read of a class or secret that could not be
// read: unavailable when it does not exist, not ready when reading failed.
func classUnreadable(what string, err error) classRead {
	p := lifecycle.ProblemClassNotReady
	if apierrors.IsNotFound(err) {
		p = lifecycle.ProblemClassUnavailable
	}
	return classRead{problem: p, err: fmt.Errorf("reading %s: %w", what, err)}
}

// machineClassIndex indexes machines by the name of their class.
const machineClassIndex = "machine.class"

// machinesOfClass maps a MachineClass to the machines of its namespace
// that name it, so a class created, fixed or changed is read at once
// rather than at the machines' next requeue.
func (r *Reconciler) machinesOfClass(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.MachineList
	if err := r.client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{machineClassIndex: o.GetName()}); err != nil {
		logf.FromContext(ctx).Error(err, "mapping a machine class to its machines", "class", o.GetName())
		return nil
	}
	out := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}
	}
	return out
}

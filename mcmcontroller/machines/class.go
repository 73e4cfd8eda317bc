package machines

import (
	"context"
	"fmt"
	"slices"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/mcmcontroller/nodetemplate"
)

// The finalizers MCM's machine controller keeps on the classes machines use
// and on the Secrets classes use (machinecontroller.MCMFinalizerName and
// MCFinalizerName in MCM v0.62.1); MCM's other controllers and tools read
// them.
const (
	ClassFinalizer  = "machine.sapcloud.io/machine-controller-manager"
	SecretFinalizer = "machine.sapcloud.io/machine-controller"
)

// userDataKey is the key of the user data in a class's Secret.
const userDataKey = "userData"

// A machine's provider calls are handed its class: the MachineClass its
// spec.class names in its namespace, read through the control cluster's
// cache, with the data of the class's Secrets (secretRef, then
// credentialsSecretRef over it, as MCM merges them), read from the API
// server. A pass reads the class once, at its first observation. What
// keeps the class from being used becomes the input's Problem, so the
// lifecycle decides on it (the machine waits, and so does its deletion):
//
//   - a reference without a kind or a name (MCM's validation of a
//     Machine), or to another kind than MachineClass: ProblemInvalidMachine;
//   - a class or Secret that does not exist: ProblemClassUnavailable;
//   - a class or Secret that could not be read now, or a class or Secret
//     without its finalizer that could not be given it:
//     ProblemClassNotReady, asked again after the short period;
//   - a node template that MCM's validation refuses:
//     ProblemInvalidNodeTemplate.

// classRead is a machine's class as one pass read it.
type classRead struct {
	// class and secret are what MCM's provider is handed, data the
	// Secrets' merged data, when problem is ProblemNone.
	class  *v1alpha1.MachineClass
	secret *corev1.Secret
	data   map[string][]byte
	// problem keeps the class from being used; err says why.
	problem lifecycle.Problem
	err     error
}

// classOf returns the class of the pass's machine, read at the first call
// of the pass.
func (p *pass) classOf(ctx context.Context) *classRead {
	if p.class == nil {
		c := p.r.readClass(ctx, p.m)
		p.class = &c
		if c.problem != lifecycle.ProblemNone {
			p.log.V(1).Info("machine class unusable", "problem", c.problem.String(), "error", c.err.Error())
		}
	}
	return p.class
}

// readClass reads the class machine m names, and gives the class and its
// Secrets their finalizers when they lack them.
func (r *Reconciler) readClass(ctx context.Context, m *v1alpha1.Machine) classRead {
	ref := m.Spec.Class
	if ref.Kind != "MachineClass" || ref.Name == "" {
		return classRead{problem: lifecycle.ProblemInvalidMachine,
			err: fmt.Errorf("spec.class must name a MachineClass, not %q of kind %q", ref.Name, ref.Kind)}
	}
	mc := &v1alpha1.MachineClass{}
	if err := r.c.Control.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: ref.Name}, mc); err != nil {
		return classUnreadable("MachineClass "+ref.Name, err)
	}
	return r.classData(ctx, mc, true)
}

// classData validates class mc and reads its Secrets (secretRef, then
// credentialsSecretRef over it); with finalize, it gives the class and
// its Secrets their finalizers when they lack them.
func (r *Reconciler) classData(ctx context.Context, mc *v1alpha1.MachineClass, finalize bool) classRead {
	if err := nodetemplate.Validate(mc.NodeTemplate); err != nil {
		return classRead{problem: lifecycle.ProblemInvalidNodeTemplate, err: fmt.Errorf("MachineClass %s: %w", mc.Name, err)}
	}
	if finalize && mc.DeletionTimestamp == nil {
		if err := ensureFinalizer(ctx, r.c.Control, mc, ClassFinalizer); err != nil {
			return classRead{problem: lifecycle.ProblemClassNotReady, err: fmt.Errorf("MachineClass %s: its finalizer: %w", mc.Name, err)}
		}
	}
	c := classRead{class: mc, data: map[string][]byte{}}
	for _, sr := range []*corev1.SecretReference{mc.SecretRef, mc.CredentialsSecretRef} {
		if sr == nil {
			continue
		}
		ns := sr.Namespace
		if ns == "" {
			ns = mc.Namespace
		}
		s := &corev1.Secret{}
		what := "Secret " + ns + "/" + sr.Name + " of MachineClass " + mc.Name
		if err := r.c.ControlReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: sr.Name}, s); err != nil {
			return classUnreadable(what, err)
		}
		if finalize && s.DeletionTimestamp == nil {
			if err := ensureFinalizer(ctx, r.c.Control, s, SecretFinalizer); err != nil {
				return classRead{problem: lifecycle.ProblemClassNotReady, err: fmt.Errorf("%s: its finalizer: %w", what, err)}
			}
		}
		if c.secret == nil {
			c.secret = s
		}
		for k, v := range s.Data {
			c.data[k] = v
		}
	}
	return c
}

// classUnreadable is the classRead of a class or Secret that could not be
// read.
func classUnreadable(what string, err error) classRead {
	if apierrors.IsNotFound(err) {
		return classRead{problem: lifecycle.ProblemClassUnavailable, err: fmt.Errorf("%s does not exist", what)}
	}
	return classRead{problem: lifecycle.ProblemClassNotReady, err: fmt.Errorf("reading %s: %w", what, err)}
}

// ensureFinalizer gives obj the finalizer f when it lacks it.
func ensureFinalizer(ctx context.Context, c client.Client, obj client.Object, f string) error {
	if slices.Contains(obj.GetFinalizers(), f) {
		return nil
	}
	obj.SetFinalizers(append(obj.GetFinalizers(), f))
	return c.Update(ctx, obj)
}

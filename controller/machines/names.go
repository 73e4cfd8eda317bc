package machines

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
)

// A machine's name identifies it outside its namespace: a provider finds
// the instance of a machine whose instance is not recorded by the
// machine's name (driverapi.MachineRef), and the lifecycle finds a node by
// its machine-name label, which holds the name alone. Of two machines of
// one name in two namespaces the second would take the first's instance
// for one of an older incarnation of its own, and delete it, and the
// first's node for its own. So only one is acted on: a machine the
// controller has acted on (it has a phase or a recorded instance) holds the
// name before one it has not, and among those alike the one created first
// (creation times have whole seconds: at one time, the one of the smaller
// UID); any other waits, with the input's ProblemInvalidMachine,
// until the name is its own; it calls no driver and writes to no node, and
// its deletion waits too. A Warning event ReasonNameInUse names the
// holder.

// ReasonNameInUse is the reason of the Warning event recorded on a machine
// whose name a machine of another namespace holds.
const ReasonNameInUse = "NameInUse"

// nameHolder returns the key of the machine of another namespace that holds
// m's name, "" when the name is m's own.
func (r *Reconciler) nameHolder(ctx context.Context, m *v1alpha1.Machine) (string, error) {
	var list v1alpha1.MachineList
	if err := r.client.List(ctx, &list, client.MatchingFields{machineNameIndex: m.Name}); err != nil {
		return "", err
	}
	var holder *v1alpha1.Machine
	for i := range list.Items {
		o := &list.Items[i]
		if o.Namespace != m.Namespace && holdsBefore(o, m) && (holder == nil || holdsBefore(o, holder)) {
			holder = o
		}
	}
	if holder == nil {
		return "", nil
	}
	return client.ObjectKeyFromObject(holder).String(), nil
}

// holdsBefore reports whether a holds a name before b: a machine acted on
// before one not, then the one created first, then the smaller UID.
func holdsBefore(a, b *v1alpha1.Machine) bool {
	if sa, sb := actedOn(a), actedOn(b); sa != sb {
		return sa
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.UID < b.UID
}

// actedOn reports whether the controller has acted on m: it has a phase or
// an instance is recorded.
func actedOn(m *v1alpha1.Machine) bool {
	return m.Status.CurrentStatus.Phase != "" || m.Spec.ProviderID != "" ||
		m.Status.Lifecycle != nil && m.Status.Lifecycle.ProviderID != ""
}

// namesakes maps a machine that is gone to the machines of its name in
// other namespaces, one of which may hold the name now.
func (r *Reconciler) namesakes(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.MachineList
	if err := r.client.List(ctx, &list, client.MatchingFields{machineNameIndex: o.GetName()}); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if m := &list.Items[i]; m.Namespace != o.GetNamespace() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(m)})
		}
	}
	return out
}

// nameInUse logs and records, at most once per machine per repeatInterval,
// that the pass's machine waits for its name.
func (r *Reconciler) nameInUse(p *pass) {
	if !r.repeats.allow(string(p.m.UID)+"/name-in-use", r.now()) {
		return
	}
	p.log.Info("the machine's name is held by a machine of another namespace; waiting", "holder", p.nameHolder)
	r.recorder.Eventf(p.m, nil, corev1.EventTypeWarning, ReasonNameInUse, "Reconcile",
		"The machine %s, created first, holds the name %s: a provider and the nodes know a machine by its name alone. "+
			"This machine calls no driver and touches no node, and its deletion waits, until that machine is gone.", p.nameHolder, p.m.Name)
}

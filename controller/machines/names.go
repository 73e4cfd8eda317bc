package machines

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/lifecycle"
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
	otherNamespace := func(o *v1alpha1.Machine) bool { return o.Namespace != m.Namespace }
	holder, err := r.firstHolder(ctx, m, machineNameIndex, m.Name, otherNamespace, nil)
	if err != nil || holder == nil {
		return "", err
	}
	return client.ObjectKeyFromObject(holder).String(), nil
}

// firstHolder returns, of best and the machines the cache index field maps
// value to that candidate accepts, the one that holds before all others and
// before m (holdsBefore); nil when none does.
func (r *Reconciler) firstHolder(ctx context.Context, m *v1alpha1.Machine, field, value string,
	candidate func(*v1alpha1.Machine) bool, best *v1alpha1.Machine) (*v1alpha1.Machine, error) {
	var list v1alpha1.MachineList
	if err := r.client.List(ctx, &list, client.MatchingFields{field: value}); err != nil {
		return nil, err
	}
	for i := range list.Items {
		o := &list.Items[i]
		if candidate(o) && holdsBefore(o, m) && (best == nil || holdsBefore(o, best)) {
			best = o
		}
	}
	return best, nil
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

// namesakes maps a machine that is gone to the machines that may have
// waited for it: those of its name in other namespaces, one of which may
// hold the name now, and those that name its instance or its node.
func (r *Reconciler) namesakes(ctx context.Context, o client.Object) []reconcile.Request {
	seen := map[client.ObjectKey]bool{}
	var out []reconcile.Request
	add := func(field, value string, otherNamespace bool) {
		var list v1alpha1.MachineList
		if err := r.client.List(ctx, &list, client.MatchingFields{field: value}); err != nil {
			return
		}
		for i := range list.Items {
			m := &list.Items[i]
			k := client.ObjectKeyFromObject(m)
			if m.UID == o.GetUID() || otherNamespace && m.Namespace == o.GetNamespace() || seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, reconcile.Request{NamespacedName: k})
		}
	}
	add(machineNameIndex, o.GetName(), true)
	if m, ok := o.(*v1alpha1.Machine); ok {
		pids, nodes := instanceOf(m)
		for _, pid := range pids {
			add(machineProviderID, pid, false)
		}
		for _, n := range nodes {
			add(machineNodeIndex, n, false)
		}
	}
	return out
}

// A machine's instance and node are its own too. A machine copied from
// another (kubectl get -o yaml, a new name, kubectl create) carries the
// other's spec.providerID and node label: it would adopt the other's
// instance, make itself its owner, and relabel the other's node as its own,
// and the two would relabel the node in turn without end. So, as with names,
// of two machines that name one instance (spec.providerID, or the
// providerID their status records) or one node (the node label, or the node
// their status records) only the one that holds it before the other
// (holdsBefore) is acted on; the other waits with ProblemInvalidMachine and
// a Warning event ReasonInstanceInUse naming the holder, calls no driver
// and touches no node, and its deletion waits too, until the holder is
// gone.

// ReasonInstanceInUse is the reason of the Warning event recorded on a
// machine that names the instance or the node of another machine, which
// holds it.
const ReasonInstanceInUse = "InstanceInUse"

// instanceOf returns the providerIDs and node names machine m names.
func instanceOf(m *v1alpha1.Machine) (pids, nodes []string) {
	pid := ""
	if m.Status.Lifecycle != nil {
		pid = m.Status.Lifecycle.ProviderID
	}
	return nonEmpty(m.Spec.ProviderID, pid), nonEmpty(m.Labels[lifecycle.NodeLabel], m.Status.Node)
}

// instanceHolder returns the key of another machine that holds the
// instance or the node m names, and which of them ("instance ID" or "node
// N"); "" when m holds what it names.
func (r *Reconciler) instanceHolder(ctx context.Context, m *v1alpha1.Machine) (holder, what string, err error) {
	var best *v1alpha1.Machine
	other := func(o *v1alpha1.Machine) bool { return o.UID != m.UID }
	look := func(field, value, label string) error {
		found, err := r.firstHolder(ctx, m, field, value, other, best)
		if err != nil {
			return err
		}
		if found != best {
			best, what = found, label
		}
		return nil
	}
	pids, nodes := instanceOf(m)
	for _, pid := range pids {
		if err := look(machineProviderID, pid, "instance "+pid); err != nil {
			return "", "", err
		}
	}
	for _, n := range nodes {
		if err := look(machineNodeIndex, n, "node "+n); err != nil {
			return "", "", err
		}
	}
	if best == nil {
		return "", "", nil
	}
	return client.ObjectKeyFromObject(best).String(), what, nil
}

// instanceInUse records that the pass's machine waits for the instance or
// node another machine holds (waitsForHolder).
func (r *Reconciler) instanceInUse(p *pass) {
	r.waitsForHolder(p, ReasonInstanceInUse, "the machine names the instance or node of another machine; waiting",
		fmt.Sprintf("The machine %s holds the %s that this machine names (its spec.providerID, node label or status, as when a machine is "+
			"copied from another).", p.instanceHolder, p.instanceWhat), "holder", p.instanceHolder, "what", p.instanceWhat)
}

// nameInUse records that the pass's machine waits for its name
// (waitsForHolder).
func (r *Reconciler) nameInUse(p *pass) {
	r.waitsForHolder(p, ReasonNameInUse, "the machine's name is held by a machine of another namespace; waiting",
		fmt.Sprintf("The machine %s, created first, holds the name %s: a provider and the nodes know a machine by its name alone.",
			p.nameHolder, p.m.Name), "holder", p.nameHolder)
}

// waitsForHolder logs msg with kv and records a Warning event of reason
// with note, which it ends saying what the machine does meanwhile, at most
// once per machine and reason per repeatInterval.
func (r *Reconciler) waitsForHolder(p *pass, reason, msg, note string, kv ...any) {
	if !r.repeats.allow(string(p.m.UID)+"/holder/"+reason, r.now()) {
		return
	}
	p.log.Info(msg, kv...)
	r.recorder.Eventf(p.m, nil, corev1.EventTypeWarning, reason, "Reconcile",
		"%s This machine calls no driver and touches no node, and its deletion waits, until that machine is gone.", note)
}

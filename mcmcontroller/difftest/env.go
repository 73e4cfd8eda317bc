package difftest

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	"github.com/gardener/machine-controller-manager/pkg/client/clientset/versioned"
	machineclient "github.com/gardener/machine-controller-manager/pkg/client/clientset/versioned/typed/machine/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/purelifecycle/machine/mcmcontroller/mcmfake"
)

// MCMFinalizer is MCM's finalizer on machines and on the classes whose
// machines MCM reconciles.
const MCMFinalizer = "machine.sapcloud.io/machine-controller-manager"

// SecretFinalizer is the finalizer MCM's secret controller puts on the
// Secrets of classes; the default world's secret carries it, as MCM's
// class and secret controllers (which the test does not run) leave it.
const SecretFinalizer = "machine.sapcloud.io/machine-controller"

// Settings are the controller-wide settings a scenario runs under; both
// controllers are configured from them.
type Settings struct {
	// CreationTimeout, HealthTimeout, DrainTimeout, InPlaceUpdateTimeout
	// and PreserveTimeout are the defaults of MCM's flags of those names
	// (a machine's spec may override them).
	CreationTimeout, HealthTimeout, DrainTimeout, InPlaceUpdateTimeout, PreserveTimeout time.Duration
	// MaxEvictRetries is MCM's flag of that name.
	MaxEvictRetries int32
	// NodeConditions are the node conditions that make a machine unhealthy
	// when not False, comma-separated, as MCM's flag has them.
	NodeConditions string
}

// DefaultSettings are MCM's defaults.
var DefaultSettings = Settings{
	CreationTimeout:      20 * time.Minute,
	HealthTimeout:        10 * time.Minute,
	DrainTimeout:         2 * time.Hour,
	InPlaceUpdateTimeout: 20 * time.Minute,
	PreserveTimeout:      96 * time.Hour,
	MaxEvictRetries:      360,
	NodeConditions:       "KernelDeadlock,ReadonlyFilesystem,DiskPressure,NetworkUnavailable",
}

// Env is one scenario's world on the API server, as one controller runs
// it: the scenario's namespace, its machine and the fake cloud. The nodes
// and the bootstrap tokens of kube-system are cluster-wide; the runner
// clears them before a scenario, so scenarios run one after the other.
type Env struct {
	// Config reaches the API server; Core and Machines are clients of it.
	Config   *rest.Config
	Core     kubernetes.Interface
	Machines versioned.Interface
	// Namespace holds the machine, its class and its secret.
	Namespace string
	// Machine is the machine's name.
	Machine string
	// Driver is the fake cloud behind the controller.
	Driver *mcmfake.Driver
	// Frozen, NoTarget and Settings configure the controller: frozen (its
	// observer degraded), without a target cluster, and its settings.
	Frozen, NoTarget bool
	Settings         Settings

	ctl Controller
}

// machineClient returns the client of the scenario's machines.
func (e *Env) machineClient() machineclient.MachineInterface {
	return e.Machines.MachineV1alpha1().Machines(e.Namespace)
}

// build creates the world w in e's namespace and fake cloud.
func (e *Env) build(ctx context.Context, w *World) error {
	if _, err := e.Core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.Namespace}},
		metav1.CreateOptions{}); err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cloud", Finalizers: []string{SecretFinalizer}},
		Data: map[string][]byte{"userData": []byte("#!/bin/sh\necho <<BOOTSTRAP_TOKEN>> <<MACHINE_NAME>>\n")}}
	if w.Secret != nil {
		secret = w.Secret.DeepCopy()
	}
	secret.Namespace = e.Namespace
	if _, err := e.Core.CoreV1().Secrets(e.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return err
	}
	if !w.NoClass {
		class := &v1alpha1.MachineClass{
			ObjectMeta:   metav1.ObjectMeta{Name: ClassName, Finalizers: []string{MCMFinalizer}},
			ProviderSpec: runtime.RawExtension{Raw: []byte(`{}`)},
			SecretRef:    &corev1.SecretReference{Name: "cloud"},
			Provider:     "Test",
		}
		if w.Class != nil {
			class = w.Class.DeepCopy()
		}
		class.Namespace = e.Namespace
		if class.SecretRef != nil {
			class.SecretRef.Namespace = e.Namespace
		}
		if _, err := e.Machines.MachineV1alpha1().MachineClasses(e.Namespace).Create(ctx, class, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	m := w.Machine.DeepCopy()
	m.Namespace = e.Namespace
	if m.Spec.Class == (v1alpha1.ClassSpec{}) {
		m.Spec.Class = v1alpha1.ClassSpec{Kind: "MachineClass", Name: ClassName}
	}
	if m.Finalizers == nil {
		m.Finalizers = []string{MCMFinalizer}
	}
	status := m.Status
	created, err := e.Machines.MachineV1alpha1().Machines(e.Namespace).Create(ctx, m, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	e.Machine = created.Name
	if !isZeroStatus(&status) {
		stampStatus(&status, metav1.Now())
		created.Status = status
		if _, err := e.machineClient().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	for _, p := range w.Peers {
		p := p.DeepCopy()
		p.Namespace = e.Namespace
		if p.Spec.Class == (v1alpha1.ClassSpec{}) {
			p.Spec.Class = v1alpha1.ClassSpec{Kind: "MachineClass", Name: ClassName}
		}
		status := p.Status
		peer, err := e.Machines.MachineV1alpha1().Machines(e.Namespace).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		stampStatus(&status, metav1.Now())
		peer.Status = status
		if _, err := e.machineClient().UpdateStatus(ctx, peer, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	for _, in := range w.Instances {
		name, uid := in.Machine, string(created.UID)
		if name == "" {
			name = created.Name
		}
		if in.Foreign || name != created.Name {
			uid = "uid-of-another-machine"
		}
		e.Driver.NeedsInit = in.Uninitialized
		e.Driver.Add(name, uid, created.Spec.Class.Name)
	}
	e.Driver.NeedsInit = w.NeedsInit
	for _, n := range w.Nodes {
		if err := e.createNode(ctx, n); err != nil {
			return err
		}
	}
	if err := e.createPods(ctx, w.Pods); err != nil {
		return err
	}
	if w.Deleting {
		return e.deleteMachine(ctx)
	}
	return nil
}

// isZeroStatus reports a status with nothing to write.
func isZeroStatus(s *v1alpha1.MachineStatus) bool {
	return s.CurrentStatus.Phase == "" && s.LastOperation == (v1alpha1.LastOperation{}) && len(s.Conditions) == 0 &&
		len(s.Addresses) == 0 && s.LastKnownState == ""
}

// stampStatus sets the times of s left zero to now.
func stampStatus(s *v1alpha1.MachineStatus, now metav1.Time) {
	if s.CurrentStatus.LastUpdateTime.IsZero() {
		s.CurrentStatus.LastUpdateTime = now
	}
	if s.LastOperation.LastUpdateTime.IsZero() && s.LastOperation != (v1alpha1.LastOperation{}) {
		s.LastOperation.LastUpdateTime = now
	}
	stampConditions(s.Conditions, now)
}

// stampConditions sets the condition times left zero to now.
func stampConditions(cs []corev1.NodeCondition, now metav1.Time) {
	for i := range cs {
		if cs[i].LastHeartbeatTime.IsZero() {
			cs[i].LastHeartbeatTime = now
		}
		if cs[i].LastTransitionTime.IsZero() {
			cs[i].LastTransitionTime = now
		}
	}
}

// createNode creates the node, then writes its status.
func (e *Env) createNode(ctx context.Context, n corev1.Node) error {
	n = *n.DeepCopy()
	status := n.Status
	created, err := e.Core.CoreV1().Nodes().Create(ctx, &n, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	stampConditions(status.Conditions, metav1.Now())
	created.Status = status
	_, err = e.Core.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

// createPods creates the pods in e's namespace.
func (e *Env) createPods(ctx context.Context, pods []corev1.Pod) error {
	for _, p := range pods {
		p := p.DeepCopy()
		p.Namespace = e.Namespace
		if _, err := e.Core.CoreV1().Pods(e.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// setNodeConditions sets the node's conditions of the types of cs and
// keeps the others.
func (e *Env) setNodeConditions(ctx context.Context, name string, cs []corev1.NodeCondition) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := e.Core.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cs := append([]corev1.NodeCondition(nil), cs...)
		stampConditions(cs, metav1.Now())
		for _, c := range n.Status.Conditions {
			if !slices.ContainsFunc(cs, func(s corev1.NodeCondition) bool { return s.Type == c.Type }) {
				cs = append(cs, c)
			}
		}
		n.Status.Conditions = cs
		_, err = e.Core.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// changeNode applies change to the named node's object (labels,
// annotations, spec), again on a conflict.
func (e *Env) changeNode(ctx context.Context, name string, change func(*corev1.Node)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := e.Core.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		change(n)
		_, err = e.Core.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// deleteNode deletes the node.
func (e *Env) deleteNode(ctx context.Context, name string) error {
	return e.Core.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
}

// deleteMachine marks the machine for deletion.
func (e *Env) deleteMachine(ctx context.Context) error {
	return e.machineClient().Delete(ctx, e.Machine, metav1.DeleteOptions{})
}

// setLabel sets or, for "", deletes a label of the machine.
func (e *Env) setLabel(ctx context.Context, key, value string) error {
	return e.changeMachine(ctx, func(m *v1alpha1.Machine) { setOrDelete(&m.Labels, key, value) })
}

// setAnnotation sets or, for "", deletes an annotation of the machine.
func (e *Env) setAnnotation(ctx context.Context, key, value string) error {
	return e.changeMachine(ctx, func(m *v1alpha1.Machine) { setOrDelete(&m.Annotations, key, value) })
}

// changeMachine applies change to the machine's object, again on a
// conflict.
func (e *Env) changeMachine(ctx context.Context, change func(*v1alpha1.Machine)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		m, err := e.machineClient().Get(ctx, e.Machine, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(m)
		_, err = e.machineClient().Update(ctx, m, metav1.UpdateOptions{})
		return err
	})
}

// setOrDelete sets key to value in *m, made when nil, or deletes it for "".
func setOrDelete(m *map[string]string, key, value string) {
	if value == "" {
		delete(*m, key)
		return
	}
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[key] = value
}

// Advance makes the world look as it would d later to a controller that
// reads the real clock. Every timestamp a controller wrote and later
// compares with the clock moves back by d: the machine's
// status.currentStatus.lastUpdateTime (health and in-place timeouts) and
// preserveExpiryTime (the preservation's end),
// status.lastOperation.lastUpdateTime (MCM's 30 minutes of suppressed
// status writes), the times of the machine's copy of the node conditions
// (the five minutes NotReady that force a drain) and of every node's
// conditions, and whatever the controller keeps of its own (Backdater).
// The API server sets creationTimestamp and deletionTimestamp itself and
// never lets them change, so the timeouts counted from them, the creation
// timeout and the drain timeout, are shortened by d in the machine's spec
// instead (from the setting when the spec has none; never below 1ns):
// "elapsed+d > timeout" is "elapsed > timeout-d". The descriptions that
// print these timeouts (H7) print the shortened value. A bootstrap
// token's expiry is left alone.
func (e *Env) Advance(ctx context.Context, d time.Duration) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		m, err := e.machineClient().Get(ctx, e.Machine, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if m.Spec.MachineConfiguration == nil {
			m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{}
		}
		c := m.Spec.MachineConfiguration
		c.MachineCreationTimeout = shorten(c.MachineCreationTimeout, e.Settings.CreationTimeout, d)
		c.MachineDrainTimeout = shorten(c.MachineDrainTimeout, e.Settings.DrainTimeout, d)
		if b, ok := e.ctl.(Backdater); ok {
			b.BackdateObject(m, d)
		}
		m, err = e.machineClient().Update(ctx, m, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		s := &m.Status
		s.CurrentStatus.LastUpdateTime = back(s.CurrentStatus.LastUpdateTime, d)
		if t := s.CurrentStatus.PreserveExpiryTime; t != nil {
			*t = back(*t, d)
		}
		s.LastOperation.LastUpdateTime = back(s.LastOperation.LastUpdateTime, d)
		backConditions(s.Conditions, d)
		if b, ok := e.ctl.(Backdater); ok {
			b.BackdateStatus(m, d)
		}
		_, err = e.machineClient().UpdateStatus(ctx, m, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("backdating the machine: %w", err)
	}
	nodes, err := e.Core.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		backConditions(n.Status.Conditions, d)
		if _, err := e.Core.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("backdating node %s: %w", n.Name, err)
		}
	}
	return nil
}

// shorten returns the timeout t (def when nil) less d, at least 1ns.
func shorten(t *metav1.Duration, def, d time.Duration) *metav1.Duration {
	v := def
	if t != nil {
		v = t.Duration
	}
	return &metav1.Duration{Duration: max(v-d, time.Nanosecond)}
}

// back returns t moved d into the past; a zero t stays zero.
func back(t metav1.Time, d time.Duration) metav1.Time {
	if t.IsZero() {
		return t
	}
	return metav1.NewTime(t.Add(-d))
}

// backConditions moves the condition times d into the past.
func backConditions(cs []corev1.NodeCondition, d time.Duration) {
	for i := range cs {
		cs[i].LastHeartbeatTime = back(cs[i].LastHeartbeatTime, d)
		cs[i].LastTransitionTime = back(cs[i].LastTransitionTime, d)
	}
}

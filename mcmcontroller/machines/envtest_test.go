package machines_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/driver"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/codes"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/mcmcontroller/machines"
	"github.com/purelifecycle/machine/mcmcontroller/mcmfake"
)

// world is the drop-in controller against a real API server with MCM's
// CRDs, the fake cloud behind MCM's driver interface, and a kubelet that
// registers a Ready node for every instance.
type world struct {
	ctx   context.Context
	cfg   *rest.Config
	ns    string
	c     client.Client
	cloud *mcmfake.Driver
	prov  *recording
}

// recording is the fake cloud, recording the user data of each
// CreateMachine.
type recording struct {
	*mcmfake.Driver
	mu       sync.Mutex
	userData map[string]string
}

func (r *recording) CreateMachine(ctx context.Context, req *driver.CreateMachineRequest) (*driver.CreateMachineResponse, error) {
	if req != nil && req.Machine != nil && req.Secret != nil {
		r.mu.Lock()
		r.userData[req.Machine.Name] = string(req.Secret.Data["userData"])
		r.mu.Unlock()
	}
	return r.Driver.CreateMachine(ctx, req)
}

func (r *recording) userDataOf(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.userData[name]
}

// mcmCRDs returns the directory of MCM v0.62.1's CRDs in the module cache.
func mcmCRDs(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/gardener/machine-controller-manager").Output()
	if err != nil {
		t.Fatalf("finding MCM's module: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "kubernetes", "crds")
}

// worlds counts the worlds made: each names its controllers apart, as
// controller-runtime wants every controller's name unique in a process.
var worlds int

func newWorld(t *testing.T, change ...func(*machines.Options)) *world {
	t.Helper()
	w := bareWorld(t)
	w.startOurs(t, change...)
	return w
}

// bareWorld is the world without a machine controller.
func bareWorld(t *testing.T) *world {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("needs KUBEBUILDER_ASSETS (tools/envtest/build.sh)")
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{mcmCRDs(t)}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	scheme := runtime.NewScheme()
	must(t, clientgoscheme.AddToScheme(scheme))
	must(t, v1alpha1.AddToScheme(scheme))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	must(t, err)

	w := &world{ctx: ctx, cfg: cfg, ns: "shoot--test", c: c, cloud: mcmfake.New()}
	w.prov = &recording{Driver: w.cloud, userData: map[string]string{}}
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.ns}}))
	go w.kubelet()
	return w
}

// startOurs starts the drop-in controller, with the options change
// makes; stop stops it and waits until it has.
func (w *world) startOurs(t *testing.T, change ...func(*machines.Options)) (stop func()) {
	t.Helper()
	return startDropIn(t, w.cfg, w.ns, w.prov, change...)
}

// startDropIn starts the drop-in controller against the API server of cfg
// on the machines of namespace ns, with provider and the options change
// makes; stop stops it and waits until it has.
func startDropIn(t *testing.T, cfg *rest.Config, ns string, provider driver.Driver, change ...func(*machines.Options)) (stop func()) {
	t.Helper()
	scheme := runtime.NewScheme()
	must(t, clientgoscheme.AddToScheme(scheme))
	must(t, v1alpha1.AddToScheme(scheme))
	inNamespace := cache.ByObject{Namespaces: map[string]cache.Config{ns: {}}}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Logger: zap.New(zap.UseDevMode(true)),
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&v1alpha1.Machine{}: inNamespace, &v1alpha1.MachineClass{}: inNamespace, &v1alpha1.MachineSet{}: inNamespace,
		}}})
	must(t, err)
	worlds++
	opts := machines.Options{Provider: provider, Namespace: ns, TokenExtraGroups: "system:bootstrappers:machine",
		FleetInterval: time.Second}
	for _, c := range change {
		c(&opts)
	}
	_, err = machines.Setup(mgr, nil, fmt.Sprintf("machine-%d", worlds), 2, opts)
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// kubelet registers a node for every instance of the cloud, Ready when it
// registers (a test may change its conditions later), ends
// the pods being deleted, and deletes the nodes of instances that are
// gone, every 200 ms.
func (w *world) kubelet() {
	for w.ctx.Err() == nil {
		live := map[string]bool{}
		for _, inst := range w.cloud.Instances() {
			live[inst.NodeName] = true
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: inst.NodeName,
				Labels: map[string]string{corev1.LabelHostname: inst.NodeName}},
				Spec: corev1.NodeSpec{ProviderID: inst.ProviderID}}
			if err := w.c.Create(w.ctx, n); err == nil || apierrors.IsAlreadyExists(err) {
				_ = w.c.Get(w.ctx, client.ObjectKeyFromObject(n), n)
				if len(n.Status.Conditions) == 0 {
					now := metav1.Now()
					n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
						Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}
					_ = w.c.Status().Update(w.ctx, n)
				}
			}
		}
		// Pods being deleted on the nodes end at once.
		var pods corev1.PodList
		if w.c.List(w.ctx, &pods) == nil {
			for i := range pods.Items {
				if pods.Items[i].DeletionTimestamp != nil {
					_ = w.c.Delete(w.ctx, &pods.Items[i], client.GracePeriodSeconds(0))
				}
			}
		}
		var nodes corev1.NodeList
		if w.c.List(w.ctx, &nodes) == nil {
			for i := range nodes.Items {
				if !live[nodes.Items[i].Name] && nodes.Items[i].DeletionTimestamp == nil {
					_ = w.c.Delete(w.ctx, &nodes.Items[i])
				}
			}
		}
		select {
		case <-w.ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// updateNodeStatus changes the status of the named node with change, as
// a kubelet would, again on a conflict with the controller's own writes
// of the node (its finalizer, its template).
func (w *world) updateNodeStatus(t *testing.T, name string, change func(*corev1.Node)) {
	t.Helper()
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := w.c.Get(w.ctx, client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		change(n)
		return w.c.Status().Update(w.ctx, n)
	}))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond every 100 ms for up to 30 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func (w *world) class(t *testing.T, name string) {
	t.Helper()
	must(t, w.c.Create(w.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name + "-secret"},
		Data: map[string][]byte{"userData": []byte("#!/bin/sh\njoin --token <<BOOTSTRAP_TOKEN>> --name <<MACHINE_NAME>>\n")}}))
	must(t, w.c.Create(w.ctx, &v1alpha1.MachineClass{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		ProviderSpec: runtime.RawExtension{Raw: []byte(`{"size":"small"}`)},
		SecretRef:    &corev1.SecretReference{Namespace: w.ns, Name: name + "-secret"}, Provider: "Fake"}))
}

func (w *world) machine(t *testing.T, name, class string, change func(*v1alpha1.Machine)) {
	t.Helper()
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec: v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: class}}}
	if change != nil {
		change(m)
	}
	must(t, w.c.Create(w.ctx, m))
}

func (w *world) get(t *testing.T, name string) *v1alpha1.Machine {
	t.Helper()
	m := &v1alpha1.Machine{}
	err := w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: name}, m)
	if apierrors.IsNotFound(err) {
		return nil
	}
	must(t, err)
	return m
}

func hasFinalizer(o client.Object, f string) bool {
	for _, x := range o.GetFinalizers() {
		if x == f {
			return true
		}
	}
	return false
}

// A machine goes from nothing to Running as under MCM: the provider gets
// the user data with the bootstrap token and the machine's name filled
// in, the machine gets spec.providerID, its node label and MCM's last
// operation, the class and its Secret get MCM's finalizers, the node the
// machine's node template, and the bootstrap token is deleted once the
// node joined.
func TestMachineRunsAsUnderMCM(t *testing.T) {
	w := newWorld(t)
	w.class(t, "small")
	w.machine(t, "worker-a-1", "small", func(m *v1alpha1.Machine) {
		m.Spec.NodeTemplateSpec.Labels = map[string]string{"pool": "a"}
	})
	var m *v1alpha1.Machine
	eventually(t, "the machine Running", func() bool {
		m = w.get(t, "worker-a-1")
		return m != nil && m.Status.CurrentStatus.Phase == v1alpha1.MachineRunning
	})
	insts := w.cloud.Instances()
	if len(insts) != 1 || m.Spec.ProviderID != insts[0].ProviderID || m.Labels["node"] != insts[0].NodeName {
		t.Fatalf("machine providerID %q node %q; instances %+v", m.Spec.ProviderID, m.Labels["node"], insts)
	}
	// MCM v0.62.1 ends the text there; later MCMs add " in <elapsed>", as
	// the lifecycle's text does.
	if lo := m.Status.LastOperation; !strings.HasPrefix(lo.Description, "Machine worker-a-1 successfully joined the cluster") ||
		lo.State != v1alpha1.MachineStateSuccessful || lo.Type != v1alpha1.MachineOperationCreate {
		t.Fatalf("last operation %+v", lo)
	}
	if !hasFinalizer(m, lifecycle.Finalizer) {
		t.Fatalf("machine finalizers %v", m.Finalizers)
	}
	ud := w.prov.userDataOf("worker-a-1")
	if strings.Contains(ud, "<<") || !strings.Contains(ud, "--name worker-a-1") {
		t.Fatalf("user data %q", ud)
	}
	mc := &v1alpha1.MachineClass{}
	must(t, w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: "small"}, mc))
	s := &corev1.Secret{}
	must(t, w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: "small-secret"}, s))
	if !hasFinalizer(mc, machines.ClassFinalizer) || !hasFinalizer(s, machines.SecretFinalizer) {
		t.Fatalf("class finalizers %v, secret finalizers %v", mc.Finalizers, s.Finalizers)
	}
	eventually(t, "the node template on the node", func() bool {
		n := &corev1.Node{}
		return w.c.Get(w.ctx, client.ObjectKey{Name: insts[0].NodeName}, n) == nil && n.Labels["pool"] == "a" &&
			n.Labels[lifecycle.MachineNameLabel] == "worker-a-1"
	})
	eventually(t, "the bootstrap token deleted", func() bool {
		var secrets corev1.SecretList
		must(t, w.c.List(w.ctx, &secrets, client.InNamespace(metav1.NamespaceSystem)))
		return len(secrets.Items) == 0
	})
}

// A machine marked for deletion is drained, its instance deleted, its
// node deleted, and it goes; its class, no longer used and deleted, loses
// its finalizer, and so does its Secret.
func TestMachineDeletedAsUnderMCM(t *testing.T) {
	w := newWorld(t)
	w.class(t, "small")
	w.machine(t, "worker-b-1", "small", nil)
	eventually(t, "the machine Running", func() bool {
		m := w.get(t, "worker-b-1")
		return m != nil && m.Status.CurrentStatus.Phase == v1alpha1.MachineRunning
	})
	node := w.cloud.Instances()[0].NodeName
	must(t, w.c.Create(w.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "app"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "x"}}}}))
	must(t, w.c.Delete(w.ctx, &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "worker-b-1"}}))
	eventually(t, "the machine gone", func() bool { return w.get(t, "worker-b-1") == nil })
	if n := len(w.cloud.Instances()); n != 0 {
		t.Fatalf("%d instances left", n)
	}
	p := &corev1.Pod{}
	err := w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: "app"}, p)
	if err == nil && p.DeletionTimestamp == nil {
		t.Fatal("the node's pod was not evicted")
	}
	eventually(t, "the node deleted", func() bool {
		return apierrors.IsNotFound(w.c.Get(w.ctx, client.ObjectKey{Name: node}, &corev1.Node{}))
	})
	must(t, w.c.Delete(w.ctx, &v1alpha1.MachineClass{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "small"}}))
	eventually(t, "the class gone", func() bool {
		return apierrors.IsNotFound(w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: "small"}, &v1alpha1.MachineClass{}))
	})
	s := &corev1.Secret{}
	must(t, w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: "small-secret"}, s))
	if hasFinalizer(s, machines.SecretFinalizer) {
		t.Fatalf("secret finalizers %v", s.Finalizers)
	}
}

// A Running machine whose node turns NotReady goes Unknown, and once its
// health timeout has passed and the fleet limiter grants it, Failed, with
// MCM's last operation.
func TestUnhealthyMachineFailsThroughTheLimiter(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	cfg.VerifyOwner = false
	cfg.HealthTimeout = 3 * time.Second
	w := newWorld(t, func(o *machines.Options) { o.Config = &cfg })
	w.class(t, "small")
	w.machine(t, "worker-c-1", "small", nil)
	eventually(t, "the machine Running", func() bool {
		m := w.get(t, "worker-c-1")
		return m != nil && m.Status.CurrentStatus.Phase == v1alpha1.MachineRunning
	})
	w.updateNodeStatus(t, w.cloud.Instances()[0].NodeName, func(n *corev1.Node) {
		n.Status.Conditions[0].Status, n.Status.Conditions[0].Reason = corev1.ConditionFalse, "KubeletNotReady"
		n.Status.Conditions[0].LastTransitionTime = metav1.Now()
	})
	eventually(t, "the machine Unknown", func() bool {
		return w.get(t, "worker-c-1").Status.CurrentStatus.Phase == v1alpha1.MachineUnknown
	})
	var m *v1alpha1.Machine
	eventually(t, "the machine Failed", func() bool {
		m = w.get(t, "worker-c-1")
		return m.Status.CurrentStatus.Phase == v1alpha1.MachineFailed
	})
	if lo := m.Status.LastOperation; !strings.Contains(lo.Description, "health checks failing since last") ||
		lo.Type != v1alpha1.MachineOperationHealthCheck || lo.State != v1alpha1.MachineStateFailed {
		t.Fatalf("last operation %+v", lo)
	}
}

// The leader's orphan collection deletes an instance of the class that no
// machine owns, and leaves the machines' own.
func TestOrphanInstanceIsDeleted(t *testing.T) {
	w := newWorld(t, func(o *machines.Options) { o.OrphanInterval = time.Second })
	w.class(t, "small")
	w.machine(t, "worker-d-1", "small", nil)
	eventually(t, "the machine Running", func() bool {
		m := w.get(t, "worker-d-1")
		return m != nil && m.Status.CurrentStatus.Phase == v1alpha1.MachineRunning
	})
	ghost := w.cloud.Add("ghost-1", "4d1f2b8e-0000-4000-8000-000000000001", "small")
	eventually(t, "the orphan deleted", func() bool {
		_, ok := w.cloud.Instance(ghost.ProviderID)
		return !ok
	})
	if insts := w.cloud.Instances(); len(insts) != 1 || insts[0].MachineName != "worker-d-1" {
		t.Fatalf("instances %+v", insts)
	}
}

// A provider that needs InitializeMachine, and fails it twice, gets it
// asked again until it succeeds; the machine then runs, with one
// instance.
func TestInitializationFailsAndRecovers(t *testing.T) {
	w := newWorld(t)
	w.cloud.NeedsInit = true
	w.cloud.FailNext(mcmfake.MethodInitialize, "worker-i-1", codes.Internal, codes.Internal)
	w.class(t, "small")
	w.machine(t, "worker-i-1", "small", nil)
	var m *v1alpha1.Machine
	eventually(t, "the machine Running", func() bool {
		m = w.get(t, "worker-i-1")
		return m != nil && m.Status.CurrentStatus.Phase == v1alpha1.MachineRunning
	})
	if n := w.cloud.Count(mcmfake.MethodInitialize, "worker-i-1"); n < 3 {
		t.Fatalf("%d InitializeMachine calls; the two failures were not retried", n)
	}
	if insts := w.cloud.Instances(); len(insts) != 1 || !insts[0].Initialized || m.Spec.ProviderID != insts[0].ProviderID {
		t.Fatalf("instances %+v, machine on %q", insts, m.Spec.ProviderID)
	}
}

// A machine force-deleted whose node reports a volume attached is deleted
// after the volume's attachment is: after the forced drain the drop-in
// deletes the node's volume attachments and waits for them to go before
// the instance is deleted, as MCM does.
func TestDeletionWithVolumeAttachments(t *testing.T) {
	w := newWorld(t)
	w.class(t, "small")
	w.machine(t, "worker-v-1", "small", nil)
	eventually(t, "the machine Running", func() bool {
		m := w.get(t, "worker-v-1")
		return m != nil && m.Status.CurrentStatus.Phase == v1alpha1.MachineRunning
	})
	node := w.cloud.Instances()[0].NodeName
	pv := "pv-1"
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va-1"},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: mcmfake.CSIDriver, NodeName: node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}}}
	must(t, w.c.Create(w.ctx, va))
	// The node reports the volume attached, as a kubelet does.
	w.updateNodeStatus(t, node, func(n *corev1.Node) {
		n.Status.VolumesAttached = []corev1.AttachedVolume{{Name: "kubernetes.io/csi/" + mcmfake.CSIDriver + "^vol-1"}}
	})
	// Forced, as MCM's force-deletion label asks: the drain does not wait
	// for the kubelet to detach volumes, and their attachments go.
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		m := w.get(t, "worker-v-1")
		m.Labels[lifecycle.ForceDeletionLabel] = "True"
		return w.c.Update(w.ctx, m)
	}))
	must(t, w.c.Delete(w.ctx, w.get(t, "worker-v-1")))
	eventually(t, "the machine gone", func() bool { return w.get(t, "worker-v-1") == nil })
	if err := w.c.Get(w.ctx, client.ObjectKeyFromObject(va), &storagev1.VolumeAttachment{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the volume attachment is left: %v", err)
	}
	if w.cloud.Count(mcmfake.MethodDelete, "worker-v-1") == 0 || len(w.cloud.Instances()) != 0 {
		t.Fatalf("the instance was not deleted: calls %+v", w.cloud.Calls())
	}
}

// A Running machine's node carries MCM's node finalizer; a node deleted
// behind the machine's back (by the cloud controller manager, say) has
// its machine deleted, as under MCM, and both go.
func TestNodeDeletedDeletesItsMachine(t *testing.T) {
	w := newWorld(t)
	w.class(t, "small")
	w.machine(t, "worker-n-1", "small", nil)
	eventually(t, "the machine Running", func() bool {
		m := w.get(t, "worker-n-1")
		return m != nil && m.Status.CurrentStatus.Phase == v1alpha1.MachineRunning
	})
	node := &corev1.Node{}
	eventually(t, "the node's finalizer", func() bool {
		return w.c.Get(w.ctx, client.ObjectKey{Name: w.cloud.Instances()[0].NodeName}, node) == nil &&
			hasFinalizer(node, lifecycle.NodeFinalizer)
	})
	must(t, w.c.Delete(w.ctx, node))
	eventually(t, "the machine gone", func() bool { return w.get(t, "worker-n-1") == nil })
	eventually(t, "the node gone", func() bool {
		return apierrors.IsNotFound(w.c.Get(w.ctx, client.ObjectKeyFromObject(node), &corev1.Node{}))
	})
	if n := len(w.cloud.Instances()); n != 0 {
		t.Fatalf("%d instances left", n)
	}
}

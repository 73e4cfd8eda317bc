//go:build mcmref

package difftest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	"github.com/gardener/machine-controller-manager/pkg/client/clientset/versioned"
	machineinformers "github.com/gardener/machine-controller-manager/pkg/client/informers/externalversions"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/drain"
	machinecontroller "github.com/gardener/machine-controller-manager/pkg/util/provider/machinecontroller"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machineutils"
	mcmoptions "github.com/gardener/machine-controller-manager/pkg/util/provider/options"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	coreinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
	"github.com/purelifecycle/machine/mcmcontroller/mcmdriver"
)

// mcmWorld is MCM's machine controller against a real API server, with
// the project's in-memory provider behind MCM's driver interface.
type mcmWorld struct {
	ctx      context.Context
	ns       string
	core     kubernetes.Interface
	machines versioned.Interface
	ctl      machinecontroller.Controller
	cloud    *lifecycletest.Provider
}

func newMCMWorld(t *testing.T) *mcmWorld {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" || os.Getenv("MCM_DIR") == "" {
		t.Skip("needs KUBEBUILDER_ASSETS and MCM_DIR (run.sh sets it)")
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join(os.Getenv("MCM_DIR"), "kubernetes", "crds")},
		ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	w := &mcmWorld{ctx: ctx, ns: "shoot--diff", core: kubernetes.NewForConfigOrDie(cfg),
		machines: versioned.NewForConfigOrDie(cfg), cloud: lifecycletest.NewProvider()}
	must(t, create(ctx, w.core.CoreV1().Namespaces(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.ns}}))

	machineFactory := machineinformers.NewFilteredSharedInformerFactory(w.machines, 0, w.ns, nil)
	controlFactory := coreinformers.NewFilteredSharedInformerFactory(w.core, 0, w.ns, nil)
	targetFactory := coreinformers.NewSharedInformerFactory(w.core, 0)
	safety := mcmoptions.SafetyOptions{
		MachineCreationTimeout:                   metav1.Duration{Duration: 20 * time.Minute},
		MachineHealthTimeout:                     metav1.Duration{Duration: 10 * time.Minute},
		MachineDrainTimeout:                      metav1.Duration{Duration: drain.DefaultMachineDrainTimeout},
		MaxEvictRetries:                          drain.DefaultMaxEvictRetries,
		PvDetachTimeout:                          metav1.Duration{Duration: 2 * time.Minute},
		PvReattachTimeout:                        metav1.Duration{Duration: 90 * time.Second},
		MachineSafetyOrphanVMsPeriod:             metav1.Duration{Duration: 15 * time.Minute},
		MachineSafetyAPIServerStatusCheckPeriod:  metav1.Duration{Duration: time.Minute},
		MachineSafetyAPIServerStatusCheckTimeout: metav1.Duration{Duration: 30 * time.Second},
	}
	w.ctl, err = machinecontroller.NewController(w.ns, w.machines.MachineV1alpha1(), w.core, w.core,
		mcmdriver.ToMCM(w.cloud), targetFactory, controlFactory.Core().V1().Secrets(),
		machineFactory.Machine().V1alpha1().MachineClasses(), machineFactory.Machine().V1alpha1().Machines(),
		record.NewFakeRecorder(1000), safety, "KernelDeadlock,ReadonlyFilesystem,DiskPressure,NetworkUnavailable", "",
		semver.MustParse("1.34.0"), machineutils.LongRetry)
	if err != nil {
		t.Fatal(err)
	}
	machineFactory.Start(ctx.Done())
	controlFactory.Start(ctx.Done())
	targetFactory.Start(ctx.Done())
	for typ, ok := range machineFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("cache of %v", typ)
		}
	}
	controlFactory.WaitForCacheSync(ctx.Done())
	targetFactory.WaitForCacheSync(ctx.Done())
	return w
}

type creator[T any] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
}

func create[T any](ctx context.Context, c creator[T], obj T) error {
	_, err := c.Create(ctx, obj, metav1.CreateOptions{})
	return err
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// reconcile runs one reconcile of MCM's controller on the machine as the
// API server has it, once the controller's caches show that version.
func (w *mcmWorld) reconcile(t *testing.T, name string) (time.Duration, error) {
	t.Helper()
	m, err := w.machines.MachineV1alpha1().Machines(w.ns).Get(w.ctx, name, metav1.GetOptions{})
	must(t, err)
	return machinecontroller.ReconcileOnce(w.ctx, w.ctl, m)
}

// MCM's own controller, reconcile by reconcile through the added
// ReconcileOnce, creates a machine's instance with the project's provider
// behind MCM's driver interface: the differential tests stand on this.
func TestMCMCreatesAMachineReconcileByReconcile(t *testing.T) {
	w := newMCMWorld(t)
	must(t, create(w.ctx, w.core.CoreV1().Secrets(w.ns), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cloud"},
		Data: map[string][]byte{"userData": []byte("#!/bin/sh\necho <<BOOTSTRAP_TOKEN>>\n")}}))
	must(t, create(w.ctx, w.machines.MachineV1alpha1().MachineClasses(w.ns), &v1alpha1.MachineClass{
		// The finalizer MCM's class controller adds, without which MCM's
		// machine controller does not reconcile the class's machines.
		ObjectMeta:   metav1.ObjectMeta{Name: "class", Finalizers: []string{machinecontroller.MCMFinalizerName}},
		ProviderSpec: runtime.RawExtension{Raw: []byte(`{}`)},
		SecretRef:    &corev1.SecretReference{Name: "cloud", Namespace: w.ns},
		Provider:     "Test",
	}))
	// A name of at least five bytes: MCM derives the bootstrap token's ID
	// from the name's last five and panics on a shorter one.
	must(t, create(w.ctx, w.machines.MachineV1alpha1().Machines(w.ns), &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: "worker-a-1"},
		Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "class"}},
	}))
	var m *v1alpha1.Machine
	for i := 0; i < 10; i++ {
		// MCM reads through its caches: let them see the last write.
		time.Sleep(200 * time.Millisecond)
		retry, err := w.reconcile(t, "worker-a-1")
		t.Logf("reconcile %d: retry %v, error %v", i, retry, err)
		var gerr error
		m, gerr = w.machines.MachineV1alpha1().Machines(w.ns).Get(w.ctx, "worker-a-1", metav1.GetOptions{})
		must(t, gerr)
		if m.Status.CurrentStatus.Phase == v1alpha1.MachinePending && m.Spec.ProviderID != "" {
			break
		}
	}
	if m.Status.CurrentStatus.Phase != v1alpha1.MachinePending || m.Spec.ProviderID == "" {
		t.Fatalf("MCM did not create the machine: phase %q, providerID %q, last operation %+v",
			m.Status.CurrentStatus.Phase, m.Spec.ProviderID, m.Status.LastOperation)
	}
	if n := len(w.cloud.Instances()); n != 1 {
		t.Fatalf("%d instances", n)
	}
	if inst := w.cloud.Instances()[0]; inst.MachineName != "worker-a-1" || string(m.UID) != inst.CreatorUID {
		t.Fatalf("instance %+v of machine %s", inst, m.UID)
	}
	t.Logf("MCM's last operation: %+v", m.Status.LastOperation)
}

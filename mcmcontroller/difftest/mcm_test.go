//go:build mcmref

package difftest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Masterminds/semver/v3"
	machineinformers "github.com/gardener/machine-controller-manager/pkg/client/informers/externalversions"
	machinecontroller "github.com/gardener/machine-controller-manager/pkg/util/provider/machinecontroller"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machineutils"
	mcmoptions "github.com/gardener/machine-controller-manager/pkg/util/provider/options"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// apiServer is the one envtest every test of the package shares; nil when
// the environment lacks KUBEBUILDER_ASSETS or MCM_DIR.
var apiServer *rest.Config

// TestMain starts the one envtest every test shares, with MCM's CRDs from
// the copy run.sh made.
func TestMain(m *testing.M) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" || os.Getenv("MCM_DIR") == "" {
		fmt.Println("difftest: needs KUBEBUILDER_ASSETS and MCM_DIR (run.sh sets it); the envtest tests skip")
		os.Exit(m.Run())
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join(os.Getenv("MCM_DIR"), "kubernetes", "crds")},
		ErrorIfCRDPathMissing: true}
	// Lists are served by etcd, not by the API server's watch cache: from
	// the cache, a list right after a write of another kind took up to a
	// tenth of a second (the cache waits to be as fresh as etcd), and the
	// snapshots around every reconcile list every kind.
	env.ControlPlane.GetAPIServer().Configure().Set("watch-cache", "false")
	cfg, err := env.Start()
	if err != nil {
		fmt.Println("difftest: starting envtest:", err)
		os.Exit(1)
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	apiServer = cfg
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

// needAPIServer skips t without the shared envtest.
func needAPIServer(t *testing.T) {
	t.Helper()
	if apiServer == nil {
		t.Skip("needs KUBEBUILDER_ASSETS and MCM_DIR (run.sh sets it)")
	}
}

// mcmController is MCM's own machine controller, made with its
// NewController over real clients and informers of one scenario's
// namespace, driven through the ReconcileMachine that run.sh adds to a
// copy of MCM (testdata/hook.go.txt).
type mcmController struct {
	env    *Env
	cancel context.CancelFunc
	ctl    machinecontroller.Controller
	// synced lists, per kind, the API server's objects and the cache's,
	// by name and resourceVersion.
	synced []syncPair
}

// syncPair reads one kind from the API server and from a cache.
type syncPair struct {
	kind       string
	api, cache func(ctx context.Context) (map[string]string, error)
}

// Name implements Controller.
func (c *mcmController) Name() string { return "mcm" }

// Name implements Controller.
func (p *planted) Name() string { return "planted" }

// Start implements Controller.
func (c *mcmController) Start(ctx context.Context, env *Env) error {
	c.env = env
	ctx, c.cancel = context.WithCancel(ctx)
	machineFactory := machineinformers.NewFilteredSharedInformerFactory(env.Machines, 0, env.Namespace, nil)
	controlFactory := coreinformers.NewFilteredSharedInformerFactory(env.Core, 0, env.Namespace, nil)
	var target kubernetes.Interface = env.Core
	targetFactory := coreinformers.NewSharedInformerFactory(env.Core, 0)
	if env.NoTarget {
		target, targetFactory = nil, nil
	}
	s := env.Settings
	safety := mcmoptions.SafetyOptions{
		MachineCreationTimeout:                   metav1.Duration{Duration: s.CreationTimeout},
		MachineHealthTimeout:                     metav1.Duration{Duration: s.HealthTimeout},
		MachineDrainTimeout:                      metav1.Duration{Duration: s.DrainTimeout},
		MachineInPlaceUpdateTimeout:              metav1.Duration{Duration: s.InPlaceUpdateTimeout},
		MachinePreserveTimeout:                   metav1.Duration{Duration: s.PreserveTimeout},
		MaxEvictRetries:                          s.MaxEvictRetries,
		PvDetachTimeout:                          metav1.Duration{Duration: 2 * time.Minute},
		PvReattachTimeout:                        metav1.Duration{Duration: 90 * time.Second},
		MachineSafetyOrphanVMsPeriod:             metav1.Duration{Duration: 15 * time.Minute},
		MachineSafetyAPIServerStatusCheckPeriod:  metav1.Duration{Duration: time.Minute},
		MachineSafetyAPIServerStatusCheckTimeout: metav1.Duration{Duration: 30 * time.Second},
		MachineControllerFrozen:                  env.Frozen,
	}
	var err error
	c.ctl, err = machinecontroller.NewController(env.Namespace, env.Machines.MachineV1alpha1(), env.Core, target,
		env.Driver, targetFactory, controlFactory.Core().V1().Secrets(),
		machineFactory.Machine().V1alpha1().MachineClasses(), machineFactory.Machine().V1alpha1().Machines(),
		record.NewFakeRecorder(1000), safety, s.NodeConditions, "", semver.MustParse("1.34.0"), machineutils.LongRetry)
	if err != nil {
		return err
	}
	machineFactory.Start(ctx.Done())
	controlFactory.Start(ctx.Done())
	for typ, ok := range machineFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("cache of %v", typ)
		}
	}
	controlFactory.WaitForCacheSync(ctx.Done())

	ns := env.Namespace
	machines := machineFactory.Machine().V1alpha1().Machines().Informer().GetStore()
	classes := machineFactory.Machine().V1alpha1().MachineClasses().Informer().GetStore()
	secrets := controlFactory.Core().V1().Secrets().Informer().GetStore()
	c.synced = []syncPair{
		{"machines", func(ctx context.Context) (map[string]string, error) {
			l, err := env.Machines.MachineV1alpha1().Machines(ns).List(ctx, metav1.ListOptions{})
			return versions(l, err)
		}, storeVersions(machines)},
		{"classes", func(ctx context.Context) (map[string]string, error) {
			l, err := env.Machines.MachineV1alpha1().MachineClasses(ns).List(ctx, metav1.ListOptions{})
			return versions(l, err)
		}, storeVersions(classes)},
		{"secrets", func(ctx context.Context) (map[string]string, error) {
			l, err := env.Core.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
			return versions(l, err)
		}, storeVersions(secrets)},
	}
	if targetFactory == nil {
		return nil
	}
	targetFactory.Start(ctx.Done())
	targetFactory.WaitForCacheSync(ctx.Done())
	nodes := targetFactory.Core().V1().Nodes().Informer().GetStore()
	vas := targetFactory.Storage().V1().VolumeAttachments().Informer().GetStore()
	c.synced = append(c.synced, syncPair{"nodes", func(ctx context.Context) (map[string]string, error) {
		l, err := env.Core.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		return versions(l, err)
	}, storeVersions(nodes)}, syncPair{"volumeattachments", func(ctx context.Context) (map[string]string, error) {
		l, err := env.Core.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
		return versions(l, err)
	}, storeVersions(vas)})
	return nil
}

// storeVersions reads the names and resourceVersions of a cache.
func storeVersions(s cache.Store) func(context.Context) (map[string]string, error) {
	return func(context.Context) (map[string]string, error) {
		out := map[string]string{}
		for _, x := range s.List() {
			o, ok := x.(metav1.Object)
			if !ok {
				return nil, fmt.Errorf("%T in a cache", x)
			}
			out[o.GetName()] = o.GetResourceVersion()
		}
		return out, nil
	}
}

// waitSynced waits until MCM's caches show what the API server has.
func (c *mcmController) waitSynced(ctx context.Context) error {
	return wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, p := range c.synced {
			a, err := p.api(ctx)
			if err != nil {
				return false, err
			}
			b, err := p.cache(ctx)
			if err != nil {
				return false, err
			}
			if !sameVersions(a, b) {
				return false, nil
			}
		}
		return true, nil
	})
}

// Reconcile implements Controller: MCM reads the real clock, which the
// runner's backdating has made the simulated now.
func (c *mcmController) Reconcile(ctx context.Context, machine string, _ time.Time) (Result, error) {
	if err := c.waitSynced(ctx); err != nil {
		return Result{}, fmt.Errorf("waiting for MCM's caches: %w", err)
	}
	queue, retry, err := machinecontroller.ReconcileMachine(ctx, c.ctl, machine)
	return Result{Requeue: retry, Detail: queue}, err
}

// Stop implements Controller.
func (c *mcmController) Stop() { c.cancel() }

var _ Controller = (*mcmController)(nil)

// runner is the one Runner of the shared envtest: its count of runs names
// every scenario's namespace apart, whichever test runs it.
var runner *Runner

// newMCMRunner returns the runner of the shared envtest.
func newMCMRunner(t *testing.T) *Runner {
	t.Helper()
	needAPIServer(t)
	if runner == nil {
		runner = &Runner{Config: apiServer}
	}
	return runner
}

// must fails t on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// step returns step i of sc, or an empty step for a reconcile after the
// steps that lets the machine settle.
func (sc *Scenario) step(i int) *Step {
	if i < len(sc.Steps) {
		return &sc.Steps[i]
	}
	return &Step{}
}

// logObservation writes one observation to t's log.
func logObservation(t *testing.T, st *Step, o *Observation) {
	t.Helper()
	var acts []string
	for _, a := range st.Do {
		acts = append(acts, a.Name)
	}
	t.Logf("step %d %v rows %v: %s err=%q requeue=%v | phase %q op %s/%s %q code %q pid %q node %q fin %v\n  calls %v\n  writes:\n    %s",
		o.Step, acts, st.Rows, o.Result.Detail, o.Err, o.Result.Requeue, o.Machine.Phase, o.Machine.Op.Type, o.Machine.Op.State,
		o.Machine.Op.Description, o.Machine.Op.ErrorCode, o.Machine.ProviderID, o.Machine.NodeLabel, o.Machine.Finalizers,
		o.Calls, strings.Join(o.Writes, "\n    "))
}

// Every scenario of the library runs through MCM's own controller, and
// each reconcile does what the rows document: the scenarios are checked
// against MCM before they judge the project's controller. Each runs twice,
// in two namespaces, and the second run is compared with the first as the
// project's controller will be, without deviations: MCM against itself
// differs nowhere, so what the observations keep after normalisation is
// the controller's doing and nothing else.
func TestMCMScenarios(t *testing.T) {
	r := newMCMRunner(t)
	start := time.Now()
	scs := Scenarios()
	covered := map[string]bool{}
	for i := range scs {
		sc := &scs[i]
		t.Run(sc.Name, func(t *testing.T) {
			obs := mcmRun(t, r, sc)
			for j := range obs {
				logObservation(t, sc.step(j), &obs[j])
				if obs[j].Settle {
					continue
				}
				failed := sc.Steps[j].Failed(&obs[j])
				for _, f := range failed {
					t.Errorf("step %d (rows %v): MCM did not do as documented: want %s", j, sc.Steps[j].Rows, f)
				}
				if len(failed) == 0 {
					for _, row := range sc.Steps[j].Rows {
						covered[row] = true
					}
				}
			}
			again, err := r.Run(context.Background(), &mcmController{}, sc)
			must(t, err)
			alone := *sc
			alone.Deviations = nil
			refused, _ := Compare(&alone, obs, again)
			ends, _ := CompareEnds(&alone, obs, again)
			for _, d := range append(refused, ends...) {
				t.Errorf("MCM against itself: %s", d)
			}
		})
	}
	var ids []string
	for id := range covered {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	t.Logf("%d scenarios, each run twice, in %v; rows exercised and checked (%d): %v", len(scs), time.Since(start), len(ids), ids)
}

// planted is MCM's controller with a planted divergence: after each
// reconcile it rewrites MCM's "Creating machine on cloud provider" to a
// text MCM never writes.
type planted struct{ mcmController }

// Reconcile implements Controller.
func (p *planted) Reconcile(ctx context.Context, machine string, now time.Time) (Result, error) {
	res, err := p.mcmController.Reconcile(ctx, machine, now)
	m, gerr := p.env.machineClient().Get(ctx, machine, metav1.GetOptions{})
	if gerr == nil && m.Status.LastOperation.Description == "Creating machine on cloud provider" {
		m.Status.LastOperation.Description = "Creating the machine on cloud provider"
		_, gerr = p.env.machineClient().UpdateStatus(ctx, m, metav1.UpdateOptions{})
	}
	if gerr != nil && !apierrors.IsNotFound(gerr) {
		return res, gerr
	}
	return res, err
}

// A controller whose LastOperation text differs from MCM's in one step
// fails the comparison at that step, even in a scenario that accepts
// deviations at other steps.
func TestPlantedDivergenceFails(t *testing.T) {
	r := newMCMRunner(t)
	var sc *Scenario
	for _, s := range Scenarios() {
		if s.Name == "create-to-running" {
			sc = &s
		}
	}
	if sc == nil {
		t.Fatal("no scenario create-to-running")
	}
	sc.Deviations = []Deviation{{Step: 0, Heading: "A stage that advances goes straight on", Test: "TestDeletionHappyPathAllocatesNothing"}}
	refused, _, _, _, err := r.Differential(context.Background(), &mcmController{}, &planted{}, sc)
	must(t, err)
	t.Logf("refused: %q", refused)
	if len(refused) == 0 || !strings.Contains(refused[0], "step 1: lastOperation.description") ||
		!strings.Contains(refused[0], "Creating the machine on cloud provider") {
		t.Fatalf("the planted divergence passed: refused %q", refused)
	}
}

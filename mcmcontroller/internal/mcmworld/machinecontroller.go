package mcmworld

import (
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/gardener/machine-controller-manager/pkg/client/clientset/versioned"
	machineinformers "github.com/gardener/machine-controller-manager/pkg/client/informers/externalversions"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/drain"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/driver"
	machinecontroller "github.com/gardener/machine-controller-manager/pkg/util/provider/machinecontroller"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machineutils"
	mcmoptions "github.com/gardener/machine-controller-manager/pkg/util/provider/options"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
)

// DefaultNodeConditions is MCM's --node-conditions default: the node
// conditions other than Ready that make MCM's machine controller count a
// machine unhealthy unless they are False.
const DefaultNodeConditions = "KernelDeadlock,ReadonlyFilesystem,DiskPressure,NetworkUnavailable"

// MachineSafetyDefaults returns the safety options of MCM's machine
// controller as the command line of an MCM provider defaults them
// (--machine-creation-timeout 20m, --machine-health-timeout 10m, ...).
func MachineSafetyDefaults() mcmoptions.SafetyOptions {
	return mcmoptions.SafetyOptions{
		MachineCreationTimeout:                   metav1.Duration{Duration: 20 * time.Minute},
		MachineHealthTimeout:                     metav1.Duration{Duration: 10 * time.Minute},
		MachineDrainTimeout:                      metav1.Duration{Duration: drain.DefaultMachineDrainTimeout},
		MachineInPlaceUpdateTimeout:              metav1.Duration{Duration: 20 * time.Minute},
		MaxEvictRetries:                          drain.DefaultMaxEvictRetries,
		PvDetachTimeout:                          metav1.Duration{Duration: 2 * time.Minute},
		PvReattachTimeout:                        metav1.Duration{Duration: 90 * time.Second},
		MachinePreserveTimeout:                   metav1.Duration{Duration: 96 * time.Hour},
		MachineSafetyOrphanVMsPeriod:             metav1.Duration{Duration: 15 * time.Minute},
		MachineSafetyAPIServerStatusCheckPeriod:  metav1.Duration{Duration: time.Minute},
		MachineSafetyAPIServerStatusCheckTimeout: metav1.Duration{Duration: 30 * time.Second},
	}
}

// StartMCMMachineController starts MCM's own machine controller
// (pkg/util/provider/machinecontroller) with drv as its provider and
// [MachineSafetyDefaults], as an MCM provider's binary does: informers on
// the control namespace's machines, classes and secrets, target informers
// on the whole (same) API server, [DefaultNodeConditions], and the API
// server's version as the target's. It runs until the test ends, or
// until stop is called: from then on its informers stop and every request
// it makes fails, as if it had been scaled down (its goroutines cannot be
// ended; see the package doc), so another controller can take over.
//
// A test of another machine controller starts that one instead, beside
// the same control controllers.
func (w *World) StartMCMMachineController(drv driver.Driver) (stop func()) {
	w.t.Helper()
	return w.StartMCMMachineControllerWith(drv, MachineSafetyDefaults())
}

// StartMCMMachineControllerWith is [World.StartMCMMachineController] with
// its own safety options.
func (w *World) StartMCMMachineControllerWith(drv driver.Driver, safety mcmoptions.SafetyOptions) (stop func()) {
	w.t.Helper()
	halt := make(chan struct{})
	var once sync.Once
	stop = func() { once.Do(func() { close(halt) }) }
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-halt:
		case <-w.Ctx.Done():
		}
	}()
	info, err := w.Core.Discovery().ServerVersion()
	if err != nil {
		w.t.Fatalf("the API server's version: %v", err)
	}
	version, err := semver.NewVersion(info.GitVersion)
	if err != nil {
		w.t.Fatalf("the API server's version %q: %v", info.GitVersion, err)
	}
	cfg := w.gatedConfig("machine-controller", halt)
	machines := versioned.NewForConfigOrDie(cfg)
	core := kubernetes.NewForConfigOrDie(cfg)
	machineFactory := machineinformers.NewFilteredSharedInformerFactory(machines, 0, w.Namespace, nil)
	controlFactory := coreinformers.NewFilteredSharedInformerFactory(core, 0, w.Namespace, nil)
	targetFactory := coreinformers.NewSharedInformerFactory(core, 0)
	ctl, err := machinecontroller.NewController(w.Namespace, machines.MachineV1alpha1(), core, core, drv,
		targetFactory, controlFactory.Core().V1().Secrets(),
		machineFactory.Machine().V1alpha1().MachineClasses(), machineFactory.Machine().V1alpha1().Machines(),
		record.NewFakeRecorder(1000), safety, DefaultNodeConditions, "", version, machineutils.LongRetry)
	if err != nil {
		w.t.Fatalf("MCM's machine controller: %v", err)
	}
	w.run("MCM's machine controller", ctl, done, machineFactory, controlFactory, targetFactory)
	return stop
}

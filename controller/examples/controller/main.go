// Command controller is the smallest Machine controller built on package
// machines: a manager, the fake cloud provider and its fake kubelet, and
// machines.New. It expects the Machine and MachineClass CRDs installed
// (cmd/manager installs them, or kubectl apply -f config/crd). Run it
// against a cluster of your own; each machine names its MachineClass in
// spec.class:
//
//	go run ./examples/controller -kubeconfig ~/.kube/config
//	kubectl create -f - <<EOF
//	apiVersion: machine.purelifecycle.dev/v1alpha1
//	kind: MachineClass
//	metadata: {name: fake, namespace: default}
//	---
//	apiVersion: machine.purelifecycle.dev/v1alpha1
//	kind: Machine
//	metadata: {name: example-1, namespace: default}
//	spec: {class: {name: fake}}
//	EOF
//	kubectl get machines -w    # Pending, then Running
//
// cmd/manager is the full command: leader election, probes, authenticated
// metrics, flags for every option.
package main

import (
	"flag"
	"log/slog"
	"os"
	"time"

	"github.com/go-logr/logr"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/controller/fakecloud"
	"github.com/purelifecycle/machine/controller/machines"
	"github.com/purelifecycle/machine/driverapi"
)

func main() {
	flag.Parse() // -kubeconfig, which controller-runtime defines
	ctrl.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, nil)))
	log := ctrl.Log.WithName("example")

	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme: scheme,
		Cache:  machines.CacheOptions(), // only bootstrap token secrets are cached
	})
	if err != nil {
		log.Error(err, "manager")
		os.Exit(1)
	}

	cloud := fakecloud.New()
	if _, err := machines.New(mgr, machines.Options{
		Driver:                  cloud,
		Class:                   driverapi.Class{Name: "fake"}, // the orphan collection's
		MaxConcurrentReconciles: 4,
	}); err != nil {
		log.Error(err, "controller")
		os.Exit(1)
	}
	// The fake cloud's instances join as Ready nodes.
	if err := mgr.Add(&fakecloud.Kubelet{Provider: cloud, Client: mgr.GetClient(), Interval: 2 * time.Second}); err != nil {
		log.Error(err, "fake kubelet")
		os.Exit(1)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "stopped")
		os.Exit(1)
	}
}

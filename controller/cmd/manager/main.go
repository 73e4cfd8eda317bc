// Command manager runs the Machine controller against the
// cluster of a kubeconfig (--kubeconfig, else $KUBECONFIG, else in-cluster),
// with an in-process fake cloud provider:
//
//	go run ./cmd/manager --kubeconfig ~/.kube/config --fake-kubelet
//
// It installs the Machine CRD (machine.purelifecycle.dev/v1alpha1), then
// decides every Machine's lifecycle with the purelifecycle core. With
// --fake-kubelet it also registers a Ready node for every instance the fake
// provider creates, so machines reach Running without real VMs. Metrics are
// served on --metrics-bind-address at /metrics: purelifecycle_decisions_total
// by rule (the "input." rules count refused inputs),
// purelifecycle_anomalies_total by anomaly, and the fleet summary
// (purelifecycle_machines and its kin). Besides the events the decisions
// ask for, every anomaly a pass reports and every refused input is recorded
// as a Warning event on the machine, once per pass.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/controller/config"
	"github.com/purelifecycle/machine/controller/fakecloud"
	"github.com/purelifecycle/machine/controller/machines"
	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
)

func main() {
	metricsAddr := flag.String("metrics-bind-address", ":8080", "address the metrics endpoint binds to; 0 disables it")
	installCRD := flag.Bool("install-crd", true, "create or update the Machine CRD before starting")
	fakeKubelet := flag.Bool("fake-kubelet", false, "register a Ready node for every instance of the fake provider")
	orphanInterval := flag.Duration("orphan-interval", 10*time.Minute, "how often to collect orphan instances; 0 disables it")
	verbose := flag.Bool("v", false, "log every decision, also those that change nothing")
	flag.Parse()

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug - 1 // logr's V(1)
	}
	ctrl.SetLogger(logr.FromSlogHandler(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
	log := ctrl.Log.WithName("main")
	if err := run(ctrl.SetupSignalHandler(), *metricsAddr, *installCRD, *fakeKubelet, *orphanInterval); err != nil {
		log.Error(err, "controller failed")
		os.Exit(1)
	}
}

func run(ctx context.Context, metricsAddr string, installCRD, fakeKubelet bool, orphanInterval time.Duration) error {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	scheme := Scheme()
	if installCRD {
		if err := InstallCRDs(ctx, cfg, scheme); err != nil {
			return err
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: metricsAddr},
		Cache:   CacheOptions(),
	})
	if err != nil {
		return err
	}
	provider := fakecloud.New()
	r, err := NewReconciler(mgr, provider, lifecycle.DefaultConfig())
	if err != nil {
		return err
	}
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	if orphanInterval > 0 {
		if err := mgr.Add(r.OrphanCollector(orphanInterval)); err != nil {
			return err
		}
	}
	if fakeKubelet {
		if err := mgr.Add(&fakecloud.Kubelet{Provider: provider, Client: mgr.GetClient(), Interval: 2 * time.Second}); err != nil {
			return err
		}
	}
	return mgr.Start(ctx)
}

// Scheme returns the scheme of the controller: client-go's types and the
// Machine.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// CacheOptions restricts the cached Secrets to bootstrap tokens, the only
// secrets the controller reads.
func CacheOptions() cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Secret{}: {
			Namespaces: map[string]cache.Config{lifecycle.BootstrapTokenNamespace: {}},
			Field:      fields.OneTermEqualSelector("type", string(corev1.SecretTypeBootstrapToken)),
		},
	}}
}

// NewReconciler returns the reconciler of mgr over driver with cfg, with
// its metrics registered in controller-runtime's registry.
func NewReconciler(mgr ctrl.Manager, driver driverapi.Driver, cfg lifecycle.Config) (*machines.Reconciler, error) {
	r := &machines.Reconciler{
		Client:   mgr.GetClient(),
		Reader:   mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("purelifecycle-machine-controller"),
		Driver:   driver,
		Class: driverapi.Class{Name: "fake", Secret: map[string][]byte{
			"userData": []byte("#!/bin/sh\n# join the cluster with bootstrap token " + machines.BootstrapTokenPlaceholder + "\n"),
		}},
		Config: cfg,
	}
	m, err := machines.NewMetrics(metrics.Registry, mgr.GetClient(), &r.Config, time.Now)
	if err != nil {
		return nil, err
	}
	r.Metrics = m
	return r, nil
}

// InstallCRDs creates the example's CRDs, or updates them, and waits until
// they are established.
func InstallCRDs(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme) error {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	crds, err := config.CRDs()
	if err != nil {
		return err
	}
	for _, crd := range crds {
		old := &apiextensionsv1.CustomResourceDefinition{}
		switch err := c.Get(ctx, client.ObjectKeyFromObject(crd), old); {
		case apierrors.IsNotFound(err):
			err = c.Create(ctx, crd)
			if err != nil {
				return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
			}
		case err != nil:
			return err
		default:
			crd.ResourceVersion = old.ResourceVersion
			if err := c.Update(ctx, crd); err != nil {
				return fmt.Errorf("updating CRD %s: %w", crd.Name, err)
			}
		}
		for {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(crd), got); err == nil && established(got) {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

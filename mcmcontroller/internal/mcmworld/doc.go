// Package mcmworld is a test world for fleets of MCM machines: a real
// Kubernetes API server (envtest) with the CRDs of machine-controller-manager
// v0.62.1, and MCM's own MachineSet, MachineDeployment and safety
// (overshooting) controllers running against it, as MCM's controller
// manager runs them. A machine controller, the component the project
// replaces, is the test's to choose: MCM's own
// ([World.StartMCMMachineController], with an MCM provider such as
// [github.com/purelifecycle/machine/mcmcontroller/mcmfake]) or another, started
// beside the same control controllers. Tests that run both in the same
// world see whether a replacement keeps MCM's fleet controllers working.
//
// A test of a machine controller, in outline:
//
//	w := mcmworld.Start(t)
//	cloud := mcmfake.New()
//	w.StartMCMMachineController(cloud) // or start another with w.ControllerConfig, w.Namespace, cloud
//	w.StartKubelet(cloud)
//	w.CreateClass("class-a")
//	w.CreateDeployment("pool-a", "class-a", 2)
//	w.WaitFor("the deployment available", func() bool {
//		return mcmworld.DeploymentAvailable(w.Deployment("pool-a"))
//	})
//
// What a World runs:
//
//   - an API server and etcd from KUBEBUILDER_ASSETS ([Start] skips the
//     test without it), with MCM's CRDs from MCM's module ([CRDDir]);
//   - the control namespace ([DefaultNamespace] unless [WithNamespace]);
//   - MCM's pkg/controller.NewController with informers on the control
//     namespace and a node informer on the whole server, the safety
//     options MCM's command line defaults ([ControlSafetyDefaults]), five
//     workers per queue ([WithWorkers]);
//   - on request, MCM's machine controller and a fake kubelet
//     ([Kubelet]) that registers, heartbeats and deletes the Nodes of a
//     fake cloud's instances and lets a test make a node NotReady or
//     unhealthy.
//
// The control cluster and the target cluster are the same API server, as in
// many of MCM's own tests: Machines and Nodes live side by side, Nodes
// cluster-scoped, the rest in the control namespace.
//
// What it leaves out: no scheduler, controller manager or kubelets run,
// so there are no pods to drain (MCM's drain finds none), no volumes or
// volume attachments, no garbage collector (owner references do not
// cascade: MCM's own finalizers and deletions do the work they do) and no
// node lifecycle controller (a node goes NotReady only when the Kubelet
// says so). No cluster autoscaler runs (MCM writes its annotations during
// rollouts; nothing reads them), and MCM's in-place updates and machine
// preservation are not exercised. Events go to fake recorders, and also to
// the API server through MCM's own broadcasters.
//
// MCM's controllers cannot be stopped cleanly (their Run waits for workers
// that wait on queues Run shuts down only after they return), so their
// goroutines outlive the test; when the test ends, their clients fail
// every request and their metrics collectors are unregistered from
// Prometheus's default registry, so the next World starts its own. Worlds
// must therefore not run in parallel in one test binary. MCM logs through
// klog, which the package silences unless MCMWORLD_KLOG is set to a
// verbosity (MCMWORLD_KLOG=2, say).
package mcmworld

// Package machines is the drop-in machine controller for MCM's providers:
// it reconciles MCM's Machines (machine.sapcloud.io/v1alpha1, as
// machine-controller-manager v0.62.1 defines them) with the purelifecycle
// core and calls any MCM provider through MCM's own driver.Driver
// interface, so an operator keeps the provider, the Machine and
// MachineClass objects and MCM's MachineSet and MachineDeployment
// controllers, and swaps only MCM's machine controller.
//
// Each reconcile is one pass of lifecycle/pass (pass.Run) over a shell
// that reads the Machine from the control cluster's API server and its
// MachineClass, the class's Secrets, the node, its pods and volume
// attachments and the machine's bootstrap token from the clusters, turns
// them into the lifecycle's input with adapters/mcm (ObjectFrom,
// StatusFrom, NodeFrom), saves each decision's status where MCM keeps it
// (adapters/mcm.ApplyStatus: the status subresource, then the two
// annotations that hold the lifecycle's own state), carries out the
// decision's effects in order (the node's through package kubeshell) and
// calls the provider through mcmdriver.For with the objects MCM would hand
// it. The user data is filled as MCM fills it (bootstrap.Fill: the
// bootstrap token and the machine's name, plain or URL-encoded).
//
// Besides the lifecycle's decisions, a pass does what MCM's machine
// controller does for its other controllers and for the node:
//
//   - the MachineClass a machine uses carries MCM's finalizer, and the
//     class's Secrets MCM's secret finalizer, while any machine uses them
//     (classes.go); a class without the finalizer is one MCM's controllers
//     do not act on either, the lifecycle's ProblemClassNotReady, and this
//     controller adds it;
//   - the node of a machine that is not being deleted is kept in line with
//     the machine's node template and its class's virtual capacity
//     (nodetemplate.Plan), once the lifecycle's pass has ended;
//   - the node of a machine carries MCM's node finalizer while the machine
//     is not being deleted, and a node deleted behind its machine's back
//     has the machine deleted, as MCM's node handling does (nodes.go);
//   - the observer the lifecycle is given is the API-server freeze check of
//     package safety, when Options.Observer is set.
//
// The bootstrap token of a machine lives in kube-system of the target
// cluster, as MCM keeps it, but its ID is derived from the machine's UID
// rather than from the last bytes of its name, so that machines whose
// names end alike do not share (and delete) one token; see
// doc/mcm-compat.md.
package machines

// Package mcmcontroller is the module of the controller that is to replace
// the machine controller of Gardener's machine-controller-manager (MCM)
// while keeping MCM's out-of-tree providers (AWS, Azure, GCP, ...), which
// implement MCM's Go interface driver.Driver. The lifecycle library decides
// what happens to each machine; this module speaks MCM's language around
// it. It is pinned to MCM v0.62.1 and the Kubernetes versions that release
// requires. No controller runs yet; built so far:
//
//	options       MCM's machine-controller command line, read with MCM's own flag definitions, as the lifecycle's Config
//	bootstrap     user data and bootstrap token secrets as MCM writes them
//	safety        MCM's API-server check, as the lifecycle's degraded observer
//	owner         the owner under which the fleet limiter counts a machine's replacements
//	nodetemplate  a node kept in line with its machine's node template, in MCM's format
//	mcmdriver     MCM providers called through the lifecycle's driver interface (For), and back (ToMCM)
//	mcmfake       a scriptable in-memory MCM provider of many machines, for tests
//	difftest      the differential test: scripted scenarios run through MCM's own controller reconcile by reconcile, observed and compared
//	internal/mcmworld  a test world: MCM's MachineSet and MachineDeployment controllers against a real API server, with MCM's machine controller or another, and a fake kubelet
//
// This package holds no code.
package mcmcontroller

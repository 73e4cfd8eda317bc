// Package kubeshell carries out the lifecycle's effects on a node and its
// pods against a Kubernetes API server: the writes that a pass's shell
// (lifecycle/pass) makes the same way whatever machine resource it
// reconciles. Both of the project's controllers use it: the production
// controller of the module controller, which reconciles its own Machine
// resource, and the drop-in controller of the module mcmcontroller, which
// reconciles MCM's Machines.
//
// It is a module of its own, which requires the oldest Kubernetes and
// controller-runtime releases of the two controllers; each controller
// builds it at its own versions. It uses only client interfaces that are
// the same across those releases.
//
// A node is read afresh (from a reader that goes to the API server) before
// it is written, so a write does not lose to a stale cache; writes carry
// the read's resource version, so a concurrent change gives a conflict the
// lifecycle retries.
package kubeshell

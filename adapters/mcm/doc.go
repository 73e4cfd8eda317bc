// Package mcm converts the API types of Gardener's machine-controller-manager
// (MCM, github.com/gardener/machine-controller-manager v0.62.1, package
// pkg/apis/machine/v1alpha1) to and from the state of package lifecycle, so
// a fleet of MCM Machines can be driven by the library, and handed back.
//
// It is a nested module of its own, so the core's go.mod stays free of
// Kubernetes and MCM dependencies.
//
// # What goes where
//
// A shell reads a Machine and its Node into a lifecycle.Input with
// [ObjectFrom], [StatusFrom] and [NodeFrom], steps, and persists the
// decision's status with [ApplyStatus]. The status lands where MCM keeps it:
//
//	lifecycle.Status             MCM Machine
//	Phase                        status.currentStatus.phase
//	PhaseSince                   status.currentStatus.lastUpdateTime (and the annotation)
//	LastOp                       status.lastOperation, MCM's exact text (lastop)
//	Conditions                   status.conditions
//	Addresses                    status.addresses
//	LastKnownState               status.lastKnownState
//	UIDHash                      the UIDHashAnnotation annotation
//	everything else              the StateAnnotation annotation, compact JSON
//
// Everything else is the program counter (Stage, StageSince), Flags,
// Failures, Attempt, Seq, RetryAfter, the instance's ProviderID and
// NodeName (MCM v0.62.1 has no status.node; its node label and
// spec.providerID are Object fields the lifecycle keeps in line with
// ensure-effects), and the hot-update and metadata bookkeeping. Times in the
// annotation carry nanoseconds, so a status survives the API server's JSON,
// which keeps whole seconds, bit for bit.
//
// # Adoption
//
// A Machine MCM managed has no annotation. StatusFrom adopts it from MCM's
// fields: the phase, the last operation parsed back into its structured form
// (lastop.FromLastOperation), the phase's start from
// currentStatus.lastUpdateTime, providerID from the spec and the node name
// from the node label (or, without one, from the node MCM's description
// names). A machine MCM was deleting is Terminating with no
// stage; the lifecycle resumes its deletion at the step its description
// names ("VM deletion was successful. Initiate node object deletion" goes on
// with the node), or restarts it when the text names none (MCM's MachineSet's
// "Deleting machine from cloud provider"). doc/mcm-adoption.md lists what
// the first pass does for every state MCM can leave a machine in; the tests
// that generate it adopt every combination of phase, last operation,
// providerID, node label, annotation and deletion time, and drive each
// machine MCM can leave to the end MCM would take it to.
//
// A time that StatusFrom would read as a stamp and that lies outside the
// years a lifecycle.Stamp holds (1678 to 2262) is refused with
// ErrInvalidState, never wrapped or saturated.
//
// # Persisting
//
// ApplyStatus changes status fields and two annotations. Against an API
// server that serves Machines with the status subresource these are two
// writes: the shell updates the status first, then patches the annotations,
// and completes both before it carries out any effect, as it would a single
// status write.
//
// UIDHashAnnotation only spares the lifecycle hashing the machine's UID at
// every resync; StatusFrom keeps it when it is the hash of the machine's
// UID and drops it otherwise. It is apart from StateAnnotation, which a
// release that does not know it reads unchanged.
//
// The annotation fingerprints the phase and last operation it was written
// with. When the machine no longer carries them (MCM wrote its status since,
// or the status write landed and the annotation's did not), StatusFrom adopts
// the machine from its MCM fields, keeping only the annotation's creation
// attempt. When a lost annotation write changed neither, StatusFrom reads the
// previous annotation with the newer status fields (conditions, addresses,
// lastKnownState): the lifecycle decides again from an older stage, which
// its status is built to survive, and keeps the provider's newest state.
package mcm

// Package fleetsim is a deterministic fleet simulator for the lifecycle
// core: it drives many machines through full lifecycles in simulated time
// against a fault-injecting in-memory provider and cluster, checks every
// decision against the safety promises of DESIGN section 6, and checks the
// end state of the fleet against its liveness promises.
//
// # What happens
//
// Owners (MachineSets) create their machines over a ramp. Each machine is
// reconciled by the caller's loop of package lifecycle (persist first,
// effects in order, outcome fed back, requeue), written here without
// allocating: machines live in a slice of structs, one lifecycle.Decision
// per shard is reused with lifecycle.StepInto, and the provider answers
// driver calls as plain data. An event queue ordered by simulated time
// holds each machine's next reconcile (at Decision.Requeue, or at once on a
// watch event: its node registered, turned Ready or NotReady, was deleted;
// its spec changed) and the world's own events. The provider's instances
// boot, register their nodes with the instance-not-ready startup taint and
// turn Ready. During the active period a share of the machines get a hot
// update (a higher UpdateGeneration) or a metadata change, have their node
// flap NotReady and back or die, or are deleted by a scale-down. Every
// fleet pass the owners delete their Failed machines and create
// replacements (reusing names of gone machines at a rate, so incarnations
// meet), and lifecycle.Limit computes the grants of the owners with
// unhealthy machines; orphan collection runs lifecycle.Orphans against the
// provider's list and carries out its deletions.
//
// Faults, each with a rate: every driver code per method (ParseDriverFaults;
// timed-out calls may have taken effect), undecodable errors, answers
// without identity, latency in simulated time, dropped metadata keys, lost
// status writes (conflict, failure, or a failure that took effect),
// failed object and node writes, failed drains, controller crashes between
// any two effects, node flaps and dead nodes, clock jumps for a step, an
// observer outage during which a share of the nodes turns NotReady, node
// names of deleted instances reused (the stale-node case), lost owner tags,
// node reads that fail, and finalizers removed by hand. The faults stop
// when the active period ends; a drain-out period follows in which every
// machine gets time to settle.
//
// # What is checked
//
// Every decision: the driver call is the last effect and the only one;
// CreateMachine never with an instance recorded nor while deleting;
// DeleteMachine only while deleting after the drain succeeded, was forced
// or skipped, or for an instance proven foreign (another incarnation's, the
// stale-node instance); the finalizer is removed only once the VM is
// confirmed gone, the node is gone and no instance of the machine is left;
// every phase change is declared (phase.Allowed); Failed only after the
// creation or health timeout or for the stale-node case, Unknown to Failed
// only with the limiter's grant; Running only with a healthy node; a
// positive requeue unless the machine is gone; a drain or node deletion
// only on the machine's own node, never on another incarnation's. The provider: never two
// instances alive for one machine UID. Orphan collection: never an
// instance a machine records.
//
// At the end: every machine is gone or in an end state (Running or
// Available, Failed awaiting replacement, needing replacement), none is
// past a deadline (lifecycle.Summarize), every deleting machine is gone,
// every Running machine has its hot update applied or needs replacement,
// its metadata and owner tag in sync (by its status and at the provider),
// its node Ready, labelled and without the startup taint, and its token
// deleted; every instance of the provider is recorded by a live machine
// (no orphan VM) and no machine has two.
//
// # Determinism and speed
//
// The fleet is split into Options.Shards shards of whole owners (the
// limiter works per owner, so a shard's grants are the fleet's), each with
// its own provider, cluster, event queue and math/rand/v2 PCG stream
// seeded from (seed, shard). Shards run on Options.Workers goroutines and
// only the running ones are in memory. The report depends on the seed and
// the shard count only: the same flags give the same output, bit for bit.
// On a violation the report names the seed and replays the offending
// machine's shard with a tracer that renders its last decisions and events.
package fleetsim

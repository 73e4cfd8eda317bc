// Package fleetsim is a deterministic fleet simulator for the lifecycle core:
// it drives many machines through full lifecycles in simulated time against a
// fault-injecting in-memory provider and cluster, checks every decision
// against the safety promises lifecycletest.Check lists, and checks the end
// state of the fleet against its liveness promises.
//
// # What happens
//
// Owners (MachineSets) create their machines over a ramp, spread over
// Options.Zones zones in turn; each node carries its instance's zone in its
// topology.kubernetes.io/zone label (lifecycle.ZoneLabel), which the shell
// reads into lifecycle.Node.Zone, for the steps and for the limiter's fleet
// view, as a real shell reads it from the node. Each machine is
// reconciled by lifecycle/pass.Run (persist first, effects in order,
// outcome fed back, requeue) over a shell that draws the run's faults where
// the pass meets them, without allocating: machines live in a slice of
// structs, one pass.Scratch and one shell per shard are reused, and the
// provider (the
// in-memory lifecycletest.Provider, its faults drawn by the simulator)
// answers driver calls as plain data. An event queue ordered by simulated time
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
// failed object and node writes, drain rounds a disruption budget refuses, controller crashes between
// any two effects, node flaps and dead nodes, clock jumps for a step, an
// observer outage during which a share of the nodes turns NotReady, node
// names of deleted instances reused (the stale-node case), lost owner tags,
// node reads that fail, and finalizers removed by hand. And the states real
// controllers meet: outcomes of older decisions fed to a step (a
// duplicate of the previous pass's last outcome, or a late one; the step
// is one of its own before the pass, checked and not carried out, as
// pass.Run feeds a pass only its own decisions' outcomes), the
// observer degrading in the middle of a pass, writes that reach the
// controller's informer cache late (a pass then starts from the machine as
// it was before the write, and the API server refuses its status saves,
// made from an older resource version), a fleet view given to the limiter
// that lags behind (machines created within the lag and never written by
// the controller are missing, deletions requested within it not shown; the
// statuses the controller saved are always shown), problems of machines
// and of their classes for a while (lifecycle.Problem), the force-deletion
// label on deleting machines, and a persistent offset of each shard's
// controller clock, either way. The faults stop when the active period
// ends (the clock offset stays: it is a misconfigured clock); a drain-out
// period follows in which every machine gets time to settle. Every fault
// injected is counted in the report, and so are the anomalies the decisions
// report (lifecycle.Anomalies).
//
// The fault knobs have names, those of their flags (FaultKnobs):
// Options.SetFaults keeps one of them and turns the others off, and scales
// the ones it keeps, capping rates at what a probability allows, so a CI
// run can try each fault alone at ten times its rate. Options.Config's
// NoTargetCluster runs the fleet without a target cluster: no node is ever
// registered, and machines end Available.
//
// The zone outage (Options.ZoneOutage, flag -zone-outage) is off unless a
// run asks for it, and is no knob: every node of one zone, drawn from the
// seed, turns NotReady at a random time of the active period for that
// long, and so do the nodes that register in the zone meanwhile, while the
// other faults go on making machines of every zone unhealthy; the zone's
// nodes recover within two minutes of its end. The observer stays
// healthy: the zone is down, not the controller's view of it. Turn the
// limiter's zone protection on with it (Config.ZoneOutage): the command's
// -zone-outage turns on DefaultZoneProtection, three machines and half of
// an owner's unhealthy ones in one zone, held for up to 30 minutes past
// the health timeout, unless -zone-protection sets another or turns it
// off. The limiter's grants carry the time a machine is held
// (lifecycle.Grant.Held) to the machine's steps.
//
// Nodes start with the startup taint and no pods; pods land on a node once
// the lifecycle removes the taint, unless it is cordoned or drained, land
// again when it is uncordoned, and go with a deleted node object. A node
// object registered again is a new object: schedulable, without the labels,
// annotations and conditions of the old one.
//
// The in-place update (Options.InPlace, flag -inplace) and preservation
// (Options.Preserve, flag -preserve, and Config.AutoPreserve) are off
// unless a run asks for them; off, the run and its report are as without
// them. With -inplace a share of the machines get, at a random time of the
// active period, a higher Object.InPlaceGeneration: the owner asks the
// update as the project's controller does, so the lifecycle labels the
// node candidate and selected itself and, once the update brought the
// machine Running again, takes the labels off and uncordons the node; its
// writes of the whole protocol meet the run's faults. A node agent per node
// waits for the node's InPlaceUpdate condition to say ReadyForUpdate, then
// succeeds (the node reboots, NotReady for one to three minutes, and comes
// back labelled update-result=successful), fails (update-result=failed and
// the failed-reason annotation) or stalls, by InPlaceOptions' shares; a
// share of the failed and stalled updates leave the node NotReady for good
// (InPlaceOptions.Down). With -preserve a share of the machines, or their
// nodes, are annotated now or when-failed at a random time of the active
// period, and a share of those annotations set to false or removed later;
// the command turns auto-preservation on with it (DefaultAutoPreserve,
// DefaultPreserveTimeout). The owner respects preservation as MCM's
// MachineSet does: it does not replace a Failed machine whose expiry
// (Status.PreserveUntil) is ahead by its clock, whose annotation asks for
// its preservation, or that the limiter chose to auto-preserve
// (Grant.Preserve, which the owner asks before it replaces: MCM's
// MachineSet chooses those itself); a kept machine counts towards its
// replicas.
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
// only on the machine's own node, never on another incarnation's; an
// outcome of an older decision ignored (AnomalyStaleOutcome or
// AnomalyBadOutcome) unless no status change followed it. The provider:
// never two instances alive for one machine UID. Orphan collection: never
// an instance a machine records.
//
// The world judges too, from facts the simulated cluster records as it
// carries out the effects and from its own timeline, never from the
// lifecycle's flags: a DeleteMachine of a machine's own instance
// (lifecycle.RuleDeleteVM) only once its node was drained (a drain left no
// pods on it, or none ever landed), a forced drain was attempted on it, or
// it does not exist; a DeleteMachine of another incarnation's instance
// (lifecycle.RuleCreateForeignInstance) while that instance's node runs pods
// only once Config.PredecessorWait (0: the drain timeout) has passed since
// the machine's creation; after every decision, metadata never reported in
// sync (lifecycle.Member's MetadataInSync) while the instance carries
// other metadata or another owner; a machine saved Failed by the health
// timeout only once the world saw its node unhealthy (NotReady or gone)
// for that long, counted from the observer's last recovery at the latest;
// and when a grant is saved, its owner's replacements in flight (machines
// holding a grant, machines Failed by the health timeout until they are
// gone, and those created to replace them until they run) within
// Config.Replacements, leaving out, with a lagging fleet view, the
// replacements the owner created after the time as of which the view the
// limiter granted from showed the fleet (it could not see them: Limit's
// doc). A wrong clock can make a deadline fire early by as
// much as it is wrong, so the checks of the predecessor's wait and of the
// health timeout allow the clock faults' maximum (the shard's offset, plus
// ClockJumpMax when clock jumps are on).
//
// With a zone outage, or the limiter's zone protection asked for, the world
// also judges the limiter by zone, against the protection the options ask
// for (Options.Config.ZoneOutage), from its own census of each owner's
// machines that ran, are not being deleted, and whose instance's node it
// sees NotReady or gone, by the zone label of that node (a node object
// deleted shows no zone, and its machine is of no known zone to the
// limiter too). While a zone is down for an owner as the world sees it
// (at least Count and Percent of the owner's unhealthy machines in it,
// counting only those unhealthy for two minutes, which the lifecycle has
// surely marked Unknown, with a margin for those with a problem), the
// limiter grants none of its machines its replacement (the grant a machine
// must hold to be marked Failed by the health timeout) before the machine
// has been unhealthy, as the world saw it, for its health timeout and the
// hold. And after every fleet pass, a machine the world has seen unhealthy
// past its health timeout (in a zone that is surely up: healthy zones are
// still replaced during an outage), or past its health timeout and the
// hold (in any zone: no machine is held longer), holds a grant, unless its
// owner's replacements in flight, counted as high as the limiter can count
// them, are at the limit; the world allows a fleet pass and two minutes
// for the lifecycle to notice, and counts from the end of a problem of the
// machine or of its class. Both allow the clock faults' maximum too.
//
// With the in-place update on, the world judges it from the node's labels,
// its conditions and the agent: the agent is never told ReadyForUpdate
// while pods a drain removes remain on the node or while it is not
// cordoned; no UpdateMachine or UpdateMetadata reaches an instance while
// its agent updates it; after the agent's success the machine is Running
// with the generation recorded, the labels off and the node uncordoned
// within three resyncs of its node being Ready (the lifecycle writes to a
// node at the start of a pass only; five when the machine's preservation
// changed meanwhile, whose writes come there too); after its failure the
// machine is
// InPlaceUpdateFailed within a pass, after a stall by the in-place update
// timeout; a machine saved Failed from InPlaceUpdateFailed has been failed
// for its health timeout since the agent's failure or the in-place
// timeout; no update writes the InPlaceUpdate condition, drains the node
// or enters InPlaceUpdating over and over; and at the end every Running
// machine runs the update asked, on an instance the agent updated or made
// after it was asked, its node without the protocol's labels and not
// cordoned. With preservation on, the world judges it from the
// annotations it set, the statuses saved and the node: the owner never
// replaces a Failed machine before the expiry of a preservation the world
// saw begin, nor one whose annotation asked for its preservation before it
// failed while its preservation never began; no owner ever has more
// auto-preserved Failed machines (no annotation ever named them) than
// Config.AutoPreserve; a Failed machine's node is marked Preserved only
// once no pods a drain removes remain on it; every preservation ends by
// its expiry (expiry cleared, annotation no longer asking, node without
// the autoscaler's annotations nor its Preserved condition True), a
// stopped one gives its node back, and a node cordoned for it is
// uncordoned once its machine runs again, each within a resync; a
// machine granted its
// preservation begins it within a pass; an auto-preservation that ran to
// its expiry does not begin again in the same Failed spell; and no
// preservation writes its condition over and over. These checks count
// from when the lifecycle could act (the observer's recovery, the end of a
// problem) and allow the clock faults' maximum.
//
// At the end: every machine is gone or in an end state (Running or
// Available, Failed awaiting replacement, needing replacement), none is
// past a deadline (lifecycle.Summarize), every deleting machine is gone,
// every Running machine has its hot update applied or needs replacement,
// its metadata and owner tag in sync (by its status and at the provider),
// its node Ready, labelled and without the startup taint, and its token
// deleted; every Available machine runs without a target cluster on a live
// instance; every instance of the provider is recorded by a live machine
// (no orphan VM) and no machine has two.
//
// # Determinism and speed
//
// The fleet is split into Options.Shards shards of whole owners (the
// limiter works per owner, so a shard's grants are the fleet's), each with
// its own provider, cluster, event queue and math/rand/v2 PCG stream
// seeded from (seed, shard). Shards run on Options.Workers goroutines and
// only the running ones are in memory. A fault that may strike at every
// step, save, write or pass is drawn by the gaps between its occurrences,
// one draw per occurrence rather than one per chance. The report depends
// on the seed and the shard count only: the same flags give the same
// output, bit for bit.
// On a violation the report names the seed and replays the offending
// machine's shard with a tracer that renders its last decisions and events.
package fleetsim

// Package difftest is the differential test of MCM's machine controller
// and the project's: the same scripted scenarios run through both, against
// a real API server, and what each reconcile did is compared.
//
// # Scenarios
//
// A [Scenario] is a named script of one machine: the rows of
// doc/mcm-rows.md it exercises, a [World] to start from (the Machine with
// its spec, status, labels, annotations and finalizers, possibly being
// deleted or in any state MCM leaves; its class and secret; the nodes of
// the target cluster and the pods bound to them; the instances of a
// [mcmfake.Driver]; other machines of its deployment) and a list of
// [Step]s. A step is some [Action]s
// (script the driver's next answers or install a hook, add a node, change
// its conditions, labels, annotations or spec, delete a node, attach a
// volume, mark the machine for deletion, set a label or an annotation of
// it, let an instance vanish, move time on), then one reconcile.
// [Scenarios] returns the library; each step's Want is what MCM does as
// the rows document it, and every row id and every accepted deviation is
// checked against doc/ ([CheckScenarios]).
//
// # Time
//
// MCM reads the real clock, so time is simulated by backdating what the
// controllers read ([Env.Advance]): the machine's
// status.currentStatus.lastUpdateTime and preserveExpiryTime and
// status.lastOperation.lastUpdateTime,
// the times of its copy of the node conditions and of every node's
// conditions, and what a controller keeps of its own ([Backdater]). The API
// server sets creationTimestamp and deletionTimestamp and never lets them
// change; the creation and drain timeouts that count from them are
// shortened in the machine's spec by the same amount instead. A reconcile
// after Advance(d) therefore decides as it would d later; the one visible
// trace is the shortened timeout that H7's description prints.
//
// # Observations
//
// A [Runner] builds each scenario's world in a namespace of its own on one
// API server (an envtest shared by every scenario; nodes and bootstrap
// tokens are cluster-wide, and a drain lists a node's pods in every
// namespace, so these are cleared before each scenario and scenarios run
// one after the other), runs it through a [Controller] and records an
// [Observation] per reconcile, read from the world and not from the
// controller: the machine after it (phase, LastOperation type, state,
// description and error code, providerID, node label, finalizers, or gone),
// the driver calls made during it (the delta of mcmfake.Driver.Calls:
// method, machine, providerID, code) and every write it made, from
// snapshots of the machine, its class, secret and pods, the nodes, the
// bootstrap tokens and the volume attachments before and after. A [Normalizer]
// leaves out what legitimately differs between runs: resourceVersions,
// UIDs, generations, timestamps (leaves, but for whether a preservation's
// expiry is set, and times printed in texts), the namespace, bootstrap
// token names and generated values, and the annotations of the project's
// own state. [Diff] compares two observations
// field by field; [Compare] compares two runs of a scenario and accepts a
// difference only at a step a [Deviation] of the scenario covers: a section
// of doc/mcm-compat.md that names the test of the deviation.
//
// # The controllers
//
// MCM's controller (build tag mcmref; run.sh builds it against a copy of
// MCM v0.62.1 to which testdata/hook.go.txt adds ReconcileMachine) is made
// per scenario with MCM's NewController over real clients and informers,
// and each reconcile runs what MCM's worker would for the queue the machine
// belongs to, after MCM's caches show the API server's state. Each scenario
// runs through it twice, and the two runs are compared: MCM against itself
// differs nowhere, which checks the normalisation; a planted wrong
// LastOperation text fails the comparison.
//
// The project's controller (mcmcontroller/machines) is [DropIn]: Start
// makes a Reconciler of env.Namespace over caches of env's API server,
// with env.Driver as the provider and env.Settings read as MCM's flags
// (package options), its observer degraded when env.Frozen is set;
// Reconcile waits for its caches, runs the leader's fleet pass (the
// limiter's grants) and one pass of the named machine at now, and returns
// once its writes and calls are done; it implements [Backdater] to move
// the stamps of its state annotation back with MCM's.
// TestDropInAgainstMCM runs every scenario through both, reconcile by
// reconcile (Compare), and, once the machine settled after the steps,
// compares where the two runs end (CompareEnds: the last machine with its
// conditions, its preservation's expiry and annotations, each node's
// cordon, InPlaceUpdate and Preserved conditions and annotations of
// preservation, all the driver calls); a difference no deviation of the
// scenario accepts fails it. TestHandoverBothWays hands the machine over after its first
// reconcile ([Handover]), from the drop-in to MCM and back, and compares
// where that run ends with MCM's own (CompareHandover).
//
// Not observed: events (MCM's are recorded by a fake recorder here), the
// requeue a reconcile asks for (the project backs off and adds jitter by
// design), logs and metrics.
//
// A plain go test builds and runs the side-independent part (the docs
// check, Diff, Compare, the normaliser); the tests against MCM need the
// tag mcmref and run.sh.
package difftest

// Package lifecycle decides, and only decides, what a machine controller
// should do next for one machine (a VM, a bare-metal host, a Fly Machine
// behind a virtual kubelet).
//
// The controller (the "shell") reads the world, calls [Step] with the
// machine's [Input], and carries out the [Decision] it returns: persist this
// status, call this driver method, write these objects, requeue after this
// long. Step is a pure function of its [Config] and Input: it never reads a
// clock, performs I/O, starts a goroutine, keeps global state or panics, and
// it never changes its input. The same input gives the same decision.
//
// The flows are creation and initialization (create.go), health (health.go),
// hot update (hotupdate.go), instance metadata (metadata.go) and deletion
// (delete.go, its drain in drain.go). Behaviour follows Gardener's machine-controller-manager (MCM)
// row by row, as doc/mcm-rows.md writes its decisions down, except for the
// deviations listed in doc/mcm-compat.md, each of which fixes an MCM issue.
// Every decision names its [Rule], a stable identifier such as
// "create.vm-not-found".
//
// # The caller's obligations
//
// A reconcile pass of one machine is a short loop of steps. The shell must:
//
//  1. If [Decision.Changed], persist [Decision.Status] first. It is the
//     write-ahead record: a decision that asks for a non-idempotent call,
//     such as CreateMachine, records the intent and its idempotency key in
//     the status, so a crash or a lost write between the call and its record
//     is recognised on the next pass (no second create, no leaked VM). If
//     the save fails, carry out nothing and call Step again with an Outcome
//     whose Persist says how it failed.
//  2. Carry out [Decision.Effects] in order, stopping at the first that
//     fails. Each [Kind]'s doc says what to do. A [KindCallDriver] effect,
//     always the last, invokes the driver with [Decision.Call]
//     (driverapi.Invoke does it); a driver error is a result, not a failure.
//  3. Call Step again with Input.Outcome = &[Outcome]{OpID, Ran, Stopped,
//     Result}: the decision's OpID, how many effects ran, the result of the
//     write that stopped it, and the driver's result. Report successes too:
//     the lifecycle learns that an effect was carried out only from its
//     outcome, never by guessing. Fill Outcome.CreatedNode when the result
//     is a CreateMachine's.
//  4. Repeat until a decision neither changed the status nor has effects
//     ([Decision.Done]), at most [MaxStepsPerPass] steps in one pass; then
//     requeue the machine after the last decision's [Decision.Requeue]. The
//     effects of the last allowed step are not carried out, as no step is
//     left to report their outcome: save its status if it changed, and
//     requeue after retry.Short instead. Pass Step the object as the shell's
//     own last write returned it, or newer, never an older cached copy: a
//     shell reading from an informer cache reads the object from the API
//     server at the start of a pass, or lays its own last write over the
//     cached copy when that is newer (compare resource versions). After a
//     decision without effects, the Outcome carries only its OpID (0) and
//     Persist.
//
// MCM's "return ShortRetry after a successful step" becomes "step again
// now" in this loop; retry periods apply when a pass ends. Every effect can
// be rebuilt from the persisted status and what is observed, so a crash at
// any point loses nothing: ensure-effects are emitted again while the
// object differs, a token to delete while it exists, and a creation whose
// providerID was never recorded is found by GetMachineStatus on the
// machine's name, UID and idempotency key.
//
// Package lifecycle/pass implements this loop once: a shell implements
// pass.Shell (observe the machine, save its status, apply an effect, invoke
// the driver) and calls pass.Run for each reconcile, with a configuration
// checked once and a pass.Scratch per worker:
//
//	r := pass.Run(ctx, &checked, shell, now, &scratch, nil)
//	return ctrl.Result{RequeueAfter: r.Requeue}, r.Err
//
// examples/inmemory runs pass.Run over examples/shell, a binding of an
// in-memory world (with a wrapper that crashes a pass for its tests), and
// an in-memory provider.
//
// # The fleet
//
// Decisions that concern more than one machine are pure fleet functions
// over one [Member] per machine: [Limit] decides which unhealthy machines
// may be marked Failed now (meltdown protection), once per owner per fleet
// pass, and each machine's [Grant] goes into its Input; [Orphans] returns
// the delete calls for instances no machine owns; [Summarize] counts the
// fleet for metrics. The fleet a shell passes them must show every status
// it saved itself (its own writes laid over a cache that may lag them), and
// the shell serialises the steps of machines of one owner, so two grants of
// one computation are not both used before the first is saved.
//
// # What the input holds
//
// [Input] documents each observed field and how the shell fills it: the time
// of the step (Now), the machine object's fields ([Object]), the lifecycle's
// persisted [Status], the machine's node ([Node], found by the machine's node
// label, else by the node name the status records, else by the node's
// machine-name label, else by providerID; a node carrying another instance's
// providerID is ignored, and deletion acts only on a node it observed),
// whether it could be read, its live volume attachments, whether the
// bootstrap token exists, whether the observer (API server, cloud API) is
// degraded and since when, a problem found before asking (an invalid machine,
// a missing class), the fleet's [Grant], whether an older incarnation of the
// machine's name is still terminating, and the [Outcome] of the previous
// decision, which also carries the node a CreateMachine named.
//
// # Bad input
//
// Bad input gets a clear rule, never a panic, and loses nothing: a zero Now
// (input.zero-now), an object without name or UID (input.invalid-object), an
// unknown phase or stage in the status (input.invalid-status), an invalid
// Config (input.invalid-config: a duration above [MaxTimeout], more than
// [MaxNodeConditions] condition types, ...), a time outside the years a
// [Stamp] holds or a per-machine setting out of range (input.out-of-range).
// Input Step can work around is reported in [Decision.Anomalies]: a clock
// behind the creation time (no deadline fires), a status stamp after Now
// (clamped to Now and saved), a driver code outside 0..17 (treated as
// undecodable), a driver that answers OK without a providerID or node name
// (nothing is recorded, the creation intent stays), an outcome of an older
// decision or of an op the status could not have emitted (ignored), a
// status without the lifecycle's own record of where the machine is
// (adopted). A LastOperation detail (a provider's message, a list of
// metadata keys) is bounded by [MaxDetail].
//
// # Cost
//
// A step on the common paths allocates nothing: effects live in a
// fixed-capacity array inside the Decision, descriptions are rendered only
// when the shell asks ([Describe]), and slices and maps of the input are
// shared, never copied. [StepInto] avoids copying the values in and out
// and takes a configuration checked once ([Config.Check]). A worker that
// keeps one Decision and one Input and reuses them from machine to machine
// pays for the flow's logic alone, well under a tenth of a microsecond per
// step (doc/performance.md).
package lifecycle

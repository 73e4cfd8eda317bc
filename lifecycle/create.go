package lifecycle

import (
	"slices"
	"strings"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// The creation and initialization flow (MCM's creation rows A1-A10 and
// B1-B9 and its initialization contract, doc/mcm-rows.md; Stage-A of MCM's
// initialization proposal,
// https://github.com/gardener/machine-controller-manager/blob/master/docs/proposals/initialize-machine.md).
// Every pass starts with GetMachineStatus (phase A of MCM); its
// outcome decides between creating, adopting and initializing (phase B).
// Unlike MCM, the flow keeps its program counter in Status.Stage:
//
//	StageNone ──lookup NotFound──▶ StageCreating ──Create OK──▶ StageInitializing ──Init OK──▶ StageNone, Pending
//	                                    │  ▲                         │  ▲
//	                                    └──┘ Create failed           └──┘ Init failed
//	                                   (CrashLoopBackOff, same key) (CrashLoopBackOff, init again)
//
// so a crash between any two effects is recognised on the next pass: the
// intent and its idempotency key are saved before CreateMachine is asked, and
// an instance the provider created but the status never recorded is found
// by the next lookup on (name, UID, key) instead of being created twice.

// create runs a pass of the creation flow.
func (x *decider) create() {
	if x.awaitPredecessor() {
		return
	}
	if x.inCreation() && x.creationExpired() && !x.lateButJoined() {
		st := x.st
		if st.Stage == StageCreating && st.ProviderID == "" {
			// A CreateMachine may have run before a crash: look the
			// instance up once more, so it is recorded before the machine
			// fails, and deletion finds it.
			x.act(RuleCreateTimeoutLookup)
			x.call(driverapi.Call{Method: driverapi.MethodGetStatus, Machine: x.ref(), Attempt: st.Attempt})
			x.requeue(retry.Short)
			return
		}
		x.createTimeout()
		return
	}
	if x.holdRetry(RuleCreateBackoff) {
		return
	}
	x.lookup()
}

// lateButJoined reports whether a machine past its creation timeout has
// made it all the same: its status names its instance, no creation stage is
// pending, and the instance's node is there and healthy (an adopted machine
// found with no phase long after its creation). The creation timeout bounds
// the time to a healthy node, so such a machine goes on to Running rather
// than Failed.
func (x *decider) lateButJoined() bool {
	if x.st.ProviderID == "" || x.st.Stage != StageNone {
		return false
	}
	n := x.node()
	return n != nil && x.healthy(n.Conditions)
}

// awaitPredecessor holds the creation of a new incarnation of a name while
// an older one is still terminating (Input.PredecessorTerminating): its
// lookup by name, the next step, would find the older incarnation's
// instance and delete it while the older machine may still be draining its
// node. The wait ends when the older incarnation is gone, or at the bound,
// PredecessorWait after the creation time; while it lasts no creation
// timeout passes, and the timeout counts from its end (Status.CreationFrom).
// Only a machine that names no instance and has no creation stage waits.
// It reports whether the machine waits.
func (x *decider) awaitPredecessor() bool {
	st, o := x.st, &x.in.Object
	if st.Stage != StageNone || x.ref().ProviderID != "" || o.CreationTime.IsZero() {
		return false
	}
	if x.holdForPredecessor() {
		return true
	}
	if st.CreationFrom > x.now {
		// The wait ended before its bound: the creation timeout counts
		// from now.
		set(x, &st.CreationFrom, x.now)
	}
	return false
}

// holdForPredecessor makes the machine wait while an older incarnation of
// its name is still terminating and the wait's bound lies ahead: the
// creation timeout counts from the bound at the earliest
// (Status.CreationFrom). It reports whether the machine waits.
func (x *decider) holdForPredecessor() bool {
	bound := x.predecessorBound(x.cfg)
	if !x.in.PredecessorTerminating || x.now >= bound {
		return false
	}
	x.rule(RuleCreateAwaitPredecessor)
	set(x, &x.st.CreationFrom, bound)
	x.requeue(x.cfg.WaitCheck) // or sooner: the seal requeues by the bound
	return true
}

// inCreation reports whether the machine is still being created: no phase
// or CrashLoopBackOff. Pending has its own deadline (H7), and machines past
// creation never create again.
func (x *decider) inCreation() bool {
	return x.st.Phase == phase.None || x.st.Phase == phase.CrashLoopBackOff
}

// creationExpired reports whether the creation timeout passed. It counts from
// the object's creation time (MCM issue 1110,
// https://github.com/gardener/machine-controller-manager/issues/1110), or from
// the end of a wait for an older incarnation of the name.
func (x *decider) creationExpired() bool {
	return x.expired(x.creationStart(), x.cfg.creationTimeout(&x.in.Object))
}

// createTimeout fails a machine that was not created in time. The stage is
// kept: an instance never initialized stays so, and never becomes Running.
func (x *decider) createTimeout() {
	x.rule(RuleCreateTimeout)
	x.fail(RuleCreateTimeout, lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateFailed,
		Desc: lastop.DescCreateTimeout, Elapsed: x.cfg.creationTimeout(&x.in.Object)})
}

// onTimeoutLookup records what the last lookup before the creation timeout
// found, then fails the machine.
func (x *decider) onTimeoutLookup(res *driverapi.Result) next {
	code, _ := x.classify(res)
	if (code == driverapi.OK || code == driverapi.Uninitialized) && !x.foreignResult(res) && res.ProviderID != "" {
		set(x, &x.st.ProviderID, res.ProviderID)
		if res.NodeName != "" {
			set(x, &x.st.NodeName, res.NodeName)
		}
	}
	x.pin(RuleCreateTimeout)
	x.createTimeout()
	return done
}

// fail moves the machine to Failed by rule r with op, where it waits for
// its owner to replace it.
func (x *decider) fail(r Rule, op lastop.Operation) {
	x.become(phase.Failed, r, &op)
	x.resync()
}

// lookup asks the provider whether the machine's instance exists (MCM
// phase A): by the recorded providerID, else by name, UID and creation key.
func (x *decider) lookup() {
	x.act(RuleCreateLookup)
	x.call(driverapi.Call{Method: driverapi.MethodGetStatus, Machine: x.ref(), Attempt: x.st.Attempt})
	x.requeue(retry.Short)
}

// onLookup decides on GetMachineStatus's answer (rows A1, A7-A10, and the
// creation of A2-A6).
func (x *decider) onLookup(res *driverapi.Result) next {
	code, class := x.classify(res)
	switch {
	case class == retry.ClassUndecodable:
		// A1: nothing is written; the lookup is asked again later.
		x.rule(RuleCreateLookupUndecodable)
		x.requeue(retry.Medium)
		return done
	case code == driverapi.NotFound || code == driverapi.Unimplemented:
		return x.lookupFoundNone()
	case code == driverapi.Uninitialized, code == driverapi.OK:
		return x.lookupFound(res, code)
	}
	// A9: any other decodable code.
	x.createError(RuleCreateLookupFailed, res, code, class, "")
	return done
}

// lookupFoundNone decides on a lookup that found no instance, or a provider
// that cannot look one up.
func (x *decider) lookupFoundNone() next {
	if pid := x.ref().ProviderID; pid != "" {
		// A7: the provider cannot tell, but an instance is recorded.
		x.rule(RuleCreateRecorded)
		node := x.st.NodeName
		if node == "" {
			node = x.in.Object.NodeLabel
		}
		if !x.record(pid, node, nil, "") {
			return done
		}
		return then(nextProceed, RuleCreateRecorded)
	}
	if !x.inCreation() {
		// Past creation and the provider has no instance: never create
		// again; health decides from the node, and the provider is asked
		// again after Long.
		x.pin(RuleCreateInstanceMissing)
		set(x, &x.st.RetryAfter, x.now.Add(retry.Long))
		return then(nextPastCreation, RuleCreateInstanceMissing)
	}
	return then(nextCreate, RuleCreateVMNotFound)
}

// lookupFound decides on a lookup that found the instance, initialized
// (OK) or not (Uninitialized): recorded, then initialized or adopted.
func (x *decider) lookupFound(res *driverapi.Result, code driverapi.Code) next {
	if x.foreignResult(res) {
		if x.holdForPredecessor() {
			// The older incarnation began terminating after the lookup was
			// asked: its instance is left to its own deletion.
			return done
		}
		return then(nextDeleteForeign, RuleCreateForeignInstance)
	}
	rule := RuleCreateAdopted
	if code == driverapi.Uninitialized {
		rule = RuleCreateUninitialized
	}
	x.rule(rule)
	// A lookup by a recorded providerID answers about that instance
	// (matchOutcome refuses an answer naming another); a provider that
	// leaves out the providerID or the node name it knows does not erase
	// what the status records.
	pid, node := res.ProviderID, res.NodeName
	if pid == "" {
		pid = x.ref().ProviderID
	}
	if node == "" {
		node = x.st.NodeName
	}
	if !x.record(pid, node, res.Addresses, "") {
		return done
	}
	set(x, &x.st.OwnerUID, res.OwnerUID)
	if res.Generation > 0 {
		set(x, &x.st.AppliedGeneration, res.Generation)
	}
	if code == driverapi.Uninitialized && x.inCreation() {
		// A8: the instance exists but must be initialized (again). A
		// machine past creation only records it (B9).
		return then(nextInitialize, rule)
	}
	// A10: adopt. An instance this flow created is initialized unless the
	// status shows initialization done.
	return then(nextProceed, rule)
}

// proceed continues after the instance is recorded: initialize it when this
// flow created it and initialization has not succeeded yet, else settle.
func (x *decider) proceed(r Rule) {
	if x.st.Stage.ofCreation() {
		x.initialize(r)
		return
	}
	x.settle(r)
}

// foreignResult reports whether a lookup by name, UID and key returned an
// instance created for another incarnation of the machine (another UID). A
// lookup by a providerID this machine recorded finds its own instance,
// whatever owner UID the provider reports (a lagging owner metadata key is
// repaired, never mistaken).
func (x *decider) foreignResult(res *driverapi.Result) bool {
	return x.ref().ProviderID == "" && res.OwnerUID != "" && res.OwnerUID != x.in.Object.UID && res.ProviderID != ""
}

// deleteForeign deletes an instance that belongs to another incarnation of
// the machine, which the lookup res found: it is never adopted, and a fresh
// one is created afterwards.
func (x *decider) deleteForeign(res *driverapi.Result) {
	x.act(RuleCreateForeignInstance)
	x.setOp(lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateProcessing,
		Desc: lastop.DescForeignInstance, Detail: boundDetail(res.ProviderID)})
	x.call(driverapi.Call{Method: driverapi.MethodDelete,
		Machine: driverapi.MachineRef{Name: x.in.Object.Name, UID: res.OwnerUID, ProviderID: res.ProviderID, NodeName: res.NodeName}})
	x.requeue(retry.Short)
}

// onForeignDelete decides on the deletion of another incarnation's
// instance: once it is gone, the next creation uses a fresh key.
func (x *decider) onForeignDelete(res *driverapi.Result) next {
	code, class := x.classify(res)
	if code == driverapi.OK || code == driverapi.NotFound {
		x.pin(RuleCreateForeignDeleted)
		set(x, &x.st.Attempt, x.st.Attempt+1)
		x.createSucceeded()
		return then(nextLookup, RuleCreateForeignDeleted)
	}
	x.rule(RuleCreateForeignInstance)
	set(x, &x.st.Failures.Create, bump(x.st.Failures.Create))
	x.retryLater(x.backoff(x.cfg.Retry.Period(class), x.st.Failures.Create))
	return done
}

// createInstance records the creation intent and asks CreateMachine (A2-A6).
// The status is saved before the call, so a crash after it is recognised.
func (x *decider) createInstance() {
	x.act(RuleCreateVMNotFound)
	o, st := &x.in.Object, x.st
	if st.Stage != StageCreating {
		// The intent names the generation the instance is created at; a
		// retry on the same key asks the same, as an idempotent provider
		// answers with the first instance.
		set(x, &st.AppliedGeneration, o.UpdateGeneration)
		set(x, &st.InPlaceGeneration, o.InPlaceGeneration)
	}
	x.setStage(StageCreating)
	if !x.cfg.NoTargetCluster {
		e := x.put(KindEnsureBootstrapToken)
		e.Value, e.Expiry = o.Name, x.now.Add(x.cfg.creationTimeout(o))
	}
	x.call(driverapi.Call{Method: driverapi.MethodCreate, Machine: x.ref(), Attempt: st.Attempt,
		Generation: st.AppliedGeneration, Metadata: o.Metadata})
	x.requeue(retry.Short)
}

// onCreate decides on CreateMachine's answer (A2-A6, B1).
func (x *decider) onCreate(res *driverapi.Result) next {
	code, class := x.classify(res)
	if class != retry.ClassNone {
		switch class {
		case retry.ClassExhausted:
			x.createError(RuleCreateResourceExhausted, res, code, class, res.LastKnownState)
		case retry.ClassTransient:
			x.createError(RuleCreateTransient, res, code, class, res.LastKnownState)
		default:
			x.createError(RuleCreateFailed, res, code, class, res.LastKnownState)
		}
		return done
	}
	if x.createdOnStaleNode(res) {
		x.staleNode(res)
		return then(nextDeleteStale, RuleCreateStaleNode)
	}
	x.rule(RuleCreateCreated)
	if !x.record(res.ProviderID, res.NodeName, res.Addresses, res.LastKnownState) {
		return done
	}
	x.createSucceeded()
	return then(nextInitialize, RuleCreateCreated)
}

// record saves the instance's identity, refusing an empty one (B1): nothing
// is recorded then, and the creation intent stays, so the next pass looks
// the instance up again instead of losing it.
func (x *decider) record(providerID, node string, addrs []driverapi.Address, lastKnown string) bool {
	if providerID == "" || (!x.cfg.NoTargetCluster && node == "") {
		x.rule(RuleCreateEmptyIdentity)
		x.anomaly(AnomalyEmptyIdentity)
		x.requeue(retry.Medium)
		return false
	}
	st := x.st
	set(x, &st.ProviderID, providerID)
	set(x, &st.NodeName, node)
	if lastKnown != "" {
		set(x, &st.LastKnownState, lastKnown)
	}
	x.addAddresses(addrs)
	return true
}

// addAddresses merges addresses into the status as MCM's buildAddressStatus
// does, only without a target cluster: the union of the known ones and the
// new ones, with Hostname = node name, sorted by type and address. The
// merged list is a new slice; the inputs are not written.
func (x *decider) addAddresses(addrs []driverapi.Address) {
	st := x.st
	if !x.cfg.NoTargetCluster || (len(addrs) == 0 && st.NodeName == "") {
		return
	}
	merged := make([]driverapi.Address, 0, len(st.Addresses)+len(addrs)+1)
	add := func(a driverapi.Address) {
		for _, m := range merged {
			if m == a {
				return
			}
		}
		merged = append(merged, a)
	}
	for _, a := range st.Addresses {
		add(a)
	}
	for _, a := range addrs {
		add(a)
	}
	if st.NodeName != "" {
		add(driverapi.Address{Type: "Hostname", Address: st.NodeName})
	}
	slices.SortStableFunc(merged, func(a, b driverapi.Address) int {
		return strings.Compare(a.Type+a.Address, b.Type+b.Address)
	})
	if !slices.Equal(merged, st.Addresses) {
		st.Addresses = merged
		x.changed = true
	}
}

// createdOnStaleNode reports whether a created instance's node name is
// taken by a node of another instance (A5). MCM compares names only and so
// marks a VM whose node joined before CreateMachine returned as stale; the
// lifecycle compares providerIDs, and a node without one is not proven
// stale.
func (x *decider) createdOnStaleNode(res *driverapi.Result) bool {
	o := x.in.Outcome // res is its Result
	if o == nil {
		return false
	}
	n := &o.CreatedNode
	return !x.cfg.NoTargetCluster && n.Found() && n.Name == res.NodeName &&
		n.ProviderID != "" && res.ProviderID != "" && n.ProviderID != res.ProviderID
}

// staleNode fails the machine whose instance was created on a stale node
// object (A5); the instance is deleted next. It is recorded with
// FlagStaleInstance so its deletion is retried until the provider confirms
// it; MCM does not record it and leaks the VM when that one DeleteMachine
// fails.
func (x *decider) staleNode(res *driverapi.Result) {
	x.rule(RuleCreateStaleNode)
	st := x.st
	set(x, &st.ProviderID, res.ProviderID)
	set(x, &st.Flags, st.Flags|FlagStaleInstance)
	if res.LastKnownState != "" {
		set(x, &st.LastKnownState, res.LastKnownState)
	}
	x.setStage(StageNone)
	x.become(phase.Failed, RuleCreateStaleNode, &lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateFailed, Desc: lastop.DescStaleNode})
}

// discardStale retries the deletion of a stale-node instance.
func (x *decider) discardStale() {
	if x.holdRetry(RuleCreateStaleNode) {
		return
	}
	x.rule(RuleCreateStaleNode)
	x.deleteStale()
}

func (x *decider) deleteStale() {
	x.act(RuleCreateStaleNode)
	st := x.st
	x.call(driverapi.Call{Method: driverapi.MethodDelete,
		Machine:        driverapi.MachineRef{Name: x.in.Object.Name, UID: x.in.Object.UID, ProviderID: st.ProviderID},
		Attempt:        st.Attempt,
		LastKnownState: st.LastKnownState})
	x.requeue(retry.Short)
}

// onStaleDelete decides on the deletion of a stale-node instance.
func (x *decider) onStaleDelete(res *driverapi.Result) next {
	code, class := x.classify(res)
	st := x.st
	if code == driverapi.OK || code == driverapi.NotFound {
		x.rule(RuleCreateStaleDeleted)
		x.createSucceeded()
		set(x, &st.ProviderID, "")
		set(x, &st.Flags, st.Flags&^FlagStaleInstance)
		x.setOp(lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateFailed, Desc: lastop.DescStaleInstanceDeleted})
		if code == driverapi.OK && res.LastKnownState != "" {
			set(x, &st.LastKnownState, res.LastKnownState)
		}
		x.resync()
		return done
	}
	x.rule(RuleCreateStaleNode)
	set(x, &st.Failures.Create, bump(st.Failures.Create))
	x.retryLater(x.backoff(x.cfg.Retry.Period(class), st.Failures.Create))
	return done
}

// initialize asks InitializeMachine for the recorded instance, after the
// object ensure-effects so the provider sees providerID and labels (B2).
func (x *decider) initialize(r Rule) {
	x.act(r)
	x.setStage(StageInitializing)
	x.call(driverapi.Call{Method: driverapi.MethodInitialize, Machine: x.ref(), Attempt: x.st.Attempt})
	x.requeue(retry.Short)
}

// onInitialize decides on InitializeMachine's answer (B3-B6, B8).
func (x *decider) onInitialize(res *driverapi.Result) next {
	code, class := x.classify(res)
	switch {
	case code == driverapi.OK:
		x.addAddresses(res.Addresses)
		return then(nextSettle, RuleCreatePending)
	case code == driverapi.Unimplemented:
		// B3: nothing to initialize.
		return then(nextSettle, RuleCreateInitUnimplemented)
	case class == retry.ClassUndecodable:
		// B4: no status write; initialization is asked again later.
		x.rule(RuleCreateInitUndecodable)
		x.requeue(retry.Long)
	default:
		// B5: CrashLoopBackOff (Failed past the creation timeout); the stage
		// stays Initializing, so the next pass initializes again.
		x.rule(RuleCreateInitFailed)
		x.failedAttempt(RuleCreateInitFailed, lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateFailed,
			Desc: lastop.DescInitFailed, ErrorCode: code.String(), Detail: res.ErrorText()}, retry.Short)
	}
	return done
}

// settle ends the creation flow (B8): a machine with no phase or in
// CrashLoopBackOff becomes Pending, or Available without a target cluster;
// one already past creation keeps its phase (B9).
func (x *decider) settle(r Rule) {
	x.rule(r)
	x.setStage(StageNone)
	x.createSucceeded()
	switch x.st.Phase {
	case phase.None, phase.CrashLoopBackOff:
	default:
		// B9: identity recorded, nothing else to do.
		x.resync()
		return
	}
	if x.cfg.NoTargetCluster {
		if r == RuleCreatePending {
			x.rule(RuleCreateAvailable)
		}
		x.become(phase.Available, RuleCreateAvailable, &lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateSuccessful, Desc: lastop.DescCreated})
		x.resync()
		return
	}
	x.become(phase.Pending, RuleCreatePending, &lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateProcessing, Desc: lastop.DescCreating})
	// MCM returns Short here; the next pass looks for the node.
	x.requeue(retry.Short)
}

// createError records a failed lookup, creation or initialization (A2-A4, A9):
// CrashLoopBackOff, or Failed once the creation timeout passed, with the
// provider's message; retried by the code's class. The provider's
// LastKnownState is kept unless the response brings a new one (MCM clears it
// on most codes: MCM design problem d.12 in doc/mcm-rows.md).
func (x *decider) createError(rule Rule, res *driverapi.Result, code driverapi.Code, class retry.Class, lastKnown string) {
	x.rule(rule)
	if lastKnown != "" {
		set(x, &x.st.LastKnownState, lastKnown)
	}
	period := x.cfg.Retry.Period(class)
	if class == retry.ClassUndecodable {
		// An undecodable CreateMachine error is retried Medium with the
		// code Unknown, as MCM's A4.
		period = retry.Medium
	}
	x.failedAttempt(rule, lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateFailed,
		Desc: lastop.DescCloudProviderError, ErrorCode: code.String(), Detail: res.ErrorText()}, period)
}

// createSucceeded resets the creation flow's failure count and retry time.
func (x *decider) createSucceeded() {
	set(x, &x.st.Failures.Create, 0)
	set(x, &x.st.RetryAfter, 0)
}

// failedAttempt records a failed creation step of rule r: CrashLoopBackOff
// before the creation timeout, Failed after it (MCM's
// getCreateFailurePhase), with backoff from the second consecutive failure.
func (x *decider) failedAttempt(r Rule, op lastop.Operation, period time.Duration) {
	op.Detail = boundDetail(op.Detail) // the provider's message
	st := x.st
	set(x, &st.Failures.Create, bump(st.Failures.Create))
	if !x.inCreation() {
		// A machine past creation that looked its instance up keeps its
		// phase; the lookup is retried after backoff.
		x.retryLater(x.backoff(period, st.Failures.Create))
		return
	}
	if x.creationExpired() {
		x.fail(r, op)
		return
	}
	if st.Phase == phase.CrashLoopBackOff {
		x.setOp(op)
	} else if !x.become(phase.CrashLoopBackOff, r, &op) {
		return
	}
	x.retryLater(x.backoff(period, st.Failures.Create))
}

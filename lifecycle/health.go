package lifecycle

import (
	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// The health flow (MCM's health rows H0-H13, doc/mcm-rows.md) for a machine
// whose instance is recorded: mirror the node's conditions, move between
// Running and Unknown, let a Pending machine join, and fail a machine that
// does not join in time. Unlike MCM it runs whether or not the machine carries
// its node label (the node is found by label, machine-name label or
// providerID), so a Pending machine is never stranded (MCM runs health only
// for a machine with the label, D7; MCM issue 1070,
// https://github.com/gardener/machine-controller-manager/issues/1070).

// health runs a pass of the health flow.
func (x *decider) health() {
	if x.in.NodeReadFailed {
		// H0: nothing is concluded from a node that could not be read.
		x.rule(RuleHealthNodeUnreadable)
		x.requeue(retry.Short)
		return
	}
	n := x.node()
	named := RuleNone // the rule health named so far
	if st := x.st; n != nil {
		if st.NodeName == "" && n.ProviderID == st.ProviderID && st.ProviderID != "" {
			// The status names the instance but not its node (a machine
			// MCM left without its node label): the node carrying the
			// instance's providerID is its node; recorded, its label is
			// written (B2).
			st.NodeName = n.Name
			x.changed = true
		}
		if !sameConditions(st.Conditions, n.Conditions) || n.Update != 0 && !sameInPlaceReason(st.Conditions, n.Conditions) {
			// H2: mirror the node's conditions (the status shares the
			// input's read-only slice).
			st.Conditions = n.Conditions
			x.changed = true
			named = RuleHealthConditions
			x.rule(named)
		}
	}
	if r := x.judgeHealth(n); r != RuleNone {
		named = r
	}
	switch x.st.Phase {
	case phase.Running:
		if !x.running(n, named) && !x.becameRunning && (x.noInPlace() || !x.inPlace(n)) {
			// The node is in line and no in-place update is under way;
			// the provider is asked next.
			x.upkeep()
		}
	case phase.Pending:
		x.pending(named)
	case phase.Failed:
		if x.st.PreserveUntil > x.now {
			x.rule(RulePreserveKept) // until the expiry (decideWait)
		} else {
			x.rule(RuleAwaitReplacement)
		}
		x.resync()
		if x.in.Outcome == nil {
			x.dropToken() // emitted again at each pass start while it exists
		}
	case phase.InPlaceUpdating:
		x.inPlaceUpdating(n)
	case phase.InPlaceUpdateFailed:
		if n != nil && n.Update.Has(UpdateSucceeded) {
			// H5: the agent succeeded after all.
			x.inPlaceUpdated(n)
			return
		}
		x.syncInPlaceNamed(n, named)
		x.unhealthy(named)
	case phase.Unknown:
		if x.in.Node.Update != 0 {
			x.syncInPlaceNamed(n, named)
		}
		x.unhealthy(named)
	default:
		// InPlaceUpdateSuccessful on a healthy node is Running and on any
		// other Unknown (judgeHealth): only a refused change stays here.
		x.syncInPlace(n)
		x.rule(RuleIdle)
		x.requeue(x.cfg.WaitCheck)
	}
}

// judgeHealth moves the machine by the health of its node n (nil when it
// has none): to Running when healthy (H3), to Unknown when a Running
// machine's node is unhealthy (H4) or missing (H1). It returns the rule of
// the move, RuleNone when the machine stays.
func (x *decider) judgeHealth(n *Node) Rule {
	st := x.st
	healthy := n != nil && x.healthy(n.Conditions)
	switch {
	case healthy && st.Phase != phase.Running && st.Phase != phase.InPlaceUpdating &&
		st.Phase != phase.InPlaceUpdateFailed &&
		!(st.Phase == phase.Pending && n.Taints.Has(CriticalComponentsNotReady)) &&
		!(st.Phase == phase.Failed && st.LastOp.Type == lastop.TypeInPlaceUpdate) &&
		st.ProviderID != "" && !st.Stage.ofCreation():
		// H3: the node is healthy; never Running without a recorded
		// instance that was initialized (the startup taint stays on its
		// node until then), nor after a failed in-place update, which
		// Failed ends: its node stays as the update left it, for the
		// owner to replace the machine.
		return x.becomeRunning()
	case n != nil && !healthy && (st.Phase == phase.Running || st.Phase == phase.InPlaceUpdateSuccessful):
		// H4: the node is unhealthy. MCM leaves an InPlaceUpdateSuccessful
		// machine whose node stays unhealthy there for ever; Unknown, its
		// health timeout applies.
		return x.becomeUnknown(RuleHealthUnhealthy, lastop.DescUnhealthy)
	case n == nil && (st.Phase == phase.Running || st.Phase == phase.InPlaceUpdateSuccessful):
		// H1: the node went missing. MCM asks for a mirrored condition
		// first and leaves a Running machine without one Running forever;
		// no node is no evidence of health either.
		return x.becomeUnknown(RuleHealthNodeMissing, lastop.DescNodeMissing)
	}
	return RuleNone
}

// becomeRunning makes the machine Running on its healthy node. The first
// join completes the creation (LastOperation Create Successful with the
// join time); any later one is a re-join. A replacement grant or a failed
// confirmation ends with the recovery. It returns the rule of the join.
func (x *decider) becomeRunning() Rule {
	st := x.st
	from := st.Phase
	r, op := RuleHealthRejoined, lastop.Operation{Type: lastop.TypeHealthCheck, State: lastop.StateSuccessful, Desc: lastop.DescRejoined}
	if st.LastOp.Type == lastop.TypeCreate && st.LastOp.State != lastop.StateSuccessful {
		r, op = RuleHealthJoined, lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateSuccessful, Desc: lastop.DescJoined,
			Elapsed: x.elapsed(x.created)}
	}
	x.rule(r)
	if !x.become(phase.Running, r, &op) {
		return r
	}
	x.becameRunning = from != phase.Running
	set(x, &st.Flags, st.Flags&^FlagGranted)
	set(x, &st.Failures.Health, 0)
	set(x, &st.RetryAfter, 0)
	return r
}

// becomeUnknown makes a Running machine Unknown by rule r, with the
// LastOperation description desc and a warning event. It returns r.
func (x *decider) becomeUnknown(r Rule, desc lastop.Desc) Rule {
	x.rule(r)
	x.become(phase.Unknown, r, &lastop.Operation{Type: lastop.TypeHealthCheck, State: lastop.StateProcessing, Desc: desc})
	return r
}

// healthy is MCM's isHealthy, asking for evidence: a node whose Ready
// condition is True, and none of the configured types (the machine's or
// the Config's NodeConditions) with a status other than False. Without
// conditions, or without a Ready condition (which MCM lets pass), a node is
// not healthy.
func (x *decider) healthy(conds []Condition) bool {
	ready := false
	for i := range conds {
		c := &conds[i]
		switch {
		case c.Type == ConditionReady:
			if c.Status != ConditionTrue {
				return false
			}
			ready = true
		case c.Status == ConditionFalse:
		case contains(x.cfg.nodeConditions(&x.in.Object), c.Type):
			// The watched types are looked up only for a condition that
			// is not False, which a healthy node has none of but Ready.
			return false
		}
	}
	return ready
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// sameConditions reports whether the mirrored conditions a still say what
// the node's b say: the same types with the same statuses, in order
// (MCM's H2 compares no more, but for the InPlaceUpdate condition's reason:
// sameInPlaceReason). A kubelet that rewords a reason or a message does
// not make a healthy machine write its status; the texts and transition
// times are mirrored with the next change of a status.
func sameConditions(a, b []Condition) bool {
	return len(a) == len(b) && (len(a) == 0 || sameEach(a, b))
}

// sameInPlaceReason reports whether the mirrored conditions a give the
// InPlaceUpdate condition the reason the node's b do: the in-place update
// protocol speaks through that reason, which MCM's H2 mirrors too. Health
// asks only for a node that carries labels of the protocol.
func sameInPlaceReason(a, b []Condition) bool {
	reason := func(cs []Condition) string {
		for i := range cs {
			if cs[i].Type == ConditionInPlaceUpdate {
				return cs[i].Reason
			}
		}
		return ""
	}
	return reason(a) == reason(b)
}

// sameEach is sameConditions for two lists of one length, not empty. A
// shell that keeps the node's conditions in the status it feeds back
// passes the same backing array twice. Otherwise the statuses and the
// types' lengths are compared first, then the types' texts a word at a
// time (condition types are short: Kubernetes' own have 5 to 18 bytes, two
// or three words), without the call the runtime's string comparison costs.
func sameEach(a, b []Condition) bool {
	b = b[:len(a)]
	if &a[0] == &b[0] {
		return true
	}
	for i := range a {
		s, t := a[i].Type, b[i].Type
		if a[i].Status != b[i].Status || len(s) != len(t) {
			return false
		}
		// s == t, written out: two words of eight bytes up to 16 bytes,
		// three up to 24, the last eight overlapping the word before when
		// the length is not a multiple of eight; two of four, overlapping,
		// below eight; word by word above 24 and byte by byte below four.
		n := len(s)
		t = t[:n]
		switch {
		case n >= 8 && n <= 24:
			if word64(s[:8]) != word64(t[:8]) || word64(s[n-8:n]) != word64(t[n-8:n]) ||
				n > 16 && word64(s[8:16]) != word64(t[8:16]) {
				return false
			}
		case n >= 4 && n < 8:
			if word32(s[:4]) != word32(t[:4]) || word32(s[n-4:n]) != word32(t[n-4:n]) {
				return false
			}
		case n > 24:
			for k := 0; k+8 < n; k += 8 {
				if word64(s[k:k+8]) != word64(t[k:k+8]) {
					return false
				}
			}
			if word64(s[n-8:n]) != word64(t[n-8:n]) {
				return false
			}
		default:
			for k := range n {
				if s[k] != t[k] {
					return false
				}
			}
		}
	}
	return true
}

// running brings the node of a Running machine in line: the startup taint
// removed, the bootstrap token deleted, the machine-name label set. Each is
// emitted again while the observation still shows it, so a crash loses none.
// n is the machine's node as health found it, or nil; named the rule health
// named so far. It reports whether it emitted a write.
func (x *decider) running(n *Node, named Rule) bool {
	if named == RuleNone {
		x.rule(RuleHealthy)
	}
	x.resync()
	if x.in.Outcome != nil && !x.becameRunning {
		// Within a pass these writes come only with the change to Running:
		// after they ran, the shell's caches may not show them yet, and they
		// must not be repeated step after step. A pass starts without an
		// outcome and emits them again while the observation shows them.
		return false
	}
	wrote := false
	if n != nil {
		if x.st.Flags&flagsPreserveCordon != 0 && x.preservedNode() != nil && x.giveBackCordon(n) {
			// Recovered from Failed while preserved: the node cordoned
			// for the preservation's drain is given back with the join.
			wrote = true
		}
		if n.Taints.Has(InstanceNotReady) {
			x.nodeEffect(KindRemoveTaint, n.Name, TaintInstanceNotReady, "")
			wrote = true
		}
		if n.MachineName != x.in.Object.Name {
			x.nodeEffect(KindLabelNode, n.Name, MachineNameLabel, x.in.Object.Name)
			wrote = true
		}
	}
	if x.in.TokenExists {
		x.put(KindDeleteBootstrapToken).Value = x.in.Object.Name
		wrote = true
	}
	if wrote && (named == RuleNone || named == RuleHealthConditions) {
		// A healthy pass that writes to the node is named by the writes.
		x.rule(RuleHealthSync)
	}
	return wrote
}

// pending waits for the node of a Pending machine until the creation
// timeout, then fails it (H7, H11).
func (x *decider) pending(named Rule) {
	o := &x.in.Object
	timeout := x.cfg.creationTimeout(o)
	if x.creationExpired() {
		x.rule(RuleHealthJoinTimeout)
		op := x.st.LastOp
		x.fail(RuleHealthJoinTimeout, lastop.Operation{Type: op.Type, State: lastop.StateFailed, Desc: lastop.DescJoinTimeout, Elapsed: timeout})
		return
	}
	if named == RuleNone {
		x.rule(RuleHealthWaitJoin)
	}
	x.requeue(x.cfg.WaitCheck) // or sooner: the seal requeues by the deadline
}

// unhealthy decides for an Unknown (or InPlaceUpdateFailed) machine: wait for
// the node to recover until the health timeout (H11); past it, unless the
// machine disables the timeout (H10), ask the fleet limiter's grant (T1-T4)
// and then the provider, which MCM never asks, before marking it Failed (H9,
// T4).
func (x *decider) unhealthy(named Rule) {
	st, o := x.st, &x.in.Object
	if named == RuleNone {
		x.rule(RuleHealthWaitUnknown)
	}
	timeout := x.cfg.healthTimeout(o)
	if !x.expired(st.PhaseSince, timeout) {
		// H11. A grant held from before (the timeout was raised, or an
		// outage moved the deadline) is released, so the owner's others
		// may be replaced.
		set(x, &st.Flags, st.Flags&^FlagGranted)
		x.requeue(x.cfg.WaitCheck) // or sooner: the seal requeues by the deadline
		return
	}
	if o.Overrides.DisableHealthTimeout {
		// H10: no one-minute re-check either; no grant is held.
		set(x, &st.Flags, st.Flags&^FlagGranted)
		x.rule(RuleHealthTimeoutDisabled)
		x.resync()
		return
	}
	// The retry time holds a confirmation that failed. The one a lookup of
	// this decision just set (create.instance-missing: the provider has no
	// instance) must not hold it: that lookup is renewed every Long period,
	// so the confirmation would never be asked.
	if x.row != RuleCreateInstanceMissing && x.holdRetry(RuleHealthConfirmFailed) {
		return
	}
	if !st.Flags.Has(FlagGranted) {
		if !x.in.Grant.Fail {
			// T1-T3: no grant (none computed, or other replacements in
			// flight). Nothing is written. MCM asks every Short period; the
			// lifecycle backs off from Short towards Medium, half the time
			// waited so far (a machine granted is stepped when its grant
			// changes, see Limit).
			x.rule(RuleHealthAwaitGrant)
			deadline := x.deadlineBase(st.PhaseSince).Add(timeout)
			x.wake(min(max(x.now.Sub(deadline)/2, retry.Short), retry.Medium), retry.Short)
			return
		}
		// The grant is recorded before the provider is asked, so the
		// limiter counts this machine as in flight from now on.
		set(x, &st.Flags, st.Flags|FlagGranted)
	}
	x.act(RuleHealthConfirm)
	x.call(driverapi.Call{Method: driverapi.MethodGetStatus, Machine: x.ref(), Attempt: st.Attempt})
	x.requeue(retry.Short)
}

// onConfirm decides on the provider's answer about a granted unhealthy
// machine. A definite answer (the instance exists, is gone, or is not
// initialized) confirms the failure and goes into LastOperation; a provider
// that cannot answer does not let the machine be marked Failed now.
func (x *decider) onConfirm(res *driverapi.Result) next {
	st := x.st
	if n := x.node(); n != nil && x.healthy(n.Conditions) && st.Phase == phase.Unknown &&
		st.ProviderID != "" && !st.Stage.ofCreation() {
		// Recovered while the provider was asked (H3 applies to Unknown
		// only, and only with a recorded, initialized instance).
		return then(nextHealth, RuleNone)
	}
	code, class := x.classify(res)
	switch {
	case code == driverapi.OK, code == driverapi.NotFound, code == driverapi.Uninitialized, code == driverapi.Unimplemented:
		// A definite answer; a provider that cannot report (Unimplemented)
		// is answered as MCM, which never asks: Failed.
		detail, errCode := "instance exists", ""
		switch code {
		case driverapi.OK:
		case driverapi.Unimplemented:
			detail, errCode = "status not implemented", code.String()
		default:
			detail, errCode = boundDetail(res.ErrorText()), code.String()
		}
		x.pin(RuleHealthTimeout)
		set(x, &st.Flags, st.Flags&^FlagGranted)
		set(x, &st.Failures.Health, 0)
		set(x, &st.RetryAfter, 0)
		x.fail(RuleHealthTimeout, lastop.Operation{Type: st.LastOp.Type, State: lastop.StateFailed, Desc: lastop.DescHealthConfirmed,
			ErrorCode: errCode, Detail: detail, Elapsed: x.cfg.healthTimeout(&x.in.Object)})
	default:
		x.pin(RuleHealthConfirmFailed)
		set(x, &st.Failures.Health, bump(st.Failures.Health))
		x.retryLater(x.backoff(x.cfg.Retry.Period(class), st.Failures.Health))
	}
	return done
}

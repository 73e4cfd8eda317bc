package lifecycle

import (
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/phase"
)

// The health flow (MCM table b.4) for a machine whose instance is recorded:
// mirror the node's conditions, move between Running and Unknown, let a
// Pending machine join, and fail a machine that does not join in time.
// Unlike MCM it runs whether or not the machine carries its node label (the
// node is found by label, machine-name label or providerID), so a Pending
// machine is never stranded (MCM D7 gap).

// health runs a pass of the health flow.
func (x *decider) health() {
	x.ensure = true
	st, n := x.st, &x.in.Node
	if n.Found() && !sameConditions(st.Conditions, n.Conditions) {
		// H2: mirror the node's conditions (the status shares the input's
		// read-only slice).
		st.Conditions = n.Conditions
		x.changed = true
		x.rule(RuleHealthConditions)
	}
	healthy := n.Found() && x.healthy(n.Conditions)
	switch {
	case healthy && st.Phase != phase.Running && st.Phase != phase.InPlaceUpdating &&
		st.Phase != phase.InPlaceUpdateFailed &&
		!(st.Phase == phase.Pending && n.Taints.Has(CriticalComponentsNotReady)):
		x.becomeRunning()
	case n.Found() && !healthy && st.Phase == phase.Running:
		// H4: the node is unhealthy.
		x.rule(RuleHealthUnhealthy)
		if x.setPhase(phase.Unknown) {
			x.setOp(lastop.Operation{Type: lastop.TypeHealthCheck, State: lastop.StateProcessing, Desc: lastop.DescUnhealthy})
			x.event(RuleHealthUnhealthy, true)
		}
	case !n.Found() && st.Phase == phase.Running && len(st.Conditions) > 0:
		// H1: the node went missing.
		x.rule(RuleHealthNodeMissing)
		if x.setPhase(phase.Unknown) {
			x.setOp(lastop.Operation{Type: lastop.TypeHealthCheck, State: lastop.StateProcessing, Desc: lastop.DescNodeMissing})
			x.event(RuleHealthNodeMissing, true)
		}
	}
	switch st.Phase {
	case phase.Running:
		x.running()
	case phase.Pending:
		x.pending()
	case phase.Failed:
		x.rule(RuleAwaitReplacement)
		x.resync()
		x.wait(WaitReplacement, st.PhaseSince, 0)
	default:
		// Unknown and MCM's in-place phases: look again while the node may
		// recover.
		x.unhealthy()
	}
}

// healthy is MCM's isHealthy: Ready is True and no condition of the
// configured types has a status other than False. Without conditions a node
// is not healthy.
func (x *decider) healthy(conds []Condition) bool {
	if len(conds) == 0 {
		return false
	}
	ready := false
	watched := x.cfg.nodeConditions(&x.in.Object)
	for i := range conds {
		c := &conds[i]
		if c.Type == ConditionReady {
			ready = c.Status == ConditionTrue
			if !ready {
				return false
			}
			continue
		}
		if c.Status != ConditionFalse && contains(watched, c.Type) {
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

func sameConditions(a, b []Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// becomeRunning is H3: the node is healthy. The first join completes the
// creation (LastOperation Create Successful with the join time); any later
// one is a re-join.
func (x *decider) becomeRunning() {
	st := x.st
	from := st.Phase
	if !x.setPhase(phase.Running) {
		return
	}
	if st.LastOp.Type == lastop.TypeCreate && st.LastOp.State != lastop.StateSuccessful {
		x.rule(RuleHealthJoined)
		x.setOp(lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateSuccessful, Desc: lastop.DescJoined,
			Elapsed: x.elapsed(StampOf(x.in.Object.CreationTime))})
	} else {
		x.rule(RuleHealthRejoined)
		x.setOp(lastop.Operation{Type: lastop.TypeHealthCheck, State: lastop.StateSuccessful, Desc: lastop.DescRejoined})
	}
	if from != phase.Running {
		x.event(x.d.Rule, false)
	}
}

// running brings the node of a Running machine in line: the startup taint
// removed, the bootstrap token deleted, the machine-name label set. Each is
// emitted again while the observation still shows it, so a crash loses none.
func (x *decider) running() {
	n := &x.in.Node
	if x.d.Rule == RuleNone || x.d.Rule == RuleHealthConditions {
		x.rule(RuleHealthy)
	}
	if n.Found() {
		if n.Taints.Has(InstanceNotReady) {
			x.syncRule()
			x.emit(Effect{Kind: KindRemoveTaint, Node: n.Name, Key: TaintInstanceNotReady})
		}
		if n.MachineName != x.in.Object.Name {
			x.syncRule()
			x.emit(Effect{Kind: KindLabelNode, Node: n.Name, Key: MachineNameLabel, Value: x.in.Object.Name})
		}
	}
	if x.in.TokenExists {
		x.syncRule()
		x.emit(Effect{Kind: KindDeleteBootstrapToken, Value: x.in.Object.Name})
	}
	x.resync()
}

func (x *decider) syncRule() {
	if x.d.Rule == RuleHealthy {
		x.rule(RuleHealthSync)
	}
}

// pending waits for the node of a Pending machine until the creation
// timeout, then fails it (H7, H11).
func (x *decider) pending() {
	o := &x.in.Object
	timeout := x.cfg.creationTimeout(o)
	if x.creationExpired() {
		x.rule(RuleHealthJoinTimeout)
		op := x.st.LastOp
		x.fail(lastop.Operation{Type: op.Type, State: lastop.StateFailed, Desc: lastop.DescJoinTimeout, Elapsed: timeout})
		return
	}
	if x.d.Rule == RuleNone || x.d.Rule == RuleHealthConditions {
		x.rule(RuleHealthWaitJoin)
	}
	deadline := x.deadlineBase(StampOf(o.CreationTime)).Add(timeout)
	x.until(deadline)
	x.wait(WaitNodeJoin, x.st.PhaseSince, deadline)
}

// unhealthy looks again at an Unknown machine while its node may recover.
func (x *decider) unhealthy() {
	if x.d.Rule == RuleNone || x.d.Rule == RuleHealthConditions {
		x.rule(RuleHealthWaitUnknown)
	}
	x.requeue(x.cfg.WaitCheck)
	x.wait(WaitRetry, x.st.PhaseSince, 0)
}

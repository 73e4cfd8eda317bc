package lifecycle

import (
	"time"

	"github.com/purelifecycle/machine/phase"
)

// What a machine waits for. One rule says it, from the status and what the
// shell observed: Step with it fills Decision.Wait from the status the
// decision leaves, and Summarize with it counts a fleet from the members of
// the saved statuses, so the summary never tells another story than the
// decisions.

// wait returns what the machine waits for at now: for what, since
// when, and until which deadline (unset when none).
//
// A machine being deleted waits for its finalizer when another controller
// took it away, for a problem with its class to be fixed, for the retry
// time of a failed step, for the pods of its node while its drain is under
// way (until the drain timeout forces it, or a forced drain's timeout), or
// else for its deletion (until the drain timeout while it is not drained). Any other machine waits for the observer while
// it is degraded, for a problem to be fixed, and else by its phase: an
// unhealthy machine for its recovery until its health timeout, then for
// the limiter's grant (or, its zone in an outage, for the hold its grant
// carries to end), then (granted) for the provider's answer or the
// retry time of a failed question; a machine being created for the retry
// time of a failed step or its creation, a Pending one for its node, both
// until the creation timeout; a Failed one for its replacement (or the
// retry of the deletion of an instance made on a stale node object); a
// Running one for the retry time of a failed hot update or lookup, or
// nothing, or, its node selected for an in-place update, for the drain
// until it is forced; an InPlaceUpdating one for the node agent until the
// in-place update timeout; any other for nothing.
func (f *waitFacts) wait(cfg *Config, now Stamp) Wait {
	if f.deleted != 0 {
		return f.deletionWait(cfg, now)
	}
	retry := f.st.RetryAfter > now
	if f.in.Observer.Degraded {
		return Wait{For: WaitObserver, Since: f.observed}
	}
	if f.in.Problem != ProblemNone {
		return Wait{For: WaitProblem}
	}
	switch f.st.Phase {
	case phase.Unknown, phase.InPlaceUpdateFailed:
		deadline := f.deadline(f.st.PhaseSince, cfg.healthTimeout(f.o))
		switch {
		case f.o.Overrides.DisableHealthTimeout:
			return Wait{For: WaitRecovery, Since: f.st.PhaseSince}
		case deadline == 0 || now < deadline:
			return Wait{For: WaitRecovery, Since: f.st.PhaseSince, Until: deadline}
		case !f.st.Flags.Has(FlagGranted):
			if until := zoneHold(cfg, &f.in.Grant, deadline); until > now {
				return Wait{For: WaitZoneOutage, Since: deadline, Until: until}
			}
			return Wait{For: WaitGrant, Since: deadline}
		case retry:
			return Wait{For: WaitRetry, Since: f.st.StageSince, Until: f.st.RetryAfter}
		}
	case phase.None, phase.CrashLoopBackOff:
		if f.in.PredecessorTerminating && f.st.Stage == StageNone && f.st.ProviderID == "" && f.o.ProviderID == "" && f.created != 0 {
			if bound := f.predecessorBound(cfg); now < bound {
				// Once the wait began, the creation timeout counts from
				// its bound (CreationFrom); a decision that did not begin
				// it (one deciding on an outcome) still has the creation
				// deadline counted from the creation time, which may come
				// first.
				return Wait{For: WaitPredecessor, Since: f.created, Until: sooner(bound, f.creationDeadline(cfg))}
			}
		}
		if retry {
			return Wait{For: WaitRetry, Since: f.st.StageSince, Until: sooner(f.st.RetryAfter, f.creationDeadline(cfg))}
		}
		return Wait{For: WaitCreation, Since: f.created, Until: f.creationDeadline(cfg)}
	case phase.Pending:
		return Wait{For: WaitNodeJoin, Since: f.st.PhaseSince, Until: f.creationDeadline(cfg)}
	case phase.Failed:
		return f.failedWait(cfg, now, retry)
	case phase.Running, phase.InPlaceUpdating:
		return f.updateWait(cfg, retry)
	}
	return Wait{}
}

// failedWait is wait for a Failed machine; retry reports that its retry
// time is ahead.
func (f *waitFacts) failedWait(cfg *Config, now Stamp, retry bool) Wait {
	switch {
	case retry && (f.st.Flags.Has(FlagStaleInstance) || f.st.Stage == StagePreserveDrain):
		// The deletion of an instance made on a stale node object, or a
		// write of the preserved node's drain, failed and is retried.
		return Wait{For: WaitRetry, Since: f.st.StageSince, Until: f.st.RetryAfter}
	case f.st.Stage == StagePreserveDrain:
		return f.keepDrainWait(cfg)
	case f.st.PreserveUntil > now:
		return Wait{For: WaitPreserved, Since: f.st.PhaseSince, Until: f.st.PreserveUntil}
	}
	return Wait{For: WaitReplacement, Since: f.st.PhaseSince}
}

// keepDrainWait is the wait of a machine whose kept node drains: for its
// pods, until the drain is forced.
func (f *waitFacts) keepDrainWait(cfg *Config) Wait {
	var until Stamp
	if !f.st.Flags.Has(FlagDeletingPods) {
		until = f.st.StageSince.Add(cfg.drainTimeout(f.o))
	}
	return Wait{For: WaitDrain, Since: f.st.StageSince, Until: until}
}

// updateWait is wait for a Running or InPlaceUpdating machine; retry
// reports that its retry time is ahead.
func (f *waitFacts) updateWait(cfg *Config, retry bool) Wait {
	switch {
	case f.st.Phase == phase.InPlaceUpdating:
		return Wait{For: WaitInPlaceUpdate, Since: f.st.PhaseSince, Until: f.deadline(f.st.PhaseSince, cfg.inPlaceUpdateTimeout(f.o))}
	case retry:
		// A failed hot update or in-place drain, or the lookup of an
		// instance the status does not name.
		return Wait{For: WaitRetry, Since: f.st.StageSince, Until: f.st.RetryAfter}
	case f.st.Stage == StageInPlaceDrain:
		// The drain before an in-place update, until it is forced.
		return f.keepDrainWait(cfg)
	}
	return Wait{}
}

// deletionWait is wait for a machine being deleted.
func (f *waitFacts) deletionWait(cfg *Config, now Stamp) Wait {
	var drainBy Stamp // the drain timeout, while the drain is ahead
	if f.st.Stage <= StageDrain && f.st.Flags&flagsDrained == 0 {
		drainBy = f.deleted.Add(cfg.drainTimeout(f.o))
	}
	switch {
	case f.in.Problem != ProblemNone:
		return Wait{For: WaitProblem}
	case !f.o.Finalizer:
		return Wait{For: WaitFinalizer, Since: f.deleted}
	case f.st.RetryAfter > now:
		return Wait{For: WaitRetry, Since: f.st.StageSince, Until: sooner(f.st.RetryAfter, drainBy)}
	case f.st.Stage == StageDrain && f.st.Flags.Has(FlagDeletingPods):
		return Wait{For: WaitDrain, Since: f.st.StageSince, Until: f.st.StageSince.Add(cfg.ForcedDrainTimeout)}
	case f.st.Stage == StageDrain && f.st.Flags.Has(FlagDraining):
		return Wait{For: WaitDrain, Since: f.st.StageSince, Until: drainBy}
	}
	return Wait{For: WaitDeletion, Since: f.deleted, Until: drainBy}
}

// creationDeadline returns when the machine's creation timeout passes.
func (f *waitFacts) creationDeadline(cfg *Config) Stamp {
	return f.deadline(f.creationStart(), cfg.creationTimeout(f.o))
}

// creationStart is when the creation timeout starts counting: the object's
// creation time, or the end of a wait for an older incarnation of its name.
func (f *waitFacts) creationStart() Stamp {
	return later(f.created, f.st.CreationFrom)
}

// predecessorBound is the latest a wait for an older incarnation of the
// machine's name ends.
func (f *waitFacts) predecessorBound(cfg *Config) Stamp {
	return f.created.Add(cfg.predecessorWait(f.o))
}

// deadline returns when a timeout counted from since passes, never counted
// from before the observer became healthy again; 0 when since is unset.
func (f *waitFacts) deadline(since Stamp, timeout time.Duration) Stamp {
	if since == 0 {
		return 0
	}
	return later(since, f.observed).Add(timeout)
}

// waitsForNothing reports, cheaply, what the rule of wait says of the most
// common machine: a Running one not being deleted nor drained for an
// in-place update, with nothing to retry, a healthy observer and no problem
// waits for nothing and for no deadline.
func waitsForNothing(p phase.Phase, s Stage, deleting bool, retryAfter, now Stamp, degraded bool, problem Problem) bool {
	return p == phase.Running && s == StageNone && !deleting && retryAfter <= now && !degraded && problem == ProblemNone
}

// sooner returns the sooner of two stamps, 0 standing for none.
func sooner(a, b Stamp) Stamp {
	if a == 0 || b != 0 && b < a {
		return b
	}
	return a
}

// waitFacts are what the wait of a machine is decided from: its status
// (phase, stage, flags, stamps, recorded instance), its object's times and
// own timeouts, and what the shell observed.
type waitFacts struct {
	st *Status
	o  *Object // its Finalizer, ProviderID and Overrides
	in *Input  // its Problem, Observer.Degraded and PredecessorTerminating
	// created, deleted and observed are the object's creation and deletion
	// times and the observer's Since, as stamps.
	created, deleted, observed Stamp
}

// zoneHold returns until when a machine whose health deadline passed is
// held back for its zone's outage: the time its grant g says, never later
// than the Config's hold past the deadline; 0 when it is not held.
func zoneHold(cfg *Config, g *Grant, deadline Stamp) Stamp {
	if g.Fail || g.Held.IsZero() || !cfg.ZoneOutage.on() {
		return 0
	}
	return sooner(StampOf(g.Held), deadline.Add(cfg.ZoneOutage.Hold))
}

// facts returns the member's wait facts, with st, o and in to hold the
// status, object and input they point to. It writes only the fields the
// rule reads, so a caller may reuse them from member to member.
func (m *Member) facts(st *Status, o *Object, in *Input) waitFacts {
	st.Phase, st.Stage, st.Flags, st.PhaseSince, st.StageSince = m.phase, m.stage, m.flags, m.phaseSince, m.stageSince
	st.RetryAfter, st.ProviderID, st.CreationFrom, st.PreserveUntil = m.retryAfter, m.providerID, m.creationFrom, m.preserveUntil
	o.Finalizer, o.ProviderID = m.finalizer, ""
	o.Overrides.CreationTimeout, o.Overrides.HealthTimeout, o.Overrides.DrainTimeout = m.creationTimeout, m.healthTimeout, m.drainTimeout
	o.Overrides.InPlaceUpdateTimeout = m.inPlaceTimeout
	o.Overrides.DisableHealthTimeout = m.disableHealthTimeout
	in.Problem, in.Observer.Degraded, in.PredecessorTerminating = m.problem, m.observerDegraded, m.predecessorTerminating
	in.Grant = Grant{Held: m.held.Time()}
	var deleted Stamp // 0: not being deleted
	if m.deleting {
		deleted = m.deletionTime
		if deleted == 0 {
			deleted = 1 // deleting since the beginning of time
		}
	}
	return waitFacts{st: st, o: o, in: in, created: m.creationTime, deleted: deleted, observed: m.observerSince}
}

// decideWait fills the decision's Wait from the status it leaves, and
// requeues the decision no later than the wait's deadline, or than a node
// NotReady forces the drain: whatever the decision waits for, a deadline is
// noticed when it passes.
func (x *decider) decideWait() {
	st := x.st
	x.d.Wait = x.wait(x.cfg, x.now)
	at := x.d.Wait.Until
	if st.Stage != StageNone && (st.Stage == StageDrain && x.deleted != 0 || st.Stage >= StageInPlaceDrain) &&
		st.Flags&flagsDrained == 0 {
		for i := range st.Conditions {
			if c := &st.Conditions[i]; c.Since != 0 && forcesDrain(c) {
				at = sooner(at, c.Since.Add(x.cfg.ForceDrainAfter))
			}
		}
	}
	if at > x.now {
		x.requeue(at.Sub(x.now))
	}
}

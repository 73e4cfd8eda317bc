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

// wait returns what the member's machine waits for at now: for what, since
// when, and until which deadline (unset when none).
//
// A machine being deleted waits for its finalizer when another controller
// took it away, for a problem with its class to be fixed, for the retry
// time of a failed step, or else for its deletion (until the drain timeout
// while it is not drained). Any other machine waits for the observer while
// it is degraded, for a problem to be fixed, and else by its phase: an
// unhealthy machine for its recovery until its health timeout, then for
// the limiter's grant, then (granted) for the provider's answer or the
// retry time of a failed question; a machine being created for the retry
// time of a failed step or its creation, a Pending one for its node, both
// until the creation timeout; a Failed one for its replacement (or the
// retry of the deletion of an instance made on a stale node object); a
// Running one for the retry time of a failed hot update or lookup, or
// nothing; any other for nothing.
func (m *Member) wait(cfg *Config, now Stamp) Wait {
	retry := m.RetryAfter > now
	if m.Deleting {
		switch {
		case m.Problem != ProblemNone:
			return Wait{For: WaitProblem}
		case !m.Finalizer:
			return Wait{For: WaitFinalizer, Since: m.DeletionTime}
		case retry:
			return Wait{For: WaitRetry, Since: m.StageSince, Until: m.RetryAfter}
		}
		w := Wait{For: WaitDeletion, Since: m.DeletionTime}
		if m.Stage <= StageDrain && m.Flags&flagsDrained == 0 {
			w.Until = m.DeletionTime.Add(orConfig(m.DrainTimeout, cfg.DrainTimeout))
		}
		return w
	}
	if m.ObserverDegraded {
		return Wait{For: WaitObserver, Since: m.ObserverSince}
	}
	if m.Problem != ProblemNone {
		return Wait{For: WaitProblem}
	}
	switch m.Phase {
	case phase.Unknown, phase.InPlaceUpdateFailed:
		deadline := m.deadline(m.PhaseSince, orConfig(m.HealthTimeout, cfg.HealthTimeout))
		switch {
		case m.DisableHealthTimeout:
			return Wait{For: WaitRecovery, Since: m.PhaseSince}
		case deadline == 0 || now < deadline:
			return Wait{For: WaitRecovery, Since: m.PhaseSince, Until: deadline}
		case !m.Flags.Has(FlagGranted):
			return Wait{For: WaitGrant, Since: deadline}
		case retry:
			return Wait{For: WaitRetry, Since: m.StageSince, Until: m.RetryAfter}
		}
		return Wait{}
	}
	switch m.Phase {
	case phase.None, phase.CrashLoopBackOff:
		if m.PredecessorTerminating && m.Stage == StageNone && m.ProviderID == "" && m.CreationTime != 0 {
			bound := m.CreationTime.Add(orConfig(cfg.PredecessorWait, orConfig(m.DrainTimeout, cfg.DrainTimeout)))
			if now < bound {
				return Wait{For: WaitPredecessor, Since: m.CreationTime, Until: bound}
			}
		}
		if retry {
			return Wait{For: WaitRetry, Since: m.StageSince, Until: m.RetryAfter}
		}
		return Wait{For: WaitCreation, Since: m.CreationTime, Until: m.creationDeadline(cfg)}
	case phase.Pending:
		return Wait{For: WaitNodeJoin, Since: m.PhaseSince, Until: m.creationDeadline(cfg)}
	case phase.Failed:
		if retry && m.Flags.Has(FlagStaleInstance) {
			// The deletion of an instance made on a stale node object
			// failed and is retried.
			return Wait{For: WaitRetry, Since: m.StageSince, Until: m.RetryAfter}
		}
		return Wait{For: WaitReplacement, Since: m.PhaseSince}
	case phase.Running:
		if retry {
			// A failed hot update, or the lookup of an instance the
			// status does not name.
			return Wait{For: WaitRetry, Since: m.StageSince, Until: m.RetryAfter}
		}
	}
	return Wait{}
}

// creationDeadline returns when the member's creation timeout passes.
func (m *Member) creationDeadline(cfg *Config) Stamp {
	return m.deadline(later(m.CreationTime, m.CreationFrom), orConfig(m.CreationTimeout, cfg.CreationTimeout))
}

// deadline returns when a timeout counted from since passes, never counted
// from before the observer became healthy again; 0 when since is unset.
func (m *Member) deadline(since Stamp, timeout time.Duration) Stamp {
	if since == 0 {
		return 0
	}
	return later(since, m.ObserverSince).Add(timeout)
}

// orConfig returns a machine's own setting v, or the Config's c when v is
// not set.
func orConfig(v, c time.Duration) time.Duration {
	if v > 0 {
		return v
	}
	return c
}

// decideWait fills the decision's Wait from the status it leaves. A
// healthy Running machine with nothing to retry, the common case, waits
// for nothing and is not looked at further.
func (x *decider) decideWait() {
	st, in := x.st, x.in
	if st.Phase == phase.Running && st.RetryAfter <= x.now && in.Object.DeletionTime.IsZero() &&
		!in.Observer.Degraded && in.Problem == ProblemNone {
		return
	}
	m := waitMember(&in.Object, st, in)
	x.d.Wait = m.wait(x.cfg, x.now)
}

// waitMember returns the member of a machine with the fields its wait
// reads: those of object o, status st and what the shell observed in in.
func waitMember(o *Object, st *Status, in *Input) Member {
	m := Member{
		Phase: st.Phase, Stage: st.Stage, Flags: st.Flags, PhaseSince: st.PhaseSince, StageSince: st.StageSince,
		RetryAfter: st.RetryAfter, ProviderID: st.ProviderID, CreationFrom: st.CreationFrom,
		CreationTime: StampOf(o.CreationTime), DeletionTime: StampOf(o.DeletionTime),
		ObserverSince: StampOf(in.Observer.Since), ObserverDegraded: in.Observer.Degraded,
		PredecessorTerminating: in.PredecessorTerminating,
		Deleting:               !o.DeletionTime.IsZero(), Finalizer: o.Finalizer, Problem: in.Problem,
		DisableHealthTimeout: o.Overrides.DisableHealthTimeout,
		HealthTimeout:        o.Overrides.HealthTimeout, CreationTimeout: o.Overrides.CreationTimeout,
		DrainTimeout: o.Overrides.DrainTimeout,
	}
	if m.ProviderID == "" {
		m.ProviderID = o.ProviderID
	}
	return m
}

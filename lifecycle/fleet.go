package lifecycle

import (
	"time"

	"github.com/purelifecycle/machine/phase"
)

// The fleet functions: pure functions over all machines of a controller,
// linear in the fleet, that decide what no single machine's step can: the
// limiter (limiter.go), orphan instances, and the summary for metrics.

// Member is what the fleet functions read of one machine. Build it with
// [MemberOf].
type Member struct {
	// Name and UID identify the machine.
	Name, UID string
	// Owner is the machine's owner UID; "" for machines without an owner,
	// which are limited together as one group.
	Owner string
	// ProviderID is the instance recorded in the machine's status.
	ProviderID string
	// Phase is the machine's phase.
	Phase phase.Phase
	// Stage is the machine's stage.
	Stage Stage
	// Flags are the machine's status flags.
	Flags Flags
	// PhaseSince is when the machine entered its phase, StageSince its
	// stage.
	PhaseSince, StageSince Stamp
	// RetryAfter is the status's retry time: a failed step is not asked
	// again before it.
	RetryAfter Stamp
	// CreationTime and DeletionTime are the object's; DeletionTime is zero
	// when the machine is not being deleted.
	CreationTime, DeletionTime Stamp
	// CreationFrom is the status's: when the creation timeout starts
	// counting, if later than the creation time.
	CreationFrom Stamp
	// ObserverSince is Observer.Since of the input the member was made
	// from, when the observer was degraded or became healthy again.
	ObserverSince Stamp
	// Deleting reports that the machine's deletion was requested;
	// Finalizer that the machine's finalizer is on its object.
	Deleting, Finalizer bool
	// ObserverDegraded is Observer.Degraded of the input the member was
	// made from; PredecessorTerminating its PredecessorTerminating.
	ObserverDegraded, PredecessorTerminating bool
	// DisableHealthTimeout is the machine's spec disableHealthTimeout.
	DisableHealthTimeout bool
	// UpdatePending reports that the machine's hot update is not applied
	// yet; MetadataInSync that its instance metadata was last seen in sync.
	UpdatePending, MetadataInSync bool
	// Problem is what the shell found wrong with the machine or its class.
	Problem Problem
	// HealthTimeout, CreationTimeout and DrainTimeout are the machine's own
	// timeouts (0: the Config's).
	HealthTimeout, CreationTimeout, DrainTimeout time.Duration
}

// MemberOf returns what the fleet functions read of the machine of in: its
// object and status, the problem the shell found and the observer's state;
// the Config's VerifyOwner decides whether the owner UID counts for
// metadata. A fleet pass builds it from each machine's saved status and the
// shell's observations, as a step would be given them.
func MemberOf(cfg *Config, in *Input) Member {
	o, st := &in.Object, &in.Status
	m := Member{
		Name: o.Name, UID: o.UID, Owner: o.Owner, ProviderID: st.ProviderID,
		Phase: st.Phase, Stage: st.Stage, Flags: st.Flags, PhaseSince: st.PhaseSince, StageSince: st.StageSince,
		RetryAfter: st.RetryAfter, CreationFrom: st.CreationFrom,
		CreationTime: StampOf(o.CreationTime), DeletionTime: StampOf(o.DeletionTime),
		ObserverSince: StampOf(in.Observer.Since), ObserverDegraded: in.Observer.Degraded,
		PredecessorTerminating: in.PredecessorTerminating,
		Deleting:               !o.DeletionTime.IsZero(), Finalizer: o.Finalizer, Problem: in.Problem,
		DisableHealthTimeout: o.Overrides.DisableHealthTimeout,
		UpdatePending:        o.UpdateGeneration != st.AppliedGeneration,
		MetadataInSync:       metadataInSync(cfg.VerifyOwner, o, st),
		HealthTimeout:        o.Overrides.HealthTimeout, CreationTimeout: o.Overrides.CreationTimeout,
		DrainTimeout: o.Overrides.DrainTimeout,
	}
	if m.ProviderID == "" {
		m.ProviderID = o.ProviderID
	}
	return m
}

// instanceInFlight reports whether the member's instance may still be in
// flight: no phase, CrashLoopBackOff, or a creation stage.
func (m *Member) instanceInFlight() bool {
	return m.Phase == phase.None || m.Phase == phase.CrashLoopBackOff || m.Stage.ofCreation()
}

// Summary counts a fleet for metrics and alerts.
type Summary struct {
	// Machines is the number of machines.
	Machines int
	// ByPhase counts machines by phase.
	ByPhase [phase.Count]int
	// ByWait counts machines by what they wait for: by the rule that
	// fills Decision.Wait, applied to each member, so a machine is counted
	// as its last decision says.
	ByWait [waitCount]int
	// PastDeadline counts machines whose wait's deadline (Wait.Until) has
	// passed: a creation or join past the creation timeout, an unhealthy
	// machine past the health timeout that has not moved on, a drain past
	// the drain timeout. A machine waiting for the limiter's grant has no
	// deadline; it is counted under WaitGrant.
	PastDeadline int
	// OldestWait is, per phase, how long the machine longest in it has been
	// (0 for Running and Available, which do not wait).
	OldestWait [phase.Count]time.Duration
	// Deleting counts machines whose deletion was requested; Terminated
	// those whose instance the provider confirmed gone.
	Deleting, Terminated int
	// NeedsReplacement counts machines whose hot update cannot be applied in
	// place; UpdatePending those whose hot update is not applied yet.
	NeedsReplacement, UpdatePending int
	// MetadataOutOfSync counts Running machines whose instance metadata was
	// last seen differing.
	MetadataOutOfSync int
	// Working counts Running and Available machines not being deleted;
	// Orphans the orphan instances given.
	Working, Orphans int
}

// Summarize counts the fleet at now. orphans is the number of orphan
// instances (len of Orphans' result). Linear in the fleet; allocates
// nothing.
func Summarize(cfg *Config, now time.Time, fleet []Member, orphans int) Summary {
	s := Summary{Machines: len(fleet), Orphans: orphans}
	n := StampOf(now)
	// What a member's wait reads, reused from member to member.
	var st Status
	var o Object
	var in Input
	for i := range fleet {
		m := &fleet[i]
		if !m.Phase.Valid() {
			continue
		}
		s.ByPhase[m.Phase]++
		if m.Deleting {
			s.Deleting++
		}
		if m.Flags.Has(FlagTerminated) {
			s.Terminated++
		}
		if m.Flags.Has(FlagNeedsReplacement) {
			s.NeedsReplacement++
		}
		if m.UpdatePending {
			s.UpdatePending++
		}
		settled := m.Phase == phase.Running || m.Phase == phase.Available
		if settled && !m.Deleting {
			s.Working++
			if m.Phase == phase.Running && !m.MetadataInSync {
				s.MetadataOutOfSync++
			}
		}
		var w Wait
		if !waitsForNothing(m.Phase, m.Deleting, m.RetryAfter, n, m.ObserverDegraded, m.Problem) {
			f := m.facts(&st, &o, &in)
			w = f.wait(cfg, n)
		}
		if w.For != WaitNone {
			s.ByWait[w.For]++
		}
		if w.Until != 0 && n > w.Until {
			s.PastDeadline++
		}
		if !settled && m.PhaseSince != 0 && n > m.PhaseSince {
			s.OldestWait[m.Phase] = max(s.OldestWait[m.Phase], n.Sub(m.PhaseSince))
		}
	}
	return s
}

package lifecycle

import (
	"time"

	"github.com/purelifecycle/machine/phase"
)

// The fleet functions: pure functions over all machines of a controller,
// linear in the fleet, that decide what no single machine's step can: the
// limiter (limiter.go), orphan instances, and the summary for metrics.

// Member is what the fleet functions ([Limit], [Orphans], [Summarize]) read
// of one machine. Only [MemberOf] makes one, from the machine's input and
// with the step's own logic, so a fleet function never sees a machine in a
// state no step would leave; [Member.UpdatePending] and
// [Member.MetadataInSync] tell two of the things MemberOf resolved.
type Member struct {
	// name and uid identify the machine; owner is its owner UID ("" for
	// machines without an owner, which are limited together as one group);
	// providerID the instance it records (the status's, else the
	// object's).
	name, uid, owner, providerID string
	// phase, stage and flags are the status's.
	phase phase.Phase
	stage Stage
	flags Flags
	// phaseSince is when the machine entered its phase, stageSince its
	// stage; retryAfter the status's retry time: a failed step is not
	// asked again before it; preserveUntil when its preservation expires
	// (unset when it is not preserved).
	phaseSince, stageSince, retryAfter, preserveUntil Stamp
	// creationTime and deletionTime are the object's (deletionTime zero
	// when the machine is not being deleted); creationFrom is the
	// status's: when the creation timeout starts counting, if later than
	// the creation time.
	creationTime, deletionTime, creationFrom Stamp
	// observerSince is Observer.Since of the input.
	observerSince Stamp
	// deleting reports that the machine's deletion was requested;
	// finalizer that the machine's finalizer is on its object.
	deleting, finalizer bool
	// observerDegraded is Observer.Degraded of the input,
	// predecessorTerminating its PredecessorTerminating.
	observerDegraded, predecessorTerminating bool
	// disableHealthTimeout is the machine's spec disableHealthTimeout.
	disableHealthTimeout bool
	// updatePending and metadataInSync: see the methods of those names.
	updatePending, metadataInSync bool
	// problem is what the shell found wrong with the machine or its class.
	problem Problem
	// healthTimeout, creationTimeout, drainTimeout and inPlaceTimeout are
	// the machine's own timeouts (0: the Config's).
	healthTimeout, creationTimeout, drainTimeout, inPlaceTimeout time.Duration
	// preserveNamed reports that an annotation of the machine or its node
	// names its preservation (whatever it asks), so the fleet does not
	// auto-preserve it; preserveTimeout is its own preservation timeout
	// (0: the Config's).
	preserveNamed   bool
	preserveTimeout time.Duration
	// zone is the zone of the machine's node, "" when unknown; held the
	// hold of its zone's outage the input's grant carries (Grant.Held).
	zone string
	held Stamp
}

// MemberOf returns what the fleet functions read of the machine of in: its
// object and status, the problem the shell found and the observer's state;
// the Config's VerifyOwner decides whether the owner UID counts for
// metadata. A fleet pass builds it from each machine's saved status and the
// shell's observations, as a step would be given them.
func MemberOf(cfg *Config, in *Input) Member {
	o, st := &in.Object, &in.Status
	m := Member{
		name: o.Name, uid: o.UID, owner: o.Owner, providerID: st.ProviderID,
		phase: st.Phase, stage: st.Stage, flags: st.Flags, phaseSince: st.PhaseSince, stageSince: st.StageSince,
		retryAfter: st.RetryAfter, creationFrom: st.CreationFrom, preserveUntil: st.PreserveUntil,
		creationTime: StampOf(o.CreationTime), deletionTime: StampOf(o.DeletionTime),
		observerSince: StampOf(in.Observer.Since), observerDegraded: in.Observer.Degraded,
		predecessorTerminating: in.PredecessorTerminating,
		deleting:               !o.DeletionTime.IsZero(), finalizer: o.Finalizer, problem: in.Problem,
		disableHealthTimeout: o.Overrides.DisableHealthTimeout,
		updatePending:        o.UpdateGeneration != st.AppliedGeneration,
		metadataInSync:       metadataInSync(cfg.VerifyOwner, o, st),
		healthTimeout:        o.Overrides.HealthTimeout, creationTimeout: o.Overrides.CreationTimeout,
		drainTimeout: o.Overrides.DrainTimeout, inPlaceTimeout: o.Overrides.InPlaceUpdateTimeout,
		zone: in.Node.Zone, held: StampOf(in.Grant.Held),
		preserveNamed: o.Preserve != PreserveUnset && o.Preserve != PreserveInvalid ||
			in.Node.Preserve != PreserveUnset || st.Flags.Has(FlagPreserveByNode),
		preserveTimeout: o.Overrides.PreserveTimeout,
	}
	if m.providerID == "" {
		m.providerID = o.ProviderID
	}
	return m
}

// UpdatePending reports whether the machine's hot update is not applied
// yet: the object's update generation is not the one the status applied.
func (m Member) UpdatePending() bool { return m.updatePending }

// MetadataInSync reports whether the machine's instance metadata was last
// seen in sync: the last observation showed every desired key with its
// value and no other (and the machine's UID as the owner, when the Config
// verifies it), and no patch was asked since.
func (m Member) MetadataInSync() bool { return m.metadataInSync }

// instanceInFlight reports whether the member's instance may still be in
// flight: no phase, CrashLoopBackOff, or a creation stage.
func (m *Member) instanceInFlight() bool {
	return m.phase == phase.None || m.phase == phase.CrashLoopBackOff || m.stage.ofCreation()
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
		if !m.phase.Valid() {
			continue
		}
		s.ByPhase[m.phase]++
		if m.deleting {
			s.Deleting++
		}
		if m.flags.Has(FlagTerminated) {
			s.Terminated++
		}
		if m.flags.Has(FlagNeedsReplacement) {
			s.NeedsReplacement++
		}
		if m.updatePending {
			s.UpdatePending++
		}
		settled := m.phase == phase.Running || m.phase == phase.Available
		if settled && !m.deleting {
			s.Working++
			if m.phase == phase.Running && !m.metadataInSync {
				s.MetadataOutOfSync++
			}
		}
		var w Wait
		if !waitsForNothing(m.phase, m.stage, m.deleting, m.retryAfter, n, m.observerDegraded, m.problem) {
			f := m.facts(&st, &o, &in)
			w = f.wait(cfg, n)
		}
		if w.For != WaitNone {
			s.ByWait[w.For]++
		}
		if w.Until != 0 && n > w.Until {
			s.PastDeadline++
		}
		if !settled && m.phaseSince != 0 && n > m.phaseSince {
			s.OldestWait[m.phase] = max(s.OldestWait[m.phase], n.Sub(m.phaseSince))
		}
	}
	return s
}

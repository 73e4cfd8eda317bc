package lifecycle

import (
	"time"

	"github.com/purelifecycle/machine/driverapi"
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
	// PhaseSince is when the machine entered its phase.
	PhaseSince Stamp
	// CreationTime and DeletionTime are the object's; DeletionTime is zero
	// when the machine is not being deleted.
	CreationTime, DeletionTime Stamp
	// Deleting reports that the machine's deletion was requested.
	Deleting bool
	// HealthTimeout and CreationTimeout are the machine's own timeouts (0:
	// the Config's).
	HealthTimeout, CreationTimeout time.Duration
	// DisableHealthTimeout is the machine's spec disableHealthTimeout.
	DisableHealthTimeout bool
	// UpdatePending reports that the machine's hot update is not applied
	// yet; MetadataInSync that its instance metadata was last seen in sync.
	UpdatePending, MetadataInSync bool
}

// MemberOf returns what the fleet functions read of a machine; the
// Config's VerifyOwner decides whether the owner UID counts for metadata.
func MemberOf(cfg *Config, o *Object, st *Status) Member {
	pid := st.ProviderID
	if pid == "" {
		pid = o.ProviderID
	}
	return Member{
		Name: o.Name, UID: o.UID, Owner: o.Owner, ProviderID: pid,
		Phase: st.Phase, Stage: st.Stage, Flags: st.Flags, PhaseSince: st.PhaseSince,
		CreationTime: StampOf(o.CreationTime), DeletionTime: StampOf(o.DeletionTime),
		Deleting:             !o.DeletionTime.IsZero(),
		HealthTimeout:        o.Overrides.HealthTimeout,
		CreationTimeout:      o.Overrides.CreationTimeout,
		DisableHealthTimeout: o.Overrides.DisableHealthTimeout,
		UpdatePending:        o.UpdateGeneration != st.AppliedGeneration,
		MetadataInSync:       metadataInSync(cfg.VerifyOwner, o, st),
	}
}

// creating reports whether the member's instance may still be in flight:
// no phase, CrashLoopBackOff, or a creation stage.
func (m *Member) creating() bool {
	return m.Phase == phase.None || m.Phase == phase.CrashLoopBackOff || m.Stage.creating()
}

// Orphans returns a DeleteMachine call for every instance of the provider
// that no machine owns (MCM's orphan-VM collection). An instance is left
// alone when a machine records its providerID; when a machine of its name is
// still being created (no phase, CrashLoopBackOff, a creation stage), or
// records no instance yet, and the instance is that incarnation's or names
// no owner (MCM #583); and when it is
// younger than the creation timeout, as it may belong to a creation or a
// newer incarnation the shell's caches do not show yet. Otherwise an
// instance of no known machine, of another incarnation (another owner UID),
// or a second instance of a machine that recorded another one, is an
// orphan. dst is reused when its capacity suffices; the order follows
// instances. Linear in machines plus instances.
func Orphans(dst []driverapi.Call, cfg *Config, now time.Time, fleet []Member, instances []driverapi.Instance) []driverapi.Call {
	dst = dst[:0]
	recorded := make(map[string]struct{}, len(fleet))
	for i := range fleet {
		if pid := fleet[i].ProviderID; pid != "" {
			recorded[pid] = struct{}{}
		}
	}
	// The machines of the names of unrecorded instances: normally a few
	// (orphans and creations in flight), so this index stays small where
	// one of the whole fleet would not.
	var byName map[string]*Member
	for i := range instances {
		inst := &instances[i]
		if _, ok := recorded[inst.ProviderID]; !ok && inst.ProviderID != "" {
			if byName == nil {
				byName = make(map[string]*Member)
			}
			byName[inst.MachineName] = nil
		}
	}
	if len(byName) == 0 {
		return dst
	}
	for i := range fleet {
		if _, ok := byName[fleet[i].Name]; ok {
			byName[fleet[i].Name] = &fleet[i]
		}
	}
	n := StampOf(now)
	for i := range instances {
		inst := &instances[i]
		if _, ok := recorded[inst.ProviderID]; ok || inst.ProviderID == "" {
			continue
		}
		if m := byName[inst.MachineName]; m != nil && (m.creating() || m.ProviderID == "") &&
			(inst.OwnerUID == "" || inst.OwnerUID == m.UID) {
			// In flight (MCM #583), or to be adopted by a machine that
			// records no instance yet.
			continue
		}
		if c := StampOf(inst.Created); c != 0 && n.Sub(c) <= cfg.CreationTimeout {
			continue
		}
		dst = append(dst, driverapi.Call{Method: driverapi.MethodDelete,
			Machine: driverapi.MachineRef{Name: inst.MachineName, UID: inst.OwnerUID, ProviderID: inst.ProviderID}})
	}
	return dst
}

// Summary counts a fleet for metrics and alerts.
type Summary struct {
	// Machines is the number of machines.
	Machines int
	// ByPhase counts machines by phase.
	ByPhase [phase.Count]int
	// ByWait counts machines by what they wait for.
	ByWait [waitCount]int
	// PastDeadline counts machines waiting past their deadline: a creation
	// or join past the creation timeout, an unhealthy machine past the
	// health timeout, a drain past the drain timeout.
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
		wait, deadline := m.waiting(cfg)
		if wait != WaitNone {
			s.ByWait[wait]++
		}
		if deadline != 0 && n > deadline {
			s.PastDeadline++
		}
		if !settled && m.PhaseSince != 0 && n > m.PhaseSince {
			s.OldestWait[m.Phase] = max(s.OldestWait[m.Phase], n.Sub(m.PhaseSince))
		}
	}
	return s
}

// waiting tells what a member waits for, by its phase, and its deadline
// (0 when none).
func (m *Member) waiting(cfg *Config) (WaitFor, Stamp) {
	creation := cfg.CreationTimeout
	if m.CreationTimeout > 0 {
		creation = m.CreationTimeout
	}
	health := cfg.HealthTimeout
	if m.HealthTimeout > 0 {
		health = m.HealthTimeout
	}
	switch {
	case m.Deleting || m.Phase == phase.Terminating:
		if m.DeletionTime == 0 {
			return WaitDeletion, 0
		}
		return WaitDeletion, m.DeletionTime.Add(cfg.DrainTimeout)
	}
	switch m.Phase {
	case phase.None, phase.CrashLoopBackOff:
		return WaitCreation, m.CreationTime.Add(creation)
	case phase.Pending:
		return WaitNodeJoin, m.CreationTime.Add(creation)
	case phase.Unknown, phase.InPlaceUpdateFailed:
		if m.DisableHealthTimeout {
			return WaitRecovery, 0
		}
		if m.Flags.Has(FlagGranted) {
			return WaitGrant, m.PhaseSince.Add(health)
		}
		return WaitRecovery, m.PhaseSince.Add(health)
	case phase.Failed:
		return WaitReplacement, 0
	}
	return WaitNone, 0
}

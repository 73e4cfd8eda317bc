package lifecycletest

import (
	"fmt"
	"time"

	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// Start names a state an [Exploration] starts from. Besides the named
// constants, [AdoptedStarts] lists the machines taken over from another
// controller at every place it leaves them, and [LostWriteStarts] the
// machines whose status lost a write; the in-place update's explorations
// also start from machines found in the middle of an in-place update of
// their node (starts_inplace.go), and preservation's from machines found
// preserved or asked to be (starts_preserve.go).
type Start uint16

// The start states.
const (
	// StartNew is a new machine a minute after its creation: no status, no
	// finalizer, no instance.
	StartNew Start = iota
	// StartNewOverOldInstance is StartNew while the provider still holds an
	// instance of an older incarnation of the same name (another UID).
	StartNewOverOldInstance
	// StartRunning is a machine Running and in sync an hour after its
	// creation, with its healthy node.
	StartRunning
	// StartAdoptedRunning is a Running machine taken over from another
	// controller (MCM) an hour after its creation: its status records no
	// instance and its spec no providerID; only its healthy node names the
	// instance.
	StartAdoptedRunning
	// StartAdoptedDeleting is a machine another controller (MCM) was
	// deleting, deleted a minute ago: Terminating, its last operation
	// naming the drain, its instance and node still there.
	StartAdoptedDeleting
	// StartAdoptedDeletingUnknownStep is StartAdoptedDeleting with a last
	// operation that names no step (MCM's MachineSet's "Deleting machine
	// from cloud provider").
	StartAdoptedDeletingUnknownStep
	// StartNewWhilePredecessorTerminates is StartNewOverOldInstance while
	// that older incarnation is still terminating
	// (Input.PredecessorTerminating); it finishes as a fair event.
	StartNewWhilePredecessorTerminates
	// StartLostCreationStage is a machine three minutes after its creation
	// whose status lost the lifecycle's bookkeeping after CreateMachine ran:
	// no phase, no stage, no attempt, no providerID in the status or the
	// spec, while the provider holds its instance, not initialized yet.
	StartLostCreationStage
	// StartLostInitializationStage is StartLostCreationStage once the
	// instance's providerID reached the spec (and so the status, as the MCM
	// adapter reads it): the status names the instance but not the stage
	// that initializes it.
	StartLostInitializationStage
	// StartLostDeletionStage is a machine deleted a minute ago whose status
	// lost the lifecycle's bookkeeping (no stage, no flags) while its phase
	// and last operation are newer: Terminating, "VM deletion was
	// successful. Initiate node object deletion". The instance is gone, its
	// node is still there.
	StartLostDeletionStage
	// StartStaleDeletionStage is StartLostDeletionStage with the
	// bookkeeping of an older write instead of none: the drain stage,
	// without any drain recorded, under the last operation of the VM's
	// deletion.
	StartStaleDeletionStage
	// StartStaleCreationStage is a machine Running an hour after its
	// creation (phase and last operation newer) whose bookkeeping is the
	// one written while its instance was initialized: the initialization
	// stage, a creation attempt, no phase start.
	StartStaleCreationStage
	// StartLostRunningBookkeeping is a Running machine whose bookkeeping
	// was lost: no phase start, no instance, node or owner recorded in the
	// status, no metadata observed; its spec and node label name the
	// instance.
	StartLostRunningBookkeeping
	startNamed // the number of named starts
)

// adoptedBase marks the start states of [AdoptedStarts]: the bits below it
// hold the place (an index of adoptions) and whether spec.providerID and the
// node label are present.
const (
	adoptedBase       Start = 1 << 6
	adoptedProviderID Start = 1 << 5
	adoptedNodeLabel  Start = 1 << 4
	adoptedPlace      Start = 1<<4 - 1
)

// adoption is a place another controller (MCM) leaves a machine in: its
// phase and, while Terminating, the deletion step its last operation names
// (StepNone: a text that names none).
type adoption struct {
	phase phase.Phase
	step  lastop.Step
}

// adoptions are the places of [AdoptedStarts], in their order.
var adoptions = [...]adoption{
	{phase.None, lastop.StepNone},
	{phase.CrashLoopBackOff, lastop.StepNone},
	{phase.Pending, lastop.StepNone},
	{phase.Running, lastop.StepNone},
	{phase.Unknown, lastop.StepNone},
	{phase.Failed, lastop.StepNone},
	{phase.Terminating, lastop.StepNone},
	{phase.Terminating, lastop.StepGetVMStatus},
	{phase.Terminating, lastop.StepDrain},
	{phase.Terminating, lastop.StepVolumeAttachments},
	{phase.Terminating, lastop.StepDeleteVM},
	{phase.Terminating, lastop.StepDeleteNode},
	{phase.Terminating, lastop.StepRemoveFinalizer},
}

// adoptionOf returns the place, providerID and node label of an adopted
// start, ok false for a start that is not one.
func adoptionOf(p Start) (a adoption, providerID, nodeLabel, ok bool) {
	if p&^(adoptedBase|adoptedProviderID|adoptedNodeLabel|adoptedPlace) != 0 || p&adoptedBase == 0 ||
		int(p&adoptedPlace) >= len(adoptions) {
		return adoption{}, false, false, false
	}
	return adoptions[p&adoptedPlace], p&adoptedProviderID != 0, p&adoptedNodeLabel != 0, true
}

// AdoptedStarts returns the start states of machines taken over from
// another controller such as MCM, as the MCM adapter reads them: one at
// every phase MCM leaves a machine in (no phase, CrashLoopBackOff, Pending,
// Running, Unknown, Failed, and Terminating at every deletion step its last
// operation names, or at none), each with and without spec.providerID and
// with and without the node label. The status records what the spec and
// the label name and nothing of the lifecycle's own bookkeeping (no stage,
// no flags, no attempt). A machine being created is three minutes old, any
// other an hour; a deleting one was deleted a minute ago. The instance and
// the node are what MCM's place implies: none before CreateMachine
// succeeded, not initialized after a failed initialization, no node before
// it registered, an unhealthy node for Unknown and Failed, and neither
// once the deletion passed their step. In-place update phases are left
// out. In a world without a target cluster ([VariantNoTargetCluster]) no
// start has a node or a node label, and a machine past creation is
// Available, as MCM leaves it there.
func AdoptedStarts() []Start {
	var out []Start
	for i := range adoptions {
		for _, pid := range []Start{0, adoptedProviderID} {
			for _, label := range []Start{0, adoptedNodeLabel} {
				out = append(out, adoptedBase|pid|label|Start(i))
			}
		}
	}
	return out
}

// adoptedStarts returns the starts of AdoptedStarts whose place is deleting
// or not, as deleting says.
func adoptedStarts(deleting bool) []Start {
	var out []Start
	for _, p := range AdoptedStarts() {
		if a, _, _, _ := adoptionOf(p); (a.phase == phase.Terminating) == deleting {
			out = append(out, p)
		}
	}
	return out
}

// LostWriteStarts returns the start states of machines whose status lost a
// write of the lifecycle's bookkeeping, or holds an older one, while its
// phase and last operation are newer: [StartLostCreationStage],
// [StartLostInitializationStage], [StartLostDeletionStage],
// [StartStaleDeletionStage], [StartStaleCreationStage] and
// [StartLostRunningBookkeeping]. Without a target cluster they have no node
// and a Running machine is Available, as with [AdoptedStarts].
func LostWriteStarts() []Start {
	return []Start{StartLostCreationStage, StartLostInitializationStage, StartLostDeletionStage,
		StartStaleDeletionStage, StartStaleCreationStage, StartLostRunningBookkeeping}
}

// String names the start state.
func (p Start) String() string {
	switch p {
	case StartNew:
		return "new machine"
	case StartNewOverOldInstance:
		return "new machine over an older incarnation's instance"
	case StartRunning:
		return "Running machine"
	case StartAdoptedRunning:
		return "Running machine taken over without a recorded instance"
	case StartAdoptedDeleting:
		return "machine another controller left deleting at the drain"
	case StartAdoptedDeletingUnknownStep:
		return "machine another controller left deleting at no known step"
	case StartNewWhilePredecessorTerminates:
		return "new machine while an older incarnation of its name terminates"
	case StartLostCreationStage:
		return "machine whose creation stage was lost after CreateMachine"
	case StartLostInitializationStage:
		return "machine whose initialization stage was lost"
	case StartLostDeletionStage:
		return "machine whose deletion stage was lost after the VM's deletion"
	case StartStaleDeletionStage:
		return "machine at an older deletion stage than its last operation"
	case StartStaleCreationStage:
		return "Running machine at its older initialization stage"
	case StartLostRunningBookkeeping:
		return "Running machine whose bookkeeping was lost"
	}
	if name := inPlaceStartString(p); name != "" {
		return name
	}
	if name := preserveStartString(p); name != "" {
		return name
	}
	if a, pid, label, ok := adoptionOf(p); ok {
		place := a.phase.Label()
		if a.phase == phase.None {
			place = "no phase"
		}
		if a.phase == phase.Terminating {
			if a.step == lastop.StepNone {
				place += " at no known step"
			} else {
				place += " at " + a.step.String()
			}
		}
		with := func(b bool, what string) string {
			if b {
				return "with " + what
			}
			return "without " + what
		}
		return fmt.Sprintf("machine taken over at %s, %s, %s", place, with(pid, "providerID"), with(label, "node label"))
	}
	return fmt.Sprintf("Start(%d)", uint16(p))
}

// allStarts returns every start state: the named ones, those of
// AdoptedStarts, inPlaceStarts and preserveStarts.
func allStarts() []Start {
	var out []Start
	for p := range startNamed {
		out = append(out, p)
	}
	return append(append(append(out, AdoptedStarts()...), inPlaceStarts(0, true)...), preserveStarts()...)
}

// startState returns the state a [Start] names, with variants v.
func startState(p Start, v Variants) wState {
	if s, ok := inPlaceStartState(p, v); ok {
		return s
	}
	if s, ok := preserveStartState(p, v); ok {
		return s
	}
	s := wState{now: Epoch.Add(time.Minute), obj: lifecycle.Object{Name: wName, UID: wUID, Owner: "ms",
		CreationTime: Epoch}, oldInst: p == StartNewOverOldInstance || p == StartNewWhilePredecessorTerminates,
		predecessor: p == StartNewWhilePredecessorTerminates, grant: true}
	if v&VariantHealthTimeoutDisabled != 0 {
		s.obj.Overrides.DisableHealthTimeout = true
	}
	if a, pid, label, ok := adoptionOf(p); ok {
		s.adopt(a, pid, label)
		return s.withoutCluster(v)
	}
	switch p {
	case StartNew, StartNewOverOldInstance, StartNewWhilePredecessorTerminates:
		return s
	case StartLostCreationStage, StartLostInitializationStage:
		// CreateMachine ran, its answer or the status recording it was
		// lost with the rest of the bookkeeping.
		s.now = Epoch.Add(3 * time.Minute)
		s.obj.Finalizer = true
		s.inst = wInstance{exists: true, owner: wUID}
		if p == StartLostInitializationStage {
			s.obj.ProviderID, s.obj.Priority = wPID, "3"
			s.st.ProviderID = wPID
		}
		return s.withoutCluster(v)
	}
	// A machine created an hour ago, with its instance and its healthy
	// node, as this library or another controller left it.
	s.now = Epoch.Add(time.Hour)
	s.obj.Finalizer, s.obj.NodeLabel, s.obj.ProviderID, s.obj.Priority = true, wNode, wPID, "3"
	s.inst = wInstance{exists: true, initialized: true, owner: wUID}
	s.node, s.healthy, s.volumes = 1, true, 1
	// The node's conditions, mirrored into the status as MCM does too.
	conds := s.nodeObject().Conditions
	since := lifecycle.StampOf(Epoch.Add(3 * time.Minute))
	joined := lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateSuccessful, Desc: lastop.DescJoined}
	switch p {
	case StartRunning:
		s.st = lifecycle.Status{Phase: phase.Running, PhaseSince: since, ProviderID: wPID,
			NodeName: wNode, OwnerUID: wUID, MetadataObserved: lifecycle.StampOf(s.now), LastOp: joined, Conditions: conds}
	case StartAdoptedRunning:
		// MCM's status holds none of the lifecycle's own fields, and this
		// machine's spec no providerID: only its node names the instance.
		s.obj.ProviderID = ""
		s.st = lifecycle.Status{Phase: phase.Running, PhaseSince: since, LastOp: joined, Conditions: conds}
	case StartAdoptedDeleting, StartAdoptedDeletingUnknownStep:
		s.obj.DeletionTime = s.now.Add(-time.Minute)
		op := lastop.Operation{Type: lastop.TypeDelete, State: lastop.StateProcessing, Desc: lastop.DescInitiateDrain}
		if p == StartAdoptedDeletingUnknownStep {
			// MCM's MachineSet's text, which names no step (X10).
			op = lastop.Operation{Type: lastop.TypeDelete, State: lastop.StateProcessing, Desc: lastop.DescUnknown,
				Detail: "Deleting machine from cloud provider"}
		}
		s.st = lifecycle.Status{Phase: phase.Terminating, PhaseSince: lifecycle.StampOf(s.obj.DeletionTime), LastOp: op,
			Conditions: conds}
	case StartLostDeletionStage, StartStaleDeletionStage:
		s.obj.DeletionTime = s.now.Add(-time.Minute)
		s.inst, s.healthy = wInstance{}, false
		s.st = lifecycle.Status{Phase: phase.Terminating, PhaseSince: lifecycle.StampOf(s.obj.DeletionTime),
			LastOp:     lastop.Operation{Type: lastop.TypeDelete, State: lastop.StateProcessing, Desc: lastop.DescVMDeleted},
			Conditions: s.nodeObject().Conditions}
		if p == StartStaleDeletionStage {
			s.st.Stage, s.st.StageSince, s.st.ProviderID, s.st.NodeName, s.st.OwnerUID, s.st.Seq =
				lifecycle.StageDrain, s.st.PhaseSince, wPID, wNode, wUID, 7
		}
	case StartStaleCreationStage:
		s.st = lifecycle.Status{Phase: phase.Running, Stage: lifecycle.StageInitializing, Attempt: 1, Seq: 3,
			StageSince: lifecycle.StampOf(Epoch.Add(time.Minute)), ProviderID: wPID, NodeName: wNode, LastOp: joined,
			Conditions: conds}
	case StartLostRunningBookkeeping:
		s.st = lifecycle.Status{Phase: phase.Running, LastOp: joined, Conditions: conds}
	}
	return s.withoutCluster(v)
}

// withoutCluster returns s as a world without a target cluster (variants
// v) has it: no node, no node label, no node recorded or mirrored, and a
// machine past creation Available rather than in a phase of its node's
// health. Without the variant it returns s unchanged.
func (s wState) withoutCluster(v Variants) wState {
	if v&VariantNoTargetCluster == 0 {
		return s
	}
	s.node, s.healthy, s.taint, s.volumes = 0, false, false, 0
	s.obj.NodeLabel, s.st.NodeName, s.st.Conditions = "", "", nil
	switch s.st.Phase {
	case phase.Pending, phase.Running, phase.Unknown:
		s.st.Phase = phase.Available
		s.st.LastOp = lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateSuccessful, Desc: lastop.DescCreated}
	}
	return s
}

// adopt makes s the machine another controller left at place a, with or
// without spec.providerID and the node label, as AdoptedStarts describes.
func (s *wState) adopt(a adoption, pid, label bool) {
	creating := a.phase == phase.None || a.phase == phase.CrashLoopBackOff || a.phase == phase.Pending
	s.now = Epoch.Add(time.Hour)
	if creating {
		s.now = Epoch.Add(3 * time.Minute)
	}
	s.obj.Finalizer = true
	if pid {
		s.obj.ProviderID, s.obj.Priority = wPID, "3"
	}
	if label {
		s.obj.NodeLabel = wNode
	}
	// The instance: none before CreateMachine succeeded (no providerID in
	// no phase or CrashLoopBackOff), not initialized after a failed
	// initialization, gone once the deletion passed DeleteMachine.
	s.inst = wInstance{exists: true, initialized: true, owner: wUID}
	node := true
	var op lastop.Operation
	switch a.phase {
	case phase.None:
		node = false
		if !pid {
			s.inst = wInstance{}
		}
	case phase.CrashLoopBackOff:
		node = false
		if pid {
			s.inst.initialized = false
			op = lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateFailed, Desc: lastop.DescInitFailed,
				ErrorCode: "Internal", Detail: "x"}
		} else {
			s.inst = wInstance{}
			op = lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateFailed, Desc: lastop.DescCloudProviderError,
				ErrorCode: "Unavailable", Detail: "x"}
		}
	case phase.Pending:
		node = false
		op = lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateProcessing, Desc: lastop.DescCreating}
	case phase.Running:
		op = lastop.Operation{Type: lastop.TypeCreate, State: lastop.StateSuccessful, Desc: lastop.DescJoined}
	case phase.Unknown:
		op = lastop.Operation{Type: lastop.TypeHealthCheck, State: lastop.StateProcessing, Desc: lastop.DescUnhealthy}
	case phase.Failed:
		op = lastop.Operation{Type: lastop.TypeHealthCheck, State: lastop.StateFailed, Desc: lastop.DescHealthTimeout,
			Elapsed: wCfg.HealthTimeout}
	case phase.Terminating:
		s.obj.DeletionTime = s.now.Add(-time.Minute)
		op = lastop.Operation{Type: lastop.TypeDelete, State: lastop.StateProcessing, Desc: adoptedDeletionDesc(a.step, label)}
		switch a.step {
		case lastop.StepVolumeAttachments:
			s.obj.ForceDeletion = true // only a forced drain goes on to the volume attachments
		case lastop.StepDeleteNode:
			s.inst = wInstance{}
		case lastop.StepRemoveFinalizer:
			s.inst, node = wInstance{}, false
		}
	}
	if node {
		s.node, s.volumes = 1, 1
		s.healthy = s.inst.exists && a.phase != phase.Unknown && a.phase != phase.Failed
	}
	s.st = lifecycle.Status{Phase: a.phase, LastOp: op, PhaseSince: lifecycle.StampOf(s.now.Add(-2 * time.Minute))}
	switch {
	case a.phase == phase.None:
		s.st.PhaseSince = 0
	case a.phase == phase.Terminating:
		s.st.PhaseSince = lifecycle.StampOf(s.obj.DeletionTime)
	}
	if pid {
		s.st.ProviderID = wPID
	}
	if label {
		s.st.NodeName = wNode
	}
	if node {
		s.st.Conditions = s.nodeObject().Conditions
	}
}

// adoptedDeletionDesc is the description MCM leaves a machine's deletion
// at step st with, with or without a node label: the text that names the
// step, or MCM's MachineSet's text for StepNone.
func adoptedDeletionDesc(st lastop.Step, label bool) lastop.Desc {
	switch st {
	case lastop.StepGetVMStatus:
		return lastop.DescTerminating
	case lastop.StepDrain:
		return lastop.DescInitiateDrain
	case lastop.StepVolumeAttachments:
		return lastop.DescForceDrainSucceeded
	case lastop.StepDeleteVM:
		if !label {
			return lastop.DescDrainSkipped
		}
		return lastop.DescDrainSucceeded
	case lastop.StepDeleteNode:
		return lastop.DescVMDeleted
	case lastop.StepRemoveFinalizer:
		if !label {
			return lastop.DescNodeLabelMissing
		}
		return lastop.DescNodeDeleted
	}
	return lastop.DescMachineSetDeleting
}

package mcm

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
	"github.com/purelifecycle/machine/phase"
)

// The adoption cross product: every machine MCM could hand over, and many
// it could not, read with StatusFrom and driven by the lifecycle. The
// names are those of lifecycletest's generators, so its nodes and results
// mesh with the machines.
const (
	xName = "machine-1"
	xUID  = "uid-1"
	xPID  = "test:///vm-1"
	xNode = "node-1"
)

// mcmWrite is one LastOperation MCM writes: the row of its decision tables
// that writes it, the record, and the phases MCM writes it with.
type mcmWrite struct {
	row    string
	typ    v1alpha1.MachineOperationType
	state  v1alpha1.MachineState
	code   string
	desc   string
	phases []v1alpha1.MachinePhase
}

const (
	pNone        = v1alpha1.MachinePhase("")
	pPending     = v1alpha1.MachinePending
	pAvailable   = v1alpha1.MachineAvailable
	pRunning     = v1alpha1.MachineRunning
	pUnknown     = v1alpha1.MachineUnknown
	pFailed      = v1alpha1.MachineFailed
	pCrashLoop   = v1alpha1.MachineCrashLoopBackOff
	pTerminating = v1alpha1.MachineTerminating

	tCreate  = v1alpha1.MachineOperationCreate
	tHealth  = v1alpha1.MachineOperationHealthCheck
	tDelete  = v1alpha1.MachineOperationDelete
	tInPlace = v1alpha1.MachineOperationInPlaceUpdate
	tDrain   = v1alpha1.MachineOperationDrainNode

	sProcessing = v1alpha1.MachineStateProcessing
	sFailed     = v1alpha1.MachineStateFailed
	sSuccessful = v1alpha1.MachineStateSuccessful
)

// inPlacePhases are MCM's node-agent in-place phases, which the lifecycle
// does not drive yet: their machines are only read.
var inPlacePhases = []v1alpha1.MachinePhase{v1alpha1.MachineInPlaceUpdating,
	v1alpha1.MachineInPlaceUpdateSuccessful, v1alpha1.MachineInPlaceUpdateFailed}

// drivenPhases are the phases the lifecycle drives.
var drivenPhases = []v1alpha1.MachinePhase{pNone, pPending, pAvailable, pRunning, pUnknown, pFailed, pCrashLoop, pTerminating}

// unhealthyText is how MCM prints the node conditions of an unhealthy
// machine into its H4 and T4 texts.
var unhealthyText = lastop.FormatConditions([]lastop.NodeCondition{{Type: "Ready", Status: "False",
	LastHeartbeatTime: entered, LastTransitionTime: entered, Reason: "KubeletNotReady", Message: "PLEG is not healthy"}})

// mcmWrites are the LastOperations MCM writes, with its exact texts (those
// lastop renders, filled with sample errors), and the empty one of a
// machine MCM never wrote a status for.
func mcmWrites() []mcmWrite {
	creation := []v1alpha1.MachinePhase{pCrashLoop, pFailed} // MCM's creation-timeout rule picks one
	del := []v1alpha1.MachinePhase{pTerminating}
	w := func(row string, typ v1alpha1.MachineOperationType, state v1alpha1.MachineState, code, desc string, phases ...v1alpha1.MachinePhase) mcmWrite {
		return mcmWrite{row: row, typ: typ, state: state, code: code, desc: desc, phases: phases}
	}
	return []mcmWrite{
		w("none", "", "", "", "", pNone),
		w("B8", tCreate, sProcessing, "", "Creating machine on cloud provider", pPending),
		w("B8-available", tCreate, sSuccessful, "", "Created machine on cloud provider", pAvailable),
		w("A2", tCreate, sFailed, "ResourceExhausted", "Cloud provider message - machine codes error: code = [ResourceExhausted] message = [VcpuLimitExceeded]", creation...),
		w("A3", tCreate, sFailed, "Unavailable", "Cloud provider message - machine codes error: code = [Unavailable] message = [cloud API throttled]", creation...),
		w("A4", tCreate, sFailed, "Internal", "Cloud provider message - machine codes error: code = [Internal] message = [subnet full]", creation...),
		w("A4-undecodable", tCreate, sFailed, "Unknown", "Cloud provider message - dial tcp 10.0.0.1:443: i/o timeout", creation...),
		w("A9", tCreate, sFailed, "PermissionDenied", "Cloud provider message - machine codes error: code = [PermissionDenied] message = [denied]", creation...),
		w("A5", tCreate, sFailed, "", "VM using old node obj", pFailed),
		w("B5", tCreate, sFailed, "Internal", "Provider error: machine codes error: code = [Internal] message = [cloud-init failed]. Initialize VM Instance", creation...),
		w("B5-uninitialized", tCreate, sFailed, "Uninitialized", "Provider error: machine codes error: code = [Uninitialized] message = [network not ready]. Initialize VM Instance", creation...),
		w("B5-not-found", tCreate, sFailed, "NotFound", "Provider error: machine codes error: code = [NotFound] message = [instance not found]. Initialize VM Instance", creation...),
		w("H1", tHealth, sProcessing, "", "Node object went missing. Machine machine-1 is unhealthy - changing MachinePhase to Unknown", pUnknown),
		w("H3-joined", tCreate, sSuccessful, "", "Machine machine-1 successfully joined the cluster in 2m3.5s", pRunning),
		w("H3-rejoined", tHealth, sSuccessful, "", "Machine machine-1 successfully re-joined the cluster", pRunning),
		w("H4", tHealth, sProcessing, "", "Machine machine-1 is unhealthy - changing MachinePhase to Unknown. Node conditions: "+unhealthyText, pUnknown),
		w("H7", tCreate, sFailed, "", "Machine machine-1 failed to join the cluster in 20m0s minutes.", pFailed),
		w("T4", tHealth, sFailed, "", "Machine machine-1 health checks failing since last 10m0s minutes. Updating machine phase to Failed. Node Conditions: "+unhealthyText, pFailed),
		w("unfreeze", tHealth, sSuccessful, "", "Machine Health Timeout was reset due to APIServer being unreachable", pRunning),
		w("X3", tDelete, sProcessing, "", "Set machine status to termination. Now, getting VM Status", del...),
		w("MachineSet", tDelete, sProcessing, "", "Deleting machine from cloud provider", del...),
		w("S1a", tDelete, sProcessing, "", "Running without target cluster, skipping node drain and volume attachment deletion. Initiate VM deletion", del...),
		w("S1b", tDelete, sProcessing, "", "Initiate node drain", del...),
		w("S1e", tDelete, sFailed, "", "Error occurred with decoding machine error status while getting VM status, aborting without retry. rpc error: connection reset Set machine status to termination. Now, getting VM Status", del...),
		w("S1g", tDelete, sProcessing, "", "VM was not found at provider. Moving forward to node drain. Initiate node drain", del...),
		w("S1h", tDelete, sFailed, "", "Error occurred with decoding machine error status while getting VM status, aborting with retry. Set machine status to termination. Now, getting VM Status", del...),
		w("S1i", tDelete, sProcessing, "", "VM instance was not initialized. Moving forward to node drain. Initiate node drain", del...),
		w("S1j", tDelete, sFailed, "", "Error occurred with decoding machine error status while getting VM status, aborting without retry. machine code: machine codes error: code = [PermissionDenied] message = [denied] Set machine status to termination. Now, getting VM Status", del...),
		w("S2a", tDelete, sProcessing, "", "Skipping drain as nodeName is not a valid one for machine. Initiate VM deletion", del...),
		w("S2b", tDelete, sFailed, "", "Drain failed due to failure in update of node conditions - etcdserver: request timed out. Will retry in next sync. Initiate node drain", del...),
		w("S2c", tDelete, sProcessing, "", "Drain failed due to - timeout evicting pods. However, since it's a force deletion shall continue deletion of VM. Delete Volume Attachments", del...),
		w("S2d", tDelete, sFailed, "", "Drain failed due to - Cannot evict pod as it would violate the pod's disruption budget.. Will retry in next sync. Initiate node drain", del...),
		w("S2e", tDelete, sProcessing, "", "Force Drain successful. Delete Volume Attachments", del...),
		w("S2f", tDelete, sProcessing, "", "Drain successful. Initiate VM deletion", del...),
		w("S3b", tDelete, sProcessing, "", `Skipping deleteNodeVolAttachments due to - node "node-1" not found. Moving to VM Deletion. Initiate VM deletion`, del...),
		w("S3c", tDelete, sProcessing, "", "Node Volumes for node: node-1 are already detached. Moving to VM Deletion. Initiate VM deletion", del...),
		w("S3e", tDelete, sProcessing, "", "No Live VolumeAttachments for node: node-1. Moving to VM Deletion. Initiate VM deletion", del...),
		w("S4a", tDelete, sProcessing, "", "VM deletion was successful. Initiate node object deletion", del...),
		w("S4b", tDelete, sProcessing, "", "VM not found. Continuing deletion flow. Initiate node object deletion", del...),
		w("S4c", tDelete, sFailed, "", "VM deletion failed due to - machine codes error: code = [Unavailable] message = [throttled]. However, will re-try in the next resync. Initiate VM deletion", del...),
		w("S4d", tDelete, sFailed, "", "VM deletion failed due to - machine codes error: code = [Internal] message = [boom]. Aborting operation. Initiate VM deletion", del...),
		w("S4e", tDelete, sFailed, "", "Error occurred while decoding machine error: dial tcp: i/o timeout. Initiate VM deletion", del...),
		w("S5a", tDelete, sProcessing, "", `Label "node" not present on machine "machine-1", continuing deletion flow. Initiate machine object finalizer removal`, del...),
		w("S5b", tDelete, sProcessing, "", `No node object found for "node-1", continuing deletion flow. Initiate machine object finalizer removal`, del...),
		w("S5c", tDelete, sFailed, "", `Retrieval of Node Object "node-1" failed due to error: etcdserver: leader changed, Retrying. Initiate node object deletion`, del...),
		w("S5d", tDelete, sFailed, "", `Removal of finalizers from Node Object "node-1" failed due to error: conflict, Retrying. Initiate node object deletion`, del...),
		w("S5e", tDelete, sProcessing, "", `Deletion of Node Object "node-1" is successful. Initiate machine object finalizer removal`, del...),
		w("S5g", tDelete, sFailed, "", `Deletion of Node Object "node-1" failed due to error: forbidden. Initiate node object deletion`, del...),
		w("H5", tInPlace, sSuccessful, "", "Machine machine-1 successfully updated dependencies", v1alpha1.MachineInPlaceUpdateSuccessful),
		w("H6", tInPlace, sFailed, "", "Machine machine-1 failed to update dependencies: kernel upgrade failed", v1alpha1.MachineInPlaceUpdateFailed),
		w("H8", tInPlace, sFailed, "", "Machine machine-1 failed to in-place update in 20m0s minutes.", v1alpha1.MachineInPlaceUpdateFailed),
		w("in-place-drained", tInPlace, sProcessing, "", "Machine machine-1 is undergoing an in-place update", v1alpha1.MachineInPlaceUpdating),
		w("in-place-drain-failed", tDrain, sProcessing, "", "Drain failed due to - Cannot evict pod as it would violate the pod's disruption budget.. Will retry in next sync. Initiate node drain", pRunning),
	}
}

// parsed is the write as lastop reads it back.
func (w mcmWrite) parsed() lastop.Parsed { return lastop.Parse(w.desc) }

// Annotation is what the machine carries of the lifecycle's own state.
type annotation uint8

const (
	// annAbsent: MCM managed the machine; it has no annotation of ours.
	annAbsent annotation = iota
	// annCurrent: the lifecycle wrote the machine's phase and last
	// operation, and its annotation with them.
	annCurrent
	// annStale: the annotation was written for another phase or last
	// operation (MCM wrote the status since); its fingerprint mismatches.
	annStale
	// annLost: the annotation of the lifecycle's earlier write, whose
	// fingerprint still matches: the annotation write of the latest status
	// was lost.
	annLost
	annotationCount
)

func (a annotation) String() string {
	return [...]string{"absent", "current", "stale", "lost"}[a]
}

// adoptionCase is one machine of the cross product.
type adoptionCase struct {
	phase    v1alpha1.MachinePhase
	op       mcmWrite
	pid      bool // spec.providerID is set
	label    bool // the machine's node label is set
	ann      annotation
	deleting bool // the machine has a deletion timestamp
}

func (c adoptionCase) String() string {
	return fmt.Sprintf("%s/%s/pid=%v/label=%v/annotation=%s/deleting=%v", phaseLabel(c.phase), c.op.row, c.pid, c.label, c.ann, c.deleting)
}

// adoptionCases is the cross product: every phase × every MCM write ×
// spec.providerID × node label × annotation × deletion timestamp. With
// inPlace, the in-place phases too.
func adoptionCases(inPlace bool) []adoptionCase {
	phases := drivenPhases
	if inPlace {
		phases = append(slices.Clone(drivenPhases), inPlacePhases...)
	}
	var out []adoptionCase
	for _, p := range phases {
		for _, op := range mcmWrites() {
			for _, pid := range []bool{false, true} {
				for _, label := range []bool{false, true} {
					for ann := range annotationCount {
						for _, deleting := range []bool{false, true} {
							out = append(out, adoptionCase{phase: p, op: op, pid: pid, label: label, ann: ann, deleting: deleting})
						}
					}
				}
			}
		}
	}
	return out
}

// noTargetCluster reports whether MCM ran without a target cluster when
// it wrote the machine: it is Available, or its last operation is one MCM
// writes only then. The adoption runs with the same configuration.
func (c adoptionCase) noTargetCluster() bool {
	return c.phase == pAvailable || c.op.row == "B8-available" || c.op.row == "S1a"
}

func (c adoptionCase) config() lifecycle.Config {
	cfg := lifecycle.DefaultConfig()
	cfg.NoTargetCluster = c.noTargetCluster()
	return cfg
}

// realistic reports whether MCM could leave the machine so; each clause is
// a fact of MCM's tables. The last operation is written with one of its
// phases. A new machine's first pass writes spec.providerID and the node
// label together (B2), and a Running or Unknown machine has both (MCM's
// health flow runs only with the label); a Pending machine has its
// providerID, and the label unless an older MCM release set Pending before
// writing it; without a target cluster no label is written. A failed
// creation (A2-A4, A9) has both or
// neither; a VM on a stale node object (A5) never recorded either; an
// initialization (B5), a join timeout (H7) and a health timeout (T4) come
// after both were written. A deletion can begin in any phase, and its steps
// write the label (S1c, S1d) or find none (S2a, S5a). A deletion timestamp
// can come with any phase (the object is deleted, MCM has not set
// Terminating yet), and a Terminating machine can lack one for a moment
// (the MachineSet writes the phase, then deletes). Any annotation state can
// come with any of them. The in-place phases are not driven.
func (c adoptionCase) realistic() bool {
	if !slices.Contains(c.op.phases, c.phase) || slices.Contains(inPlacePhases, c.phase) {
		return false
	}
	both, neither := c.pid && c.label, !c.pid && !c.label
	switch c.phase {
	case pNone:
		return both || neither
	case pAvailable:
		return c.pid && !c.label
	case pPending:
		return c.pid
	case pRunning, pUnknown:
		return both
	case pCrashLoop, pFailed:
		switch c.op.row {
		case "A5":
			return neither
		case "A2", "A3", "A4", "A4-undecodable", "A9":
			return both || neither
		}
		return both
	case pTerminating:
		if c.noTargetCluster() {
			return !c.label
		}
		return true
	}
	return false
}

// step is the deletion step the last operation names, for a Terminating
// machine; StepNone otherwise.
func (c adoptionCase) step() lastop.Step {
	if c.phase != pTerminating {
		return lastop.StepNone
	}
	return c.op.parsed().Step
}

// vmExists reports whether the machine's instance exists at the provider
// when the adoption begins: spec.providerID names it, or the phase is one
// MCM reaches only with an instance, unless the last operation says the
// instance was deleted.
func (c adoptionCase) vmExists() bool {
	switch c.step() {
	case lastop.StepDeleteNode, lastop.StepRemoveFinalizer:
		return false
	}
	switch c.phase {
	case pPending, pAvailable, pRunning, pUnknown:
		return true
	}
	return c.pid || slices.Contains(inPlacePhases, c.phase)
}

// nodeExists reports whether the machine's node exists when the adoption
// begins: the instance's, or the node of a deletion that deleted the
// instance and not the node yet.
func (c adoptionCase) nodeExists() bool {
	if c.noTargetCluster() {
		return false
	}
	return c.vmExists() || c.step() == lastop.StepDeleteNode
}

// conditions are the node conditions MCM mirrored into the machine.
func (c adoptionCase) conditions() []corev1.NodeCondition {
	switch c.phase {
	case pRunning, v1alpha1.MachineInPlaceUpdating, v1alpha1.MachineInPlaceUpdateSuccessful:
		return readyNode().Status.Conditions
	case pUnknown, pFailed, v1alpha1.MachineInPlaceUpdateFailed:
		return notReady(entered)
	}
	return nil
}

// mcmFields returns the machine as MCM left it, without annotation.
func (c adoptionCase) mcmFields() *v1alpha1.Machine {
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: xName, Namespace: "shoot--p--c", UID: xUID,
			CreationTimestamp: metav1.NewTime(created),
			Finalizers:        []string{lifecycle.Finalizer},
			Labels:            map[string]string{"name": "worker"},
		},
	}
	if c.pid {
		m.Spec.ProviderID = xPID
	}
	if c.label {
		m.Labels[lifecycle.NodeLabel] = xNode
	}
	if c.phase != pNone || c.pid {
		m.Annotations = map[string]string{lifecycle.PriorityAnnotation: "3"}
	}
	if c.deleting {
		at := metav1.NewTime(entered)
		m.DeletionTimestamp = &at
	}
	m.Status.CurrentStatus = v1alpha1.CurrentStatus{Phase: c.phase, TimeoutActive: c.phase == pPending}
	if c.phase != pNone {
		m.Status.CurrentStatus.LastUpdateTime = metav1.NewTime(entered)
	}
	if c.op.row != "none" {
		m.Status.LastOperation = v1alpha1.LastOperation{Description: c.op.desc, ErrorCode: c.op.code, State: c.op.state,
			Type: c.op.typ, LastUpdateTime: metav1.NewTime(entered.Add(time.Minute))}
	}
	m.Status.Conditions = c.conditions()
	return m
}

// ownStage is where the lifecycle's own machine in this phase, with this
// last operation, would be in its flows: a Terminating machine at the
// deletion step its description names (the facts of the steps before
// recorded), a machine being created at its creation stage, any other at
// none.
func (c adoptionCase) ownStage() (lifecycle.Stage, lifecycle.Flags) {
	drained := lifecycle.FlagDrainSucceeded
	switch c.op.row {
	case "S2a", "S1a", "S5a":
		drained = lifecycle.FlagDrainSkipped
	case "S2c", "S2e", "S3b", "S3c", "S3e":
		drained = lifecycle.FlagDrainForced
	}
	switch c.phase {
	case pTerminating:
		switch c.step() {
		case lastop.StepNone, lastop.StepGetVMStatus:
			return lifecycle.StageGetVMStatus, 0
		case lastop.StepDrain:
			return lifecycle.StageDrain, 0
		case lastop.StepVolumeAttachments:
			return lifecycle.StageVolumes, lifecycle.FlagDrainForced
		case lastop.StepDeleteVM:
			return lifecycle.StageDeleteVM, drained
		case lastop.StepDeleteNode:
			return lifecycle.StageDeleteNode, drained | lifecycle.FlagTerminated
		case lastop.StepRemoveFinalizer:
			return lifecycle.StageRemoveFinalizer, drained | lifecycle.FlagTerminated
		}
	case pNone, pCrashLoop:
		if c.pid {
			return lifecycle.StageInitializing, 0
		}
		return lifecycle.StageCreating, 0
	}
	return lifecycle.StageNone, 0
}

// earlier returns the stage before s in its flow, and the flags it had.
func earlier(s lifecycle.Stage, f lifecycle.Flags) (lifecycle.Stage, lifecycle.Flags) {
	switch s {
	case lifecycle.StageCreating:
		return lifecycle.StageNone, 0
	case lifecycle.StageInitializing:
		return lifecycle.StageCreating, 0
	case lifecycle.StageGetVMStatus, lifecycle.StageNone:
		return s, f
	case lifecycle.StageDeleteVM:
		if f.Has(lifecycle.FlagDrainForced) {
			return lifecycle.StageVolumes, f
		}
		return lifecycle.StageDrain, 0
	}
	return s - 1, f &^ lifecycle.FlagTerminated
}

// machine returns the case's machine, as the API server returns it.
func (c adoptionCase) machine() (*v1alpha1.Machine, error) {
	m := c.mcmFields()
	if c.ann == annAbsent {
		return m, nil
	}
	st, err := StatusFrom(m)
	if err != nil {
		return nil, err
	}
	// The lifecycle's own machine in this state.
	own := st
	own.Stage, own.Flags = c.ownStage()
	own.StageSince = lifecycle.StampOf(entered.Add(30 * time.Second))
	own.Attempt, own.Seq = 1, 6
	if own.Stage == lifecycle.StageCreating {
		own.ProviderID, own.NodeName = "", ""
	}
	var fields *v1alpha1.Machine // the fields the annotation is fingerprinted with
	switch c.ann {
	case annCurrent:
		fields = m
	case annStale:
		// Written when the machine was Running; MCM wrote its status since.
		own = lifecycle.Status{Phase: phase.Running, Stage: lifecycle.StageNone, Attempt: 3, Seq: 40,
			PhaseSince: lifecycle.StampOf(created.Add(3 * time.Minute)), ProviderID: xPID, NodeName: xNode,
			LastOp: lastop.Operation{Type: lastop.TypeHealthCheck, State: lastop.StateSuccessful, Desc: lastop.DescRejoined}}
		fields = m.DeepCopy()
		fields.Status.CurrentStatus.Phase = pRunning
		fields.Status.LastOperation = v1alpha1.LastOperation{Type: tHealth, State: sSuccessful,
			Description: "Machine machine-1 successfully re-joined the cluster"}
		if check(fields) == check(m) {
			fields.Status.CurrentStatus.Phase = pPending
			fields.Status.LastOperation = v1alpha1.LastOperation{Type: tCreate, State: sProcessing,
				Description: "Creating machine on cloud provider"}
		}
	case annLost:
		// The write before the latest, in the same phase with the same
		// last operation.
		own.Stage, own.Flags = earlier(own.Stage, own.Flags)
		own.Seq--
		beforeCreation := own.Stage == lifecycle.StageNone && c.ownStageIsCreation()
		if own.Stage == lifecycle.StageCreating || beforeCreation {
			own.ProviderID, own.NodeName = "", ""
		}
		if beforeCreation {
			own.Attempt = 0
		}
		fields = m
	}
	written := m.DeepCopy()
	ApplyStatus(own, written, entered.Add(30*time.Second))
	var s state
	if err := json.Unmarshal([]byte(written.Annotations[StateAnnotation]), &s); err != nil {
		return nil, err
	}
	s.Check = check(fields)
	text, err := json.Marshal(&s)
	if err != nil {
		return nil, err
	}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[StateAnnotation] = string(text)
	return m, nil
}

func (c adoptionCase) ownStageIsCreation() bool {
	s, _ := c.ownStage()
	return s == lifecycle.StageCreating || s == lifecycle.StageInitializing
}

// end is where a machine ends when the lifecycle adopts it in a
// cooperative world.
type end uint8

const (
	endRunning   end = iota // Running, its node healthy, its object in line
	endAvailable            // Available (no target cluster)
	endGone                 // deleted: instance and node gone, finalizer removed
	endFailed               // Failed, awaiting its replacement
	endLeft                 // Terminating without a deletion time: left alone
)

func (e end) String() string {
	return [...]string{"Running", "Available", "gone", "Failed", "Terminating, left alone"}[e]
}

// expectedEnd is where MCM would take the machine in a cooperative world.
// A machine with a deletion timestamp is deleted. A Terminating machine
// without one is left alone until its deletion arrives (MCM's D10). A
// Failed machine awaits its replacement, unless its instance and a healthy
// node exist: MCM's H3 then makes it Running again, as it does for every
// phase. Any other machine ends Running, or Available without a target
// cluster: created if it has no instance.
func (c adoptionCase) expectedEnd() end {
	switch {
	case c.deleting:
		return endGone
	case c.phase == pTerminating:
		return endLeft
	case c.phase == pFailed && !(c.vmExists() && !c.noTargetCluster()):
		return endFailed
	case c.noTargetCluster():
		return endAvailable
	}
	return endRunning
}

// knownIssue names the core issue a realistic case still shows, or "".
// Each is reproduced by its case and reported with it; a fixed issue fails
// its case, so the mark goes with the fix.
func knownIssue(adoptionCase) string {
	// None today. The last one: a Pending machine with spec.providerID and
	// no node label (as older MCM releases left it) joined and became
	// Running but never recorded its node's name, so its node label was
	// never written; the lifecycle now records the node that carries the
	// instance's providerID.
	return ""
}

var (
	adoptionsOnce sync.Once
	adoptionsRun  []adoption
)

// adoptions drives every case of the cross product once; the tests and
// the generated page share the runs. Under the race detector, which slows
// each step tenfold, it drives every seventh.
func adoptions() []adoption {
	adoptionsOnce.Do(func() {
		for _, c := range raceSample(adoptionCases(false)) {
			adoptionsRun = append(adoptionsRun, drive(c))
		}
	})
	return adoptionsRun
}

// TestAdoptionWritesCoverMCMVocabulary: the cross product holds every
// description MCM writes, each with MCM's exact text (lastop reads it as
// that description and renders it back byte for byte), and nothing else.
func TestAdoptionWritesCoverMCMVocabulary(t *testing.T) {
	covered := map[lastop.Desc]bool{}
	for _, w := range mcmWrites() {
		if w.row == "none" {
			continue
		}
		p := w.parsed()
		require.NotEqual(t, lastop.DescUnknown, p.Desc, "%s: %q", w.row, w.desc)
		require.Less(t, p.Desc, lastop.DescCreateTimeout, "%s: a description of the library's own", w.row)
		op, args := lastop.FromLastOperation(lastop.LastOperation{Description: w.desc})
		require.Equal(t, w.desc, op.Describe(args), w.row)
		covered[p.Desc] = true
	}
	for _, d := range lastop.Descs() {
		if d < lastop.DescCreateTimeout { // the library's own come after MCM's
			require.True(t, covered[d], "no write of %s", d)
		}
	}
}

// TestAdoptionReadsEveryMCMState: StatusFrom reads every machine of the
// cross product, the in-place phases included: MCM's fields as they are,
// the annotation when it is the lifecycle's current or lost write (whose
// fingerprint matches), MCM's fields alone with the annotation's attempt
// when it is stale. What it reads is persisted and read back exactly, and
// persisting a machine MCM wrote changes none of MCM's fields.
func TestAdoptionReadsEveryMCMState(t *testing.T) {
	cases := raceSample(adoptionCases(true))
	for _, c := range cases {
		m, err := c.machine()
		require.NoError(t, err, c.String())
		st, err := StatusFrom(viaJSON(t, m))
		require.NoError(t, err, "%s: no case is invalid, each holds MCM's vocabulary", c)
		want, err := phase.Parse(string(c.phase))
		require.NoError(t, err)
		require.Equal(t, want, st.Phase, c.String())
		op, _ := lastop.FromLastOperation(lastop.LastOperation{Description: c.op.desc, ErrorCode: c.op.code,
			Type: mustType(c.op.typ), State: mustState(c.op.state)})
		require.Equal(t, op, st.LastOp, c.String())

		stage, _ := c.ownStage()
		switch c.ann {
		case annAbsent, annStale:
			require.Equal(t, lifecycle.StageNone, st.Stage, c.String())
			require.Equal(t, map[bool]string{true: xPID}[c.pid], st.ProviderID, c.String())
			require.Equal(t, uint32(map[annotation]int{annAbsent: 0, annStale: 3}[c.ann]), st.Attempt, "%s: the attempt of a stale annotation is kept", c)
			if c.phase != pNone {
				require.Equal(t, lifecycle.StampOf(entered), st.PhaseSince, c.String())
			}
			again := viaJSON(t, m)
			ApplyStatus(st, again, adoptedAt)
			require.Equal(t, viaJSON(t, m).Status, viaJSON(t, again).Status, "%s: persisting changes MCM's fields", c)
		case annCurrent:
			require.Equal(t, stage, st.Stage, c.String())
			require.Equal(t, uint32(6), st.Seq, c.String())
		case annLost:
			s, _ := earlier(c.ownStage())
			require.Equal(t, s, st.Stage, c.String())
			require.Equal(t, uint32(5), st.Seq, c.String())
		}
		again := m.DeepCopy()
		ApplyStatus(st, again, adoptedAt)
		back, err := StatusFrom(viaJSON(t, again))
		require.NoError(t, err, c.String())
		require.Equal(t, st, back, c.String())
	}
	t.Logf("%d machines read", len(cases))
}

func mustType(t v1alpha1.MachineOperationType) lastop.Type {
	typ, err := lastop.ParseType(string(t))
	if err != nil {
		panic(err)
	}
	return typ
}

func mustState(s v1alpha1.MachineState) lastop.State {
	st, err := lastop.ParseState(string(s))
	if err != nil {
		panic(err)
	}
	return st
}

// stepNodes are the nodes the first-step check puts next to each machine:
// none, its own healthy, unhealthy (NotReady for longer than a forced
// drain waits), without conditions, still tainted, being deleted with
// volumes attached, and a node of the same name that belongs to another
// instance.
func stepNodes() []lifecycle.Node {
	healthy := NodeFrom(healthyNode())
	unhealthy := healthy
	unhealthy.Conditions = []lifecycle.Condition{{Type: lifecycle.ConditionReady, Status: lifecycle.ConditionFalse,
		Since: lifecycle.StampOf(created), Reason: "KubeletNotReady"}}
	bare := healthy
	bare.Conditions = nil
	tainted := healthy
	tainted.Taints = lifecycle.CriticalComponentsNotReady | lifecycle.InstanceNotReady
	deleting := healthy
	deleting.Deleting, deleting.VolumesAttached = true, 2
	foreign := healthy
	foreign.ProviderID, foreign.MachineName = "test:///vm-old", ""
	return []lifecycle.Node{{}, healthy, unhealthy, bare, tainted, deleting, foreign}
}

// stepOutcomes are the outcomes the first-step check reports for a
// decision with effects: all of them carried out, the driver call
// answering OK with the instance, or failing with each class of code, or
// undecodably; the first write refused; the status write refused.
func stepOutcomes(d *lifecycle.Decision) []lifecycle.Outcome {
	all := lifecycle.Outcome{OpID: d.OpID, Ran: d.Effects.Len()}
	var out []lifecycle.Outcome
	if d.HasCall() {
		for _, r := range []driverapi.Result{
			{ProviderID: xPID, NodeName: xNode, OwnerUID: xUID},
			driverapi.ResultOf(0, driverapi.Error(driverapi.NotFound, "gone")),
			driverapi.ResultOf(0, driverapi.Error(driverapi.Unavailable, "throttled")),
			driverapi.ResultOf(0, driverapi.Error(driverapi.Uninitialized, "not initialized")),
			driverapi.ResultOf(0, driverapi.Error(driverapi.Unimplemented, "no")),
			driverapi.ResultOf(0, driverapi.Error(driverapi.ResourceExhausted, "quota")),
			driverapi.ResultOf(0, errors.New("dial tcp: i/o timeout")),
		} {
			o := all
			o.Result = r
			o.Result.Method = d.Call.Method
			out = append(out, o)
		}
	} else {
		out = append(out, all)
	}
	out = append(out,
		lifecycle.Outcome{OpID: d.OpID, Stopped: lifecycle.WriteConflict, Error: "conflict"},
		lifecycle.Outcome{OpID: d.OpID, Stopped: lifecycle.WriteNotFound, Error: "not found"},
		lifecycle.Outcome{OpID: d.OpID, Persist: lifecycle.WriteFailed})
	return out
}

// stepChecked steps and checks the decision, turning a panic into an
// error.
func stepChecked(cfg lifecycle.Config, in lifecycle.Input) (d lifecycle.Decision, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("Step panicked: %v", r)
		}
	}()
	d = lifecycle.Step(cfg, in)
	if err := lifecycletest.Check(&cfg, &in, &d); err != nil {
		return d, fmt.Errorf("%w\n%s", err, d.String())
	}
	return d, nil
}

// TestAdoptionFirstStepsKeepEveryPromise: the status StatusFrom reads from
// any machine of the cross product is stepped with every input built
// around it: each of stepNodes, an observer healthy, degraded or just
// recovered, with and without the limiter's grant, at the first pass and
// three hours later (every timeout passed), with the target cluster MCM
// had and the other; and with one change at a time (the node unreadable, a
// problem with the class, a predecessor terminating, the bootstrap token,
// volume attachments, the force-deletion label, the health timeout
// disabled, the finalizer missing). A decision with effects is followed by
// each of stepOutcomes. No decision breaks a promise (lifecycletest.Check)
// or panics.
func TestAdoptionFirstStepsKeepEveryPromise(t *testing.T) {
	cases := raceSample(adoptionCases(false))
	nodes := stepNodes()
	extras := []func(*lifecycle.Input){
		func(in *lifecycle.Input) { in.Node, in.NodeReadFailed = lifecycle.Node{}, true },
		func(in *lifecycle.Input) { in.Problem = lifecycle.ProblemClassNotReady },
		func(in *lifecycle.Input) { in.Problem = lifecycle.ProblemInvalidMachine },
		func(in *lifecycle.Input) { in.PredecessorTerminating = true },
		func(in *lifecycle.Input) { in.TokenExists = true },
		func(in *lifecycle.Input) { in.VolumeAttachments = 2 },
		func(in *lifecycle.Input) { in.Object.ForceDeletion = true },
		func(in *lifecycle.Input) { in.Object.Overrides.DisableHealthTimeout = true },
		func(in *lifecycle.Input) { in.Object.Finalizer = false },
	}
	steps := 0
	for _, c := range cases {
		m, err := c.machine()
		require.NoError(t, err)
		st, err := StatusFrom(viaJSON(t, m))
		require.NoError(t, err, c.String())
		base := lifecycle.Input{Now: adoptedAt, Object: ObjectFrom(m), Status: st}
		step := func(cfg lifecycle.Config, in lifecycle.Input) lifecycle.Decision {
			steps++
			d, err := stepChecked(cfg, in)
			if err != nil {
				t.Fatalf("%s: %v", c, err)
			}
			return d
		}
		cfgs := []lifecycle.Config{c.config(), c.config()}
		cfgs[1].NoTargetCluster = !cfgs[1].NoTargetCluster
		for _, cfg := range cfgs {
			for _, n := range nodes {
				for _, ob := range []lifecycle.Observer{{}, {Degraded: true, Since: adoptedAt.Add(-time.Minute)}, {Since: adoptedAt.Add(-time.Minute)}} {
					for _, grant := range []bool{false, true} {
						for _, now := range []time.Time{adoptedAt, adoptedAt.Add(3 * time.Hour)} {
							in := base
							in.Node, in.Observer, in.Grant.Fail, in.Now = n, ob, grant, now
							d := step(cfg, in)
							if now != adoptedAt || ob != (lifecycle.Observer{}) || !grant || d.Effects.Len() == 0 {
								continue
							}
							for _, o := range stepOutcomes(&d) {
								next := in
								next.Status, next.Outcome = d.Status, &o
								if o.Persist != lifecycle.WriteOK {
									next.Status = in.Status
								}
								step(cfg, next)
							}
						}
					}
				}
			}
		}
		for _, n := range nodes {
			for _, extra := range extras {
				in := base
				in.Node, in.Grant.Fail = n, true
				extra(&in)
				step(c.config(), in)
			}
		}
	}
	t.Logf("%d machines, %d steps", len(cases), steps)
}

// raceSample returns the cases, or every seventh under the race detector,
// which slows each step tenfold.
func raceSample(cases []adoptionCase) []adoptionCase {
	if !raceOn {
		return cases
	}
	var out []adoptionCase
	for i := 0; i < len(cases); i += 7 {
		out = append(out, cases[i])
	}
	return out
}

// TestAdoptionPropertyKeepsEveryPromise: a machine of the cross product is
// stepped through a run of random inputs of lifecycletest's generators (any
// configuration, node, observer, grant, problem, time and driver result),
// its status persisted with ApplyStatus and read back with StatusFrom
// through the API's JSON after every step. No decision breaks a promise,
// and every status reads back as saved.
func TestAdoptionPropertyKeepsEveryPromise(t *testing.T) {
	cases := adoptionCases(false)
	rapid.Check(t, func(t *rapid.T) {
		c := rapid.SampledFrom(cases).Draw(t, "case")
		cfg := lifecycletest.Configs().Draw(t, "config")
		m, err := c.machine()
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		st, err := StatusFrom(viaJSON(t, m))
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		now := adoptedAt
		var out *lifecycle.Outcome
		for range rapid.IntRange(1, 8).Draw(t, "steps") {
			now = now.Add(lifecycletest.Durations().Draw(t, "later") / 4)
			in := lifecycle.Input{Now: now, Object: ObjectFrom(m), Status: st, Outcome: out,
				Node:                   lifecycletest.Nodes().Draw(t, "node"),
				NodeReadFailed:         rapid.IntRange(0, 9).Draw(t, "node unreadable") == 0,
				TokenExists:            rapid.Bool().Draw(t, "token"),
				Grant:                  lifecycle.Grant{Fail: rapid.Bool().Draw(t, "grant")},
				Problem:                lifecycle.Problem(rapid.OneOf(rapid.Just(0), rapid.IntRange(0, 4)).Draw(t, "problem")),
				PredecessorTerminating: rapid.IntRange(0, 9).Draw(t, "predecessor") == 0,
			}
			if rapid.IntRange(0, 5).Draw(t, "observer degraded") == 0 {
				in.Observer = lifecycle.Observer{Degraded: true, Since: now.Add(-time.Minute)}
			}
			d, err := stepChecked(cfg, in)
			if err != nil {
				t.Fatalf("%s: %v", c, err)
			}
			if d.Changed {
				ApplyStatus(d.Status, m, now)
				m = viaJSON(t, m)
				back, err := StatusFrom(m)
				if err != nil || !sameStatus(d.Status, back) {
					t.Fatalf("%s: the saved status does not read back (%v):\nsaved %+v\nread  %+v", c, err, d.Status, back)
				}
			}
			st, out = d.Status, nil
			if d.Effects.Len() > 0 && rapid.IntRange(0, 3).Draw(t, "outcome") > 0 {
				r := lifecycletest.Results().Draw(t, "result")
				r.Method = d.Call.Method
				out = &lifecycle.Outcome{OpID: d.OpID, Ran: d.Effects.Len(), Result: r}
			}
		}
	})
}

// maxAdoptionPasses bounds the passes an adoption may take to end where
// MCM would take the machine; the largest any case took is logged as K.
const maxAdoptionPasses = 3

// TestAdoptionEndsWhereMCMWould drives every machine of the cross product
// in its cooperative world (adoptionCase.vmExists, nodeExists, world):
// every pass keeps every promise and saves a status that reads back
// exactly, whether or not MCM could leave the machine so. Each machine MCM
// could leave (adoptionCase.realistic) ends where MCM would take it
// (adoptionCase.expectedEnd) within K passes and stays there, no timeout
// fires, and no instance is created for a machine that has one.
func TestAdoptionEndsWhereMCMWould(t *testing.T) {
	k, realistic, known := 0, 0, 0
	for _, a := range adoptions() {
		c := a.c
		require.NoError(t, a.err, c.String())
		if !c.realistic() {
			continue
		}
		realistic++
		if issue := knownIssue(c); issue != "" {
			known++
			require.ErrorContains(t, a.endErr, issue, "%s: the known issue is fixed: remove it from knownIssue", c)
			continue
		}
		require.NoError(t, a.endErr, "%s\n%s", c, a.trace())
		k = max(k, a.reached)
	}
	require.LessOrEqual(t, k, maxAdoptionPasses)
	t.Logf("K = %d: each of %d realistic machines (of %d) ended where MCM would take it within %d passes; %d show a known core issue",
		k, realistic, len(adoptions()), k, known)
}

// trace renders the adoption's passes for a failure message.
func (a *adoption) trace() string {
	var b strings.Builder
	for i, p := range a.passes {
		fmt.Fprintf(&b, "pass %d (requeue %v):\n", i+1, p.requeue)
		for j := range p.decisions {
			b.WriteString("  " + strings.ReplaceAll(p.decisions[j].String(), "\n", "\n  ") + "\n")
		}
	}
	return b.String()
}

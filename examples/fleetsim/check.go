package fleetsim

import (
	"fmt"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// Violation is a broken promise: of DESIGN section 6 in one decision, or of
// the end state of the fleet.
type Violation struct {
	// Shard and Machine say where; UID is the machine's incarnation.
	Shard   int
	Machine string
	UID     string
	// At is the simulated time since the start.
	At time.Duration
	// What says which promise broke and how.
	What string

	index int32 // machine index in its shard, -1 none
	seq   int   // the shard's violation number, for the replay
}

func (v Violation) String() string {
	return fmt.Sprintf("shard %d machine %s (uid %s) at +%s: %s", v.Shard, v.Machine, v.UID, v.At, v.What)
}

// maxViolations bounds the violations a shard keeps (all are counted).
const maxViolations = 50

// violation records a broken promise about machine mi (-1: none).
func (w *shard) violation(mi int32, what string) {
	v := Violation{Shard: w.index, At: time.Duration(w.now - epoch), What: what, index: mi, seq: w.nviol}
	if mi >= 0 {
		v.Machine, v.UID = w.machines[mi].obj.Name, w.machines[mi].obj.UID
	}
	w.nviol++
	if len(w.viol) < maxViolations {
		w.viol = append(w.viol, v)
	}
	if t := w.tr; t != nil && t.stop == v.seq {
		t.add(fmt.Sprintf("+%s VIOLATION: %s", v.At, what))
		t.done = true
	}
}

// check asserts the single-step promises of DESIGN section 6 on a decision
// and the input it was made from. It allocates only to report a violation.
func (w *shard) check(mi int32, in *lifecycle.Input, d *lifecycle.Decision) {
	// A driver call is the last effect, and the only one.
	effects := d.Effects.Slice()
	calls := 0
	for k := range effects {
		e := &effects[k]
		if !e.Kind.Valid() {
			w.broken(mi, d, "an effect of an undeclared kind")
		}
		if e.Kind == lifecycle.KindCallDriver {
			calls++
			if k != len(effects)-1 {
				w.broken(mi, d, "the driver call is not the last effect")
			}
		}
		if e.Kind == lifecycle.KindRemoveFinalizer {
			w.checkFinalizerRemoval(mi, in, d)
		}
	}
	if calls > 1 || (calls == 1) != (d.Call.Method != driverapi.MethodNone) {
		w.broken(mi, d, "the decision's driver call and its effects disagree")
	}
	// Every pass ends with a positive requeue unless the machine is gone.
	gone := d.Rule == lifecycle.RuleDeleteDone || d.Rule == lifecycle.RuleNoMachine
	if d.Requeue <= 0 && !gone {
		w.broken(mi, d, "no positive requeue")
	}
	if d.Anomalies.Has(lifecycle.AnomalyUndeclaredTransition) {
		w.broken(mi, d, "a flow asked for a phase change the phase table does not declare")
	}
	from, to := in.Status.Phase, d.Status.Phase
	if from != to {
		if !phase.Allowed(from, to) {
			w.broken(mi, d, "undeclared phase change "+from.Label()+" -> "+to.Label())
		}
		switch to {
		case phase.Failed:
			w.checkFailed(mi, in, d)
		case phase.Running:
			if !healthyNode(&in.Node, d.Status.ProviderID) {
				w.broken(mi, d, "Running without a healthy node of its own")
			}
		}
	}
	if d.Status.Flags.Has(lifecycle.FlagGranted) && !in.Status.Flags.Has(lifecycle.FlagGranted) && !in.Grant.Fail {
		w.broken(mi, d, "a grant recorded without the limiter's grant")
	}
	switch d.Call.Method {
	case driverapi.MethodCreate:
		if in.Status.ProviderID != "" || d.Status.ProviderID != "" {
			w.broken(mi, d, "CreateMachine while an instance is recorded")
		}
		if !in.Object.DeletionTime.IsZero() {
			w.broken(mi, d, "CreateMachine while deleting")
		}
	case driverapi.MethodDelete:
		w.checkDelete(mi, in, d)
	}
}

func (w *shard) broken(mi int32, d *lifecycle.Decision, what string) {
	w.violation(mi, what+" (rule "+d.Rule.String()+")")
}

// checkDelete: DeleteMachine only for a deleting machine after its drain
// succeeded, was forced or was skipped; otherwise only for an instance
// proven not to be this incarnation's (another UID's, or the stale-node
// instance).
func (w *shard) checkDelete(mi int32, in *lifecycle.Input, d *lifecycle.Decision) {
	c := &d.Call
	switch d.OpID.Rule() {
	case lifecycle.RuleCreateForeignInstance:
		i := w.instByPID(c.Machine.ProviderID)
		if c.Machine.ProviderID == "" || c.Machine.UID == in.Object.UID ||
			i >= 0 && w.inst[i].ownerTag == in.Object.UID {
			w.broken(mi, d, "DeleteMachine of an instance not proven foreign")
		}
	case lifecycle.RuleCreateStaleNode:
		if !d.Status.Flags.Has(lifecycle.FlagStaleInstance) || c.Machine.ProviderID == "" ||
			c.Machine.ProviderID != d.Status.ProviderID {
			w.broken(mi, d, "DeleteMachine of a stale-node instance that is not recorded as one")
		}
	case lifecycle.RuleDeleteVM:
		const drained = lifecycle.FlagDrainSucceeded | lifecycle.FlagDrainForced | lifecycle.FlagDrainSkipped
		if in.Object.DeletionTime.IsZero() {
			w.broken(mi, d, "DeleteMachine while not deleting")
		}
		if d.Status.Flags&drained == 0 {
			w.broken(mi, d, "DeleteMachine before the drain succeeded, was forced or skipped")
		}
	default:
		w.broken(mi, d, "DeleteMachine from an unexpected rule "+d.OpID.Rule().String())
	}
}

// checkFailed: Failed only after the creation or health timeout, or for
// the stale-node case; Unknown -> Failed only with the limiter's grant.
func (w *shard) checkFailed(mi int32, in *lifecycle.Input, d *lifecycle.Decision) {
	if d.Status.Flags.Has(lifecycle.FlagStaleInstance) {
		return
	}
	// A timeout that passed by the clock of an earlier step of the pass
	// (which asked the question this outcome answers) has passed, even if
	// this step's clock jumped back.
	now := lifecycle.Stamp(max(w.clock, in.Now.UnixNano()))
	o := &in.Object
	switch in.Status.Phase {
	case phase.Unknown, phase.InPlaceUpdateFailed:
		if !in.Grant.Fail && !in.Status.Flags.Has(lifecycle.FlagGranted) {
			w.broken(mi, d, "Unknown -> Failed without the limiter's grant")
		}
		timeout := w.cfg.HealthTimeout
		if o.Overrides.HealthTimeout > 0 {
			timeout = o.Overrides.HealthTimeout
		}
		if now.Sub(in.Status.PhaseSince) < timeout {
			w.broken(mi, d, "Failed before the health timeout")
		}
	default:
		timeout := w.cfg.CreationTimeout
		if o.Overrides.CreationTimeout > 0 {
			timeout = o.Overrides.CreationTimeout
		}
		if now.Sub(lifecycle.StampOf(o.CreationTime)) < timeout {
			w.broken(mi, d, "Failed before the creation timeout")
		}
	}
}

// healthyNode reports whether n is the node of the instance recorded as
// providerID, Ready.
func healthyNode(n *lifecycle.Node, providerID string) bool {
	if !n.Found() || providerID == "" || n.ProviderID != "" && n.ProviderID != providerID {
		return false
	}
	for _, c := range n.Conditions {
		if c.Type == lifecycle.ConditionReady {
			return c.Status == lifecycle.ConditionTrue
		}
	}
	return false
}

// checkFinalizerRemoval: the finalizer goes only after the VM is confirmed
// gone and the node deleted or absent; and no instance made for this
// machine is left alive (a leaked VM).
func (w *shard) checkFinalizerRemoval(mi int32, in *lifecycle.Input, d *lifecycle.Decision) {
	if in.Object.DeletionTime.IsZero() {
		w.broken(mi, d, "finalizer removed while not deleting")
	}
	if !d.Status.Flags.Has(lifecycle.FlagTerminated) {
		w.broken(mi, d, "finalizer removed before the VM was confirmed gone")
	}
	if name := d.Status.NodeName; name != "" && w.nodeNamed(name) >= 0 && w.inst[w.nodeNamed(name)].mi == mi {
		w.broken(mi, d, "finalizer removed while its node "+name+" exists")
	}
	slot := w.machines[mi].slot
	for i := w.slotInst[slot]; i >= 0; i = w.inst[i].prevInSlot {
		if x := &w.inst[i]; x.alive && x.creator == in.Object.UID {
			w.broken(mi, d, "finalizer removed while its instance "+x.providerID+" is alive (a leaked VM)")
		}
	}
}

// finalChecks asserts the end state once the faults stopped and the fleet
// had the drain-out to settle: every machine in an end state and none past
// a deadline, every deleting machine gone, Running machines in sync, no
// orphan VM and no machine with two instances; then summarizes the fleet.
func (w *shard) finalChecks() {
	members := w.members[:0]
	recorded := make([]bool, len(w.inst))
	for mi := range w.machines {
		m := &w.machines[mi]
		if m.gone() {
			continue
		}
		if i := w.instByPID(m.st.ProviderID); i >= 0 {
			recorded[i] = true
		}
		members = append(members, lifecycle.MemberOf(&w.cfg, &lifecycle.Input{Object: m.obj, Status: m.st, Observer: w.observer}))
		mem := members[len(members)-1:]
		switch {
		case m.deleting():
			w.violation(int32(mi), "still being deleted at the end: phase "+m.st.Phase.Label()+", stage "+m.st.Stage.String()+
				", "+lifecycle.Describe(&m.st, m.obj.Name))
		case m.st.Phase == phase.Running:
			w.checkRunning(int32(mi), &mem[0])
		case m.st.Phase == phase.Available, m.st.Phase == phase.Failed:
		default:
			w.violation(int32(mi), "not in an end state at the end: phase "+m.st.Phase.Label()+", stage "+m.st.Stage.String()+
				", "+lifecycle.Describe(&m.st, m.obj.Name))
		}
		if s := lifecycle.Summarize(&w.cfg, tm(w.now), mem, 0); s.PastDeadline > 0 {
			w.violation(int32(mi), "past its deadline at the end: phase "+m.st.Phase.Label())
		}
	}
	orphans := 0
	alive := make([]uint8, len(w.machines))
	for i := range w.inst {
		x := &w.inst[i]
		if !x.alive {
			continue
		}
		if !recorded[i] {
			orphans++
			w.violation(x.mi, "orphan VM at the end: "+x.providerID+" (created for "+x.creator+") is recorded by no machine")
		}
		if alive[x.mi]++; alive[x.mi] == 2 {
			w.violation(x.mi, "two instances alive at the end for one machine UID")
		}
	}
	w.members = members
	w.summary = lifecycle.Summarize(&w.cfg, tm(w.now), members, orphans)
}

// checkRunning: a Running machine at the end has its hot update applied
// (or needs replacement), its metadata and owner tag in sync, by its
// status and at the provider, and its node joined, Ready, labelled and
// without the startup taint; its bootstrap token is gone.
func (w *shard) checkRunning(mi int32, mem *lifecycle.Member) {
	m := &w.machines[mi]
	nr := m.st.Flags.Has(lifecycle.FlagNeedsReplacement)
	if mem.UpdatePending && !nr {
		w.violation(mi, fmt.Sprintf("hot update not applied at the end: desired %d, applied %d", m.obj.UpdateGeneration, m.st.AppliedGeneration))
	}
	if !mem.MetadataInSync {
		w.violation(mi, "metadata not in sync at the end: "+lifecycle.Describe(&m.st, m.obj.Name))
	}
	i := w.instByPID(m.st.ProviderID)
	if i < 0 || !w.inst[i].alive {
		w.violation(mi, "Running at the end, but its instance "+m.st.ProviderID+" is gone")
		return
	}
	x := &w.inst[i]
	if !nr && x.gen != m.obj.UpdateGeneration {
		w.violation(mi, fmt.Sprintf("the instance runs generation %d at the end, not %d", x.gen, m.obj.UpdateGeneration))
	}
	if want, _ := codeOf(m.obj.Metadata); x.meta != want || x.ownerTag != m.obj.UID {
		w.violation(mi, fmt.Sprintf("the instance's metadata differs at the end: %v owner %q", w.t.meta.of(x.meta), x.ownerTag))
	}
	n := &x.node
	switch {
	case !n.exists || n.ready != lifecycle.ConditionTrue:
		w.violation(mi, "Running at the end without a Ready node")
	case n.taints.Has(lifecycle.InstanceNotReady):
		w.violation(mi, "Running at the end, its node still has the startup taint")
	case n.label != m.slot+1:
		w.violation(mi, "Running at the end, its node lacks the machine-name label")
	}
	if m.bits&mToken != 0 {
		w.violation(mi, "Running at the end, its bootstrap token still exists")
	}
}

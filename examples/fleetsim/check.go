package fleetsim

import (
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// Violation is a broken promise: a safety promise of one decision (those
// lifecycletest.Check lists), or the end state of the fleet.
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

// check asserts the single-step safety promises (those lifecycletest.Check
// lists) on a decision and the input it was made from. It allocates only to
// report a violation.
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
	if w.injecting {
		w.checkInjected(mi, in, d)
	}
}

// checkInjected: an outcome of an older decision is ignored, unless the
// status did not change after that decision (nothing can tell it then).
func (w *shard) checkInjected(mi int32, in *lifecycle.Input, d *lifecycle.Decision) {
	if o := in.Outcome; o.OpID.Seq() != in.Status.Seq &&
		d.Anomalies&(lifecycle.AnomalyStaleOutcome|lifecycle.AnomalyBadOutcome) == 0 {
		w.broken(mi, d, fmt.Sprintf("an outcome of an older decision (op %x of rule %s, status sequence %d) was not ignored",
			uint64(o.OpID), o.OpID.Rule(), in.Status.Seq))
	}
}

// checkMetadata: the status never reports the instance metadata in sync
// (lifecycle.Member's MetadataInSync) while the instance it records
// carries other metadata, or another owner, than the machine's object asks.
// The instance is compared first, which is cheap; MemberOf is asked only
// when it differs. (decided asks after every decision whose verdict may
// differ from the last one checked.)
func (w *shard) checkMetadata(mi int32, d *lifecycle.Decision) {
	st := &d.Status
	if st.ProviderID == "" || st.Flags.Has(lifecycle.FlagMetadataUnverified) {
		return // not in sync, or no instance to compare
	}
	m := &w.machines[mi]
	verify := w.cfg.VerifyOwner
	if verify && st.OwnerUID != m.obj.UID {
		return // not in sync
	}
	i := m.ip - 1
	if i < 0 || w.vm(i).ProviderID != st.ProviderID {
		i = w.instByPID(st.ProviderID)
	}
	if i < 0 || !w.alive(i) {
		return
	}
	if w.inst[i].meta != metaVersion(m.mv) || verify && w.vm(i).OwnerUID != m.obj.UID {
		w.checkMetadataDiffers(mi, i, d)
	}
}

// checkMetadataDiffers: instance i of machine mi differs from what the
// machine asks, so the decision's status must not report it in sync.
func (w *shard) checkMetadataDiffers(mi, i int32, d *lifecycle.Decision) {
	m, x := &w.machines[mi], w.vm(i)
	if lifecycle.MemberOf(&w.cfg, &lifecycle.Input{Object: m.obj, Status: d.Status}).MetadataInSync() {
		w.broken(mi, d, fmt.Sprintf("metadata reported in sync while instance %s carries %v owner %q, and the machine asks %v owner %q",
			x.ProviderID, x.Metadata, x.OwnerUID, m.obj.Metadata, m.obj.UID))
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
			i >= 0 && w.vm(i).OwnerUID == in.Object.UID {
			w.broken(mi, d, "DeleteMachine of an instance not proven foreign")
		}
		if i >= 0 {
			w.checkPredecessor(mi, i, in, d)
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
		w.checkDrained(mi, d)
	default:
		w.broken(mi, d, "DeleteMachine from an unexpected rule "+d.OpID.Rule().String())
	}
}

// checkDrained: the world saw the node of the instance a DeleteMachine
// deletes drained (a drain succeeded and left no pods, or no pod ever
// landed on it), or a forced drain attempted on it, or the node does not
// exist; facts the cluster records as it carries out the effects, whatever
// the status says.
func (w *shard) checkDrained(mi int32, d *lifecycle.Decision) {
	c := &d.Call
	i := int32(w.p.Find(c))
	if i < 0 {
		return // nothing alive to delete
	}
	if n := &w.inst[i].node; n.exists && !n.drained && !n.forced && n.pods > 0 {
		w.broken(mi, d, fmt.Sprintf("DeleteMachine of instance %s while the world saw its node %s neither drained nor force-drained (%d pods)",
			w.vm(i).ProviderID, w.vm(i).NodeName, n.pods))
	}
}

// checkPredecessor: the instance of another incarnation (instance i) is
// deleted while its node still has pods only once Config.PredecessorWait
// (0: the drain timeout) has passed since the machine's creation, by the
// world's clock, less the tolerance of the clock faults.
func (w *shard) checkPredecessor(mi, i int32, in *lifecycle.Input, d *lifecycle.Decision) {
	x := &w.inst[i]
	if !w.alive(i) || !x.node.exists || x.node.pods == 0 {
		return
	}
	wait := w.cfg.PredecessorWait
	if wait == 0 {
		wait = w.cfg.DrainTimeout
		if t := in.Object.Overrides.DrainTimeout; t > 0 {
			wait = t
		}
	}
	since := w.machines[mi].obj.CreationTime.UnixNano()
	if age := time.Duration(w.stepNow - since); age < wait-time.Duration(w.tolerance) {
		w.broken(mi, d, fmt.Sprintf("DeleteMachine of instance %s of another incarnation while its node %s has %d pods, %s after the machine's creation (the wait is %s)",
			w.vm(i).ProviderID, w.vm(i).NodeName, x.node.pods, age, wait))
	}
}

// checkHealthFailed: a machine saved Failed by the health timeout at time
// now has been unhealthy as the world saw it (its node NotReady or gone),
// counted from the observer's last recovery at the latest, for its health
// timeout, less the tolerance of the clock faults.
func (w *shard) checkHealthFailed(mi int32, now int64) {
	m := &w.machines[mi]
	i := m.ip - 1
	if i < 0 {
		return // no instance the world knows: nothing to judge by
	}
	since := now // healthy now: unhealthy for no time at all
	if n := &w.inst[i].node; !w.alive(i) || !n.exists || n.ready != lifecycle.ConditionTrue {
		since = n.badSince
		if since == 0 {
			since = w.vm(i).Created.UnixNano()
		}
	}
	from := max(since, w.recovered)
	timeout := w.healthTimeout(&m.obj)
	if spent := time.Duration(now - from); spent < timeout-time.Duration(w.tolerance) {
		w.violation(mi, fmt.Sprintf("saved Failed by the health timeout %s after the world saw it unhealthy (since +%s, observer recovered at +%s), before its health timeout %s",
			spent, time.Duration(since-epoch), time.Duration(max(w.recovered-epoch, 0)), timeout))
	}
}

// checkReplacements: when machine mi's grant is saved, its owner's
// replacements in flight (machines holding a grant, machines Failed by the
// health timeout until they are gone, and the machines created to replace
// them until they run) are within Config.Replacements, as the world sees
// them. With a lagging fleet view, a replacement its owner created after
// the time as of which the view showed the fleet when the limiter granted
// mi is not counted: the limiter could not see it (Limit counts what the
// shell shows it, and the owner's writes reach a cache as late as they
// do).
func (w *shard) checkReplacements(mi int32) {
	o := &w.owners[w.machines[mi].owner]
	view, lagged := w.grantView[mi]
	delete(w.grantView, mi)
	n, total := 0, 0
	for _, j := range o.list {
		x := &w.machines[j]
		if x.gone() {
			continue
		}
		total++
		hidden := lagged && x.more&mReplaces != 0 && x.obj.CreationTime.UnixNano() > view
		if inFlight(x) != "" && !hidden {
			n++
		}
	}
	limit := w.replacementLimit(total)
	if n <= limit {
		return
	}
	var which []string
	for _, j := range o.list {
		x := &w.machines[j]
		if why := inFlight(x); why != "" {
			which = append(which, fmt.Sprintf("%s (%s, phase %s, created +%s)", x.obj.Name, why, x.st.Phase.Label(),
				time.Duration(x.obj.CreationTime.UnixNano()-epoch)))
		}
	}
	w.violation(mi, fmt.Sprintf("a grant saved while its owner %s has %d replacements in flight, more than its limit %d: %s",
		o.uid, n, limit, strings.Join(which, ", ")))
}

// replacementLimit returns Config.Replacements for an owner of total
// machines: the count, or the share rounded up, at least one.
func (w *shard) replacementLimit(total int) int {
	if p := w.cfg.Replacements.Percent; p > 0 {
		return max(1, (total*p+99)/100)
	}
	return w.cfg.Replacements.Count
}

// inFlight says why machine x counts as a replacement in flight of its
// owner (checkReplacements), "" when it does not. A Failed machine kept
// for its preservation does not, as the limiter does not count it.
func inFlight(x *machine) string {
	switch {
	case x.gone():
		return ""
	case x.st.Flags.Has(lifecycle.FlagGranted):
		return "granted"
	case x.st.Phase == phase.Failed && x.st.PreserveUntil != 0 && !x.deleting():
		return "" // kept for its preservation, as the limiter counts it
	case x.bits&mHealthFailed != 0:
		return "Failed by the health timeout"
	case x.more&mReplaces != 0:
		return "created to replace one"
	}
	return ""
}

// healthTimeout returns the health timeout of machine object o: its own,
// else the configuration's.
func (w *shard) healthTimeout(o *lifecycle.Object) time.Duration {
	if t := o.Overrides.HealthTimeout; t > 0 {
		return t
	}
	return w.cfg.HealthTimeout
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
		if now.Sub(in.Status.PhaseSince) < w.healthTimeout(o) {
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
	for i := int(w.slotInst[w.machines[mi].slot]); i >= 0; i = w.p.Older(i) {
		if x := w.p.At(i); !x.Deleted && x.CreatorUID == in.Object.UID {
			w.broken(mi, d, "finalizer removed while its instance "+x.ProviderID+" is alive (a leaked VM)")
		}
	}
}

// finalChecks asserts the end state once the faults stopped and the fleet
// had the drain-out to settle: every machine in an end state and none past
// a deadline, every deleting machine gone, Running machines in sync, no
// orphan VM and no machine with two instances; then summarizes the fleet.
func (w *shard) finalChecks() {
	if w.flows {
		w.flowScan()
	}
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
			if w.ip || w.pv {
				w.checkInPlaceEnd(int32(mi))
			}
		case m.st.Phase == phase.Available:
			w.checkAvailable(int32(mi))
		case m.st.Phase == phase.Failed:
		default:
			w.violation(int32(mi), "not in an end state at the end: phase "+m.st.Phase.Label()+", stage "+m.st.Stage.String()+
				", "+lifecycle.Describe(&m.st, m.obj.Name))
		}
		if w.pv {
			w.checkPreserveEnd(int32(mi))
		}
		if s := lifecycle.Summarize(&w.cfg, tm(w.now), mem, 0); s.PastDeadline > 0 {
			w.violation(int32(mi), "past its deadline at the end: phase "+m.st.Phase.Label())
		}
	}
	orphans := 0
	alive := make([]uint8, len(w.machines))
	for i := range w.inst {
		x, v := &w.inst[i], w.vm(int32(i))
		if v.Deleted {
			continue
		}
		if !recorded[i] {
			orphans++
			w.violation(x.mi, "orphan VM at the end: "+v.ProviderID+" (created for "+v.CreatorUID+") is recorded by no machine")
		}
		if alive[x.mi]++; alive[x.mi] == 2 {
			w.violation(x.mi, "two instances alive at the end for one machine UID")
		}
	}
	w.members = members
	w.summary = lifecycle.Summarize(&w.cfg, tm(w.now), members, orphans)
}

// checkAvailable: an Available machine at the end runs without a target
// cluster, and its instance is alive.
func (w *shard) checkAvailable(mi int32) {
	m := &w.machines[mi]
	if !w.cfg.NoTargetCluster {
		w.violation(mi, "Available at the end with a target cluster")
	}
	if i := w.instByPID(m.st.ProviderID); i < 0 || !w.alive(i) {
		w.violation(mi, "Available at the end, but its instance "+m.st.ProviderID+" is gone")
	}
}

// checkRunning: a Running machine at the end has its hot update applied
// (or needs replacement), its metadata and owner tag in sync, by its
// status and at the provider, and its node joined, Ready, labelled and
// without the startup taint; its bootstrap token is gone.
func (w *shard) checkRunning(mi int32, mem *lifecycle.Member) {
	m := &w.machines[mi]
	nr := m.st.Flags.Has(lifecycle.FlagNeedsReplacement)
	if mem.UpdatePending() && !nr {
		w.violation(mi, fmt.Sprintf("hot update not applied at the end: desired %d, applied %d", m.obj.UpdateGeneration, m.st.AppliedGeneration))
	}
	if !mem.MetadataInSync() {
		w.violation(mi, "metadata not in sync at the end: "+lifecycle.Describe(&m.st, m.obj.Name))
	}
	i := w.instByPID(m.st.ProviderID)
	if i < 0 || !w.alive(i) {
		w.violation(mi, "Running at the end, but its instance "+m.st.ProviderID+" is gone")
		return
	}
	x := w.vm(i)
	if !nr && x.Generation != m.obj.UpdateGeneration {
		w.violation(mi, fmt.Sprintf("the instance runs generation %d at the end, not %d", x.Generation, m.obj.UpdateGeneration))
	}
	if !maps.Equal(x.Metadata, m.obj.Metadata) || x.OwnerUID != m.obj.UID {
		w.violation(mi, fmt.Sprintf("the instance's metadata differs at the end: %v owner %q", x.Metadata, x.OwnerUID))
	}
	n := &w.inst[i].node
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

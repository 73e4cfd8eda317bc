// Package lifecycletest is the test harness of package lifecycle, shipped for
// users as etcd ships rafttest: a checker of the promises every decision keeps
// (listed on [Check]), rapid generators of inputs, a fault-injecting in-memory
// cloud ([Provider]) that the examples and the fleet simulator share, scenario
// scripts ([Script]) that tell one machine's story as commands and expected
// outputs, whose passes are lifecycle/pass.Run over the script's world, and
// an exhaustive bounded exploration of one machine's world ([Explore]) that
// reports every decision it observed and checks that, once faults stop,
// every machine reaches the end expected of it; and a checker of shells
// ([ShellCheck]) that runs lifecycle/pass over a user's implementation of
// pass.Shell with crashes, failed, lost and unanswered writes and stale
// reads injected, judging each run from the world it leaves, with a
// reference implementation ([ReferenceWorld]). Use it in property and
// scenario tests of a controller that embeds the lifecycle, or of the
// lifecycle itself; the lifecycle's scenario scripts (lifecycle/testdata/
// scripts), its model check and the flow diagrams of doc/diagrams.md run on
// it.
//
// It is the one non-test package of the module that imports
// pgregory.net/rapid; programs that import only the core never pull it.
package lifecycletest

import (
	"errors"
	"fmt"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// ErrPromise is wrapped by every error [Check] returns.
var ErrPromise = errors.New("lifecycle promise broken")

// Check checks the safety promises that one decision shows, given the
// configuration and input it was made from:
//
//   - at most one driver call, always the last effect, and every effect of
//     a declared kind;
//   - every phase change declared by package phase, and none refused;
//   - a positive requeue unless the machine is gone;
//   - CreateMachine never asked with an instance recorded, while deleting,
//     or for a machine past creation;
//   - DeleteMachine asked for a machine not being deleted only for an
//     instance proven not to be this incarnation's (a stale-node instance,
//     another incarnation's, but not while that incarnation is still
//     terminating and the wait for it lasts), and for a deleting one only
//     after its drain succeeded, was forced or was skipped;
//   - the finalizer removed only after the instance is confirmed gone, at
//     the last deletion stage;
//   - Failed only after the creation timeout, the health timeout with the
//     limiter's grant, or for a stale-node instance, and never while the
//     observer is degraded; a grant recorded in the status only when the
//     input carries the limiter's grant;
//   - Running only with a recorded, initialized instance and a healthy node
//     of its own;
//   - InPlaceUpdating only from the drain before an in-place update
//     (Running, StageInPlaceDrain) once the node shows no pods left, and
//     the node agent told ReadyForUpdate only by a decision that leaves
//     the machine InPlaceUpdating: the agent goes on only after the drain;
//     and no UpdateMachine or UpdateMetadata asked while the decision
//     leaves an in-place update under way (the drain before it, or an
//     in-place phase);
//   - the op ID consistent with the effects and the status sequence.
//
// It returns nil, or an error wrapping [ErrPromise] naming the first
// promise broken.
func Check(cfg *lifecycle.Config, in *lifecycle.Input, d *lifecycle.Decision) error {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s (rule %s)", ErrPromise, fmt.Sprintf(format, a...), d.Rule)
	}
	st, was := &d.Status, &in.Status
	deleting := !in.Object.DeletionTime.IsZero()

	effects := d.Effects.Slice()
	for i, e := range effects {
		if !e.Kind.Valid() {
			return fail("effect %d has kind %v", i, e.Kind)
		}
		if e.Kind == lifecycle.KindCallDriver && i != len(effects)-1 {
			return fail("driver call at %d of %d effects", i, len(effects))
		}
	}
	if d.HasCall() != (d.Call.Method != driverapi.MethodNone) {
		return fail("Call.Method %s does not match the effects", d.Call.Method)
	}
	if d.Anomalies.Has(lifecycle.AnomalyUndeclaredTransition) {
		return fail("a flow asked for an undeclared phase change")
	}
	if !phase.Allowed(was.Phase, st.Phase) && was.Phase.Valid() {
		return fail("undeclared phase change %s -> %s", was.Phase.Label(), st.Phase.Label())
	}
	gone := d.Rule == lifecycle.RuleNoMachine || d.Rule == lifecycle.RuleDeleteDone
	if !gone && d.Requeue <= 0 {
		return fail("requeue %v", d.Requeue)
	}
	if d.Changed != (st.Seq != was.Seq) {
		return fail("Changed is %v but Seq moved from %d to %d", d.Changed, was.Seq, st.Seq)
	}
	if n := d.Effects.Len(); n > 0 {
		if d.OpID.Seq() != st.Seq || d.OpID.Effects() != n || !d.OpID.Rule().Valid() {
			return fail("op ID %x does not match %d effects at seq %d", uint64(d.OpID), n, st.Seq)
		}
	} else if d.OpID != 0 {
		return fail("op ID without effects")
	}

	switch d.Call.Method {
	case driverapi.MethodCreate:
		if was.ProviderID != "" || deleting || (was.Phase != phase.None && was.Phase != phase.CrashLoopBackOff) {
			return fail("CreateMachine with providerID %q, deleting %v, phase %s", was.ProviderID, deleting, was.Phase.Label())
		}
	case driverapi.MethodDelete:
		foreign := d.Call.Machine.UID != in.Object.UID
		stale := st.Flags.Has(lifecycle.FlagStaleInstance) && d.Call.Machine.ProviderID == st.ProviderID && st.ProviderID != ""
		drained := st.Flags&(lifecycle.FlagDrainSucceeded|lifecycle.FlagDrainForced|lifecycle.FlagDrainSkipped) != 0
		switch {
		case foreign && in.PredecessorTerminating && predecessorWaits(cfg, in):
			return fail("DeleteMachine of an older incarnation's instance while it is still terminating")
		case foreign || stale:
		case !deleting:
			return fail("DeleteMachine for a machine not being deleted")
		case !drained:
			return fail("DeleteMachine before the drain succeeded, was forced or was skipped")
		}
	}
	for _, e := range effects {
		if e.Kind == lifecycle.KindRemoveFinalizer &&
			(!st.Flags.Has(lifecycle.FlagTerminated) || st.Stage != lifecycle.StageRemoveFinalizer) {
			return fail("finalizer removed before the instance is confirmed gone")
		}
	}

	if st.Flags.Has(lifecycle.FlagGranted) && !was.Flags.Has(lifecycle.FlagGranted) && !in.Grant.Fail {
		// The grant recorded in the status is what lets a later step mark
		// the machine Failed: only the limiter may give it.
		return fail("a grant recorded without the limiter's grant")
	}
	if st.Phase == phase.Failed && was.Phase != phase.Failed {
		if err := checkFailed(cfg, in, d); err != nil {
			return fail("%v", err)
		}
	}
	if st.Phase == phase.Running && was.Phase != phase.Running {
		if err := checkRunning(cfg, in, d); err != nil {
			return fail("%v", err)
		}
	}
	if err := checkInPlace(in, d); err != nil {
		return fail("%v", err)
	}
	return nil
}

// checkInPlace checks the in-place update's part of a decision: the
// change to InPlaceUpdating, ReadyForUpdate told to the node, and no hot
// update or metadata patch while an update is under way.
func checkInPlace(in *lifecycle.Input, d *lifecycle.Decision) error {
	st, was := &d.Status, &in.Status
	underWay := st.Stage == lifecycle.StageInPlaceDrain || st.Phase == phase.InPlaceUpdating ||
		st.Phase == phase.InPlaceUpdateSuccessful || st.Phase == phase.InPlaceUpdateFailed
	if m := d.Call.Method; underWay && (m == driverapi.MethodUpdate || m == driverapi.MethodUpdateMetadata) {
		return fmt.Errorf("%s asked while an in-place update is under way (%s)", m, PlaceOf(st))
	}
	if st.Phase == phase.InPlaceUpdating && was.Phase != phase.InPlaceUpdating {
		switch {
		case was.Phase != phase.Running || was.Stage != lifecycle.StageInPlaceDrain:
			return fmt.Errorf("made InPlaceUpdating from %s, not from the drain before an in-place update", PlaceOf(was))
		case !in.Node.Found() || in.Node.Pods > 0:
			return fmt.Errorf("made InPlaceUpdating while its node shows %d pods left to drain (found %v)", in.Node.Pods, in.Node.Found())
		}
	}
	for _, e := range d.Effects.Slice() {
		if e.Kind == lifecycle.KindSetNodeCondition && e.Key == lifecycle.ConditionInPlaceUpdate &&
			e.Value == lifecycle.ReasonReadyForUpdate && st.Phase != phase.InPlaceUpdating {
			return fmt.Errorf("the node agent told ReadyForUpdate while the machine is %s", st.Phase.Label())
		}
	}
	return nil
}

// predecessorWaits reports whether a new incarnation still waits for an
// older one that is terminating: before Config.PredecessorWait (else the
// drain timeout) after its creation time.
func predecessorWaits(cfg *lifecycle.Config, in *lifecycle.Input) bool {
	wait := cfg.PredecessorWait
	if wait == 0 {
		wait = cfg.DrainTimeout
		if t := in.Object.Overrides.DrainTimeout; t > 0 {
			wait = t
		}
	}
	return !in.Object.CreationTime.IsZero() && in.Now.Before(in.Object.CreationTime.Add(wait))
}

// checkFailed checks a change to Failed.
func checkFailed(cfg *lifecycle.Config, in *lifecycle.Input, d *lifecycle.Decision) error {
	if in.Observer.Degraded {
		return errors.New("marked Failed while the observer is degraded")
	}
	if d.Status.Flags.Has(lifecycle.FlagStaleInstance) {
		return nil // MCM A5
	}
	was := &in.Status
	base := func(since time.Time) time.Time {
		if !in.Observer.Since.IsZero() && in.Observer.Since.After(since) {
			return in.Observer.Since
		}
		return since
	}
	switch was.Phase {
	case phase.Unknown, phase.InPlaceUpdateFailed:
		if !in.Grant.Fail && !was.Flags.Has(lifecycle.FlagGranted) {
			return errors.New("unhealthy machine marked Failed without the limiter's grant")
		}
		timeout := cfg.HealthTimeout
		if t := in.Object.Overrides.HealthTimeout; t > 0 {
			timeout = t
		}
		if in.Object.Overrides.DisableHealthTimeout {
			return errors.New("marked Failed with the health timeout disabled")
		}
		if was.PhaseSince == 0 || in.Now.Sub(base(was.PhaseSince.Time())) < timeout {
			return fmt.Errorf("marked Failed %v after entering %s, before the health timeout %v",
				in.Now.Sub(was.PhaseSince.Time()), was.Phase.Label(), timeout)
		}
	default:
		timeout := cfg.CreationTimeout
		if t := in.Object.Overrides.CreationTimeout; t > 0 {
			timeout = t
		}
		if in.Object.CreationTime.IsZero() || in.Now.Sub(base(in.Object.CreationTime)) < timeout {
			return fmt.Errorf("%s machine marked Failed %v after creation, before the creation timeout %v",
				was.Phase.Label(), in.Now.Sub(in.Object.CreationTime), timeout)
		}
	}
	return nil
}

// checkRunning checks a change to Running.
func checkRunning(cfg *lifecycle.Config, in *lifecycle.Input, d *lifecycle.Decision) error {
	st := &d.Status
	n := &in.Node
	switch {
	case st.ProviderID == "":
		return errors.New("made Running without a recorded instance")
	case st.Stage == lifecycle.StageCreating || st.Stage == lifecycle.StageInitializing:
		return errors.New("made Running before initialization succeeded")
	case !n.Found():
		return errors.New("made Running without a node")
	case n.ProviderID != "" && n.ProviderID != st.ProviderID:
		return errors.New("made Running on another instance's node")
	case !Healthy(cfg, &in.Object, n):
		return errors.New("made Running with an unhealthy node")
	}
	return nil
}

// Healthy is the lifecycle's health of a node, written out independently
// of it for checks: MCM's isHealthy asking for evidence. The node has a
// Ready condition and it is True, and no configured condition type has a
// status other than False.
func Healthy(cfg *lifecycle.Config, o *lifecycle.Object, n *lifecycle.Node) bool {
	watched := cfg.NodeConditions
	if o.Overrides.NodeConditions != nil {
		watched = o.Overrides.NodeConditions
	}
	ready := false
	for _, c := range n.Conditions {
		if c.Type == lifecycle.ConditionReady {
			if c.Status != lifecycle.ConditionTrue {
				return false
			}
			ready = true
		}
		for _, w := range watched {
			if c.Type == w && c.Status != lifecycle.ConditionFalse {
				return false
			}
		}
	}
	return ready
}

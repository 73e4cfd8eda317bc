package v1alpha1

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// Decided is what the status records of the decision that left it, besides
// its lifecycle.Status: the rule that decided and what the machine waits
// for (lifecycle.Decision's Rule and Wait). It is not part of the API.
//
// +kubebuilder:object:generate=false
type Decided struct {
	// Rule is the rule that decided.
	Rule lifecycle.Rule
	// Wait is what the machine waits for.
	Wait lifecycle.Wait
	// Detail says what keeps the machine waiting beyond the rule's text
	// (Wait.Detail), "" when nothing more is known.
	Detail string
}

// StatusOf returns the resource status that records st for machine m as
// decision d left it, at now: MCM's fields rendered from st (the phase,
// the last operation with MCM's exact description, the node's conditions,
// the last known state, the addresses), the rest of st in Lifecycle, and
// for people the observed generation (m's), the conditions and the wait
// (see Conditions). m.Status is the status the object has now: the last
// operation keeps its lastUpdateTime when its record did not change, and
// gets now otherwise; a condition keeps its lastTransitionTime while its
// status is unchanged.
func StatusOf(m *Machine, st *lifecycle.Status, d Decided, now time.Time) MachineStatus {
	prev := &m.Status
	lo := lifecycle.LastOperation(st, m.Name, now)
	rec := LastOperation{
		Description:    lo.Description,
		ErrorCode:      lo.ErrorCode,
		LastUpdateTime: metav1.NewTime(lo.LastUpdateTime),
		State:          lo.State.String(),
		Type:           lo.Type.String(),
	}
	if p := prev.LastOperation; p.Description == rec.Description && p.ErrorCode == rec.ErrorCode &&
		p.State == rec.State && p.Type == rec.Type && !p.LastUpdateTime.IsZero() {
		rec.LastUpdateTime = p.LastUpdateTime
	}
	var expiry *metav1.Time
	if st.PreserveUntil != 0 {
		t := metav1.NewTime(st.PreserveUntil.Time())
		expiry = &t
	}
	out := MachineStatus{
		ObservedGeneration: m.Generation,
		Conditions:         conditionsOf(m, st, d, now),
		Wait:               waitOf(d),
		LastOperation:      rec,
		CurrentStatus: CurrentStatus{
			Phase:              st.Phase.String(),
			TimeoutActive:      st.Phase == phase.Pending || st.Phase == phase.Unknown,
			LastUpdateTime:     metav1.NewTime(st.PhaseSince.Time()),
			PreserveExpiryTime: expiry,
		},
		LastKnownState: st.LastKnownState,
		Node:           st.NodeName,
		Lifecycle: &LifecycleState{
			Stage:      stageText(st.Stage),
			StageSince: stampText(st.StageSince),
			PhaseSince: stampText(st.PhaseSince),
			RetryAfter: stampText(st.RetryAfter),
			Flags:      FlagNames(st.Flags),
			Failures: Failures{Create: st.Failures.Create, Health: st.Failures.Health, Delete: st.Failures.Delete,
				Update: st.Failures.Update, Metadata: st.Failures.Metadata, Drain: st.Failures.Drain},
			Attempt:    st.Attempt,
			Seq:        st.Seq,
			ProviderID: st.ProviderID,
			Operation:  Operation{Detail: st.LastOp.Detail, Elapsed: durationText(st.LastOp.Elapsed)},

			OwnerUID:           st.OwnerUID,
			AppliedGeneration:  st.AppliedGeneration,
			RejectedGeneration: st.RejectedGeneration,
			InPlaceGeneration:  st.InPlaceGeneration,
			Metadata:           st.Metadata,
			MetadataObserved:   stampText(st.MetadataObserved),
			MetadataSince:      stampText(st.MetadataSince),
			CreationFrom:       stampText(st.CreationFrom),
			PreserveUntil:      stampText(st.PreserveUntil),
			UIDHash:            uidHashText(st.UIDHash),
		},
	}
	if st.LastOp.Desc != lastop.DescNone {
		out.Lifecycle.Operation.Desc = st.LastOp.Desc.String()
	}
	for _, a := range st.Addresses {
		out.Addresses = append(out.Addresses, corev1.NodeAddress{Type: corev1.NodeAddressType(a.Type), Address: a.Address})
	}
	for _, c := range st.Conditions {
		out.NodeConditions = append(out.NodeConditions, corev1.NodeCondition{
			Type:               corev1.NodeConditionType(c.Type),
			Status:             corev1.ConditionStatus(c.Status.String()),
			LastTransitionTime: metav1.NewTime(c.Since.Time()),
			Reason:             c.Reason,
			Message:            c.Message,
		})
	}
	return out
}

// ToLifecycle returns the lifecycle.Status the resource status records.
// For a status StatusOf wrote it is the status StatusOf was given, exactly,
// provided the node condition times are whole seconds, as every time read
// from a Kubernetes object is (metav1.Time keeps seconds; the mirrored
// conditions come from the node's). The conditions and the wait are for
// people and are not read back. A status without Lifecycle, such as one MCM wrote,
// is adopted: the phase and last operation are read from MCM's fields, the
// description parsed back into structured form.
func (s *MachineStatus) ToLifecycle() (lifecycle.Status, error) {
	var st lifecycle.Status
	var errs []error
	var err error
	if st.Phase, err = phase.Parse(s.CurrentStatus.Phase); err != nil {
		errs = append(errs, err)
	}
	op := &st.LastOp
	if op.Type, err = lastop.ParseType(s.LastOperation.Type); err != nil {
		errs = append(errs, err)
	}
	if op.State, err = lastop.ParseState(s.LastOperation.State); err != nil {
		errs = append(errs, err)
	}
	op.ErrorCode = s.LastOperation.ErrorCode
	st.LastKnownState = s.LastKnownState
	st.NodeName = s.Node
	for _, a := range s.Addresses {
		st.Addresses = append(st.Addresses, driverapi.Address{Type: string(a.Type), Address: a.Address})
	}
	for _, c := range s.NodeConditions {
		cs, err := conditionStatus(c.Status)
		errs = append(errs, err)
		st.Conditions = append(st.Conditions, lifecycle.Condition{Type: string(c.Type), Status: cs,
			Since: lifecycle.StampOf(c.LastTransitionTime.Time), Reason: c.Reason, Message: c.Message})
	}
	l := s.Lifecycle
	if l == nil {
		// Adopt a machine whose status MCM wrote.
		parsed, _ := lastop.FromLastOperation(lastop.LastOperation{Description: s.LastOperation.Description})
		op.Desc, op.Detail, op.Elapsed = parsed.Desc, parsed.Detail, parsed.Elapsed
		st.PhaseSince = lifecycle.StampOf(s.CurrentStatus.LastUpdateTime.Time)
		return st, errors.Join(errs...)
	}
	st.Stage, err = lifecycle.ParseStage(l.Stage)
	errs = append(errs, err)
	st.StageSince, err = parseStamp("stageSince", l.StageSince)
	errs = append(errs, err)
	st.PhaseSince, err = parseStamp("phaseSince", l.PhaseSince)
	errs = append(errs, err)
	st.RetryAfter, err = parseStamp("retryAfter", l.RetryAfter)
	errs = append(errs, err)
	st.Flags, err = ParseFlags(l.Flags)
	errs = append(errs, err)
	st.Failures = lifecycle.Failures{Create: l.Failures.Create, Health: l.Failures.Health, Delete: l.Failures.Delete,
		Update: l.Failures.Update, Metadata: l.Failures.Metadata, Drain: l.Failures.Drain}
	st.Attempt, st.Seq, st.ProviderID = l.Attempt, l.Seq, l.ProviderID
	st.OwnerUID, st.AppliedGeneration, st.RejectedGeneration = l.OwnerUID, l.AppliedGeneration, l.RejectedGeneration
	st.InPlaceGeneration = l.InPlaceGeneration
	st.Metadata = l.Metadata
	st.MetadataObserved, err = parseStamp("metadataObserved", l.MetadataObserved)
	errs = append(errs, err)
	st.MetadataSince, err = parseStamp("metadataSince", l.MetadataSince)
	errs = append(errs, err)
	st.CreationFrom, err = parseStamp("creationFrom", l.CreationFrom)
	errs = append(errs, err)
	st.PreserveUntil, err = parseStamp("preserveUntil", l.PreserveUntil)
	errs = append(errs, err)
	st.UIDHash, err = parseUIDHash(l.UIDHash)
	errs = append(errs, err)
	if l.Operation.Desc != "" {
		op.Desc, err = lastop.ParseDesc(l.Operation.Desc)
		errs = append(errs, err)
	}
	op.Detail = l.Operation.Detail
	if l.Operation.Elapsed != "" {
		op.Elapsed, err = time.ParseDuration(l.Operation.Elapsed)
		errs = append(errs, err)
	}
	return st, errors.Join(errs...)
}

// uidHashText writes a UID's hash as 16 hexadecimal digits; none as "".
func uidHashText(h retry.KeyHash) string {
	if h == 0 {
		return ""
	}
	return fmt.Sprintf("%016x", uint64(h))
}

// parseUIDHash reads what uidHashText wrote.
func parseUIDHash(text string) (retry.KeyHash, error) {
	if text == "" {
		return 0, nil
	}
	h, err := strconv.ParseUint(text, 16, 64)
	if err != nil || len(text) != 16 {
		return 0, fmt.Errorf("uidHash: %q is not 16 hexadecimal digits", text)
	}
	return retry.KeyHash(h), nil
}

func stampText(s lifecycle.Stamp) string {
	if s.IsZero() {
		return ""
	}
	return s.Time().Format(time.RFC3339Nano)
}

func parseStamp(field, text string) (lifecycle.Stamp, error) {
	if text == "" {
		return 0, nil
	}
	t, err := time.Parse(time.RFC3339Nano, text)
	if err != nil {
		return 0, fmt.Errorf("status.lifecycle.%s: %w", field, err)
	}
	return lifecycle.StampOf(t), nil
}

func durationText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

func stageText(s lifecycle.Stage) string {
	if s == lifecycle.StageNone {
		return ""
	}
	return s.String()
}

func conditionStatus(s corev1.ConditionStatus) (lifecycle.ConditionStatus, error) {
	switch s {
	case corev1.ConditionTrue:
		return lifecycle.ConditionTrue, nil
	case corev1.ConditionFalse:
		return lifecycle.ConditionFalse, nil
	case corev1.ConditionUnknown:
		return lifecycle.ConditionUnknown, nil
	}
	return lifecycle.ConditionUnknown, fmt.Errorf("status.conditions: unknown condition status %q", s)
}

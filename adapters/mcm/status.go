package mcm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"strings"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// StateAnnotation is the Machine annotation that keeps, as compact JSON,
// the part of a lifecycle.Status that MCM's MachineStatus has no field for.
const StateAnnotation = "machine.purelifecycle.dev/state"

// UIDHashAnnotation is the Machine annotation that keeps
// lifecycle.Status.UIDHash, the machine's UID hashed for its jitter, as 16
// hexadecimal digits. It is an annotation of its own, so the
// StateAnnotation written for a status is the same with the hash and
// without it, and a release of this package that does not know the hash
// reads it as before.
const UIDHashAnnotation = "machine.purelifecycle.dev/uid-hash"

// ErrInvalidState is wrapped by every error StatusFrom returns.
var ErrInvalidState = errors.New("mcm: invalid machine state")

// state is the JSON of [StateAnnotation]. Times are RFC 3339 with
// nanoseconds; zero values are left out.
type state struct {
	Stage        string            `json:"stage,omitempty"`
	StageSince   string            `json:"stageSince,omitempty"`
	PhaseSince   string            `json:"phaseSince,omitempty"`
	RetryAfter   string            `json:"retryAfter,omitempty"`
	Flags        lifecycle.Flags   `json:"flags,omitempty"`
	Failures     *failures         `json:"failures,omitempty"`
	Attempt      uint32            `json:"attempt,omitempty"`
	Seq          uint32            `json:"seq,omitempty"`
	ProviderID   string            `json:"providerID,omitempty"`
	Node         string            `json:"node,omitempty"`
	OwnerUID     string            `json:"ownerUID,omitempty"`
	Applied      int64             `json:"appliedGeneration,omitempty"`
	Rejected     int64             `json:"rejectedGeneration,omitempty"`
	InPlace      int64             `json:"inPlaceGeneration,omitempty"`
	Metadata     map[string]string `json:"metadata,omitempty"`
	MetaSeen     string            `json:"metadataObserved,omitempty"`
	MetaSince    string            `json:"metadataSince,omitempty"`
	CreationFrom string            `json:"creationFrom,omitempty"`
	// PreserveUntil is the preservation's expiry with its nanoseconds;
	// status.currentStatus.preserveExpiryTime keeps it in whole seconds.
	PreserveUntil string `json:"preserveUntil,omitempty"`
	// Op is the structured last operation, kept only when parsing the
	// rendered description would not give it back.
	Op *operation `json:"op,omitempty"`
	// ConditionNanos are the sub-second parts of the conditions' times,
	// one per condition, kept only when one is not zero.
	ConditionNanos []int32 `json:"conditionNanos,omitempty"`
	// Check fingerprints the MCM fields this state was written with (phase
	// and last operation); a mismatch means someone else wrote them since.
	Check string `json:"check"`
}

type failures struct {
	Create   uint8 `json:"create,omitempty"`
	Health   uint8 `json:"health,omitempty"`
	Delete   uint8 `json:"delete,omitempty"`
	Update   uint8 `json:"update,omitempty"`
	Metadata uint8 `json:"metadata,omitempty"`
	Drain    uint8 `json:"drain,omitempty"`
}

type operation struct {
	Desc    string        `json:"desc"`
	Detail  string        `json:"detail,omitempty"`
	Elapsed time.Duration `json:"elapsed,omitempty"`
}

// ApplyStatus writes st into m as MCM keeps it, so MCM, kubectl and
// dashboards read the machine as usual:
//
//   - status.currentStatus: phase; lastUpdateTime is st.PhaseSince (MCM's
//     clock for the health timeout); timeoutActive is true in Pending only,
//     as MCM sets it. preserveExpiryTime is left alone.
//   - status.lastOperation: rendered with [lifecycle.LastOperation], MCM's
//     exact description. Its lastUpdateTime is now when the record changes,
//     and kept otherwise, so applying the same status twice changes nothing.
//     A record of the same operation whose text printed the node conditions
//     as they were when it was written (MCM's H4 and T4 texts, which MCM
//     writes once, when the phase changes) is kept as it is.
//   - status.conditions (the mirrored node conditions; the lifecycle keeps
//     no heartbeat times, so a condition keeps the heartbeat m holds for it
//     unchanged, and has none otherwise), status.addresses and
//     status.lastKnownState.
//
// Everything else (stage, flags, failures, attempt, seq, the stamps, the
// instance's providerID and node name, the hot-update and metadata
// bookkeeping) goes into the [StateAnnotation] annotation, which
// [StatusFrom] reads back; the UID's hash goes into [UIDHashAnnotation]
// (removed when the status holds none). MCM has no status.node field; the node name is
// kept in the annotation, and the lifecycle's ensure-effects keep the
// machine's node label and spec.providerID, which ApplyStatus never writes.
//
// The annotation is metadata and the rest is status: against an API server
// with the status subresource they are two writes. A shell writes the status,
// then the annotation, both before carrying out any effect (see the package
// doc for what a lost second write leaves).
func ApplyStatus(st lifecycle.Status, m *v1alpha1.Machine, now time.Time) {
	cur := &m.Status.CurrentStatus
	cur.Phase = v1alpha1.MachinePhase(st.Phase.String())
	cur.TimeoutActive = st.Phase == phase.Pending
	cur.LastUpdateTime = metav1.NewTime(st.PhaseSince.Time())
	cur.PreserveExpiryTime = nil
	if st.PreserveUntil != 0 {
		t := metav1.NewTime(st.PreserveUntil.Time())
		cur.PreserveExpiryTime = &t
	}

	lo := lifecycle.LastOperation(&st, m.Name, now)
	rec := v1alpha1.LastOperation{
		Description:    lo.Description,
		ErrorCode:      lo.ErrorCode,
		LastUpdateTime: metav1.NewTime(lo.LastUpdateTime),
		State:          v1alpha1.MachineState(lo.State.String()),
		Type:           v1alpha1.MachineOperationType(lo.Type.String()),
	}
	if old := &m.Status.LastOperation; sameRecord(old, &rec) || saysTheSame(old, &st, m.Name) {
		rec.Description, rec.LastUpdateTime = old.Description, old.LastUpdateTime
	}
	m.Status.LastOperation = rec

	m.Status.Conditions = nodeConditions(st.Conditions, m.Status.Conditions)
	m.Status.Addresses = NodeAddresses(st.Addresses)
	m.Status.LastKnownState = st.LastKnownState

	s := state{
		Stage:        stageText(st.Stage),
		StageSince:   stampText(st.StageSince),
		PhaseSince:   stampText(st.PhaseSince),
		RetryAfter:   stampText(st.RetryAfter),
		Flags:        st.Flags,
		Attempt:      st.Attempt,
		Seq:          st.Seq,
		ProviderID:   st.ProviderID,
		Node:         st.NodeName,
		OwnerUID:     st.OwnerUID,
		Applied:      st.AppliedGeneration,
		Rejected:     st.RejectedGeneration,
		InPlace:      st.InPlaceGeneration,
		MetaSeen:     stampText(st.MetadataObserved),
		MetaSince:    stampText(st.MetadataSince),
		CreationFrom: stampText(st.CreationFrom),
		Check:        check(m),
	}
	s.PreserveUntil = stampText(st.PreserveUntil)
	if f := st.Failures; f != (lifecycle.Failures{}) {
		s.Failures = &failures{Create: f.Create, Health: f.Health, Delete: f.Delete, Update: f.Update, Metadata: f.Metadata,
			Drain: f.Drain}
	}
	if len(st.Metadata) > 0 {
		s.Metadata = st.Metadata
	}
	if p := lastop.Parse(rec.Description); p.Desc != st.LastOp.Desc || p.Detail != st.LastOp.Detail || p.Elapsed != st.LastOp.Elapsed {
		s.Op = &operation{Desc: st.LastOp.Desc.String(), Detail: st.LastOp.Detail, Elapsed: st.LastOp.Elapsed}
	}
	for i, c := range st.Conditions {
		if ns := c.Since.Time().Nanosecond(); ns != 0 {
			if s.ConditionNanos == nil {
				s.ConditionNanos = make([]int32, len(st.Conditions))
			}
			s.ConditionNanos[i] = int32(ns)
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// state holds only strings, numbers and a string map: it always encodes.
	_ = enc.Encode(&s)
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[StateAnnotation] = string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	if st.UIDHash != 0 {
		m.Annotations[UIDHashAnnotation] = uidHashText(st.UIDHash)
	} else {
		delete(m.Annotations, UIDHashAnnotation)
	}
}

// uidHashText is the text of UIDHashAnnotation for h.
func uidHashText(h retry.KeyHash) string { return fmt.Sprintf("%016x", uint64(h)) }

// uidHashFrom reads UIDHashAnnotation: the hash it holds when that is the
// hash of m's UID, else 0. The hash only spares the lifecycle hashing the
// UID again, so an annotation that holds another (copied with the object's
// annotations to an object with a new UID, or not written by ApplyStatus)
// is dropped rather than refused.
func uidHashFrom(m *v1alpha1.Machine) retry.KeyHash {
	text, ok := m.Annotations[UIDHashAnnotation]
	if !ok {
		return 0
	}
	h := retry.HashKey(string(m.UID))
	if text != uidHashText(h) {
		return 0
	}
	return h
}

// StatusFrom reads the lifecycle's status of an MCM Machine.
//
// A machine ApplyStatus wrote (it carries [StateAnnotation] and its MCM
// fields are still the ones written with it) reads back exactly: every
// field of the status ApplyStatus was given, also after the object went
// through the API server's JSON. Empty slices and maps read back as nil,
// and a UIDHash that is not the hash of the machine's UID as 0.
//
// A machine MCM was managing (no annotation) is adopted: the phase is
// parsed with [phase.Parse] and the last operation with
// [lastop.FromLastOperation], so a machine in the middle of its deletion
// resumes at the step its description names (the lifecycle adopts a
// Terminating machine without a stage); PhaseSince is
// currentStatus.lastUpdateTime, ProviderID is spec.providerID and NodeName
// the machine's node label or, without one, the node the description names
// (MCM's volume-attachment and node-deletion texts quote the label they
// acted on), so persisting the adopted status gives MCM's text back.
// Conditions, addresses and lastKnownState are read as they are. Everything
// MCM does not record starts at zero.
//
// A machine whose annotation no longer matches its phase and last
// operation (MCM or someone else wrote the status since, or the annotation
// write of ApplyStatus was lost) is adopted the same way, keeping the
// annotation's creation attempt so an idempotency key is never reused for
// another creation.
//
// An unknown phase, operation type or state, an annotation that is not
// valid, or a time StatusFrom would read as a stamp that lies outside the
// years a stamp holds ([lifecycle.InStampRange]: an annotation time,
// currentStatus.lastUpdateTime when the machine is adopted, a condition's
// lastTransitionTime) is an error wrapping [ErrInvalidState]. Such a time
// is refused rather than read as the nearest stamp: every deadline would
// count from it. The two extreme stamps stand for the times StampOf
// saturates to, so a status holding one does not read back either.
func StatusFrom(m *v1alpha1.Machine) (lifecycle.Status, error) {
	if m == nil {
		return lifecycle.Status{}, fmt.Errorf("%w: no machine", ErrInvalidState)
	}
	raw, ok := m.Annotations[StateAnnotation]
	if !ok {
		return adopt(m)
	}
	var s state
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	err := dec.Decode(&s)
	if err == nil {
		if _, end := dec.Token(); end != io.EOF {
			err = errors.New("text after the JSON object")
		}
	}
	if err != nil {
		return lifecycle.Status{}, fmt.Errorf("%w: annotation %s: %v", ErrInvalidState, StateAnnotation, err)
	}
	if s.Check != check(m) {
		st, err := adopt(m)
		if err != nil {
			return lifecycle.Status{}, err
		}
		st.Attempt = max(st.Attempt, s.Attempt)
		return st, nil
	}
	for i, n := range s.ConditionNanos {
		if n < 0 || n >= int32(time.Second) {
			return lifecycle.Status{}, fmt.Errorf("%w: annotation %s: condition %d: %d nanoseconds are not part of a second",
				ErrInvalidState, StateAnnotation, i, n)
		}
	}
	st, _, err := fromMCM(m, s.ConditionNanos)
	if err != nil {
		return lifecycle.Status{}, err
	}
	if err := s.into(&st); err != nil {
		return lifecycle.Status{}, fmt.Errorf("%w: annotation %s: %v", ErrInvalidState, StateAnnotation, err)
	}
	st.UIDHash = uidHashFrom(m)
	return st, nil
}

// adopt reads a machine MCM was managing.
func adopt(m *v1alpha1.Machine) (lifecycle.Status, error) {
	st, args, err := fromMCM(m, nil)
	if err != nil {
		return lifecycle.Status{}, err
	}
	if st.PhaseSince, err = stampOf(m.Status.CurrentStatus.LastUpdateTime.Time); err != nil {
		return lifecycle.Status{}, fmt.Errorf("%w: machine %s: currentStatus.lastUpdateTime: %v", ErrInvalidState, m.Name, err)
	}
	if t := m.Status.CurrentStatus.PreserveExpiryTime; t != nil {
		if st.PreserveUntil, err = stampOf(t.Time); err != nil {
			return lifecycle.Status{}, fmt.Errorf("%w: machine %s: currentStatus.preserveExpiryTime: %v", ErrInvalidState, m.Name, err)
		}
	}
	st.ProviderID = m.Spec.ProviderID
	st.NodeName = m.Labels[lifecycle.NodeLabel]
	if st.NodeName == "" {
		// MCM's volume-attachment and node-deletion texts name the node
		// of its label when it wrote them.
		st.NodeName = args.Node
	}
	return st, nil
}

// fromMCM reads the fields MCM's status has a place for, and returns the
// names and conditions the last operation's description holds.
func fromMCM(m *v1alpha1.Machine, nanos []int32) (st lifecycle.Status, args lastop.Args, err error) {
	p, err := phase.Parse(string(m.Status.CurrentStatus.Phase))
	if err != nil {
		return st, args, fmt.Errorf("%w: machine %s: %v", ErrInvalidState, m.Name, err)
	}
	lo := &m.Status.LastOperation
	typ, err := lastop.ParseType(string(lo.Type))
	if err != nil {
		return st, args, fmt.Errorf("%w: machine %s: %v", ErrInvalidState, m.Name, err)
	}
	state, err := lastop.ParseState(string(lo.State))
	if err != nil {
		return st, args, fmt.Errorf("%w: machine %s: %v", ErrInvalidState, m.Name, err)
	}
	st.Phase = p
	st.LastOp, args = lastop.FromLastOperation(lastop.LastOperation{
		Description:    lo.Description,
		ErrorCode:      lo.ErrorCode,
		LastUpdateTime: lo.LastUpdateTime.Time,
		State:          state,
		Type:           typ,
	})
	st.LastKnownState = m.Status.LastKnownState
	if st.Conditions, err = conditionsFrom(m.Status.Conditions, nanos); err != nil {
		return st, args, fmt.Errorf("%w: machine %s: %v", ErrInvalidState, m.Name, err)
	}
	st.Addresses = AddressesFrom(m.Status.Addresses)
	return st, args, nil
}

// into writes the annotation's fields into st.
func (s *state) into(st *lifecycle.Status) error {
	var err error
	if st.Stage, err = lifecycle.ParseStage(s.Stage); err != nil {
		return err
	}
	stamps := []struct {
		text string
		to   *lifecycle.Stamp
	}{
		{s.StageSince, &st.StageSince}, {s.PhaseSince, &st.PhaseSince}, {s.RetryAfter, &st.RetryAfter},
		{s.MetaSeen, &st.MetadataObserved}, {s.MetaSince, &st.MetadataSince}, {s.CreationFrom, &st.CreationFrom},
		{s.PreserveUntil, &st.PreserveUntil},
	}
	for _, x := range stamps {
		if *x.to, err = parseStamp(x.text); err != nil {
			return err
		}
	}
	st.Flags = s.Flags
	if f := s.Failures; f != nil {
		st.Failures = lifecycle.Failures{Create: f.Create, Health: f.Health, Delete: f.Delete, Update: f.Update, Metadata: f.Metadata,
			Drain: f.Drain}
	}
	st.Attempt, st.Seq = s.Attempt, s.Seq
	st.ProviderID, st.NodeName, st.OwnerUID = s.ProviderID, s.Node, s.OwnerUID
	st.AppliedGeneration, st.RejectedGeneration, st.InPlaceGeneration = s.Applied, s.Rejected, s.InPlace
	if len(s.Metadata) > 0 {
		st.Metadata = maps.Clone(s.Metadata)
	}
	if op := s.Op; op != nil {
		d, err := lastop.ParseDesc(op.Desc)
		if err != nil {
			return err
		}
		st.LastOp.Desc, st.LastOp.Detail, st.LastOp.Elapsed = d, op.Detail, op.Elapsed
	}
	return nil
}

// check fingerprints the MCM fields that place a machine in its flows:
// the phase and the last operation's type, state, error code and
// description.
func check(m *v1alpha1.Machine) string {
	h := fnv.New32a()
	lo := &m.Status.LastOperation
	for _, s := range []string{string(m.Status.CurrentStatus.Phase), string(lo.Type), string(lo.State), lo.ErrorCode, lo.Description} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%08x", h.Sum32())
}

// saysTheSame reports whether the record old is st's last operation,
// written when the node conditions it prints were different: MCM prints
// them into its H4 and T4 descriptions once, when the phase changes, and
// the lifecycle keeps the operation, not the text, so the text is kept.
func saysTheSame(old *v1alpha1.LastOperation, st *lifecycle.Status, machine string) bool {
	if !strings.Contains(st.LastOp.Desc.Format(), "<conditions>") {
		return false
	}
	typ, err1 := lastop.ParseType(string(old.Type))
	state, err2 := lastop.ParseState(string(old.State))
	if err1 != nil || err2 != nil {
		return false
	}
	op, args := lastop.FromLastOperation(lastop.LastOperation{Description: old.Description, ErrorCode: old.ErrorCode, State: state, Type: typ})
	return op == st.LastOp &&
		op.Describe(lastop.Args{Machine: machine, Node: st.NodeName, Conditions: args.Conditions}) == old.Description
}

// sameRecord reports whether two last operations differ only in their
// update time.
func sameRecord(a, b *v1alpha1.LastOperation) bool {
	return a.Description == b.Description && a.ErrorCode == b.ErrorCode && a.State == b.State && a.Type == b.Type
}

// nodeConditions converts conditions for the machine's status. The
// lifecycle keeps no heartbeat times; a condition that old holds unchanged
// keeps its heartbeat, so a status MCM mirrored is not rewritten.
func nodeConditions(cs []lifecycle.Condition, old []corev1.NodeCondition) []corev1.NodeCondition {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.NodeCondition, len(cs))
	for i, c := range cs {
		out[i] = corev1.NodeCondition{
			Type:               corev1.NodeConditionType(c.Type),
			Status:             corev1.ConditionStatus(c.Status.String()),
			LastTransitionTime: metav1.NewTime(c.Since.Time()),
			Reason:             c.Reason,
			Message:            c.Message,
		}
		for _, o := range old {
			if o.Type == out[i].Type && o.Status == out[i].Status && o.Reason == c.Reason && o.Message == c.Message &&
				lifecycle.StampOf(o.LastTransitionTime.Time) == c.Since {
				out[i].LastHeartbeatTime = o.LastHeartbeatTime
				break
			}
		}
	}
	return out
}

// AddressesFrom converts Kubernetes node addresses, as MCM keeps them in a
// Machine's status and its providers answer them, into the lifecycle's;
// nil for none.
func AddressesFrom(as []corev1.NodeAddress) []driverapi.Address {
	if len(as) == 0 {
		return nil
	}
	out := make([]driverapi.Address, len(as))
	for i, a := range as {
		out[i] = driverapi.Address{Type: string(a.Type), Address: a.Address}
	}
	return out
}

// NodeAddresses converts the lifecycle's addresses into Kubernetes node
// addresses, as MCM keeps them; nil for none.
func NodeAddresses(as []driverapi.Address) []corev1.NodeAddress {
	if len(as) == 0 {
		return nil
	}
	out := make([]corev1.NodeAddress, len(as))
	for i, a := range as {
		out[i] = corev1.NodeAddress{Type: corev1.NodeAddressType(a.Type), Address: a.Address}
	}
	return out
}

func stampText(s lifecycle.Stamp) string {
	if s.IsZero() {
		return ""
	}
	return s.Time().Format(time.RFC3339Nano)
}

// parseStamp reads a stamp stampText wrote. A time outside the years a
// stamp holds is an error: no writer of a valid status gives one, and read
// as a stamp it would saturate (see lifecycle.InStampRange).
func parseStamp(text string) (lifecycle.Stamp, error) {
	if text == "" {
		return 0, nil
	}
	t, err := time.Parse(time.RFC3339Nano, text)
	if err != nil {
		return 0, err
	}
	return stampOf(t)
}

// stampOf returns the stamp of t, or an error when t lies outside the years
// a stamp holds ([lifecycle.InStampRange]), where StampOf saturates.
func stampOf(t time.Time) (lifecycle.Stamp, error) {
	if !lifecycle.InStampRange(t) {
		return 0, fmt.Errorf("time %s is outside the years a stamp holds (1678 to 2262)", t.Format(time.RFC3339Nano))
	}
	return lifecycle.StampOf(t), nil
}

// stageText names a stage; StageNone is left out.
func stageText(s lifecycle.Stage) string {
	if s == lifecycle.StageNone {
		return ""
	}
	return s.String()
}

package lifecycletest

import (
	"slices"
	"strings"
	"time"

	"pgregory.net/rapid"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// Epoch is the time around which the generators draw times.
var Epoch = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

// Durations draws durations from zero to a few hours, favouring the edges
// of the default timeouts.
func Durations() *rapid.Generator[time.Duration] {
	return rapid.OneOf(
		rapid.SampledFrom([]time.Duration{0, time.Second, 5 * time.Second, time.Minute, 3 * time.Minute,
			10*time.Minute - time.Second, 10*time.Minute + time.Second, 20*time.Minute - time.Second,
			20*time.Minute + time.Second, 2*time.Hour + time.Second}),
		rapid.Map(rapid.Int64Range(0, int64(3*time.Hour)), func(n int64) time.Duration { return time.Duration(n) }),
	)
}

// Stamps draws stamps within a few hours of Epoch, and unset ones.
func Stamps() *rapid.Generator[lifecycle.Stamp] {
	return rapid.OneOf(rapid.Just(lifecycle.Stamp(0)),
		rapid.Map(Durations(), func(d time.Duration) lifecycle.Stamp { return lifecycle.StampOf(Epoch.Add(d)) }))
}

// Configs draws valid configurations.
func Configs() *rapid.Generator[lifecycle.Config] {
	return rapid.Custom(func(t *rapid.T) lifecycle.Config {
		c := lifecycle.DefaultConfig()
		c.CreationTimeout = time.Duration(rapid.IntRange(1, 40).Draw(t, "creation minutes")) * time.Minute
		c.HealthTimeout = time.Duration(rapid.IntRange(1, 20).Draw(t, "health minutes")) * time.Minute
		c.DrainTimeout = time.Duration(rapid.IntRange(1, 120).Draw(t, "drain minutes")) * time.Minute
		c.InPlaceUpdateTimeout = time.Duration(rapid.IntRange(1, 40).Draw(t, "in-place minutes")) * time.Minute
		c.PreserveTimeout = time.Duration(rapid.IntRange(1, 120).Draw(t, "preserve minutes")) * time.Minute
		c.AutoPreserve = rapid.IntRange(0, 2).Draw(t, "auto-preserve")
		c.NoTargetCluster = rapid.IntRange(0, 9).Draw(t, "no target cluster") == 0
		c.VerifyOwner = rapid.Bool().Draw(t, "verify owner")
		if rapid.Bool().Draw(t, "percent") {
			c.Replacements = lifecycle.ReplacementLimit{Percent: rapid.IntRange(1, 100).Draw(t, "replacement percent")}
		} else {
			c.Replacements = lifecycle.ReplacementLimit{Count: rapid.IntRange(1, 5).Draw(t, "replacement count")}
		}
		if rapid.IntRange(0, 3).Draw(t, "zone outage") == 0 {
			c.ZoneOutage = lifecycle.ZoneOutage{Count: rapid.IntRange(1, 4).Draw(t, "zone count"),
				Percent: rapid.IntRange(0, 100).Draw(t, "zone percent"),
				Hold:    time.Duration(rapid.IntRange(1, 60).Draw(t, "zone hold minutes")) * time.Minute}
		}
		return c
	})
}

// Results draws driver results of any method and code, codes outside 0..17
// and undecodable errors included, with or without identity fields.
func Results() *rapid.Generator[driverapi.Result] {
	return rapid.Custom(func(t *rapid.T) driverapi.Result {
		r := driverapi.Result{
			Method: driverapi.Method(rapid.IntRange(0, 9).Draw(t, "method")),
			Code:   driverapi.Code(rapid.OneOf(rapid.IntRange(0, 17), rapid.IntRange(0, 255)).Draw(t, "code")),
		}
		if r.Code != driverapi.OK {
			r.Message = "injected"
			r.Text = "injected"
			r.Undecodable = rapid.IntRange(0, 5).Draw(t, "undecodable") == 0
		}
		r.ProviderID = rapid.SampledFrom([]string{"", "test:///vm-1", "test:///vm-2"}).Draw(t, "providerID")
		r.NodeName = rapid.SampledFrom([]string{"", "node-1", "node-2"}).Draw(t, "node name")
		r.OwnerUID = rapid.SampledFrom([]string{"", "uid-1", "uid-0"}).Draw(t, "owner")
		r.Generation = rapid.Int64Range(0, 3).Draw(t, "generation")
		r.Metadata = Metadata().Draw(t, "metadata")
		return r
	})
}

// Statuses draws statuses: every phase (the in-place update's included),
// stage (the drains of a kept node included) and known flag
// (preservation's included), with or without an instance, stamps around
// Epoch, a preservation's expiry among them.
func Statuses() *rapid.Generator[lifecycle.Status] {
	return rapid.Custom(func(t *rapid.T) lifecycle.Status {
		st := lifecycle.Status{
			Phase:      phase.Phase(rapid.IntRange(0, phase.Count-1).Draw(t, "phase")),
			Stage:      lifecycle.Stage(rapid.IntRange(0, int(lifecycle.StagePreserveDrain)).Draw(t, "stage")),
			Flags:      lifecycle.Flags(rapid.IntRange(0, int(lifecycle.FlagPreserveCordonMarked)<<1-1).Draw(t, "flags")),
			Attempt:    uint32(rapid.IntRange(0, 2).Draw(t, "attempt")),
			Seq:        uint32(rapid.IntRange(0, 5).Draw(t, "seq")),
			PhaseSince: Stamps().Draw(t, "phase since"),
			StageSince: Stamps().Draw(t, "stage since"),
			RetryAfter: Stamps().Draw(t, "retry after"),
			ProviderID: rapid.SampledFrom([]string{"", "test:///vm-1"}).Draw(t, "providerID"),
			NodeName:   rapid.SampledFrom([]string{"", "node-1"}).Draw(t, "node name"),
			OwnerUID:   rapid.SampledFrom([]string{"", "uid-1", "uid-0"}).Draw(t, "owner"),
			LastOp: lastop.Operation{
				Type:  lastop.Type(rapid.IntRange(0, 6).Draw(t, "op type")),
				State: lastop.State(rapid.IntRange(0, 3).Draw(t, "op state")),
				Desc:  lastop.Desc(rapid.IntRange(0, len(lastop.Descs())+1).Draw(t, "op desc")),
			},
			AppliedGeneration:  rapid.Int64Range(0, 2).Draw(t, "applied generation"),
			RejectedGeneration: rapid.Int64Range(0, 2).Draw(t, "rejected generation"),
			MetadataObserved:   Stamps().Draw(t, "metadata observed"),
			MetadataSince:      Stamps().Draw(t, "metadata since"),
			CreationFrom:       Stamps().Draw(t, "creation from"),
			PreserveUntil:      Stamps().Draw(t, "preserve until"),
		}
		st.Failures.Create = uint8(rapid.IntRange(0, 3).Draw(t, "create failures"))
		st.Failures.Health = uint8(rapid.IntRange(0, 2).Draw(t, "health failures"))
		st.Failures.Delete = uint8(rapid.IntRange(0, 3).Draw(t, "delete failures"))
		st.Failures.Update = uint8(rapid.IntRange(0, 2).Draw(t, "update failures"))
		st.Failures.Metadata = uint8(rapid.IntRange(0, 3).Draw(t, "metadata failures"))
		st.Failures.Drain = uint8(rapid.IntRange(0, 2).Draw(t, "drain failures"))
		st.Metadata = Metadata().Draw(t, "observed metadata")
		if rapid.Bool().Draw(t, "conditions") {
			st.Conditions = Nodes().Draw(t, "mirrored node").Conditions
		}
		return st
	})
}

// Metadata draws instance metadata over the keys team and pool: none, one
// of them or both, each with the value the generators' objects ask or
// another, and sometimes a key nobody asks for. Drawn for an object and for
// what a status observed, it gives keys to add and keys to remove.
func Metadata() *rapid.Generator[map[string]string] {
	return rapid.Custom(func(t *rapid.T) map[string]string {
		var m map[string]string // nil while it holds no key
		put := func(k, v string) {
			if m == nil {
				m = map[string]string{}
			}
			m[k] = v
		}
		for _, k := range []struct{ key, want, other string }{{"team", "a", "b"}, {"pool", "b", "c"}} {
			switch rapid.IntRange(0, 3).Draw(t, k.key) {
			case 1, 2:
				put(k.key, k.want)
			case 3:
				put(k.key, k.other)
			}
		}
		if rapid.IntRange(0, 7).Draw(t, "stray key") == 0 {
			put("stray", "x")
		}
		return m
	})
}

// Nodes draws nodes: absent, healthy, unhealthy, of another instance or
// labelled with another machine's name, tainted, deleted out of band (a
// deletionTimestamp set), with pods left to drain or none, and nodes that
// give no evidence of health: without conditions, without a Ready
// condition, with condition types nobody watches. A node may be in the
// middle of an in-place update: labelled candidate, selected, with the
// agent's verdict and its reason of a failure, as the protocol has them or
// in any combination, and its InPlaceUpdate condition at any reason the
// protocol gives or at one it does not know. And preserved, or asked to
// be: its preserve annotation at any value, cordoned, the autoscaler kept
// off, its Preserved condition True or False at any of its reasons, with
// a message that names an expiry or another.
func Nodes() *rapid.Generator[lifecycle.Node] {
	return rapid.Custom(func(t *rapid.T) lifecycle.Node {
		if rapid.IntRange(0, 3).Draw(t, "no node") == 0 {
			return lifecycle.Node{}
		}
		ready := rapid.SampledFrom([]lifecycle.ConditionStatus{lifecycle.ConditionTrue, lifecycle.ConditionTrue,
			lifecycle.ConditionFalse, lifecycle.ConditionUnknown}).Draw(t, "ready")
		n := lifecycle.Node{
			Name:        rapid.SampledFrom([]string{"node-1", "node-old"}).Draw(t, "node"),
			ProviderID:  rapid.SampledFrom([]string{"test:///vm-1", "", "test:///vm-old"}).Draw(t, "node providerID"),
			MachineName: rapid.SampledFrom([]string{"", "machine-1", "machine-0"}).Draw(t, "machine-name label"),
			Conditions: []lifecycle.Condition{{Type: lifecycle.ConditionReady, Status: ready,
				Since: Stamps().Draw(t, "ready since")}},
			Taints:          lifecycle.Taints(rapid.IntRange(0, 3).Draw(t, "taints")),
			VolumesAttached: rapid.IntRange(0, 2).Draw(t, "volumes attached"),
			// Deleted out of band: it has a deletionTimestamp, and
			// finalizers may hold it a while.
			Deleting: rapid.IntRange(0, 7).Draw(t, "node deleted") == 0,
			Zone:     rapid.SampledFrom([]string{"", "zone-a"}).Draw(t, "zone"),
			Pods:     rapid.SampledFrom([]int{0, 0, 1, 3}).Draw(t, "pods"),
		}
		if rapid.Bool().Draw(t, "disk pressure") {
			n.Conditions = append(n.Conditions, lifecycle.Condition{Type: "DiskPressure",
				Status: rapid.SampledFrom([]lifecycle.ConditionStatus{lifecycle.ConditionFalse, lifecycle.ConditionTrue}).Draw(t, "disk")})
		}
		if rapid.IntRange(0, 3).Draw(t, "unwatched condition") == 0 {
			n.Conditions = append(n.Conditions, lifecycle.Condition{Type: "ExampleVendorCondition",
				Status: lifecycle.ConditionStatus(rapid.IntRange(0, 2).Draw(t, "unwatched status"))})
		}
		inPlaceUpdate(t, &n)
		preservation(t, &n)
		switch rapid.IntRange(0, 7).Draw(t, "evidence") {
		case 0: // a node that reports no conditions at all
			n.Conditions = nil
		case 1: // no Ready condition
			n.Conditions = n.Conditions[1:]
		}
		return n
	})
}

// inPlaceLabels are the in-place labels a node carries as the protocol has
// them: none, a candidate, selected, with the agent's verdict, and after
// its owner withdrew the selection.
var inPlaceLabels = []lifecycle.UpdateLabels{0, 0, 0, lifecycle.UpdateCandidate,
	lifecycle.UpdateCandidate | lifecycle.UpdateSelected,
	lifecycle.UpdateCandidate | lifecycle.UpdateSelected | lifecycle.UpdateSucceeded,
	lifecycle.UpdateCandidate | lifecycle.UpdateSelected | lifecycle.UpdateFailed,
	lifecycle.UpdateCandidate | lifecycle.UpdateSucceeded}

// drawnReasons are the InPlaceUpdate reasons Nodes draws: none, the
// protocol's, and one it does not know.
var drawnReasons = append(inPlaceReasons[:len(inPlaceReasons):len(inPlaceReasons)], "ReasonNobodyKnows")

// inPlaceUpdate draws node n's part of an in-place update: its labels (as
// the protocol has them, or any bits), the agent's reason of a failure,
// and its InPlaceUpdate condition after its other conditions.
func inPlaceUpdate(t *rapid.T, n *lifecycle.Node) {
	n.Update = rapid.OneOf(rapid.SampledFrom(inPlaceLabels),
		rapid.Map(rapid.IntRange(0, 15), func(b int) lifecycle.UpdateLabels { return lifecycle.UpdateLabels(b) })).
		Draw(t, "in-place labels")
	if n.Update.Has(lifecycle.UpdateFailed) && rapid.IntRange(0, 3).Draw(t, "failure reason") > 0 {
		n.UpdateFailedReason = "injected"
	}
	if r := rapid.SampledFrom(drawnReasons).Draw(t, "in-place reason"); r != "" {
		n.Conditions = append(n.Conditions, lifecycle.Condition{Type: lifecycle.ConditionInPlaceUpdate,
			Status: lifecycle.ConditionTrue, Since: Stamps().Draw(t, "in-place since"), Reason: r})
	}
}

// preserveValues are the values of the preserve annotation the generators
// draw, unset most often.
var preserveValues = []lifecycle.Preserve{lifecycle.PreserveUnset, lifecycle.PreserveUnset, lifecycle.PreserveUnset,
	lifecycle.PreserveFalse, lifecycle.PreserveNow, lifecycle.PreserveWhenFailed, lifecycle.PreserveAutoPreserved,
	lifecycle.PreserveInvalid}

// preservedReasons are the reasons of the Preserved condition Nodes draws:
// the lifecycle's (MCM's), and one nobody knows.
var preservedReasons = []string{lifecycle.ReasonPreservedByUser, lifecycle.ReasonPreservedByMCM,
	lifecycle.ReasonPreservationStopped, "ReasonNobodyKnows"}

// preservation draws node n's part of a preservation: its preserve
// annotation, its cordon and the lifecycle's mark of it, the autoscaler's
// annotation by MCM, and its
// Preserved condition after its other conditions, its message naming an
// expiry (drained or not) or none.
func preservation(t *rapid.T, n *lifecycle.Node) {
	n.Preserve = rapid.SampledFrom(preserveValues).Draw(t, "node preserve")
	n.Unschedulable = rapid.IntRange(0, 3).Draw(t, "cordoned") == 0
	n.OwnCordon = rapid.IntRange(0, 3).Draw(t, "cordon mark") == 0 // cordoned or not: a mark left behind
	n.ScaleDownDisabled = rapid.IntRange(0, 3).Draw(t, "scale-down disabled") == 0
	if rapid.IntRange(0, 3).Draw(t, "preserved condition") > 0 {
		return
	}
	c := lifecycle.Condition{Type: lifecycle.ConditionPreserved,
		Status: rapid.SampledFrom([]lifecycle.ConditionStatus{lifecycle.ConditionTrue, lifecycle.ConditionFalse}).Draw(t, "preserved"),
		Since:  Stamps().Draw(t, "preserved since"), Reason: rapid.SampledFrom(preservedReasons).Draw(t, "preserved reason")}
	if until := Stamps().Draw(t, "preserved until"); until != 0 {
		c.Message = presMessage(until, rapid.Bool().Draw(t, "drained message"))
	}
	n.Conditions = append(n.Conditions, c)
}

// Inputs draws inputs of one machine "machine-1" (UID "uid-1") with any
// status, observation, problem, grant and outcome, the previous decision's
// own outcome among them. Half the statuses are arbitrary ([Statuses]), a
// quarter are taken over from another controller ([AdoptedStatuses]) and a
// quarter come after a lost or partial write ([StatusesAfterLostWrites]);
// the object's providerID and node label, and its desired metadata, are
// drawn independently of them, so a status and its object may name
// different instances, nodes and keys. The machine's preserve annotation,
// its preservation timeout and the fleet's grant of auto-preservation are
// drawn as well. An outcome's driver call may also find the instance
// vanished out of band (NotFound).
func Inputs(cfg lifecycle.Config) *rapid.Generator[lifecycle.Input] {
	return rapid.Custom(func(t *rapid.T) lifecycle.Input {
		in := lifecycle.Input{
			Now: Epoch.Add(Durations().Draw(t, "now")),
			Object: lifecycle.Object{Name: "machine-1", UID: "uid-1", Owner: "owner-1",
				CreationTime:     Epoch.Add(-Durations().Draw(t, "age")),
				Finalizer:        rapid.IntRange(0, 5).Draw(t, "finalizer") > 0,
				NodeLabel:        rapid.SampledFrom([]string{"", "node-1"}).Draw(t, "node label"),
				ProviderID:       rapid.SampledFrom([]string{"", "test:///vm-1"}).Draw(t, "spec providerID"),
				Priority:         rapid.SampledFrom([]string{"", "3"}).Draw(t, "priority"),
				ForceDeletion:    rapid.IntRange(0, 5).Draw(t, "force deletion") == 0,
				ForceDrain:       rapid.IntRange(0, 5).Draw(t, "force drain") == 0,
				UpdateGeneration: rapid.Int64Range(0, 2).Draw(t, "desired generation"),
				Preserve:         rapid.SampledFrom(preserveValues).Draw(t, "machine preserve"),
			},
			Status: rapid.OneOf(Statuses(), Statuses(), AdoptedStatuses(), StatusesAfterLostWrites()).
				Draw(t, "status"),
			Node:                   Nodes().Draw(t, "node"),
			NodeReadFailed:         rapid.IntRange(0, 9).Draw(t, "node read failed") == 0,
			VolumeAttachments:      rapid.IntRange(0, 2).Draw(t, "volume attachments"),
			TokenExists:            rapid.Bool().Draw(t, "token"),
			Problem:                lifecycle.Problem(rapid.OneOf(rapid.Just(0), rapid.IntRange(0, 5)).Draw(t, "problem")),
			Grant:                  lifecycle.Grant{Fail: rapid.Bool().Draw(t, "grant")},
			PredecessorTerminating: rapid.IntRange(0, 5).Draw(t, "predecessor terminating") == 0,
		}
		if !in.Grant.Fail && rapid.IntRange(0, 3).Draw(t, "zone held") == 0 {
			// Held for its zone's outage, until before or after now.
			in.Grant.Held = in.Now.Add(Durations().Draw(t, "held for") - Durations().Draw(t, "held since"))
		}
		in.Object.Metadata = Metadata().Draw(t, "desired metadata")
		in.Grant.Preserve = rapid.IntRange(0, 3).Draw(t, "auto-preserve grant") == 0
		if rapid.IntRange(0, 5).Draw(t, "own preserve timeout") == 0 {
			in.Object.Overrides.PreserveTimeout = time.Duration(rapid.IntRange(1, 120).Draw(t, "own preserve minutes")) * time.Minute
		}
		if rapid.IntRange(0, 3).Draw(t, "deleting") == 0 {
			in.Object.DeletionTime = in.Now.Add(-Durations().Draw(t, "deleting for"))
		}
		if rapid.IntRange(0, 5).Draw(t, "observer degraded") == 0 {
			in.Observer = lifecycle.Observer{Degraded: true, Since: Epoch}
		} else if rapid.Bool().Draw(t, "observer recovered") {
			in.Observer = lifecycle.Observer{Since: Epoch.Add(Durations().Draw(t, "recovered at"))}
		}
		if rapid.Bool().Draw(t, "outcome") {
			// The outcome of the decision the same status would give, or a
			// stray one.
			prev := in
			prev.Outcome = nil
			d := lifecycle.Step(cfg, prev)
			in.Status = d.Status
			o := &lifecycle.Outcome{OpID: d.OpID, Ran: d.Effects.Len(), Result: Results().Draw(t, "result")}
			if d.HasCall() && rapid.IntRange(0, 5).Draw(t, "mismatched method") > 0 {
				o.Result.Method = d.Call.Method
			}
			if d.HasCall() && rapid.IntRange(0, 5).Draw(t, "instance vanished") == 0 {
				// The instance vanished out of band: the call finds none.
				o.Result = driverapi.Result{Method: d.Call.Method, Code: driverapi.NotFound, Message: "gone", Text: "gone"}
			}
			if rapid.IntRange(0, 4).Draw(t, "stopped early") == 0 && o.Ran > 0 {
				o.Ran = rapid.IntRange(0, o.Ran-1).Draw(t, "ran")
				o.Stopped = lifecycle.Write(rapid.IntRange(1, 3).Draw(t, "stopped"))
				o.Error = "injected"
			}
			if rapid.IntRange(0, 9).Draw(t, "persist failed") == 0 {
				o.Persist = lifecycle.Write(rapid.IntRange(1, 3).Draw(t, "persist"))
			}
			if rapid.IntRange(0, 9).Draw(t, "stray op") == 0 {
				o.OpID = lifecycle.OpID(rapid.Uint64().Draw(t, "op ID"))
			}
			in.Outcome = o
		}
		return in
	})
}

// mcmOperations returns the last operations MCM (or its MachineSet
// controller) leaves a machine of phase p with: for Terminating, one per
// description that names a deletion step, in both states, MCM's
// MachineSet's text, which names none, and a text no template matches.
func mcmOperations(p phase.Phase) []lastop.Operation {
	op := func(t lastop.Type, s lastop.State, d lastop.Desc) lastop.Operation {
		o := lastop.Operation{Type: t, State: s, Desc: d}
		if strings.Contains(d.Format(), "<detail>") {
			o.Detail, o.ErrorCode = "injected", "Internal"
		}
		if strings.Contains(d.Format(), "<elapsed>") {
			o.Elapsed = 10 * time.Minute
		}
		return o
	}
	const (
		create, health, del  = lastop.TypeCreate, lastop.TypeHealthCheck, lastop.TypeDelete
		inPlace              = lastop.TypeInPlaceUpdate
		processing, ok, fail = lastop.StateProcessing, lastop.StateSuccessful, lastop.StateFailed
	)
	switch p {
	case phase.None:
		return []lastop.Operation{{}, op(create, processing, lastop.DescNone)}
	case phase.CrashLoopBackOff:
		return []lastop.Operation{op(create, fail, lastop.DescCloudProviderError), op(create, fail, lastop.DescInitFailed)}
	case phase.Pending:
		return []lastop.Operation{op(create, processing, lastop.DescCreating)}
	case phase.Available:
		return []lastop.Operation{op(create, ok, lastop.DescCreated)}
	case phase.Running:
		return []lastop.Operation{op(create, ok, lastop.DescJoined), op(health, ok, lastop.DescRejoined),
			op(health, ok, lastop.DescHealthTimeoutReset), op(create, processing, lastop.DescCreating)}
	case phase.Unknown:
		return []lastop.Operation{op(health, processing, lastop.DescUnhealthy), op(health, processing, lastop.DescNodeMissing)}
	case phase.Failed:
		return []lastop.Operation{op(health, fail, lastop.DescHealthTimeout), op(create, fail, lastop.DescJoinTimeout),
			op(create, fail, lastop.DescStaleNode), op(inPlace, fail, lastop.DescHealthTimeout)}
	case phase.InPlaceUpdating:
		return []lastop.Operation{op(inPlace, processing, lastop.DescInPlaceUpdating)}
	case phase.InPlaceUpdateSuccessful:
		return []lastop.Operation{op(inPlace, ok, lastop.DescInPlaceUpdated)}
	case phase.InPlaceUpdateFailed:
		return []lastop.Operation{op(inPlace, fail, lastop.DescInPlaceUpdateFailed), op(inPlace, fail, lastop.DescInPlaceTimeout)}
	case phase.Terminating:
		var out []lastop.Operation
		for _, d := range lastop.Descs() {
			if st := d.Step(); st == lastop.StepInitialize || st == lastop.StepNone || st == lastop.StepNodeReadyForUpdate {
				continue
			}
			out = append(out, op(del, processing, d), op(del, fail, d))
		}
		foreign := lastop.Operation{Type: del, State: processing, Desc: lastop.DescUnknown, Detail: "Deleting machine"}
		embedded := lastop.Operation{Type: del, State: fail, Desc: lastop.DescUnknown,
			Detail: "a text of another controller; " + lastop.StepDeleteVM.Marker()}
		return append(out, op(del, processing, lastop.DescMachineSetDeleting), foreign, embedded)
	}
	return nil
}

// adoptedPhases are the phases AdoptedStatuses draws: every phase MCM
// leaves a machine in.
var adoptedPhases = []phase.Phase{phase.None, phase.CrashLoopBackOff, phase.Pending, phase.Available, phase.Running,
	phase.Unknown, phase.Failed, phase.Terminating, phase.InPlaceUpdating, phase.InPlaceUpdateSuccessful,
	phase.InPlaceUpdateFailed}

// AdoptedStatuses draws the statuses a shell hands in for a machine taken
// over from another controller such as MCM, as the MCM adapter reads them:
// every phase, the in-place update's included, with a last operation MCM
// writes in it (while Terminating, every description that names a deletion
// step, MCM's MachineSet's text that names none, and foreign text), the
// phase's start from the last update time (or none), providerID and node
// name present or not (the adapter takes them from spec.providerID and the
// node label), node conditions and the provider's last known state as MCM
// mirrors them, and none of the lifecycle's own bookkeeping: no stage,
// flags, failures, sequence or stamps, and a creation attempt only where a
// stale annotation left one. MCM's preserveExpiryTime, the expiry of a
// preservation, is drawn too: none, or a stamp around Epoch.
func AdoptedStatuses() *rapid.Generator[lifecycle.Status] {
	return rapid.Custom(func(t *rapid.T) lifecycle.Status {
		p := rapid.SampledFrom(adoptedPhases).Draw(t, "phase")
		st := lifecycle.Status{
			Phase:      p,
			LastOp:     rapid.SampledFrom(mcmOperations(p)).Draw(t, "last operation"),
			PhaseSince: Stamps().Draw(t, "last update"),
			ProviderID: rapid.SampledFrom([]string{"", "test:///vm-1"}).Draw(t, "providerID"),
			NodeName:   rapid.SampledFrom([]string{"", "node-1"}).Draw(t, "node name"),
			Attempt:    uint32(rapid.SampledFrom([]int{0, 0, 0, 1, 2}).Draw(t, "attempt kept")),
		}
		if rapid.Bool().Draw(t, "conditions") {
			st.Conditions = Nodes().Draw(t, "mirrored node").Conditions
		}
		if rapid.Bool().Draw(t, "last known state") {
			st.LastKnownState = "provider state"
		}
		if rapid.IntRange(0, 3).Draw(t, "preserve expiry") == 0 {
			st.PreserveUntil = Stamps().Draw(t, "preserve expiry time")
		}
		return st
	})
}

// StatusesAfterLostWrites draws the statuses a shell hands in after a lost
// or partial write: the phase, last operation, conditions and last known
// state of a status the lifecycle wrote, with its own bookkeeping (stage,
// stage start, flags, failures, attempt, sequence, phase start, retry
// time, the recorded instance, node and owner, the generations, the
// observed metadata and its stamps, the creation start, the
// preservation's expiry) lost altogether,
// taken from an older status of the same machine, or mixed field by field
// from the two and nothing. The statuses come from a random walk of the
// world Explore explores, from any of its start states (new, Running,
// taken over from another controller, in the middle of an in-place
// update, preserved or asked to be), through any of its transitions,
// faults included.
func StatusesAfterLostWrites() *rapid.Generator[lifecycle.Status] {
	return rapid.Custom(func(t *rapid.T) lifecycle.Status {
		older, newer := walkStatuses(t)
		st := newer
		var lost lifecycle.Status
		switch rapid.IntRange(0, 2).Draw(t, "write") {
		case 0: // lost: only what the object names may survive, and the attempt
			if rapid.Bool().Draw(t, "attempt kept") {
				lost.Attempt = newer.Attempt
			}
			if rapid.Bool().Draw(t, "instance from the spec") {
				lost.ProviderID, lost.NodeName = newer.ProviderID, newer.NodeName
			}
			if rapid.Bool().Draw(t, "phase start from the last update") {
				lost.PhaseSince = newer.PhaseSince
			}
			copyBookkeeping(&st, &lost)
		case 1: // older
			copyBookkeeping(&st, &older)
		default: // partial, field by field
			from := []*lifecycle.Status{&older, &lost, &newer}
			for _, f := range bookkeeping {
				f.copy(&st, from[rapid.IntRange(0, 2).Draw(t, f.name)])
			}
		}
		return st
	})
}

// bookkeeping lists the fields of the lifecycle's own bookkeeping in a
// status, by name, each with what copies it from src into st.
var bookkeeping = []struct {
	name string
	copy func(st, src *lifecycle.Status)
}{
	{"stage", func(st, src *lifecycle.Status) { st.Stage, st.StageSince = src.Stage, src.StageSince }},
	{"flags", func(st, src *lifecycle.Status) { st.Flags = src.Flags }},
	{"failures", func(st, src *lifecycle.Status) { st.Failures = src.Failures }},
	{"attempt", func(st, src *lifecycle.Status) { st.Attempt = src.Attempt }},
	{"seq", func(st, src *lifecycle.Status) { st.Seq = src.Seq }},
	{"stamps", func(st, src *lifecycle.Status) {
		st.PhaseSince, st.RetryAfter, st.CreationFrom = src.PhaseSince, src.RetryAfter, src.CreationFrom
	}},
	{"instance", func(st, src *lifecycle.Status) {
		st.ProviderID, st.NodeName, st.OwnerUID = src.ProviderID, src.NodeName, src.OwnerUID
	}},
	{"generations", func(st, src *lifecycle.Status) {
		st.AppliedGeneration, st.RejectedGeneration = src.AppliedGeneration, src.RejectedGeneration
	}},
	{"metadata", func(st, src *lifecycle.Status) {
		st.Metadata, st.MetadataObserved, st.MetadataSince = src.Metadata, src.MetadataObserved, src.MetadataSince
	}},
	{"preservation", func(st, src *lifecycle.Status) { st.PreserveUntil = src.PreserveUntil }},
}

// copyBookkeeping copies every bookkeeping field of src into st.
func copyBookkeeping(st, src *lifecycle.Status) {
	for _, f := range bookkeeping {
		f.copy(st, src)
	}
}

// walkStatuses walks the world Explore explores at random, from any start
// state through any transition, and returns two statuses the lifecycle
// saved on the way: an older one and a newer one (the same when the walk
// saved only one).
func walkStatuses(t *rapid.T) (older, newer lifecycle.Status) {
	starts := allStarts()
	v := Variants(0)
	switch rapid.IntRange(0, 5).Draw(t, "variant") {
	case 0:
		// In-place updates and preserved nodes need a target cluster.
		v = VariantNoTargetCluster
		starts = slices.DeleteFunc(starts, func(p Start) bool {
			_, inPlace := inPlacePlaceOf(p)
			_, preserved := preservePlaceOf(p)
			return inPlace || preserved
		})
	case 1:
		v = variantAgentFails
	case 2:
		v = variantOwnUpdate
	}
	cfg := v.config()
	s := startState(rapid.SampledFrom(starts).Draw(t, "start"), v)
	saved := []lifecycle.Status{s.st}
	for range rapid.IntRange(0, 40).Draw(t, "hops") {
		if s.gone {
			break
		}
		d := lifecycle.Step(cfg, s.input())
		trs := s.successors(&d, eventsAll, v)
		if len(trs) == 0 {
			break
		}
		s = trs[rapid.IntRange(0, len(trs)-1).Draw(t, "transition")].next
		if s.st.Seq != saved[len(saved)-1].Seq || s.st.Phase != saved[len(saved)-1].Phase {
			saved = append(saved, s.st)
		}
	}
	j := rapid.IntRange(0, len(saved)-1).Draw(t, "newer")
	i := rapid.IntRange(0, j).Draw(t, "older")
	return saved[i], saved[j]
}

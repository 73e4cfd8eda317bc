package lifecycletest

import (
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
		c.NoTargetCluster = rapid.IntRange(0, 9).Draw(t, "no target cluster") == 0
		c.VerifyOwner = rapid.Bool().Draw(t, "verify owner")
		if rapid.Bool().Draw(t, "percent") {
			c.Replacements = lifecycle.ReplacementLimit{Percent: rapid.IntRange(1, 100).Draw(t, "replacement percent")}
		} else {
			c.Replacements = lifecycle.ReplacementLimit{Count: rapid.IntRange(1, 5).Draw(t, "replacement count")}
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
		if rapid.Bool().Draw(t, "metadata") {
			r.Metadata = map[string]string{"team": rapid.SampledFrom([]string{"a", "b"}).Draw(t, "team")}
		}
		return r
	})
}

// Statuses draws statuses: every phase, stage and known flag, with or
// without an instance, stamps around Epoch.
func Statuses() *rapid.Generator[lifecycle.Status] {
	return rapid.Custom(func(t *rapid.T) lifecycle.Status {
		st := lifecycle.Status{
			Phase:      phase.Phase(rapid.IntRange(0, phase.Count-1).Draw(t, "phase")),
			Stage:      lifecycle.Stage(rapid.IntRange(0, int(lifecycle.StageRemoveFinalizer)).Draw(t, "stage")),
			Flags:      lifecycle.Flags(rapid.IntRange(0, 1<<10-1).Draw(t, "flags")),
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
		}
		st.Failures.Create = uint8(rapid.IntRange(0, 3).Draw(t, "create failures"))
		st.Failures.Delete = uint8(rapid.IntRange(0, 3).Draw(t, "delete failures"))
		st.Failures.Metadata = uint8(rapid.IntRange(0, 3).Draw(t, "metadata failures"))
		if rapid.Bool().Draw(t, "conditions") {
			st.Conditions = Nodes().Draw(t, "mirrored node").Conditions
		}
		return st
	})
}

// Nodes draws nodes: absent, healthy, unhealthy, of another instance,
// tainted, and nodes that give no evidence of health: without conditions,
// without a Ready condition, with condition types nobody watches.
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
			MachineName: rapid.SampledFrom([]string{"", "machine-1"}).Draw(t, "machine-name label"),
			Conditions: []lifecycle.Condition{{Type: lifecycle.ConditionReady, Status: ready,
				Since: Stamps().Draw(t, "ready since")}},
			Taints:          lifecycle.Taints(rapid.IntRange(0, 3).Draw(t, "taints")),
			VolumesAttached: rapid.IntRange(0, 2).Draw(t, "volumes attached"),
		}
		if rapid.Bool().Draw(t, "disk pressure") {
			n.Conditions = append(n.Conditions, lifecycle.Condition{Type: "DiskPressure",
				Status: rapid.SampledFrom([]lifecycle.ConditionStatus{lifecycle.ConditionFalse, lifecycle.ConditionTrue}).Draw(t, "disk")})
		}
		if rapid.IntRange(0, 3).Draw(t, "unwatched condition") == 0 {
			n.Conditions = append(n.Conditions, lifecycle.Condition{Type: "ExampleVendorCondition",
				Status: lifecycle.ConditionStatus(rapid.IntRange(0, 2).Draw(t, "unwatched status"))})
		}
		switch rapid.IntRange(0, 7).Draw(t, "evidence") {
		case 0: // a node that reports no conditions at all
			n.Conditions = nil
		case 1: // no Ready condition
			n.Conditions = n.Conditions[1:]
		}
		return n
	})
}

// Inputs draws inputs of one machine "machine-1" (UID "uid-1") with any
// status, observation, problem, grant and outcome, the previous decision's
// own outcome among them.
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
				UpdateGeneration: rapid.Int64Range(0, 2).Draw(t, "desired generation"),
			},
			Status:                 Statuses().Draw(t, "status"),
			Node:                   Nodes().Draw(t, "node"),
			NodeReadFailed:         rapid.IntRange(0, 9).Draw(t, "node read failed") == 0,
			VolumeAttachments:      rapid.IntRange(0, 2).Draw(t, "volume attachments"),
			TokenExists:            rapid.Bool().Draw(t, "token"),
			Problem:                lifecycle.Problem(rapid.OneOf(rapid.Just(0), rapid.IntRange(0, 5)).Draw(t, "problem")),
			Grant:                  lifecycle.Grant{Fail: rapid.Bool().Draw(t, "grant")},
			PredecessorTerminating: rapid.IntRange(0, 5).Draw(t, "predecessor terminating") == 0,
		}
		if rapid.Bool().Draw(t, "metadata") {
			in.Object.Metadata = map[string]string{"team": rapid.SampledFrom([]string{"a", "b"}).Draw(t, "team")}
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

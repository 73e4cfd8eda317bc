package fleetsim

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// Stats count what a run did. Merged over shards by adding.
type Stats struct {
	// Machines and Owners at the start.
	Machines, Owners int
	// Machine objects created (the initial ones and replacements), gone,
	// deleted by scale-down, deleted by their owner because they were
	// Failed, or because they needed replacement, removed by hand while
	// being deleted; names reused by a new incarnation.
	Created, Gone, ScaledDown, Replaced, RolledOut, ForceRemoved, NamesReused int64
	// TornDown counts the machines deleted by the teardown.
	TornDown int64
	// HotUpdates and MetadataChanges are the spec changes of the scenario.
	HotUpdates, MetadataChanges int64
	// Decisions are Steps; Passes reconciles; Saves persisted statuses;
	// Crashes passes the controller died in; Events Kubernetes events.
	Decisions, Passes, Saves, Crashes, Events int64
	// FleetPasses (summed over the shards), LimitCalls and Grants are the
	// fleet limiter's work.
	FleetPasses, LimitCalls, Grants int64
	// Instances created and deleted at the provider; OrphansDeleted by
	// orphan collection.
	Instances, InstancesDeleted, OrphansDeleted int64
	// Calls and CallFaults count driver calls and injected faults, indexed
	// by driverapi.Method.
	Calls, CallFaults [methodCount]int64
	// FaultOutcomes counts injected driver faults by code (18: undecodable,
	// 19: empty identity).
	FaultOutcomes [outCount]int64
	// The other faults injected; LostWrites by kind: conflict, failed,
	// failed although it took effect.
	DroppedKeys                                                int64
	LostWrites                                                 [3]int64
	WriteFailures, DrainFailures, ClockJumps, NodeReadFailures int64
	Flaps, Deaths, OutageNotReady, StaleNodes, OwnerTagsLost   int64
	NodesGone, NoJoin                                          int64
	// StaleOutcomes counts outcomes of older decisions fed to a step
	// before a pass, SameSeqOutcomes those of them no status change followed
	// (which nothing can tell from a current one); ObserverBlips the
	// observer's degradations in the middle of a pass.
	StaleOutcomes, SameSeqOutcomes, ObserverBlips int64
	// LaggedWrites counts the writes that reached the cache late,
	// LaggedPasses the passes that started from a lagging copy, and
	// LagConflicts the status saves the API server refused because the
	// pass started from one.
	LaggedWrites, LaggedPasses, LagConflicts int64
	// LaggedViews counts the limiter's lagging fleet views, LagHidden the
	// machines they left out or showed not yet deleting.
	LaggedViews, LagHidden int64
	// MachineProblems and ClassProblems count the problems of machines and
	// of owners' classes; ForceDeletions the force-deletion labels set.
	MachineProblems, ClassProblems, ForceDeletions int64
	// ZoneNotReady counts the nodes the zone outage kept NotReady;
	// ZoneHeld the machines the limiter held back for their zone's outage
	// (once per spell of being held); ZoneFailedDown and ZoneFailedOthers
	// the machines saved Failed by the health timeout while the zone
	// outage lasted, of the zone down and of the other zones.
	ZoneNotReady, ZoneHeld, ZoneFailedDown, ZoneFailedOthers int64
	// ClockAhead and ClockBehind count the shards whose controller clock
	// is ahead or behind; ClockOffsetSum adds up the offsets' sizes.
	ClockAhead, ClockBehind int64
	ClockOffsetSum          time.Duration
	// Anomalies counts decisions by the anomalies they reported
	// (lifecycle.Anomalies), indexed by bit.
	Anomalies [16]int64
	// Transitions counts saved phase changes, [from][to].
	Transitions [phase.Count][phase.Count]int64
	// Flows counts what the in-place update and the preservation did.
	Flows FlowStats
	// Rules counts decisions by rule (indexed by lifecycle.Rule); Ops
	// counts decisions whose effects are another rule's (a decision that
	// records an outcome and goes on with the next op).
	Rules, Ops []int64
}

func (s *Stats) init() {
	s.Rules = make([]int64, len(lifecycle.Rules())+1)
	s.Ops = make([]int64, len(s.Rules))
}

// add adds o's counts to s; the maxima take the larger.
func (s *Stats) add(o *Stats) {
	autoMax, doneMax := max(s.Flows.AutoMax, o.Flows.AutoMax), max(s.Flows.DoneWaitMax, o.Flows.DoneWaitMax)
	addValues(reflect.ValueOf(s).Elem(), reflect.ValueOf(o).Elem())
	s.Flows.AutoMax, s.Flows.DoneWaitMax = autoMax, doneMax
}

func addValues(dst, src reflect.Value) {
	switch dst.Kind() {
	case reflect.Int, reflect.Int64:
		dst.SetInt(dst.Int() + src.Int())
	case reflect.Array, reflect.Slice:
		if dst.Kind() == reflect.Slice && dst.Len() < src.Len() {
			dst.Set(reflect.AppendSlice(dst, reflect.MakeSlice(dst.Type(), src.Len()-dst.Len(), src.Len()-dst.Len())))
		}
		for i := range src.Len() {
			addValues(dst.Index(i), src.Index(i))
		}
	case reflect.Struct:
		for i := range dst.NumField() {
			addValues(dst.Field(i), src.Field(i))
		}
	}
}

// Percentiles of a distribution of durations (nearest rank).
type Percentiles struct {
	N                  int
	P50, P90, P99, Max time.Duration
}

func percentiles(d []time.Duration) Percentiles {
	slices.Sort(d)
	p := Percentiles{N: len(d)}
	if len(d) == 0 {
		return p
	}
	at := func(q float64) time.Duration {
		i := int(q*float64(len(d))+0.999999) - 1
		return d[max(0, min(i, len(d)-1))]
	}
	p.P50, p.P90, p.P99, p.Max = at(0.5), at(0.9), at(0.99), d[len(d)-1]
	return p
}

// Trace is the rendered decision trace of a machine with a violation.
type Trace struct {
	Violation Violation
	Lines     []string
}

// Result is what a run found.
type Result struct {
	Options Options
	Stats   Stats
	// Summary is lifecycle.Summarize over every machine at the end, merged
	// over the shards.
	Summary lifecycle.Summary
	// TimeToRunning is from a machine's creation to its first Running (or
	// Available, without a target cluster), in simulated time.
	TimeToRunning Percentiles
	// OutageAt is when the observer outage began (since the start).
	OutageAt time.Duration
	// ZoneOutageAt is when the zone outage began (since the start), and
	// OutageZone the zone it took down ("" without one).
	ZoneOutageAt time.Duration
	OutageZone   string
	// Violations are the first violations of each shard; ViolationCount
	// counts them all.
	Violations     []Violation
	ViolationCount int
	// Traces are the decision traces of the first machines with violations.
	Traces []Trace
}

// OK reports whether no promise broke.
func (r *Result) OK() bool { return r.ViolationCount == 0 }

// mergeSummary adds the counts of b to a; OldestWait takes the maximum.
func mergeSummary(a *lifecycle.Summary, b *lifecycle.Summary) {
	a.Machines += b.Machines
	for i := range a.ByPhase {
		a.ByPhase[i] += b.ByPhase[i]
		a.OldestWait[i] = max(a.OldestWait[i], b.OldestWait[i])
	}
	for i := range a.ByWait {
		a.ByWait[i] += b.ByWait[i]
	}
	a.PastDeadline += b.PastDeadline
	a.Deleting += b.Deleting
	a.Terminated += b.Terminated
	a.NeedsReplacement += b.NeedsReplacement
	a.UpdatePending += b.UpdatePending
	a.MetadataOutOfSync += b.MetadataOutOfSync
	a.Working += b.Working
	a.Orphans += b.Orphans
}

// Report renders the result: the same options and seed give the same
// text, bit for bit.
func (r *Result) Report() string {
	var b strings.Builder
	o, s := &r.Options, &r.Stats
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("fleetsim: seed %d, %d machines in %d owners of up to %d, %d shards\n", o.Seed, s.Machines, s.Owners, o.PerOwner, o.Shards)
	p("simulated: %s of scenario and faults, then %s of drain-out without faults", o.Active, o.Drain)
	if o.Config.NoTargetCluster {
		p("; no target cluster")
	}
	if o.Faults && o.Outage > 0 {
		p("; observer outage at +%s for %s", r.OutageAt.Round(time.Millisecond), o.Outage)
	}
	if r.OutageZone != "" {
		p("; %s down at +%s for %s", r.OutageZone, r.ZoneOutageAt.Round(time.Millisecond), o.ZoneOutage)
	}
	p("\n")
	p("lifecycles: %d machines created (%d replacements), %d gone; %d scaled down, %d Failed replaced, %d replaced for a hot update, %d force-removed",
		s.Created, s.Created-int64(s.Machines), s.Gone, s.ScaledDown, s.Replaced, s.RolledOut, s.ForceRemoved)
	if o.Teardown > 0 {
		p(", %d deleted by the teardown at +%s", s.TornDown, o.Teardown)
	}
	p("; %d names reused by a new incarnation\n", s.NamesReused)
	p("scenario: %d hot updates, %d metadata changes\n", s.HotUpdates, s.MetadataChanges)
	perPass := 0.0
	if s.Passes > 0 {
		perPass = float64(s.Decisions) / float64(s.Passes)
	}
	p("work: %d decisions in %d passes (%.2f per pass), %d status saves, %d events; %d fleet passes in each shard, %d limiter calls, %d grants\n",
		s.Decisions, s.Passes, perPass, s.Saves, s.Events, s.FleetPasses/int64(max(1, o.Shards)), s.LimitCalls, s.Grants)
	p("provider: %d instances created, %d deleted (%d by orphan collection)\n", s.Instances, s.InstancesDeleted, s.OrphansDeleted)
	p("driver calls:")
	for m := driverapi.MethodCreate; int(m) < methodCount; m++ {
		if m == driverapi.MethodGetVolumeIDs {
			continue
		}
		p(" %s %d", m, s.Calls[m])
		if s.CallFaults[m] > 0 {
			p(" (%d faults)", s.CallFaults[m])
		}
		if int(m) < methodCount-1 {
			p(",")
		}
	}
	p("\n")
	p("faults: driver")
	some := false
	for out := 1; out < outCount; out++ {
		if n := s.FaultOutcomes[out]; n > 0 {
			name := "empty identity"
			switch {
			case out == outUndecodable:
				name = "undecodable"
			case out < outUndecodable:
				name = driverapi.Code(out).String()
			}
			p(" %s %d,", name, n)
			some = true
		}
	}
	if !some {
		p(" none,")
	}
	p(" dropped metadata changes %d, lost status writes %d (conflict %d, failed %d, failed but persisted %d),",
		s.DroppedKeys, s.LostWrites[0]+s.LostWrites[1]+s.LostWrites[2], s.LostWrites[0], s.LostWrites[1], s.LostWrites[2])
	p(" failed writes %d, drain rounds a budget refused %d, crashes %d, clock jumps %d, failed node reads %d,",
		s.WriteFailures, s.DrainFailures, s.Crashes, s.ClockJumps, s.NodeReadFailures)
	p(" node flaps %d (node object deleted in %d), dead nodes %d, nodes never joining %d, nodes NotReady in the outage %d, stale node names %d, owner tags lost %d,",
		s.Flaps, s.NodesGone, s.Deaths, s.NoJoin, s.OutageNotReady, s.StaleNodes, s.OwnerTagsLost)
	p(" outcomes of older decisions fed %d (%d indistinguishable: no status change followed them), observer blips %d,",
		s.StaleOutcomes, s.SameSeqOutcomes, s.ObserverBlips)
	p(" writes late to the cache %d (passes from a lagging copy %d, status saves refused for it %d),",
		s.LaggedWrites, s.LaggedPasses, s.LagConflicts)
	p(" lagging limiter views %d (machines hidden or not yet deleting in them %d), machine problems %d, class problems %d, force-deletion labels %d,",
		s.LaggedViews, s.LagHidden, s.MachineProblems, s.ClassProblems, s.ForceDeletions)
	mean := time.Duration(0)
	if n := s.ClockAhead + s.ClockBehind; n > 0 {
		mean = s.ClockOffsetSum / time.Duration(n)
	}
	p(" controller clocks ahead in %d shards and behind in %d (mean offset %s)\n", s.ClockAhead, s.ClockBehind, mean.Round(time.Millisecond))
	p("anomalies reported:")
	some = false
	for b, n := range s.Anomalies {
		if n > 0 {
			p(" %s %d", lifecycle.Anomalies(1<<b), n)
			some = true
		}
	}
	if !some {
		p(" none")
	}
	p("\n")
	p("phase changes:")
	for from := range phase.Phase(phase.Count) {
		for to := range phase.Phase(phase.Count) {
			if n := s.Transitions[from][to]; n > 0 {
				p(" %s->%s %d", from.Label(), to.Label(), n)
			}
		}
	}
	p("\n")
	t := r.TimeToRunning
	settled := "Running"
	if o.Config.NoTargetCluster {
		settled = "Available"
	}
	p("time to %s (simulated, from creation; n=%d): p50 %s, p90 %s, p99 %s, max %s\n", settled,
		t.N, t.P50.Round(time.Millisecond), t.P90.Round(time.Millisecond), t.P99.Round(time.Millisecond), t.Max.Round(time.Millisecond))
	r.reportZones(&b)
	r.reportFlows(p)
	r.reportSummary(&b)
	var never []string
	reached := 0
	for _, rule := range lifecycle.Rules() {
		if int(rule) < len(s.Rules) && s.Rules[rule]+s.Ops[rule] > 0 {
			reached++
		} else {
			never = append(never, rule.String())
		}
	}
	p("rules reached: %d of %d; never: %s\n", reached, len(lifecycle.Rules()), strings.Join(never, " "))
	if r.OK() {
		p("checks: %d decisions and the end state of %d machines checked, no violation: PASS\n", s.Decisions, r.Summary.Machines)
		return b.String()
	}
	p("VIOLATIONS: %d (seed %d, %d shards: the same flags reproduce the run exactly)\n", r.ViolationCount, o.Seed, o.Shards)
	for _, v := range r.Violations {
		p("  %s\n", v)
	}
	for _, tr := range r.Traces {
		p("trace of %s (shard %d, uid %s), its last decisions and events up to: %s\n",
			tr.Violation.Machine, tr.Violation.Shard, tr.Violation.UID, tr.Violation.What)
		for _, l := range tr.Lines {
			p("  %s\n", l)
		}
	}
	p("FAIL\n")
	return b.String()
}

func (r *Result) reportSummary(b *strings.Builder) {
	s := &r.Summary
	fmt.Fprintf(b, "at the end (lifecycle.Summarize at +%s): %d machines, %d working; phases:", r.Options.Active+r.Options.Drain,
		s.Machines, s.Working)
	for ph := range phase.Phase(phase.Count) {
		if n := s.ByPhase[ph]; n > 0 {
			fmt.Fprintf(b, " %s %d", ph.Label(), n)
		}
	}
	if s.Machines == 0 {
		fmt.Fprintf(b, " none")
	}
	fmt.Fprintf(b, "; waiting:")
	none := true
	for w := range s.ByWait {
		if n := s.ByWait[w]; n > 0 {
			fmt.Fprintf(b, " %s %d", lifecycle.WaitFor(w), n)
			none = false
		}
	}
	if none {
		fmt.Fprintf(b, " none")
	}
	fmt.Fprintf(b, "; past deadline %d, deleting %d, terminated %d, needs replacement %d, hot update pending %d, metadata out of sync %d, orphan VMs %d\n",
		s.PastDeadline, s.Deleting, s.Terminated, s.NeedsReplacement, s.UpdatePending, s.MetadataOutOfSync, s.Orphans)
}

// reportZones renders the zone outage and the limiter's zone protection,
// when the run has either.
func (r *Result) reportZones(b *strings.Builder) {
	o, s := &r.Options, &r.Stats
	z := o.Config.ZoneOutage
	if r.OutageZone == "" && z.Count == 0 {
		return
	}
	fmt.Fprintf(b, "zones: %d", o.Zones)
	if z.Count > 0 {
		fmt.Fprintf(b, "; the limiter holds a zone with at least %d and %d%% of an owner's unhealthy machines for up to %s past the health timeout",
			z.Count, z.Percent, z.Hold)
	} else {
		fmt.Fprintf(b, "; the limiter's zone protection is off")
	}
	fmt.Fprintf(b, "; %d machines held", s.ZoneHeld)
	if r.OutageZone != "" {
		fmt.Fprintf(b, "; the outage kept %d nodes of %s NotReady; Failed by the health timeout during it: %d of %s, %d of the other zones",
			s.ZoneNotReady, r.OutageZone, s.ZoneFailedDown, r.OutageZone, s.ZoneFailedOthers)
	}
	fmt.Fprintf(b, "\n")
}

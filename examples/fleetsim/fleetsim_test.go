package fleetsim

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// small returns the default options for n machines.
func small(n int) Options {
	o := DefaultOptions()
	o.Machines = n
	return o
}

func run(t *testing.T, o Options) *Result {
	t.Helper()
	r, err := Run(o)
	require.NoError(t, err)
	return r
}

// A fleet of 2,000 machines with every default fault passes every check,
// and the run did what it says: the faults were injected, machines were
// created, replaced and deleted, and the fleet settled.
func TestDefaultFaultsPassEveryCheck(t *testing.T) {
	r := run(t, small(2000))
	require.True(t, r.OK(), r.Report())
	s := &r.Stats
	require.Greater(t, s.Decisions, int64(100_000))
	require.Greater(t, s.Created, int64(2000), "Failed machines were replaced")
	require.Positive(t, s.Gone)
	require.Positive(t, s.Replaced)
	require.Positive(t, s.HotUpdates)
	require.Positive(t, s.MetadataChanges)
	for name, n := range map[string]int64{
		"driver faults": s.CallFaults[1] + s.CallFaults[2] + s.CallFaults[3] + s.CallFaults[4],
		"dropped keys":  s.DroppedKeys, "lost writes": s.LostWrites[0] + s.LostWrites[1] + s.LostWrites[2],
		"write failures": s.WriteFailures, "drain failures": s.DrainFailures, "crashes": s.Crashes,
		"clock jumps": s.ClockJumps, "flaps": s.Flaps, "dead nodes": s.Deaths, "outage": s.OutageNotReady,
	} {
		require.Positive(t, n, name)
	}
	require.Zero(t, r.Summary.PastDeadline)
	require.Zero(t, r.Summary.Orphans)
	require.Zero(t, r.Summary.Deleting)
	require.Equal(t, r.Summary.Machines, r.Summary.Working+r.Summary.ByPhase[6], "Running or Failed at the end")
	require.Positive(t, r.TimeToRunning.N)
	require.LessOrEqual(t, r.TimeToRunning.P50, r.TimeToRunning.P99)
	require.Contains(t, r.Report(), "no violation: PASS")
}

// The same seed gives the same report, bit for bit, however many workers
// run the shards; another seed gives another run.
func TestSameSeedSameReport(t *testing.T) {
	o := small(1500)
	o.Seed = 42
	o.Workers = 1
	a := run(t, o).Report()
	o.Workers = 3
	b := run(t, o).Report()
	require.Equal(t, a, b)
	o.Seed = 43
	require.NotEqual(t, a, run(t, o).Report())
}

// A provider that forgets its idempotency and creates a second instance is
// caught: the report names the seed and renders the machine's trace up to
// the double create, and the end checks see the extra instance.
func TestInjectedDuplicateCreateIsCaught(t *testing.T) {
	o := small(1000)
	o.Seed = 7
	o.duplicateCreate = 10
	r := run(t, o)
	require.False(t, r.OK())
	require.NotEmpty(t, r.Violations)
	v := r.Violations[0]
	require.Contains(t, v.What, "double create")
	report := r.Report()
	require.Contains(t, report, "VIOLATIONS:")
	require.Contains(t, report, "seed 7")
	require.Contains(t, report, "FAIL")
	require.NotEmpty(t, r.Traces)
	trace := strings.Join(r.Traces[0].Lines, "\n")
	require.Contains(t, trace, "call CreateMachine "+v.Machine)
	require.Contains(t, trace, "VIOLATION: double create")

	// The replay is exact: the same run gives the same violations.
	again := run(t, o)
	require.Equal(t, r.Violations, again.Violations)
}

// A provider that lies NotFound on DeleteMachine while the instance lives
// breaks the driver contract; the lifecycle then removes finalizers with the
// VM alive, and the checks report the leak.
func TestLeakedVMIsCaught(t *testing.T) {
	o := small(500)
	faults, err := ParseDriverFaults("DeleteMachine:NotFound=0.5")
	require.NoError(t, err)
	o.DriverFaults = faults
	r := run(t, o)
	require.False(t, r.OK())
	require.Contains(t, r.Report(), "a leaked VM")
}

// With a teardown every machine ends its lifecycle deleted, with faults
// going on meanwhile: no machine, no instance and no orphan is left.
// Reused names with force-removed predecessors leave orphan nodes that
// carry the name's machine-name label. With seed 13 machines that recorded
// no instance are deleted next to such nodes; the lifecycle asks the
// provider before it drains one, and the check catches a drained node that
// was not the machine's.
func TestOrphanNodesOfReusedNamesAreNotDrained(t *testing.T) {
	o := small(5000)
	o.Seed, o.ForceRemove, o.Reuse = 13, 0.3, 1
	r := run(t, o)
	require.True(t, r.OK(), r.Report())
}

// Stale node names and unreadable nodes together: a CreateMachine that
// failed but took effect names a stale node, the lookup after it records
// that name, and the node cannot be read; deletion must not drain the node
// of that name, another instance's. Seed 2 produces such machines.
func TestStaleAndUnreadableNodesAreNeverDrained(t *testing.T) {
	o := small(10000)
	o.Seed, o.StaleNode, o.NodeReadFail = 2, 0.05, 0.05
	r := run(t, o)
	require.True(t, r.OK(), r.Report())
}

// Clock jumps of up to six hours on half the steps: a step with the clock
// hours ahead must not leave the phase's start stamped in the future, where
// the machine would wait for real time to catch up (with seed 2, Unknown at
// the end of the run).
func TestClockJumpsStrandNoMachine(t *testing.T) {
	o := small(10000)
	o.Seed, o.ClockJump, o.ClockJumpMax = 2, 0.5, 6*time.Hour
	r := run(t, o)
	require.True(t, r.OK(), r.Report())
}

func TestTeardownDeletesEveryMachine(t *testing.T) {
	o := small(1000)
	o.Teardown = 90 * time.Minute
	o.Drain = time.Hour
	r := run(t, o)
	require.True(t, r.OK(), r.Report())
	require.Equal(t, r.Stats.Created, r.Stats.Gone)
	require.Equal(t, r.Stats.Instances, r.Stats.InstancesDeleted)
	require.Positive(t, r.Stats.TornDown)
	require.Zero(t, r.Summary.Machines)
}

// Without faults the fleet still goes through every lifecycle, and every
// machine that was not deleted ends Running.
func TestWithoutFaults(t *testing.T) {
	o := small(1000)
	o.Faults = false
	r := run(t, o)
	require.True(t, r.OK(), r.Report())
	require.Zero(t, r.Stats.Crashes+r.Stats.CallFaults[1]+r.Stats.Flaps)
	require.Equal(t, r.Summary.Machines, r.Summary.ByPhase[3], "all Running")
	require.Less(t, r.TimeToRunning.Max, 5*time.Minute)
}

func TestOptionsValidate(t *testing.T) {
	for name, change := range map[string]func(*Options){
		"no machines":       func(o *Options) { o.Machines = 0 },
		"no owners":         func(o *Options) { o.PerOwner = 0 },
		"negative shards":   func(o *Options) { o.Shards = -1 },
		"no active period":  func(o *Options) { o.Active = 0 },
		"ramp past active":  func(o *Options) { o.Ramp = 3 * time.Hour },
		"rate above one":    func(o *Options) { o.Crash = 1.5 },
		"drains never work": func(o *Options) { o.DrainFail = 1 },
		"bad flaps":         func(o *Options) { o.FlapMax = time.Second },
		"bad config":        func(o *Options) { o.Config.HealthTimeout = -1 },
		"faults over one":   func(o *Options) { o.DriverFaults = []DriverFault{{Rate: 0.6, Code: 14}, {Rate: 0.6, Code: 4}} },
	} {
		t.Run(name, func(t *testing.T) {
			o := DefaultOptions()
			change(&o)
			require.Error(t, o.Validate())
			_, err := Run(o)
			require.Error(t, err)
		})
	}
	o := DefaultOptions()
	require.NoError(t, o.Validate())
}

func TestParseDriverFaults(t *testing.T) {
	faults, err := ParseDriverFaults(DefaultDriverFaults)
	require.NoError(t, err)
	require.Equal(t, DefaultDriverFaults, FormatDriverFaults(faults))

	faults, err = ParseDriverFaults(" CreateMachine:Unavailable=0.5, *:undecodable=0.1 ,UpdateMetadata:empty=0 ")
	require.NoError(t, err)
	require.Equal(t, []DriverFault{
		{Method: 1, Code: 14, Rate: 0.5},
		{Code: 2, Undecodable: true, Rate: 0.1},
		{Method: 8, Empty: true},
	}, faults)

	for _, none := range []string{"", "none", "  "} {
		faults, err := ParseDriverFaults(none)
		require.NoError(t, err)
		require.Empty(t, faults)
	}
	for _, bad := range []string{
		"Create:Unavailable=0.1", "CreateMachine:Nope=0.1", "CreateMachine:OK=0.1", "CreateMachine:Unavailable",
		"CreateMachine:Unavailable=2", "CreateMachine:Unavailable=-1", "*:Unavailable=0.6,CreateMachine:Internal=0.6",
	} {
		_, err := ParseDriverFaults(bad)
		require.Error(t, err, bad)
	}
}

func TestFaultTablePicksByRate(t *testing.T) {
	faults, err := ParseDriverFaults("*:Unavailable=0.25,CreateMachine:ResourceExhausted=0.25")
	require.NoError(t, err)
	ft, err := newFaultTable(faults)
	require.NoError(t, err)
	// Outcomes in code order: ResourceExhausted (8), then Unavailable (14).
	require.Equal(t, 8, ft.pick(1, 0.1))
	require.Equal(t, 14, ft.pick(1, 0.3))
	require.Equal(t, 0, ft.pick(1, 0.5))
	require.Equal(t, 14, ft.pick(3, 0.2))
	require.Equal(t, 0, ft.pick(3, 0.3))
}

func TestQueuePopsInTimeThenPushOrder(t *testing.T) {
	var q queue
	times := []int64{5, 3, 9, 3, 1, 7, 3, 5, 0, 12, 11, 3}
	for i, at := range times {
		q.push(event{at: at, idx: int32(i)})
	}
	var got []int32
	last := int64(-1)
	for q.len() > 0 {
		e := q.pop()
		require.GreaterOrEqual(t, e.at, last)
		last = e.at
		got = append(got, e.idx)
	}
	require.Equal(t, []int32{8, 4, 1, 3, 6, 11, 0, 7, 5, 2, 10, 9}, got)
}

func TestTailNum(t *testing.T) {
	for s, want := range map[string]int{
		"m3-17": 17, "sim:///shard-3-0": 0, "n12-345": 345, "m3-": -1, "17": -1, "": -1, "a-b": -1,
		"x-99999999999999": -1,
	} {
		require.Equal(t, want, tailNum(s), s)
	}
}

func TestMetadataCodes(t *testing.T) {
	tab := newMetaTable()
	for v := range uint8(4) {
		c := metaVersion(v)
		m := tab.of(c)
		back, ok := codeOf(m)
		require.True(t, ok)
		require.Equal(t, c, back)
	}
	require.NotEqual(t, metaVersion(0), metaVersion(1))
	_, ok := codeOf(map[string]string{"team": "alpha", "other": "x"})
	require.False(t, ok)
	_, ok = codeOf(map[string]string{"team": "nobody"})
	require.False(t, ok)
	c, ok := codeOf(nil)
	require.True(t, ok)
	require.Nil(t, tab.of(c))
}

// only returns options for n machines with only the fault knob named
// kept, scaled by x.
func only(t *testing.T, n int, knob string, x float64) Options {
	t.Helper()
	o := small(n)
	require.NoError(t, o.SetFaults(knob, x))
	return o
}

// caught runs o with a deliberately broken behaviour and requires a
// violation saying want; the same options without it must pass, so the
// check caught the breakage and nothing else.
func caught(t *testing.T, o Options, want string) {
	t.Helper()
	r := run(t, o)
	require.False(t, r.OK(), "the broken behaviour went unnoticed")
	require.Contains(t, r.Violations[0].What, want)
	o.broken = brokenWorld{}
	r = run(t, o)
	require.True(t, r.OK(), r.Report())
}

// A cluster whose unforced drains report success without evicting a pod
// leaves pods on nodes whose VMs are deleted: the world-judged drain check
// catches it, although the status records every drain as succeeded.
func TestVMDeletedWithoutDrainIsCaught(t *testing.T) {
	o := only(t, 2000, "flap", 1)
	o.broken.fakeDrain = true
	caught(t, o, "neither drained nor force-drained")
}

// A shell that never tells the lifecycle an older incarnation of the name
// is still terminating lets the new one delete that incarnation's instance
// while its node runs pods: the predecessor check catches it.
func TestPredecessorDeletedWhileItsNodeRunsPodsIsCaught(t *testing.T) {
	o := only(t, 2000, "force-remove", 15)
	o.Reuse, o.Dead = 1, 0.2
	o.broken.noPredecessor = true
	caught(t, o, "of another incarnation while its node")
}

// A provider whose GetMachineStatus reports the metadata the machine asks
// for instead of what its instance carries, with metadata patches that drop
// keys: the status reports metadata in sync while the instance differs,
// which the check after every decision catches.
func TestMetadataReportedInSyncWhileItDiffersIsCaught(t *testing.T) {
	o := only(t, 2000, "drop-key", 2)
	o.broken.lieMetadata = true
	caught(t, o, "metadata reported in sync while instance")
}

// A shell that forgets when the observer recovered makes the end of an
// outage fail the machines that were unhealthy before it at once: the
// world's observer timeline catches it.
func TestFailedRightAfterAnOutageIsCaught(t *testing.T) {
	o := only(t, 2000, "dead", 20)
	o.Outage = 30 * time.Minute
	o.broken.forgetRecovery = true
	caught(t, o, "saved Failed by the health timeout")
}

// Clock jumps back stamp an unhealthy machine's phase early, so its health
// timeout passes early by the world's clock: without the tolerance of the
// clock faults the world-judged check sees it (with it, the run passes).
func TestClockJumpsWithoutToleranceAreCaught(t *testing.T) {
	o := only(t, 2000, "clock-jump", 300)
	o.ClockJumpMax, o.Flap = 10*time.Minute, 0.5
	o.broken.noTolerance = true
	caught(t, o, "saved Failed by the health timeout")
}

// A limiter given a fleet view without the controller's own writes (no
// grant, no Failed machine, no deletion, no creation in flight) grants
// replacement after replacement: the world's count of an owner's
// replacements in flight catches it.
func TestReplacementsBeyondTheLimitAreCaught(t *testing.T) {
	o := only(t, 2000, "dead", 20)
	o.broken.hideInFlight = true
	caught(t, o, "replacements in flight, more than its limit 1")
}

// With a limit of several replacements per owner and a lagging fleet
// view, the limiter does not see the replacements an owner created within
// the lag, and the world's count of them may pass the limit for as long:
// the check leaves out what the view could not show, and still catches a
// limiter given a view without the controller's own writes.
func TestReplacementsWithALaggingViewAreCountedAsTheViewShowedThem(t *testing.T) {
	o := small(2000)
	o.Dead, o.FleetLag = 0.3, 30*time.Second
	o.Config.Replacements = lifecycle.ReplacementLimit{Count: 5}
	r := run(t, o)
	require.True(t, r.OK(), r.Report())
	require.Positive(t, r.Stats.LagHidden, "the view hid machines")
	o.broken.hideInFlight = true
	r = run(t, o)
	require.False(t, r.OK(), "the broken behaviour went unnoticed")
	require.Contains(t, r.Violations[0].What, "replacements in flight, more than its limit 5")
}

// An outcome of an older decision that a step takes for the current one
// (as a lifecycle that did not compare sequence numbers would) is caught;
// one the step ignores, or one no status change followed, is not.
func TestStaleOutcomeNotIgnoredIsCaught(t *testing.T) {
	w := world(t)
	stale := lifecycle.Outcome{OpID: lifecycle.OpID(5<<24 | uint64(lifecycle.RuleCreateLookup)<<8 | 1), Ran: 1}
	in := &lifecycle.Input{Now: tm(epoch), Object: w.machines[0].obj, Status: lifecycle.Status{Seq: 7}, Outcome: &stale}
	d := &lifecycle.Decision{Rule: lifecycle.RuleCreateLookup, Requeue: time.Second}
	w.injecting = true
	w.check(0, in, d)
	require.Equal(t, 1, w.nviol)
	require.Contains(t, w.viol[0].What, "was not ignored")

	d.Anomalies = lifecycle.AnomalyStaleOutcome
	w.check(0, in, d)
	in.Status.Seq, d.Anomalies = 5, 0
	w.check(0, in, d)
	require.Equal(t, 1, w.nviol)
}

// Each new fault knob alone, at ten times its default, is injected and
// counted, and every check holds. (The lagging fleet view needs unhealthy
// machines to matter: TestLaggingFleetViewKeepsTheLimit.)
func TestEachNewFaultKnobAlone(t *testing.T) {
	for knob, injected := range map[string]func(*Result) bool{
		"stale-outcome": func(r *Result) bool {
			return r.Stats.StaleOutcomes > r.Stats.SameSeqOutcomes && r.Stats.Anomalies[1] > 0 // stale-outcome
		},
		"observer-blip": func(r *Result) bool { return r.Stats.ObserverBlips > 0 },
		"cache-lag": func(r *Result) bool {
			return r.Stats.LaggedWrites > 0 && r.Stats.LaggedPasses > 0
		},
		"force-deletion": func(r *Result) bool { return r.Stats.ForceDeletions > 0 },
		"clock-offset":   func(r *Result) bool { return r.Stats.ClockAhead > 0 && r.Stats.ClockBehind > 0 },
		"problem": func(r *Result) bool {
			reached := func(rule lifecycle.Rule) bool { return r.Stats.Rules[rule] > 0 }
			return r.Stats.MachineProblems > 0 && r.Stats.ClassProblems > 0 && reached(lifecycle.RuleInvalidMachine) &&
				reached(lifecycle.RuleClassUnavailable) && reached(lifecycle.RuleClassNotReady) &&
				reached(lifecycle.RuleInvalidNodeTemplate)
		},
	} {
		t.Run(knob, func(t *testing.T) {
			x := 10.0
			if knob == "problem" {
				x = 40 // every kind of problem, of machines and of classes
			}
			o := only(t, 5000, knob, x)
			r := run(t, o)
			require.True(t, r.OK(), r.Report())
			require.True(t, injected(r), r.Report())
		})
	}
}

// The limiter given a fleet view that lags behind, while nodes die: the
// machines it hides or shows undeleted are counted, and the owners'
// replacements in flight stay within the limit.
func TestLaggingFleetViewKeepsTheLimit(t *testing.T) {
	o := only(t, 5000, "fleet-lag", 10)
	o.Dead = 0.2
	r := run(t, o)
	require.True(t, r.OK(), r.Report())
	require.Positive(t, r.Stats.LagHidden)
	require.Positive(t, r.Stats.Grants)
}

// Without a target cluster every machine ends Available, no node is ever
// registered, and the faults that need no node still apply.
func TestWithoutTargetCluster(t *testing.T) {
	o := small(2000)
	o.Config.NoTargetCluster = true
	r := run(t, o)
	require.True(t, r.OK(), r.Report())
	require.Equal(t, r.Summary.Machines, r.Summary.ByPhase[phase.Available], "all Available")
	require.Positive(t, r.Stats.Transitions[phase.None][phase.Available])
	require.Zero(t, r.Stats.Flaps+r.Stats.Deaths)
	require.Positive(t, r.TimeToRunning.N)
	require.Contains(t, r.Report(), "no target cluster")
}

// SetFaults keeps one knob and turns the others off, caps what it scales
// at what a probability allows, keeps a refined knob's parent, and scales
// every knob with no knob named.
func TestSetFaults(t *testing.T) {
	d := DefaultOptions()
	o := d
	require.NoError(t, o.SetFaults("drain-fail", 10))
	require.Equal(t, 0.9, o.DrainFail, "capped below 1")
	require.Zero(t, o.Flap+o.Crash+o.StaleOutcome+o.CacheLag)
	require.Zero(t, o.Outage+o.ClockOffset+o.FleetLag)
	require.Empty(t, o.DriverFaults)

	o = d
	require.NoError(t, o.SetFaults("node-gone", 10))
	require.Equal(t, 1.0, o.NodeGone)
	require.Equal(t, d.Flap, o.Flap, "its parent stays as it was")

	o = d
	require.NoError(t, o.SetFaults("outage", 100))
	require.Equal(t, o.Active, o.Outage, "capped at the active period")

	o = d
	require.NoError(t, o.SetFaults("", 3))
	require.InDelta(t, 3*d.Crash, o.Crash, 1e-12)
	require.Equal(t, 3*d.ClockOffset, o.ClockOffset)
	require.NoError(t, o.Validate())

	o = d
	require.NoError(t, o.SetFaults("driver-faults", 100))
	ft, err := newFaultTable(o.DriverFaults)
	require.NoError(t, err)
	top := 0.0
	for m := 1; m < methodCount; m++ {
		top = max(top, ft.total[m])
	}
	require.InDelta(t, driverCap, top, 1e-9, "the largest method's rates add up to the cap")

	o = d
	require.NoError(t, o.SetFaults("flap", 100))
	require.InDelta(t, 1, o.Flap+o.Dead, 1e-9)
	require.Error(t, o.SetFaults("no-such-fault", 1))
	require.Error(t, o.SetFaults("", -1))
	require.Len(t, FaultKnobs(), len(faultKnobs))
}

// A forced drain is carried out as one op: the node's Terminating
// condition, the cordon, then the drain with force. When the cordon's write
// fails, deletion goes on (delete.drain-forced-on, as MCM's forced deletion
// does), and DeleteMachine deletes the instance of a node whose pods no
// drain ever touched: the world saw neither a drain nor a forced drain
// attempted. This reproduces that; it passes once the lifecycle attempts
// the forced drain (or proves the node empty) before DeleteMachine.
func TestForcedDrainIsAttemptedBeforeTheVMIsDeleted(t *testing.T) {
	o := only(t, 2000, "write-fail", 10)
	o.Flap = 0.3
	r := run(t, o)
	require.True(t, r.OK(), r.Report())
}

// The health timeout counts from the phase change to Unknown. A node that
// recovered while the observer was degraded (so the machine stayed Unknown,
// frozen) and turned NotReady again later is failed by a timeout counted
// from before its recovery, minutes into its new unhealthy spell, though
// the node's Ready condition shows when that spell began. This reproduces
// that; it passes once the timeout counts from the spell the node shows.
func TestHealthTimeoutCountsFromTheUnhealthySpellTheWorldSaw(t *testing.T) {
	o := small(10000)
	o.Seed, o.WriteFail = 3, 0
	r := run(t, o)
	require.True(t, r.OK(), r.Report())
}

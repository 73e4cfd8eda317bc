package lifecycle_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// Tests of the fleet functions (fleet.go, limiter.go, orphans.go): Orphans,
// Summarize, MemberOf and Limit, over fleets built from inputs.

var fleetNow = t0.Add(2 * time.Hour)

// fleetMachine is the input of a machine of owner "ms" created at t0, in
// phase p since then, recording the instance pid (none if ""), its
// metadata (none) in sync.
func fleetMachine(name, uid, pid string, p phase.Phase) lifecycle.Input {
	return lifecycle.Input{
		Object: lifecycle.Object{Name: name, UID: uid, Owner: "ms", CreationTime: t0},
		Status: lifecycle.Status{Phase: p, PhaseSince: lifecycle.StampOf(t0), ProviderID: pid, OwnerUID: uid},
	}
}

// membersOf returns the members of the machines of ins, as a fleet pass
// makes them (MemberOf, the default Config).
func membersOf(ins ...lifecycle.Input) []lifecycle.Member {
	cfg := lifecycle.DefaultConfig()
	fleet := make([]lifecycle.Member, len(ins))
	for i := range ins {
		fleet[i] = lifecycle.MemberOf(&cfg, &ins[i])
	}
	return fleet
}

func inst(pid, name, owner string, age time.Duration) driverapi.Instance {
	return driverapi.Instance{ProviderID: pid, MachineName: name, OwnerUID: owner, Created: fleetNow.Add(-age)}
}

func TestOrphans(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	creating := fleetMachine("m-new", "uid-new", "", phase.CrashLoopBackOff)
	initializing := fleetMachine("m-init", "uid-init", "", phase.None)
	initializing.Status.Stage = lifecycle.StageInitializing
	fleet := membersOf(
		fleetMachine("m-1", "uid-1", "p-1", phase.Running),
		fleetMachine("m-2", "uid-2", "p-2", phase.Terminating),
		creating, initializing,
		fleetMachine("m-adopting", "uid-adopting", "", phase.Running),
	)
	old := time.Hour
	cases := []struct {
		name  string
		inst  driverapi.Instance
		agent bool // true: expected to be deleted
	}{
		{"recorded by its machine", inst("p-1", "m-1", "uid-1", old), false},
		{"recorded by a deleting machine (deletion deletes it)", inst("p-2", "m-2", "uid-2", old), false},
		{"no machine of its name", inst("p-9", "m-gone", "uid-gone", old), true},
		{"no machine, but younger than the creation timeout (a creation the cache does not show yet)", inst("p-8", "m-brand-new", "uid-x", time.Minute), false},
		{"its machine is still being created, same incarnation", inst("p-7", "m-new", "uid-new", old), false},
		{"its machine is initializing and the owner is unknown", inst("p-6", "m-init", "", old), false},
		{"its machine is being created, but the instance is another incarnation's", inst("p-5", "m-new", "uid-older", old), true},
		{"another incarnation of a running machine", inst("p-4", "m-1", "uid-0", old), true},
		{"a second instance of the same incarnation (a leaked duplicate)", inst("p-3", "m-1", "uid-1", old), true},
		{"another incarnation, young: may be a newer incarnation not yet seen", inst("p-10", "m-1", "uid-next", 2*time.Minute), false},
		{"provider without creation times: MCM's rule", driverapi.Instance{ProviderID: "p-11", MachineName: "m-gone"}, true},
		{"its machine is past creation but records no instance yet: kept for adoption", inst("p-12", "m-adopting", "uid-adopting", old), false},
	}
	var instances []driverapi.Instance
	var want []string
	for _, tc := range cases {
		instances = append(instances, tc.inst)
		if tc.agent {
			want = append(want, tc.inst.ProviderID)
		}
		t.Run(tc.name, func(t *testing.T) {
			got := lifecycle.Orphans(nil, &cfg, fleetNow, fleet, []driverapi.Instance{tc.inst})
			require.Equal(t, tc.agent, len(got) == 1)
			if tc.agent {
				require.Equal(t, driverapi.Call{Method: driverapi.MethodDelete, Machine: driverapi.MachineRef{
					Name: tc.inst.MachineName, UID: tc.inst.OwnerUID, ProviderID: tc.inst.ProviderID}}, got[0])
			}
		})
	}
	all := lifecycle.Orphans(make([]driverapi.Call, 0, 2), &cfg, fleetNow, fleet, instances)
	var got []string
	for _, c := range all {
		got = append(got, c.Machine.ProviderID)
	}
	require.Equal(t, want, got, "in the order of the instances")
}

func TestSummarize(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	running := fleetMachine("a", "ua", "pa", phase.Running)
	drifted := fleetMachine("b", "ub", "pb", phase.Running)
	drifted.Object.UpdateGeneration = 1                      // its hot update is not applied
	drifted.Object.Metadata = map[string]string{"team": "a"} // not observed on the instance
	pending := fleetMachine("c", "uc", "pc", phase.Pending)  // created at t0: past the 20m creation timeout
	unknown := fleetMachine("d", "ud", "pd", phase.Unknown)
	unknown.Status.PhaseSince = lifecycle.StampOf(fleetNow.Add(-5 * time.Minute)) // within the health timeout
	granted := fleetMachine("e", "ue", "pe", phase.Unknown)                       // past the health timeout, asking the provider
	granted.Status.Flags = lifecycle.FlagGranted
	ungranted := fleetMachine("i", "ui", "pi", phase.Unknown) // past the health timeout, no grant
	failed := fleetMachine("f", "uf", "pf", phase.Failed)
	replace := fleetMachine("g", "ug", "pg", phase.Running)
	replace.Status.Flags = lifecycle.FlagNeedsReplacement
	deleting := fleetMachine("h", "uh", "ph", phase.Terminating)
	deleting.Object.DeletionTime, deleting.Object.Finalizer = fleetNow.Add(-time.Minute), true
	deleting.Status.Flags = lifecycle.FlagTerminated
	fleet := membersOf(running, drifted, pending, unknown, granted, failed, replace, deleting, ungranted)

	s := lifecycle.Summarize(&cfg, fleetNow, fleet, 3)
	require.Equal(t, 9, s.Machines)
	require.Equal(t, 3, s.ByPhase[phase.Running])
	require.Equal(t, 3, s.ByPhase[phase.Unknown])
	require.Equal(t, 1, s.ByPhase[phase.Pending])
	require.Equal(t, 1, s.ByWait[lifecycle.WaitNodeJoin])
	require.Equal(t, 1, s.ByWait[lifecycle.WaitRecovery])
	require.Equal(t, 1, s.ByWait[lifecycle.WaitGrant])
	require.Equal(t, 1, s.ByWait[lifecycle.WaitReplacement])
	require.Equal(t, 1, s.ByWait[lifecycle.WaitDeletion])
	require.Equal(t, 5, s.ByWait[lifecycle.WaitNodeJoin]+s.ByWait[lifecycle.WaitRecovery]+s.ByWait[lifecycle.WaitGrant]+
		s.ByWait[lifecycle.WaitReplacement]+s.ByWait[lifecycle.WaitDeletion], "the granted one waits for the provider's answer: %v", s.ByWait)
	require.Equal(t, 1, s.PastDeadline, "the Pending machine")
	require.Equal(t, 2*time.Hour, s.OldestWait[phase.Pending])
	require.Equal(t, 2*time.Hour, s.OldestWait[phase.Unknown])
	require.Zero(t, s.OldestWait[phase.Running])
	require.Equal(t, 1, s.Deleting)
	require.Equal(t, 1, s.Terminated)
	require.Equal(t, 1, s.NeedsReplacement)
	require.Equal(t, 1, s.UpdatePending)
	require.Equal(t, 1, s.MetadataOutOfSync)
	require.Equal(t, 3, s.Working)
	require.Equal(t, 3, s.Orphans)
	require.Zero(t, testing.AllocsPerRun(100, func() { s = lifecycle.Summarize(&cfg, fleetNow, fleet, 3) }))
}

// MemberOf tells whether a machine's hot update is pending and its metadata
// in sync (every field it resolves: TestMemberOfResolvesTheInput).
func TestMemberOf(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := metadataInput()
	in.Object.UpdateGeneration = 4
	m := lifecycle.MemberOf(&cfg, &in)
	require.True(t, m.UpdatePending())
	require.False(t, m.MetadataInSync())
	in.Status.Metadata = map[string]string{"team": "a", "pool": "web"}
	in.Object.UpdateGeneration = 0
	m = lifecycle.MemberOf(&cfg, &in)
	require.True(t, m.MetadataInSync())
	require.False(t, m.UpdatePending())
	in.Status.OwnerUID = "uid-0"
	require.False(t, lifecycle.MemberOf(&cfg, &in).MetadataInSync(), "the instance is tagged with another owner")
	cfg.VerifyOwner = false
	require.True(t, lifecycle.MemberOf(&cfg, &in).MetadataInSync(), "the owner is not verified")
}

func BenchmarkFleet(b *testing.B) {
	cfg := lifecycle.DefaultConfig()
	for _, n := range []int{10_000, 1_000_000} {
		machines := fleetMachines(n)
		instances := make([]driverapi.Instance, n)
		for i := range machines {
			machines[i].Status.ProviderID = fmt.Sprintf("p-%d", i)
			instances[i] = driverapi.Instance{ProviderID: machines[i].Status.ProviderID, MachineName: machines[i].Object.Name}
		}
		fleet := membersOf(machines...)
		b.Run(fmt.Sprintf("orphans/machines=%d", n), func(b *testing.B) {
			var out []driverapi.Call
			b.ReportAllocs()
			for b.Loop() {
				out = lifecycle.Orphans(out, &cfg, limiterNow, fleet, instances)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/machine")
		})
		b.Run(fmt.Sprintf("summary/machines=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = lifecycle.Summarize(&cfg, limiterNow, fleet, 0)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/machine")
		})
	}
}

// The three disagreements of the summary with Step: an Unknown machine past
// its health timeout without a grant waits for a grant; one holding a grant
// (asking the provider) does not; a per-machine drain timeout sets the
// deadline of a deletion.
func TestSummaryAgreesWithStep(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	count := func(in lifecycle.Input) (lifecycle.Decision, lifecycle.Summary) {
		d := step(t, cfg, in)
		saved := in
		saved.Status, saved.Outcome = d.Status, nil
		return d, lifecycle.Summarize(&cfg, in.Now, membersOf(saved), 0)
	}
	t.Run("past the health timeout without a grant", func(t *testing.T) {
		d, s := count(unknownInput())
		require.Equal(t, lifecycle.WaitGrant, d.Wait.For)
		require.Equal(t, 1, s.ByWait[lifecycle.WaitGrant], "%v", s.ByWait)
	})
	t.Run("holding a grant", func(t *testing.T) {
		in := unknownInput()
		in.Grant.Fail = true
		d, s := count(in)
		require.Equal(t, lifecycle.RuleHealthConfirm, d.OpID.Rule())
		require.Zero(t, s.ByWait[lifecycle.WaitGrant], "a machine asking the provider waits for no grant: %v", s.ByWait)
	})
	t.Run("a per-machine drain timeout", func(t *testing.T) {
		in := terminating(lifecycle.StageDrain, 0, lastop.DescInitiateDrain)()
		in.Object.Overrides.DrainTimeout = 10 * time.Minute
		in.Now = in.Object.DeletionTime.Add(30 * time.Minute)
		in.Node, in.NodeReadFailed = lifecycle.Node{}, true // the drain waits
		d, s := count(in)
		require.Equal(t, lifecycle.StageDrain, d.Status.Stage)
		require.Equal(t, 1, s.PastDeadline, "the drain is past its own timeout (rule %s)", d.Rule)
	})
}

// machine is the input of a machine of owner, in phase p since the given
// minute after t0. Unknown machines since minute 0 are past the 10m health
// timeout at limiterNow.
func machine(name, owner string, p phase.Phase, sinceMinute int) lifecycle.Input {
	return lifecycle.Input{
		Object: lifecycle.Object{Name: name, UID: "uid-" + name, Owner: owner},
		Status: lifecycle.Status{Phase: p, PhaseSince: lifecycle.StampOf(t0.Add(time.Duration(sinceMinute) * time.Minute))},
	}
}

var limiterNow = t0.Add(30 * time.Minute)

func granted(out []lifecycle.Grant) []int {
	var idx []int
	for i, g := range out {
		if g.Fail {
			idx = append(idx, i)
		}
	}
	return idx
}

func TestLimit(t *testing.T) {
	base := lifecycle.DefaultConfig()
	withLimit := func(l lifecycle.ReplacementLimit) lifecycle.Config { c := base; c.Replacements = l; return c }
	cases := []struct {
		name  string
		cfg   lifecycle.Config
		obs   lifecycle.Observer
		fleet []lifecycle.Input
		want  []int
	}{
		{
			name:  "one replacement at a time per owner, oldest Unknown first",
			cfg:   base,
			fleet: []lifecycle.Input{machine("a", "o", phase.Unknown, 5), machine("b", "o", phase.Unknown, 1), machine("c", "o", phase.Running, 0)},
			want:  []int{1},
		},
		{
			name:  "a Pending peer is in flight: nothing granted (T3)",
			cfg:   base,
			fleet: []lifecycle.Input{machine("a", "o", phase.Unknown, 0), machine("b", "o", phase.Pending, 25)},
		},
		{
			name: "a machine holding a grant, not yet Failed, counts and keeps its grant",
			cfg:  base,
			fleet: func() []lifecycle.Input {
				held := machine("a", "o", phase.Unknown, 0)
				held.Status.Flags = lifecycle.FlagGranted
				return []lifecycle.Input{held, machine("b", "o", phase.Unknown, 0)}
			}(),
			want: []int{0},
		},
		{
			name:  "Unknown before its health timeout is not granted",
			cfg:   base,
			fleet: []lifecycle.Input{machine("a", "o", phase.Unknown, 25)},
		},
		{
			name: "per-machine health timeout and disableHealthTimeout are honoured",
			cfg:  base,
			fleet: func() []lifecycle.Input {
				long := machine("a", "o", phase.Unknown, 0)
				long.Object.Overrides.HealthTimeout = time.Hour
				off := machine("b", "p", phase.Unknown, 0)
				off.Object.Overrides.DisableHealthTimeout = true
				return []lifecycle.Input{long, off}
			}(),
		},
		{
			name: "a deleting machine is never granted, and counts as in flight",
			cfg:  base,
			fleet: func() []lifecycle.Input {
				del := machine("a", "o", phase.Unknown, 0)
				del.Object.DeletionTime = t0.Add(20 * time.Minute)
				return []lifecycle.Input{del, machine("b", "o", phase.Unknown, 0)}
			}(),
		},
		{
			name:  "owners are limited independently",
			cfg:   base,
			fleet: []lifecycle.Input{machine("a", "o1", phase.Unknown, 0), machine("b", "o2", phase.Unknown, 0), machine("c", "o1", phase.Unknown, 0)},
			want:  []int{0, 1},
		},
		{
			name:  "machines without an owner are limited together (deviation, doc/mcm-compat.md)",
			cfg:   base,
			fleet: []lifecycle.Input{machine("a", "", phase.Unknown, 0), machine("b", "", phase.Unknown, 1), machine("c", "", phase.Unknown, 2)},
			want:  []int{0},
		},
		{
			name: "a configurable count (deviation, doc/mcm-compat.md)",
			cfg:  withLimit(lifecycle.ReplacementLimit{Count: 2}),
			fleet: []lifecycle.Input{machine("a", "o", phase.Unknown, 0), machine("b", "o", phase.Unknown, 1),
				machine("c", "o", phase.Unknown, 2)},
			want: []int{0, 1},
		},
		{
			name: "a percentage of the owner's machines, rounded up",
			cfg:  withLimit(lifecycle.ReplacementLimit{Percent: 25}),
			fleet: []lifecycle.Input{machine("a", "o", phase.Unknown, 0), machine("b", "o", phase.Unknown, 1),
				machine("c", "o", phase.Unknown, 2), machine("d", "o", phase.Running, 0), machine("e", "o", phase.Running, 0),
				machine("f", "o", phase.Running, 0)},
			want: []int{0, 1},
		},
		{
			name:  "Terminating counts once (MCM counts it twice)",
			cfg:   withLimit(lifecycle.ReplacementLimit{Count: 2}),
			fleet: []lifecycle.Input{machine("a", "o", phase.Unknown, 0), machine("b", "o", phase.Terminating, 0)},
			want:  []int{0},
		},
		{
			name:  "an InPlaceUpdateFailed machine does not block itself",
			cfg:   base,
			fleet: []lifecycle.Input{machine("a", "o", phase.InPlaceUpdateFailed, 0), machine("b", "o", phase.Running, 0)},
			want:  []int{0},
		},
		{
			name:  "Available machines are settled, not in flight",
			cfg:   base,
			fleet: []lifecycle.Input{machine("a", "o", phase.Unknown, 0), machine("b", "o", phase.Available, 0)},
			want:  []int{0},
		},
		{
			name: "observer degraded: nothing is past its timeout, held grants are not usable",
			cfg:  base,
			obs:  lifecycle.Observer{Degraded: true},
			fleet: func() []lifecycle.Input {
				held := machine("a", "o", phase.Unknown, 0)
				held.Status.Flags = lifecycle.FlagGranted
				return []lifecycle.Input{held, machine("b", "p", phase.Unknown, 0)}
			}(),
		},
		{
			name: "two InPlaceUpdateFailed machines of one owner do not block each other",
			cfg:  base,
			fleet: []lifecycle.Input{machine("a", "o", phase.InPlaceUpdateFailed, 0),
				machine("b", "o", phase.InPlaceUpdateFailed, 1)},
			want: []int{0},
		},
		{
			name: "a held grant no longer usable (timeout disabled or not reached) is dropped and not counted",
			cfg:  base,
			fleet: func() []lifecycle.Input {
				held := machine("a", "o", phase.Unknown, 25) // within its timeout again
				held.Status.Flags = lifecycle.FlagGranted
				return []lifecycle.Input{held, machine("b", "o", phase.Unknown, 0)}
			}(),
			want: []int{1},
		},
		{
			name:  "after an outage the timeout counts from the recovery",
			cfg:   base,
			obs:   lifecycle.Observer{Since: t0.Add(25 * time.Minute)},
			fleet: []lifecycle.Input{machine("a", "o", phase.Unknown, 0)},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.cfg.Validate())
			out := lifecycle.Limit(nil, &tc.cfg, limiterNow, tc.obs, membersOf(tc.fleet...))
			require.Len(t, out, len(tc.fleet))
			require.Equal(t, tc.want, granted(out))
		})
	}
}

func TestLimitReusesItsOutput(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	fleet := membersOf(machine("a", "o", phase.Unknown, 0), machine("b", "o", phase.Running, 0))
	buf := make([]lifecycle.Grant, 5)
	buf[1].Fail = true // stale content is cleared
	out := lifecycle.Limit(buf, &cfg, limiterNow, lifecycle.Observer{}, fleet)
	require.Equal(t, []lifecycle.Grant{{Fail: true}, {}}, out)
	require.Same(t, &buf[0], &out[0])
}

func TestReplacementLimitValidation(t *testing.T) {
	for _, l := range []lifecycle.ReplacementLimit{{}, {Count: 1, Percent: 10}, {Percent: 101}, {Count: -1}} {
		cfg := lifecycle.DefaultConfig()
		cfg.Replacements = l
		require.ErrorContains(t, cfg.Validate(), "Replacements", "%+v", l)
	}
}

// fleetMachines builds n machines spread over owners of 100 machines each,
// one in ten Unknown past its timeout.
func fleetMachines(n int) []lifecycle.Input {
	machines := make([]lifecycle.Input, n)
	for i := range machines {
		p := phase.Running
		if i%10 == 3 {
			p = phase.Unknown
		}
		machines[i] = machine(fmt.Sprintf("m-%d", i), fmt.Sprintf("owner-%d", i/100), p, i%7)
	}
	return machines
}

func BenchmarkLimit(b *testing.B) {
	cfg := lifecycle.DefaultConfig()
	for _, n := range []int{10_000, 1_000_000} {
		fleet := membersOf(fleetMachines(n)...)
		out := make([]lifecycle.Grant, n)
		b.Run(fmt.Sprintf("machines=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out = lifecycle.Limit(out, &cfg, limiterNow, lifecycle.Observer{}, fleet)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/machine")
		})
	}
}

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

var fleetNow = t0.Add(2 * time.Hour)

func fleetMember(name, uid, pid string, p phase.Phase) lifecycle.Member {
	return lifecycle.Member{Name: name, UID: uid, Owner: "ms", ProviderID: pid, Phase: p,
		PhaseSince: lifecycle.StampOf(t0), CreationTime: lifecycle.StampOf(t0)}
}

func inst(pid, name, owner string, age time.Duration) driverapi.Instance {
	return driverapi.Instance{ProviderID: pid, MachineName: name, OwnerUID: owner, Created: fleetNow.Add(-age)}
}

func TestOrphans(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	creating := fleetMember("m-new", "uid-new", "", phase.CrashLoopBackOff)
	initializing := fleetMember("m-init", "uid-init", "", phase.None)
	initializing.Stage = lifecycle.StageInitializing
	fleet := []lifecycle.Member{
		fleetMember("m-1", "uid-1", "p-1", phase.Running),
		fleetMember("m-2", "uid-2", "p-2", phase.Terminating),
		creating, initializing,
		fleetMember("m-adopting", "uid-adopting", "", phase.Running),
	}
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
	running := fleetMember("a", "ua", "pa", phase.Running)
	running.MetadataInSync = true
	drifted := fleetMember("b", "ub", "pb", phase.Running)
	drifted.UpdatePending = true
	pending := fleetMember("c", "uc", "pc", phase.Pending) // created at t0: past the 20m creation timeout
	unknown := fleetMember("d", "ud", "pd", phase.Unknown)
	unknown.PhaseSince = lifecycle.StampOf(fleetNow.Add(-5 * time.Minute)) // within the health timeout
	granted := fleetMember("e", "ue", "pe", phase.Unknown)                 // past the health timeout, asking the provider
	granted.Flags = lifecycle.FlagGranted
	ungranted := fleetMember("i", "ui", "pi", phase.Unknown) // past the health timeout, no grant
	failed := fleetMember("f", "uf", "pf", phase.Failed)
	replace := fleetMember("g", "ug", "pg", phase.Running)
	replace.Flags = lifecycle.FlagNeedsReplacement
	replace.MetadataInSync = true
	deleting := fleetMember("h", "uh", "ph", phase.Terminating)
	deleting.Deleting, deleting.DeletionTime = true, lifecycle.StampOf(fleetNow.Add(-time.Minute))
	deleting.Flags, deleting.Finalizer = lifecycle.FlagTerminated, true
	fleet := []lifecycle.Member{running, drifted, pending, unknown, granted, failed, replace, deleting, ungranted}

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

func TestMemberOf(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := metadataInput()
	in.Object.UpdateGeneration = 4
	m := lifecycle.MemberOf(&cfg, &in)
	require.Equal(t, lifecycle.Member{Name: machineName, UID: machineUID, Owner: "machineset-1", ProviderID: providerID,
		Phase: phase.Running, PhaseSince: in.Status.PhaseSince, CreationTime: lifecycle.StampOf(t0), Finalizer: true,
		UpdatePending: true, MetadataInSync: false}, m)
	in.Status.Metadata = map[string]string{"team": "a", "pool": "web"}
	in.Object.UpdateGeneration = 0
	m = lifecycle.MemberOf(&cfg, &in)
	require.True(t, m.MetadataInSync)
	require.False(t, m.UpdatePending)
}

func BenchmarkFleet(b *testing.B) {
	cfg := lifecycle.DefaultConfig()
	for _, n := range []int{10_000, 1_000_000} {
		fleet := fleetOf(n)
		instances := make([]driverapi.Instance, n)
		for i := range fleet {
			fleet[i].ProviderID = fmt.Sprintf("p-%d", i)
			instances[i] = driverapi.Instance{ProviderID: fleet[i].ProviderID, MachineName: fleet[i].Name}
		}
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
		return d, lifecycle.Summarize(&cfg, in.Now, []lifecycle.Member{lifecycle.MemberOf(&cfg, &saved)}, 0)
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

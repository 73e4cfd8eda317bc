package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// fleet is a fleet of n machines as the fleet functions read it, with the
// provider's instances: owners of 100 machines each; one machine in ten
// Unknown past its health timeout, one in a thousand Pending, one in a
// thousand being deleted (so one owner in ten has replacements in flight),
// the rest Running; every machine's instance listed,
// plus one orphan instance per hundred machines, created long ago.
type fleet struct {
	now       time.Time
	members   []lifecycle.Member
	instances []driverapi.Instance
}

// fleets caches the fleets built, so -count repetitions do not rebuild
// them.
var fleets = map[int]*fleet{}

func fleetOf(n int) *fleet {
	if fl, ok := fleets[n]; ok {
		return fl
	}
	cfg := lifecycle.DefaultConfig()
	now := T0.Add(24 * time.Hour)
	fl := &fleet{now: now, members: make([]lifecycle.Member, n), instances: make([]driverapi.Instance, 0, n+n/100)}
	for i := range fl.members {
		o := lifecycle.Object{
			Name:         fmt.Sprintf("shoot--garden--prod-worker-z1-%08d", i),
			UID:          fmt.Sprintf("5f1c7a2e-9b3d-4c61-8e0f-%012x", i),
			Owner:        fmt.Sprintf("0b6c3f5e-1d2a-4e7b-9c8d-%012x", i/100),
			CreationTime: T0,
			Finalizer:    true,
		}
		st := lifecycle.Status{
			Phase:      phase.Running,
			PhaseSince: lifecycle.StampOf(T0.Add(time.Duration(i%600) * time.Second)),
			ProviderID: fmt.Sprintf("aws:///eu-west-1a/i-%017x", i),
		}
		switch {
		case i%10 == 3:
			st.Phase = phase.Unknown
			st.PhaseSince = lifecycle.StampOf(now.Add(-time.Hour - time.Duration(i%600)*time.Second))
		case i%1000 == 7:
			st.Phase = phase.Pending
		case i%1000 == 9:
			o.DeletionTime = now.Add(-time.Minute)
			st.Phase = phase.Terminating
		}
		fl.members[i] = lifecycle.MemberOf(&cfg, &lifecycle.Input{Object: o, Status: st})
		fl.instances = append(fl.instances, driverapi.Instance{ProviderID: st.ProviderID, MachineName: o.Name, OwnerUID: o.UID, Created: T0})
		if i%100 == 50 {
			fl.instances = append(fl.instances, driverapi.Instance{ProviderID: fmt.Sprintf("aws:///eu-west-1a/i-orphan%010x", i),
				MachineName: fmt.Sprintf("gone-%08d", i), OwnerUID: fmt.Sprintf("gone-%08d", i), Created: T0})
		}
	}
	fleets[n] = fl
	return fl
}

func TestFleetFunctions(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	fl := fleetOf(10_000)
	grants := lifecycle.Limit(nil, &cfg, fl.now, lifecycle.Observer{}, fl.members)
	granted := 0
	for _, g := range grants {
		if g.Fail {
			granted++
		}
	}
	require.Equal(t, 90, granted, "one replacement per owner without one in flight")
	orphans := lifecycle.Orphans(nil, &cfg, fl.now, fl.members, fl.instances)
	require.Len(t, orphans, 100)
	s := lifecycle.Summarize(&cfg, fl.now, fl.members, len(orphans))
	require.Equal(t, 10_000, s.Machines)
	require.Equal(t, 1000, s.ByPhase[phase.Unknown])
}

// BenchmarkFleetScale measures the fleet functions at 1,000, 10,000, 100,000
// and 1,000,000 machines; ns/machine stays flat when the cost is linear and
// the work stays in cache.
func BenchmarkFleetScale(b *testing.B) {
	cfg := lifecycle.DefaultConfig()
	for _, n := range []int{1_000, 10_000, 100_000, 1_000_000} {
		perMachine := func(b *testing.B) {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/machine")
		}
		b.Run(fmt.Sprintf("fn=limit/machines=%d", n), func(b *testing.B) {
			fl := fleetOf(n)
			out := make([]lifecycle.Grant, n)
			b.ReportAllocs()
			for b.Loop() {
				out = lifecycle.Limit(out, &cfg, fl.now, lifecycle.Observer{}, fl.members)
			}
			perMachine(b)
		})
		b.Run(fmt.Sprintf("fn=orphans/machines=%d", n), func(b *testing.B) {
			fl := fleetOf(n)
			var out []driverapi.Call
			b.ReportAllocs()
			for b.Loop() {
				out = lifecycle.Orphans(out, &cfg, fl.now, fl.members, fl.instances)
			}
			perMachine(b)
		})
		b.Run(fmt.Sprintf("fn=summarize/machines=%d", n), func(b *testing.B) {
			fl := fleetOf(n)
			var s lifecycle.Summary
			b.ReportAllocs()
			for b.Loop() {
				s = lifecycle.Summarize(&cfg, fl.now, fl.members, 0)
			}
			if s.Machines != n {
				b.Fatal(s.Machines)
			}
			perMachine(b)
		})
	}
}

package mcm

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/examples/memworld"
	"github.com/purelifecycle/machine/examples/shell"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
	"github.com/purelifecycle/machine/lifecycle/pass"
	"github.com/purelifecycle/machine/phase"
)

// mcmWorld is the in-memory cluster of the examples, whose machine status
// is kept in an MCM Machine: every status the lifecycle saves goes through
// ApplyStatus, the API server's JSON and StatusFrom before the cluster
// keeps it, so each pass decides from what came back.
type mcmWorld struct {
	*memworld.Cluster
	t       *testing.T
	machine *v1alpha1.Machine
	now     time.Time
	saves   int
	descs   map[string]bool
}

func (w *mcmWorld) SaveStatus(st lifecycle.Status) lifecycle.Write {
	ApplyStatus(st, w.machine, w.now)
	m := viaJSON(w.t, w.machine)
	w.machine = m
	got, err := StatusFrom(m)
	require.NoError(w.t, err)
	require.Equal(w.t, st, got, "annotation %s", m.Annotations[StateAnnotation])
	require.NotContains(w.t, m.Annotations[StateAnnotation], `"op"`, "MCM's text says it all: %q", m.Status.LastOperation.Description)
	w.saves++
	w.descs[m.Status.LastOperation.Description] = true
	return w.Cluster.SaveStatus(got)
}

// TestFlowsRoundTrip runs the examples' scenarios with every status
// persisted in an MCM Machine: creation with initialization failures
// (CrashLoopBackOff), join, hot update and metadata, and deletion with a
// drain that fails until it is forced.
func TestFlowsRoundTrip(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(p *lifecycletest.Provider, c *memworld.Cluster)
		change    func(c *memworld.Cluster)
		deleteNow bool
	}{
		{name: "create and join"},
		{name: "initialization fails twice", setup: func(p *lifecycletest.Provider, _ *memworld.Cluster) {
			p.FailNext(driverapi.MethodInitialize, lifecycletest.Fault{Code: driverapi.Internal}, 2)
		}},
		{name: "creation exhausted once", setup: func(p *lifecycletest.Provider, _ *memworld.Cluster) {
			p.FailNext(driverapi.MethodCreate, lifecycletest.Fault{Code: driverapi.ResourceExhausted}, 1)
		}},
		{name: "hot update and metadata", setup: func(_ *lifecycletest.Provider, c *memworld.Cluster) {
			c.Machine.Object.Metadata = map[string]string{"team": "a"}
		}, change: func(c *memworld.Cluster) {
			c.Machine.Object.UpdateGeneration = 2
			c.Machine.Object.Metadata = map[string]string{"team": "b", "pool": "web"}
		}},
		{name: "needs replacement", setup: func(p *lifecycletest.Provider, _ *memworld.Cluster) {
			p.FailNext(driverapi.MethodUpdate, lifecycletest.Fault{Code: driverapi.FailedPrecondition}, 1)
		}, change: func(c *memworld.Cluster) { c.Machine.Object.UpdateGeneration = 2 }},
		{name: "delete with a failing drain", setup: func(_ *lifecycletest.Provider, c *memworld.Cluster) {
			c.FailDrains = 1000
			c.Machine.Object.Overrides.DrainTimeout = 10 * time.Minute
		}, deleteNow: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t0 := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
			cfg, err := lifecycle.DefaultConfig().Check()
			require.NoError(t, err)
			p := memworld.NewProvider()
			c := memworld.NewCluster(p, "machine-a", "uid-a", t0)
			if tt.setup != nil {
				tt.setup(p, c)
			}
			m := newMachine()
			m.Name, m.UID = "machine-a", "uid-a"
			w := &mcmWorld{Cluster: c, t: t, machine: m, descs: map[string]bool{}}
			now, changed, deleted := t0, false, false
			var scratch pass.Scratch
			for range 200 {
				c.Tick(now)
				running := c.Machine.Status.Phase == phase.Running
				if tt.change != nil && !changed && running {
					tt.change(c)
					changed = true
				}
				if tt.deleteNow && !deleted && running {
					c.Delete(now)
					deleted = true
				}
				w.now = now
				res := pass.Run(context.Background(), &cfg, &shell.Shell{World: w, Driver: p}, now, &scratch, nil)
				if c.Machine.Gone {
					break
				}
				last := &scratch.Decision
				if !tt.deleteNow && running && last.Rule == lifecycle.RuleHealthy && (tt.change == nil || changed) {
					break
				}
				now = now.Add(res.Requeue)
			}
			if tt.deleteNow {
				require.True(t, c.Machine.Gone, "the machine is deleted")
			} else {
				require.Equal(t, phase.Running, c.Machine.Status.Phase)
			}
			require.Equal(t, 1, p.Created)
			require.Greater(t, w.saves, 3)
			t.Logf("%d status writes; descriptions:\n%s", w.saves, strings.Join(slices.Sorted(maps.Keys(w.descs)), "\n"))
		})
	}
}

package difftest

import (
	"context"
	"fmt"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
)

// Handover is a [Controller] that hands the machine from one controller
// to another mid-flow, as an operator who swaps MCM's machine controller
// for the drop-in, or back, does: First makes the first After reconciles,
// Then every later one. Both are started on the scenario's world; each
// acts only on the reconciles it is given.
type Handover struct {
	First, Then Controller
	After       int

	n int
}

// Name implements Controller.
func (h *Handover) Name() string { return h.First.Name() + "-then-" + h.Then.Name() }

// Start implements Controller.
func (h *Handover) Start(ctx context.Context, env *Env) error {
	h.n = 0
	if err := h.First.Start(ctx, env); err != nil {
		return err
	}
	if err := h.Then.Start(ctx, env); err != nil {
		h.First.Stop()
		return err
	}
	return nil
}

// Reconcile implements Controller.
func (h *Handover) Reconcile(ctx context.Context, machine string, now time.Time) (Result, error) {
	h.n++
	if h.n <= h.After {
		return h.First.Reconcile(ctx, machine, now)
	}
	return h.Then.Reconcile(ctx, machine, now)
}

// Stop implements Controller.
func (h *Handover) Stop() {
	h.Then.Stop()
	h.First.Stop()
}

// BackdateObject implements Backdater for whichever of the two keeps
// stamps of its own.
func (h *Handover) BackdateObject(m *v1alpha1.Machine, by time.Duration) {
	for _, c := range []Controller{h.First, h.Then} {
		if b, ok := c.(Backdater); ok {
			b.BackdateObject(m, by)
		}
	}
}

// BackdateStatus implements Backdater, as BackdateObject.
func (h *Handover) BackdateStatus(m *v1alpha1.Machine, by time.Duration) {
	for _, c := range []Controller{h.First, h.Then} {
		if b, ok := c.(Backdater); ok {
			b.BackdateStatus(m, by)
		}
	}
}

var (
	_ Controller = (*Handover)(nil)
	_ Backdater  = (*Handover)(nil)
)

// CompareHandover compares where a run handed over between controllers
// (b) ends with where the reference controller's own run (a) ends: the
// machine once settled, its conditions and preservation included, each
// node's cordon, InPlaceUpdate and Preserved conditions and annotations of
// preservation, and how many times CreateMachine was asked. The
// driver calls are not compared otherwise: the controller that went first
// may have asked fewer. A difference is accepted only by a deviation of sc
// at step [End].
func CompareHandover(sc *Scenario, a, b []Observation) (refused, accepted []string) {
	if len(a) == 0 || len(b) == 0 {
		return nil, nil
	}
	diffs := lastMachines(a, b)
	creates := func(obs []Observation) int {
		n := 0
		for _, o := range obs {
			for _, c := range o.Calls {
				if c.Method == "CreateMachine" {
					n++
				}
			}
		}
		return n
	}
	if ca, cb := creates(a), creates(b); ca != cb {
		diffs = append(diffs, fmt.Sprintf("CreateMachine calls: %d | %d", ca, cb))
	}
	return sc.judge(nil, nil, End, 0, sc.Name+" handed over, end: ", diffs)
}

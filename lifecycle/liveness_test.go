package lifecycle_test

import (
	"strings"
	"testing"
	"time"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
)

// The liveness check of the model check sees a lifecycle that breaks
// liveness without breaking a promise of a single decision. Each case
// explores a small world with a deliberately broken lifecycle
// (Exploration.Decide: lifecycle.Step with one decision changed) and
// requires the report to show what is broken; TestModelCheck runs the
// same check over the real lifecycle.

// A lifecycle blind to its node's conditions never sees the node turn
// healthy: its machine waits in Pending until its creation timeout fails
// it. A fault-free path still ends, in Failed, so no state is without a
// way out and no machine waits forever; but Failed is not the end expected
// of a machine whose instance exists and whose node is healthy.
func TestLivenessSeesAMachineThatNeverJoins(t *testing.T) {
	skipUnlessExhaustive(t)
	neverJoins := func(cfg lifecycle.Config, in lifecycle.Input) lifecycle.Decision {
		in.Node.Conditions = nil
		return lifecycle.Step(cfg, in)
	}
	rep, err := lifecycletest.Explore(lifecycletest.Exploration{Name: "never joins", Events: lifecycletest.EventsFair,
		Starts: []lifecycletest.Start{lifecycletest.StartNew}, Decide: neverJoins})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Stuck != 0 || rep.Livelocks != 0 {
		t.Fatalf("%d states without a way out, %d livelocks: the machine should fail by its timeout\n%s",
			rep.Stuck, rep.Livelocks, strings.Join(append(rep.StuckStates, rep.LivelockStates...), "\n"))
	}
	if rep.Unexpected == 0 || !strings.Contains(rep.UnexpectedStates[0], "ends Failed, expected Running") {
		t.Fatalf("the unexpected end is not seen: %d unexpected, %q", rep.Unexpected, rep.UnexpectedStates)
	}
	t.Logf("%d states, %d with an unexpected end; the first:\n%s", rep.States, rep.Unexpected, rep.UnexpectedStates[0])
}

// A machine whose deletion goes back from the finalizer's removal to the
// instance's deletion loops through its last stages forever: a livelock.
func TestLivenessSeesADeletionThatLoops(t *testing.T) {
	skipUnlessExhaustive(t)
	loops := func(cfg lifecycle.Config, in lifecycle.Input) lifecycle.Decision {
		d := lifecycle.Step(cfg, in)
		for _, e := range d.Effects.Slice() {
			if e.Kind != lifecycle.KindRemoveFinalizer {
				continue
			}
			st := d.Status
			st.Stage, st.Seq = lifecycle.StageDeleteVM, in.Status.Seq+1
			return lifecycle.Decision{Status: st, Changed: true, Requeue: 5 * time.Second, Period: 5 * time.Second,
				Rule: d.Rule}
		}
		return d
	}
	rep, err := lifecycletest.Explore(lifecycletest.Exploration{Name: "deletion loops",
		Events: lifecycletest.EventsFair | lifecycletest.EventDelete, Starts: []lifecycletest.Start{lifecycletest.StartRunning},
		Decide: loops})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Livelocks == 0 || !strings.Contains(rep.LivelockStates[0], "a fair cycle") {
		t.Fatalf("the livelock is not seen: %d livelocks, %q", rep.Livelocks, rep.LivelockStates)
	}
	t.Logf("%d states, %d livelocks; the first:\n%s", rep.States, rep.Livelocks, rep.LivelockStates[0])
}

// The real lifecycle, in the same small worlds, has neither.
func TestLivenessOfTheSmallWorlds(t *testing.T) {
	skipUnlessExhaustive(t)
	for _, x := range []lifecycletest.Exploration{
		{Name: "joins", Events: lifecycletest.EventsFair, Starts: []lifecycletest.Start{lifecycletest.StartNew}},
		{Name: "deletion", Events: lifecycletest.EventsFair | lifecycletest.EventDelete,
			Starts: []lifecycletest.Start{lifecycletest.StartRunning}},
	} {
		rep, err := lifecycletest.Explore(x)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Stuck+rep.Livelocks+rep.Unexpected != 0 || rep.Passes == 0 {
			t.Errorf("%s: %d stuck, %d livelocks, %d unexpected, %d passes", x.Name, rep.Stuck, rep.Livelocks, rep.Unexpected, rep.Passes)
		}
	}
}

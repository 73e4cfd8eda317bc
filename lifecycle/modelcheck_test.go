package lifecycle_test

import (
	"testing"

	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
)

// An exhaustive bounded model check of one machine (issue 5, part 2):
// lifecycletest.Explore explores the machine, its object, node, token,
// observer, grant and the provider's instances breadth first, with every
// outcome of every decision's effects (driver codes by class, failed
// writes, a lost status write, a crash before the outcome is fed back) and
// the world's events (time passing a deadline, the node registering,
// turning unhealthy or going, deletion, a spec change, the observer
// degrading or recovering, the limiter's grant). Every transition must keep
// the promises of DESIGN section 6 (lifecycletest.Check, one instance per
// incarnation, none left when gone), and from every reachable state a
// fault-free path must reach an end state: gone, Running in sync,
// Available, or Failed awaiting replacement. The same explorations draw the
// flow diagrams of doc/diagrams.md.
func TestModelCheck(t *testing.T) {
	if testing.Short() || raceOn {
		t.Skip("exhaustive: run without -short and without the race detector")
	}
	for _, x := range lifecycletest.Explorations() {
		t.Run(x.Name, func(t *testing.T) {
			rep, err := lifecycletest.Explore(x)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range rep.StuckStates {
				t.Errorf("no fault-free path to an end state from %s", s)
			}
			t.Logf("%s: %d states, %d transitions explored, %d without a way out, %d kinds of decision",
				rep.Name, rep.States, rep.Transitions, rep.Stuck, len(rep.Edges))
		})
	}
}

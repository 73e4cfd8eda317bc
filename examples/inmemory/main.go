// Command inmemory drives machines through their lifecycle against an
// in-memory provider and cluster, with the lifecycle core deciding every
// step and a small shell carrying the decisions out (examples/shell). It
// prints each decision: its rule, effects, and requeue.
//
// Scenarios:
//
//	happy       a machine from nothing to Running: creation, initialization, join
//	init-fails  initialization fails twice: CrashLoopBackOff, then recovery
//	crash       the controller crashes right after CreateMachine; the next
//	            pass finds the instance instead of creating a second one
//
// Run them all with `go run ./examples/inmemory`, or one with
// `go run ./examples/inmemory -scenario crash`. Time is simulated: each pass
// starts when the previous one asked to be requeued.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/examples/memworld"
	"github.com/purelifecycle/machine/examples/shell"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

func main() {
	scenario := flag.String("scenario", "all", "happy, init-fails, crash or all")
	quiet := flag.Bool("quiet", false, "print only each scenario's summary")
	flag.Parse()
	var out io.Writer = os.Stdout
	names := []string{"happy", "init-fails", "crash"}
	if *scenario != "all" {
		names = []string{*scenario}
	}
	for _, name := range names {
		s, ok := scenarios[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "unknown scenario %q\n", name)
			os.Exit(2)
		}
		r := run(out, name, s, *quiet)
		if !r.ok {
			os.Exit(1)
		}
	}
}

// scenario sets up the provider's faults and the controller's crashes.
type scenario struct {
	about string
	setup func(p *memworld.Provider)
	crash func(pass, step, ran int, d *lifecycle.Decision) bool
}

var scenarios = map[string]scenario{
	"happy": {about: "a machine from nothing to Running"},
	"init-fails": {
		about: "InitializeMachine fails twice, then succeeds",
		setup: func(p *memworld.Provider) { p.FailInit = 2 },
	},
	"crash": {
		about: "the controller crashes right after CreateMachine returned",
		crash: func(pass, step, ran int, d *lifecycle.Decision) bool {
			return pass == 1 && d.Call.Method == driverapi.MethodCreate && ran == d.Effects.Len()
		},
	},
}

// result is what a scenario run ended with.
type result struct {
	ok      bool
	phase   phase.Phase
	creates int
	passes  int
	elapsed time.Duration
}

var t0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

// run plays a scenario and reports it to w.
func run(w io.Writer, name string, s scenario, quiet bool) result {
	cfg := lifecycle.DefaultConfig()
	p := memworld.NewProvider()
	if s.setup != nil {
		s.setup(p)
	}
	c := memworld.NewCluster(p, "machine-a", "6f1c9e2a-uid", t0)
	fmt.Fprintf(w, "=== scenario %s: %s\n", name, s.about)
	now := t0
	var r result
	for pass := 1; pass <= 40; pass++ {
		c.Tick(now)
		hooks := shell.Hooks{}
		if !quiet {
			hooks.Decided = func(step int, d *lifecycle.Decision) { printDecision(w, step, d, c) }
		}
		var lastDecision *lifecycle.Decision
		if s.crash != nil {
			hooks.CrashAfter = func(step, ran int) bool {
				return lastDecision != nil && s.crash(pass, step, ran, lastDecision)
			}
			decided := hooks.Decided
			hooks.Decided = func(step int, d *lifecycle.Decision) {
				lastDecision = d
				if decided != nil {
					decided(step, d)
				}
			}
		}
		if !quiet {
			fmt.Fprintf(w, "\n[+%s] pass %d (phase %s)\n", now.Sub(t0), pass, c.Machine.Status.Phase.Label())
		}
		res := shell.Reconcile(context.Background(), &cfg, c, p, driverapi.Class{Name: "mem-small"}, now, hooks)
		r.passes = pass
		if res.Crashed {
			if !quiet {
				fmt.Fprintf(w, "  !! controller crashed; it restarts 10s later from the last saved status\n")
			}
			now = now.Add(10 * time.Second)
			continue
		}
		last := res.Decisions[len(res.Decisions)-1]
		if !quiet {
			fmt.Fprintf(w, "  requeue after %s\n", res.Requeue)
		}
		if c.Machine.Status.Phase == phase.Running && last.Rule == lifecycle.RuleHealthy {
			break
		}
		now = now.Add(res.Requeue)
	}
	r.phase = c.Machine.Status.Phase
	r.creates = p.Creates
	r.elapsed = now.Sub(t0)
	r.ok = r.phase == phase.Running && r.creates == 1
	fmt.Fprintf(w, "\n--- %s: phase %s after %s in %d passes; %d instance(s) created, %d status writes; events: %s\n",
		name, r.phase.Label(), r.elapsed, r.passes, r.creates, c.Machine.Saves, strings.Join(c.Events, ", "))
	fmt.Fprintf(w, "    last operation: %q\n\n", lifecycle.Describe(&c.Machine.Status, c.Machine.Object.Name))
	return r
}

func printDecision(w io.Writer, step int, d *lifecycle.Decision, c *memworld.Cluster) {
	fmt.Fprintf(w, "  step %d  %-28s %s\n", step+1, d.Rule.String(), d.Rule.Text())
	if d.Changed {
		fmt.Fprintf(w, "          status: phase=%s stage=%s, last operation %q\n",
			d.Status.Phase.Label(), d.Status.Stage, lifecycle.Describe(&d.Status, c.Machine.Object.Name))
	}
	for _, l := range d.Lines() {
		fmt.Fprintf(w, "          effect: %s\n", l)
	}
	if d.Wait.For != lifecycle.WaitNone {
		fmt.Fprintf(w, "          waiting for %s", d.Wait.For)
		if !d.Wait.Until.IsZero() {
			fmt.Fprintf(w, " until +%s", d.Wait.Until.Time().Sub(t0))
		}
		fmt.Fprintln(w)
	}
}

// Command inmemory drives machines through their lifecycle against an
// in-memory provider and cluster, with the lifecycle core deciding every
// step and lifecycle/pass.Run carrying the decisions out over the in-memory
// cluster (examples/shell binds it onto pass.Shell). It prints each
// decision: its rule, effects, and requeue.
//
// Scenarios:
//
//	happy        a machine from nothing to Running: creation, initialization, join
//	init-fails   initialization fails twice: CrashLoopBackOff, then recovery
//	crash        the controller crashes right after CreateMachine; the next
//	             pass finds the instance instead of creating a second one
//	delete       a Running machine is deleted: drain, VM, node, finalizer
//	drain-blocked  a pod disruption budget refuses every eviction: each drain
//	             fails after its eviction rounds and begins again, without
//	             holding up the controller, until the drain timeout forces it
//	no-node      a machine whose node never registered is deleted
//	update       a Running machine's spec changes: a hot update to generation 2,
//	             and new metadata, one key of which the provider drops at first
//	replace      the provider cannot apply a hot update in place: the machine
//	             is marked as needing replacement and keeps running
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
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
	"github.com/purelifecycle/machine/lifecycle/pass"
	"github.com/purelifecycle/machine/phase"
)

func main() {
	scenario := flag.String("scenario", "all", "happy, init-fails, crash, delete, drain-blocked, no-node, update, replace, in-place, preserve or all")
	quiet := flag.Bool("quiet", false, "print only each scenario's summary")
	flag.Parse()
	var out io.Writer = os.Stdout
	names := []string{"happy", "init-fails", "crash", "delete", "drain-blocked", "no-node", "update", "replace"}
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

// scenario sets up the provider's faults, the controller's crashes and
// when the machine is deleted.
type scenario struct {
	about string
	setup func(p *lifecycletest.Provider, c *memworld.Cluster)
	// crash, if set, says whether the controller dies in the pass-th pass
	// after the status of its step-th decision d was saved (ran 0) or ran
	// of d's effects were carried out.
	crash func(pass, step, ran int, d *lifecycle.Decision) bool
	// deleteWhen, if set, requests the machine's deletion once it holds.
	deleteWhen func(c *memworld.Cluster) bool
	// change, if set, changes the machine's spec once it is Running.
	change func(c *memworld.Cluster)
}

func running(c *memworld.Cluster) bool { return c.Machine.Status.Phase == phase.Running }

// synced reports whether the machine's hot update is applied (or the
// machine needs replacement), its instance metadata in sync, the in-place
// update asked done, and a preservation asked begun.
func synced(cfg *lifecycle.Config, c *memworld.Cluster) bool {
	o, st := &c.Machine.Object, &c.Machine.Status
	m := lifecycle.MemberOf(cfg, &lifecycle.Input{Object: *o, Status: *st})
	return (!m.UpdatePending() || st.Flags.Has(lifecycle.FlagNeedsReplacement)) && m.MetadataInSync() &&
		st.InPlaceGeneration == o.InPlaceGeneration && (o.Preserve != lifecycle.PreserveNow || st.PreserveUntil != 0)
}

var scenarios = map[string]scenario{
	"happy": {about: "a machine from nothing to Running"},
	"init-fails": {
		about: "InitializeMachine fails twice, then succeeds",
		setup: func(p *lifecycletest.Provider, _ *memworld.Cluster) {
			p.FailNext(driverapi.MethodInitialize, lifecycletest.Fault{Code: driverapi.Internal,
				Message: "network interface not attached yet"}, 2)
		},
	},
	"delete": {
		about:      "a Running machine is deleted",
		deleteWhen: running,
	},
	"drain-blocked": {
		about: "a disruption budget refuses every eviction: each drain fails after 9 rounds (3m) and begins again, until the drain timeout (10m for this machine) forces it",
		setup: func(_ *lifecycletest.Provider, c *memworld.Cluster) {
			c.FailDrains = 1000
			c.Machine.Object.Overrides.DrainTimeout = 10 * time.Minute
			c.Machine.Object.Overrides.MaxEvictRetries = 9
		},
		deleteWhen: running,
	},
	"update": {
		about: "the spec asks hot-update generation 2 and new metadata; the first patch drops a key",
		setup: func(p *lifecycletest.Provider, c *memworld.Cluster) {
			c.Machine.Object.Metadata = map[string]string{"team": "a"}
			p.DropNext("pool")
		},
		change: func(c *memworld.Cluster) {
			c.Machine.Object.UpdateGeneration = 2
			c.Machine.Object.Metadata = map[string]string{"team": "b", "pool": "web"}
		},
	},
	"replace": {
		about: "the provider cannot apply generation 2 in place",
		setup: func(p *lifecycletest.Provider, _ *memworld.Cluster) {
			p.FailNext(driverapi.MethodUpdate, lifecycletest.Fault{Code: driverapi.FailedPrecondition,
				Message: "the machine type cannot change on a running instance"}, 1)
		},
		change: func(c *memworld.Cluster) { c.Machine.Object.UpdateGeneration = 2 },
	},
	"in-place": {
		about:  "the spec asks in-place generation 1: the node is labelled, drained, updated by its agent, given back",
		setup:  func(_ *lifecycletest.Provider, c *memworld.Cluster) { c.Agent = true },
		change: func(c *memworld.Cluster) { c.Machine.Object.InPlaceGeneration = 1 },
	},
	"preserve": {
		about:  "the machine is annotated preserve=now: kept until its expiry, its node kept from the autoscaler",
		change: func(c *memworld.Cluster) { c.Machine.Object.Preserve = lifecycle.PreserveNow },
	},
	"no-node": {
		about: "a machine whose node never registered is deleted while Pending",
		setup: func(_ *lifecycletest.Provider, c *memworld.Cluster) { c.NoNodes = true },
		deleteWhen: func(c *memworld.Cluster) bool {
			return c.Machine.Status.Phase == phase.Pending && c.Machine.Status.PhaseSince.Time().Add(2*time.Minute).Before(now(c))
		},
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
	gone    bool
	creates int
	passes  int
	elapsed time.Duration
}

// now is the cluster's simulated time.
func now(c *memworld.Cluster) time.Time { return c.Now() }

var t0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

// run plays a scenario and reports it to w.
func run(w io.Writer, name string, s scenario, quiet bool) result {
	cfg := lifecycle.DefaultConfig()
	checked, err := cfg.Check() // once, as a controller does when it starts
	if err != nil {
		fmt.Fprintln(w, err)
		return result{}
	}
	p := memworld.NewProvider()
	c := memworld.NewCluster(p, "machine-a", "6f1c9e2a-uid", t0)
	if s.setup != nil {
		s.setup(p, c)
	}
	fmt.Fprintf(w, "=== scenario %s: %s\n", name, s.about)
	now := t0
	var r result
	changed := false
	var scratch pass.Scratch // one per worker: a pass allocates nothing of its own
	for n := 1; n <= 100; n++ {
		c.Tick(now)
		if s.change != nil && !changed && running(c) {
			changed = true
			s.change(c)
			if !quiet {
				o := &c.Machine.Object
				fmt.Fprintf(w, "\n[+%s] the machine's spec changes: generation %d, metadata %v, in-place generation %d, preserve %q\n",
					now.Sub(t0), o.UpdateGeneration, o.Metadata, o.InPlaceGeneration, o.Preserve)
			}
		}
		if s.deleteWhen != nil && c.Machine.Object.DeletionTime.IsZero() && s.deleteWhen(c) {
			c.Delete(now)
			if !quiet {
				fmt.Fprintf(w, "\n[+%s] the machine's deletion is requested\n", now.Sub(t0))
			}
		}
		// The pass is pass.Run's, over the cluster and the provider; Crash
		// ends it where the scenario's controller dies.
		ctx, cancel := context.WithCancel(context.Background())
		sh := &shell.Crash{Shell: &shell.Shell{World: c, Driver: p, Class: driverapi.Class{Name: "mem-small"}},
			Cancel: cancel}
		if !quiet {
			sh.Observer = &printer{w: w, c: c}
		}
		if s.crash != nil {
			sh.At = func(step, ran int, d *lifecycle.Decision) bool { return s.crash(n, step, ran, d) }
		}
		if !quiet {
			fmt.Fprintf(w, "\n[+%s] pass %d (phase %s)\n", now.Sub(t0), n, c.Machine.Status.Phase.Label())
		}
		res := pass.Run(ctx, &checked, sh, now, &scratch, sh)
		cancel()
		r.passes = n
		if c.Machine.Gone {
			if !quiet {
				fmt.Fprintf(w, "  the machine object is gone\n")
			}
			break
		}
		if sh.Crashed {
			if !quiet {
				fmt.Fprintf(w, "  !! controller crashed; it restarts 10s later from the last saved status\n")
			}
			now = now.Add(10 * time.Second)
			continue
		}
		last := &scratch.Decision // the pass's last decision
		if !quiet {
			fmt.Fprintf(w, "  requeue after %s\n", res.Requeue)
		}
		settled := c.Machine.Status.Phase == phase.Running &&
			(last.Rule == lifecycle.RuleHealthy || last.Rule == lifecycle.RuleMetadataSynced)
		if s.deleteWhen == nil && settled && (s.change == nil || changed && c.Machine.Saves > 0 && synced(&cfg, c)) {
			break
		}
		now = now.Add(res.Requeue)
	}
	r.phase = c.Machine.Status.Phase
	r.gone = c.Machine.Gone
	r.creates = p.Created
	r.elapsed = now.Sub(t0)
	switch {
	case s.deleteWhen != nil:
		r.ok = r.gone && r.creates == 1 && len(p.Instances()) == 0 && len(c.Nodes) == 0
	case s.change != nil:
		r.ok = r.phase == phase.Running && r.creates == 1 && synced(&cfg, c) && nodesFree(c)
	default:
		r.ok = r.phase == phase.Running && r.creates == 1
	}
	end := "phase " + r.phase.Label()
	if r.gone {
		end = fmt.Sprintf("machine gone (%d instance(s) and %d node(s) left)", len(p.Instances()), len(c.Nodes))
	}
	fmt.Fprintf(w, "\n--- %s: %s after %s in %d passes; %d instance(s) created, %d status writes; events: %s\n",
		name, end, r.elapsed, r.passes, r.creates, c.Machine.Saves, strings.Join(c.Events, ", "))
	fmt.Fprintf(w, "    last operation: %q\n\n", lifecycle.Describe(&c.Machine.Status, c.Machine.Object.Name))
	return r
}

// nodesFree reports whether the world's nodes are given back to their
// workloads: schedulable, without a label of the in-place update.
func nodesFree(c *memworld.Cluster) bool {
	for _, n := range c.Nodes {
		if n.Unschedulable || lifecycle.UpdateLabelsOf(n.Labels) != 0 {
			return false
		}
	}
	return true
}

// printer prints every decision of a pass: it is the pass's Observer.
type printer struct {
	w     io.Writer
	c     *memworld.Cluster
	steps int
}

func (p *printer) Decided(_ *lifecycle.Input, d *lifecycle.Decision) {
	p.steps++
	printDecision(p.w, p.steps, d, p.c)
}

func printDecision(w io.Writer, step int, d *lifecycle.Decision, c *memworld.Cluster) {
	fmt.Fprintf(w, "  step %d  %-28s %s\n", step, d.Rule.String(), d.Rule.Text())
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

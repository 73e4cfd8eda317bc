// Command fleetsim simulates a fleet of machines through full lifecycles
// with injected faults, checks every decision and the end state against
// the lifecycle's promises, and prints what happened. The report on stdout
// depends only on the flags (the same -seed and -shards reproduce a run
// bit for bit); wall time and rates go to stderr. It exits 1 when a promise
// broke, 2 on bad flags.
//
//	go run ./examples/fleetsim/cmd/fleetsim -machines 10000 -seed 1
//	go run ./examples/fleetsim/cmd/fleetsim -machines 1000000 -seed 1
//
// Every fault has a flag of its own. -only NAME keeps one fault knob and
// turns every other off, and -fault-scale X multiplies the knobs kept (rates
// capped at what a probability allows; see fleetsim.Options.SetFaults); a
// fault flag given explicitly is taken as given, neither turned off nor
// scaled. -list-faults prints the knobs' names, which are their flags':
//
//	go run ./examples/fleetsim/cmd/fleetsim -only cache-lag -fault-scale 10
//	go run ./examples/fleetsim/cmd/fleetsim -only force-remove -fault-scale 15 -dead 0.2 -reuse 1
//
// -zone-outage D takes every node of one of the -zones zones down for D,
// once, and turns the limiter's zone protection on (3,50%,30m: three
// machines and half of an owner's unhealthy ones in one zone hold it for
// 30 minutes past the health timeout; -zone-protection sets another, or
// off):
//
//	go run ./examples/fleetsim/cmd/fleetsim -machines 10000 -zone-outage 1h
//
// -inplace X has the owners of a share X of the machines ask an in-place
// update (through Object.InPlaceGeneration, so the lifecycle labels the
// node itself), which a node agent per node carries out once told
// ReadyForUpdate: it succeeds, fails (-inplace-fail) or stalls
// (-inplace-stall), and a share of the failed and stalled updates leave
// the node NotReady for good (-inplace-down). -preserve X annotates a
// share X of the machines, or their nodes (-preserve-node), for
// preservation, now or when-failed, and stops a share of those later
// (-preserve-stop); it turns auto-preservation on (one Failed machine per
// owner, -auto-preserve) with a preservation timeout of 40 minutes
// (-preserve-timeout), so that preservations end within the run. The
// world's checks of both judge the lifecycle's writes to the nodes and the
// node agents' work (see the package doc):
//
//	go run ./examples/fleetsim/cmd/fleetsim -machines 10000 -inplace 0.3 -preserve 0.3 -dead 0.05
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/purelifecycle/machine/examples/fleetsim"
	"github.com/purelifecycle/machine/lifecycle"
)

// cli holds what the flags set: the options, and the flags that are not
// options' fields.
type cli struct {
	o                                                fleetsim.Options
	driverFaults, replacements, only, zoneProtection string
	scale                                            float64
	list                                             bool
}

// flags defines the flags over c, with c's values as their defaults.
func flags(c *cli) *flag.FlagSet {
	o := &c.o
	fs := flag.NewFlagSet("fleetsim", flag.ContinueOnError)
	fs.IntVar(&o.Machines, "machines", o.Machines, "machines at the start")
	fs.IntVar(&o.PerOwner, "per-owner", o.PerOwner, "machines per owner (MachineSet)")
	fs.IntVar(&o.Zones, "zones", o.Zones, "zones each owner spreads its machines over, round robin; nodes carry the zone label (0: none)")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "random seed")
	fs.IntVar(&o.Shards, "shards", o.Shards, "independent shards of owners, 0 = one per 500 machines (the result depends on it)")
	fs.IntVar(&o.Workers, "workers", o.Workers, "shards run at once, 0 = GOMAXPROCS (the result does not depend on it)")
	fs.DurationVar(&o.Active, "active", o.Active, "simulated time of scenario and faults")
	fs.DurationVar(&o.Drain, "drain", o.Drain, "simulated drain-out time without faults before the checks")
	fs.DurationVar(&o.Ramp, "ramp", o.Ramp, "the initial machines are created over this time")
	fs.DurationVar(&o.Teardown, "teardown", o.Teardown, "when every owner scales down to zero, so every lifecycle ends deleted (0: never)")
	fs.DurationVar(&o.FleetEvery, "fleet-every", o.FleetEvery, "period of the fleet pass (owners, limiter)")
	fs.DurationVar(&o.OrphanEvery, "orphan-every", o.OrphanEvery, "period of orphan collection")
	fs.Float64Var(&o.Update, "update", o.Update, "share of machines given a hot update")
	fs.Float64Var(&o.Metadata, "metadata", o.Metadata, "share of machines given a metadata change")
	fs.Float64Var(&o.ScaleDown, "scale-down", o.ScaleDown, "share of machines deleted by a scale-down")
	fs.Float64Var(&o.Reuse, "reuse", o.Reuse, "probability that a replacement reuses a gone machine's name")
	fs.BoolVar(&o.Faults, "faults", o.Faults, "inject faults (false: none of the fault flags apply)")
	fs.StringVar(&c.driverFaults, "driver-faults", fleetsim.FormatDriverFaults(o.DriverFaults),
		"driver faults: comma-separated METHOD:OUTCOME=RATE, METHOD a driver method or *, OUTCOME a code, undecodable or empty; none for no faults")
	fs.Float64Var(&o.Latency, "latency", o.Latency, "scale of simulated driver call latency (0: none)")
	fs.Float64Var(&o.Flap, "flap", o.Flap, "share of machines whose node flaps NotReady once")
	fs.Float64Var(&o.Dead, "dead", o.Dead, "share of machines whose node dies")
	fs.DurationVar(&o.FlapMin, "flap-min", o.FlapMin, "shortest flap")
	fs.DurationVar(&o.FlapMax, "flap-max", o.FlapMax, "longest flap")
	fs.Float64Var(&o.NodeGone, "node-gone", o.NodeGone, "share of flaps in which the node object is deleted and registered again")
	fs.Float64Var(&o.NoJoin, "no-join", o.NoJoin, "probability that an instance's kubelet never registers its node")
	fs.Float64Var(&o.DropKey, "drop-key", o.DropKey, "probability that UpdateMetadata drops one key's change")
	fs.Float64Var(&o.LostWrite, "lost-write", o.LostWrite, "probability that a status write fails")
	fs.Float64Var(&o.WriteFail, "write-fail", o.WriteFail, "probability that an object, node or token write fails")
	fs.Float64Var(&o.DrainFail, "drain-fail", o.DrainFail, "probability that an unforced drain fails")
	fs.Float64Var(&o.Crash, "crash", o.Crash, "probability of a controller crash at each point between two effects")
	fs.Float64Var(&o.ClockJump, "clock-jump", o.ClockJump, "probability that a step's clock is off")
	fs.DurationVar(&o.ClockJumpMax, "clock-jump-max", o.ClockJumpMax, "how far a clock jump goes, either way")
	fs.DurationVar(&o.Outage, "outage", o.Outage, "observer outage length (0: none)")
	fs.Float64Var(&o.OutageNotReady, "outage-notready", o.OutageNotReady, "share of nodes NotReady during the outage")
	fs.DurationVar(&o.ZoneOutage, "zone-outage", o.ZoneOutage,
		"every node of one zone NotReady for this long, once (0: never); turns the limiter's zone protection on (-zone-protection)")
	fs.StringVar(&c.zoneProtection, "zone-protection", "",
		"the limiter's zone protection (lifecycle.Config.ZoneOutage): COUNT,PERCENT%,HOLD or off (default: 3,50%,30m with -zone-outage, else off)")
	fs.Float64Var(&o.StaleNode, "stale-node", o.StaleNode, "probability that CreateMachine names a deleted instance's node")
	fs.Float64Var(&o.OwnerTagLost, "owner-tag-lost", o.OwnerTagLost, "probability that an instance is created without its owner tag")
	fs.Float64Var(&o.ForceRemove, "force-remove", o.ForceRemove, "probability that a scale-down's finalizer is removed by hand")
	fs.Float64Var(&o.NodeReadFail, "node-read-fail", o.NodeReadFail, "probability that the node cannot be read for a step")
	fs.Float64Var(&o.StaleOutcome, "stale-outcome", o.StaleOutcome,
		"probability that a pass starts with the outcome of an older decision (a duplicate or a late result)")
	fs.Float64Var(&o.ObserverBlip, "observer-blip", o.ObserverBlip,
		"probability that the observer degrades in the middle of a pass, for 10s to 2m")
	fs.Float64Var(&o.CacheLag, "cache-lag", o.CacheLag, "probability that a write of a machine reaches the controller's cache late")
	fs.DurationVar(&o.CacheLagMax, "cache-lag-max", o.CacheLagMax, "how late such a write arrives, at most")
	fs.DurationVar(&o.FleetLag, "fleet-lag", o.FleetLag, "how far the limiter's fleet view lags behind, at most (0: not at all)")
	fs.Float64Var(&o.Problem, "problem", o.Problem, "share of machines, and of owners' classes, with a problem for a while")
	fs.DurationVar(&o.ProblemMax, "problem-max", o.ProblemMax, "how long a problem lasts, at most (at least 30s)")
	fs.Float64Var(&o.ForceDeletion, "force-deletion", o.ForceDeletion, "probability that a deleted machine gets the force-deletion label")
	fs.DurationVar(&o.ClockOffset, "clock-offset", o.ClockOffset,
		"bound of each shard's persistent controller clock offset, either way (0: none)")
	fs.Float64Var(&o.InPlace.Share, "inplace", o.InPlace.Share,
		"share of machines whose owner asks an in-place update (Object.InPlaceGeneration), carried out by a node agent (0: none)")
	fs.Float64Var(&o.InPlace.Fail, "inplace-fail", o.InPlace.Fail, "share of the node agents' in-place updates that fail")
	fs.Float64Var(&o.InPlace.Stall, "inplace-stall", o.InPlace.Stall, "share of the node agents' in-place updates that stall")
	fs.Float64Var(&o.InPlace.Down, "inplace-down", o.InPlace.Down,
		"share of the failed and stalled in-place updates that leave the node NotReady for good (the others leave it Ready)")
	fs.DurationVar(&o.Config.InPlaceUpdateTimeout, "inplace-timeout", o.Config.InPlaceUpdateTimeout,
		"the in-place update timeout (lifecycle.Config.InPlaceUpdateTimeout)")
	fs.Float64Var(&o.Preserve.Share, "preserve", o.Preserve.Share,
		"share of machines annotated for preservation, now or when-failed (0: none); turns auto-preservation on (-auto-preserve)")
	fs.Float64Var(&o.Preserve.Node, "preserve-node", o.Preserve.Node, "share of the preservation annotations put on the node")
	fs.Float64Var(&o.Preserve.Stop, "preserve-stop", o.Preserve.Stop,
		"share of the preservation annotations the user later sets to false or removes")
	fs.IntVar(&o.Config.AutoPreserve, "auto-preserve", o.Config.AutoPreserve,
		"most Failed machines per owner auto-preserved (lifecycle.Config.AutoPreserve; default: 1 with -preserve, else 0)")
	fs.DurationVar(&o.Config.PreserveTimeout, "preserve-timeout", o.Config.PreserveTimeout,
		"the preservation timeout (lifecycle.Config.PreserveTimeout; default: 40m with -preserve or -auto-preserve)")
	fs.BoolVar(&o.Config.NoTargetCluster, "no-target-cluster", o.Config.NoTargetCluster,
		"run without a target cluster: machines end Available, and there are no nodes")
	fs.StringVar(&c.only, "only", c.only,
		"keep only this fault knob (see -list-faults) and turn every other off, but for those set by their own flags")
	fs.Float64Var(&c.scale, "fault-scale", c.scale,
		"multiply the fault knobs kept, but for those set by their own flags (rates capped at what a probability allows)")
	fs.BoolVar(&c.list, "list-faults", false, "print the names of the fault knobs, one a line, and exit")
	fs.StringVar(&c.replacements, "replacements", "", "the limiter's maximum of replacements in flight per owner: N or N% (default: the lifecycle's)")
	fs.IntVar(&o.Traces, "traces", o.Traces, "machines with violations whose trace is rendered")
	fs.IntVar(&o.TraceLen, "trace-len", o.TraceLen, "decisions and events kept in a trace")
	return fs
}

func main() {
	// -only and -fault-scale change the defaults of the fault flags, so the
	// flags are read twice: first for those two, then for all, with the
	// defaults they set, so that a fault flag given explicitly is taken as
	// given.
	first := cli{o: fleetsim.DefaultOptions(), scale: 1}
	pre := flags(&first)
	pre.SetOutput(io.Discard)
	_ = pre.Parse(os.Args[1:]) // errors are reported below
	c := cli{o: fleetsim.DefaultOptions(), only: first.only, scale: first.scale}
	if err := c.o.SetFaults(c.only, c.scale); err != nil {
		fail(err)
	}
	fs := flags(&c)
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	o := c.o
	if c.list {
		for _, name := range fleetsim.FaultKnobs() {
			fmt.Println(name)
		}
		return
	}
	var err error
	if o.DriverFaults, err = fleetsim.ParseDriverFaults(c.driverFaults); err != nil {
		fail(err)
	}
	if c.replacements != "" {
		if o.Config.Replacements, err = parseReplacements(c.replacements); err != nil {
			fail(err)
		}
	}
	switch {
	case c.zoneProtection != "":
		if o.Config.ZoneOutage, err = parseZoneProtection(c.zoneProtection); err != nil {
			fail(err)
		}
	case o.ZoneOutage > 0:
		o.Config.ZoneOutage = fleetsim.DefaultZoneProtection()
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.Preserve.Share > 0 && !set["auto-preserve"] {
		o.Config.AutoPreserve = fleetsim.DefaultAutoPreserve
	}
	if (o.Preserve.Share > 0 || o.Config.AutoPreserve > 0) && !set["preserve-timeout"] {
		o.Config.PreserveTimeout = fleetsim.DefaultPreserveTimeout
	}
	start := time.Now()
	r, err := fleetsim.Run(o)
	if err != nil {
		fail(err)
	}
	wall := time.Since(start)
	fmt.Print(r.Report())
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	cores := min(workers, r.Options.Shards, runtime.NumCPU())
	rate := float64(r.Stats.Decisions) / wall.Seconds()
	fmt.Fprintf(os.Stderr, "wall %s on %d workers (GOMAXPROCS %d, %d CPUs): %.0f decisions/s, %.0f decisions/s per core, %.0f machines/s\n",
		wall.Round(time.Millisecond), workers, runtime.GOMAXPROCS(0), runtime.NumCPU(), rate, rate/float64(cores),
		float64(r.Stats.Created)/wall.Seconds())
	if !r.OK() {
		os.Exit(1)
	}
}

func parseReplacements(s string) (lifecycle.ReplacementLimit, error) {
	if p, ok := strings.CutSuffix(s, "%"); ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 100 {
			return lifecycle.ReplacementLimit{}, fmt.Errorf("replacements: %q is not a percentage 1%%..100%%", s)
		}
		return lifecycle.ReplacementLimit{Percent: n}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return lifecycle.ReplacementLimit{}, fmt.Errorf("replacements: %q is not a positive count", s)
	}
	return lifecycle.ReplacementLimit{Count: n}, nil
}

// parseZoneProtection reads COUNT,PERCENT%,HOLD (3,50%,30m), or off.
func parseZoneProtection(s string) (lifecycle.ZoneOutage, error) {
	if s == "off" {
		return lifecycle.ZoneOutage{}, nil
	}
	bad := fmt.Errorf("zone-protection: %q is not COUNT,PERCENT%%,HOLD (such as 3,50%%,30m) or off", s)
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return lifecycle.ZoneOutage{}, bad
	}
	count, err1 := strconv.Atoi(parts[0])
	pct, ok := strings.CutSuffix(parts[1], "%")
	percent, err2 := strconv.Atoi(pct)
	hold, err3 := time.ParseDuration(parts[2])
	if err1 != nil || !ok || err2 != nil || err3 != nil || count < 1 {
		return lifecycle.ZoneOutage{}, bad
	}
	return lifecycle.ZoneOutage{Count: count, Percent: percent, Hold: hold}, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "fleetsim:", err)
	os.Exit(2)
}

package fleetsim

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
)

// Options configure a run. DefaultOptions gives the defaults the command
// uses; every field has a flag of the same meaning in cmd/fleetsim.
type Options struct {
	// Machines is the size of the fleet at the start.
	Machines int
	// PerOwner is the number of machines of one owner (a MachineSet); the
	// fleet limiter works per owner.
	PerOwner int
	// Zones is how many zones each owner spreads its machines over, round
	// robin (0: none). A node carries its instance's zone in its
	// lifecycle.ZoneLabel label, which the shell reads into
	// lifecycle.Node.Zone.
	Zones int
	// Seed seeds every random choice. The same seed and Shards give the same
	// run and the same report, bit for bit.
	Seed uint64
	// Shards splits the owners into independent simulations, each with its
	// own provider, cluster and random stream; the result depends on it.
	// 0 means one shard per ShardSize machines. Small shards are fast:
	// a shard's machines stay in the CPU's caches while it runs.
	Shards int
	// Workers is how many shards run at once; the result does not depend on
	// it. 0 means GOMAXPROCS.
	Workers int

	// Active is the simulated time during which the scenario and the faults
	// happen; Drain the time after it, without faults, that every machine
	// gets to settle before the checks.
	Active, Drain time.Duration
	// Ramp spreads the creation of the initial machines over this much time.
	Ramp time.Duration
	// Teardown, when positive, is when every owner scales down to zero, so
	// that every machine ends its lifecycle deleted (faults go on until the
	// active period ends).
	Teardown time.Duration
	// FleetEvery is the period of the fleet pass (owners replace Failed
	// machines, the limiter's grants are computed); OrphanEvery that of the
	// orphan collection.
	FleetEvery, OrphanEvery time.Duration

	// Update, Metadata, ScaleDown are the shares of machines that get, at a
	// random time of the active period, a hot update (a higher
	// UpdateGeneration), a metadata change, or are deleted by a scale-down.
	Update, Metadata, ScaleDown float64
	// Reuse is the probability that a replacement machine reuses the name of
	// a machine of its owner that is gone (another incarnation of the name).
	Reuse float64

	// Faults turns every fault below on or off at once.
	Faults bool
	// DriverFaults make driver calls fail (see ParseDriverFaults).
	DriverFaults []DriverFault
	// Latency scales the simulated time driver calls take (0: none).
	Latency float64
	// Flap is the share of machines whose node turns NotReady once for
	// FlapMin..FlapMax, and Dead the share whose node never recovers.
	Flap, Dead       float64
	FlapMin, FlapMax time.Duration
	// NodeGone is the share of flaps in which the node object is deleted
	// and registered again by its kubelet when the flap ends.
	NodeGone float64
	// NoJoin is the probability that an instance's kubelet never registers
	// its node (a broken image): the machine fails its creation timeout.
	NoJoin float64
	// DropKey is the probability that UpdateMetadata silently drops the
	// change of one key (or of the owner tag).
	DropKey float64
	// LostWrite is the probability that saving a status fails: a conflict, a
	// failure, or a write that took effect while the client saw an error.
	LostWrite float64
	// WriteFail is the probability that an object, node or token write fails.
	WriteFail float64
	// DrainFail is the probability that a disruption budget refuses the
	// evictions of one round of an unforced drain: the pods stay until a
	// later round, or the forced drain, removes them.
	DrainFail float64
	// Crash is the probability that the controller crashes at each point
	// between two effects of a pass (after the status write, after each
	// effect): the pass ends with no outcome and the machine is reconciled
	// again after a restart delay from its last persisted status.
	Crash float64
	// ClockJump is the probability that a step's clock is off by up to
	// ClockJumpMax, either way.
	ClockJump    float64
	ClockJumpMax time.Duration
	// Outage is how long the observer (API server, cloud API) is degraded,
	// once, at a random time of the active period (0: never); OutageNotReady
	// the share of nodes that turn NotReady during it.
	Outage         time.Duration
	OutageNotReady float64
	// ZoneOutage is how long every node of one zone, drawn from the seed,
	// is NotReady, once, at a random time of the active period (0: never);
	// nodes that register in the zone meanwhile are NotReady too. The
	// observer stays healthy: the zone is down, not the controller's view
	// of it. It is not a fault knob (SetFaults leaves it as it is); turn on
	// the limiter's protection with it (Config.ZoneOutage,
	// DefaultZoneProtection).
	ZoneOutage time.Duration
	// StaleNode is the probability that a CreateMachine names the node of
	// an earlier, deleted instance (the stale-node case, MCM A5).
	StaleNode float64
	// OwnerTagLost is the probability that an instance is created without
	// its owner UID tag.
	OwnerTagLost float64
	// ForceRemove is the probability that a deletion by the owner is cut
	// short by someone removing the machine's finalizer by hand: the object
	// goes, and an instance not yet deleted becomes an orphan for orphan
	// collection (or another incarnation's instance, should the name come
	// back).
	ForceRemove float64
	// NodeReadFail is the probability that the node cannot be read for a step.
	NodeReadFail float64
	// StaleOutcome is the probability that a pass is preceded by a step
	// given an outcome of an older decision of the machine where the pass
	// starts with none: the last outcome the machine's previous pass fed
	// back (a duplicate) or the first one it fed back (a late result). The
	// step's decision is counted and checked, not carried out: pass.Run,
	// which runs the pass, feeds it only its own decisions' outcomes. The
	// lifecycle must ignore the outcome (AnomalyStaleOutcome or
	// AnomalyBadOutcome) whenever the status changed after that decision;
	// an outcome of a decision after which the status did not change
	// cannot be told apart from a current one, and is only counted.
	StaleOutcome float64
	// ObserverBlip is the probability that the observer (API server, cloud
	// API) degrades in the middle of a pass, after the effects of its first
	// step, for 10 seconds to 2 minutes. Steps later in the same pass see
	// it degraded; the limiter grants nothing and orphan collection waits
	// while it is.
	ObserverBlip float64
	// CacheLag is the probability that another party's write of a machine
	// object (its owner requesting its deletion or changing its spec, the
	// force-deletion label) reaches the controller's informer cache late,
	// by up to CacheLagMax: a pass that starts within that time reads those
	// fields as they were before the write. The controller's own writes
	// (its status, finalizer, labels and providerID) it lays over the
	// cached copy, as the lifecycle's contract asks of a shell reading a
	// cache. (A save refused because a pass started from an older status
	// than the saved one would count in Stats.LagConflicts.)
	CacheLag    float64
	CacheLagMax time.Duration
	// FleetLag bounds how far the fleet view given to the limiter lags
	// behind the API server: each fleet pass draws a lag within
	// [0, FleetLag], and the limiter does not see machines created within
	// it, nor deletions requested within it. It always sees the statuses
	// the controller saved itself (the limiter's contract: a shell lays its
	// own writes over a cache that lags them).
	FleetLag time.Duration
	// Problem is the share of machines that are invalid for a while
	// (lifecycle.ProblemInvalidMachine) and the share of owners whose
	// machine class has a problem for a while (class unavailable, class
	// not ready, invalid node template, drawn evenly), each from a random
	// time of the active period for 30 seconds to ProblemMax, then fixed.
	Problem    float64
	ProblemMax time.Duration
	// ForceDeletion is the probability that a machine its owner deletes gets
	// the force-deletion label (Object.ForceDeletion), at once or up to a
	// minute later.
	ForceDeletion float64
	// ClockOffset bounds a persistent offset of the controller's clock:
	// each shard's controller runs with its clock off by a constant drawn
	// within [-ClockOffset, ClockOffset], for the whole run, drain-out
	// included, as a misconfigured clock is (ClockJump adds transient jumps
	// on top). Stamps the controller writes (phase times, the observer's
	// recovery) carry its clock; those of the API server and the kubelets
	// (creation and deletion times, node conditions) do not.
	ClockOffset time.Duration

	// InPlace is the in-place update setting and Preserve the
	// preservation setting (flows.go); both are off unless their Share is
	// positive (auto-preservation is Config.AutoPreserve).
	InPlace  InPlaceOptions
	Preserve PreserveOptions

	// Config is the lifecycle configuration.
	Config lifecycle.Config

	// Traces is how many machines with violations get their decision trace
	// rendered (by replaying their shard).
	Traces int
	// TraceLen bounds the trace of one machine (its last decisions and
	// events).
	TraceLen int

	// duplicateCreate, when positive, makes the provider create a second
	// instance on the n-th CreateMachine of each shard (a test hook for a
	// provider bug the checks must catch).
	duplicateCreate int
	// broken holds test hooks that break the shell or the world on purpose,
	// each for a check that must catch it.
	broken brokenWorld
}

// ShardSize is the number of machines per shard when Options.Shards is 0.
const ShardSize = 500

// shards returns the number of shards: Shards, or one per ShardSize
// machines (at least one).
func (o *Options) shards() int {
	if o.Shards > 0 {
		return o.Shards
	}
	return max(1, (o.Machines+ShardSize-1)/ShardSize)
}

// DefaultDriverFaults is the driver fault spec of DefaultOptions: transient
// codes and Internal on every method, undecodable errors, ResourceExhausted
// and odd answers on creation, failed initializations, hot updates that
// cannot be applied in place, and aborted metadata patches.
const DefaultDriverFaults = "*:Unavailable=0.01,*:DeadlineExceeded=0.005,*:Internal=0.002,*:undecodable=0.002," +
	"CreateMachine:ResourceExhausted=0.01,CreateMachine:empty=0.002,InitializeMachine:Uninitialized=0.02," +
	"InitializeMachine:Unimplemented=0.005," +
	"UpdateMachine:FailedPrecondition=0.05,UpdateMachine:Unimplemented=0.01,UpdateMetadata:Aborted=0.01," +
	"GetMachineStatus:NotFound=0.01" // an eventually consistent cloud API that loses sight of an instance

// DefaultOptions returns the defaults: 10,000 machines in owners of 100,
// two simulated hours of scenario and faults and two of drain-out, and
// every fault on at a modest rate.
func DefaultOptions() Options {
	faults, err := ParseDriverFaults(DefaultDriverFaults)
	if err != nil {
		panic(err) // the constant parses; a test checks it
	}
	return Options{
		Machines:    10000,
		PerOwner:    100,
		Zones:       3,
		Seed:        1,
		Shards:      0,
		Active:      2 * time.Hour,
		Drain:       2 * time.Hour,
		Ramp:        10 * time.Minute,
		FleetEvery:  30 * time.Second,
		OrphanEvery: 15 * time.Minute,

		Update:    0.3,
		Metadata:  0.3,
		ScaleDown: 0.2,
		Reuse:     0.5,

		Faults:         true,
		DriverFaults:   faults,
		Latency:        1,
		Flap:           0.1,
		Dead:           0.01,
		FlapMin:        30 * time.Second,
		FlapMax:        15 * time.Minute,
		NodeGone:       0.2,
		NoJoin:         0.003,
		DropKey:        0.05,
		LostWrite:      0.005,
		WriteFail:      0.005,
		DrainFail:      0.3,
		Crash:          0.001,
		ClockJump:      0.001,
		ClockJumpMax:   2 * time.Minute,
		Outage:         10 * time.Minute,
		OutageNotReady: 0.2,
		StaleNode:      0.002,
		OwnerTagLost:   0.01,
		ForceRemove:    0.02,
		NodeReadFail:   0.001,
		StaleOutcome:   0.01,
		ObserverBlip:   0.0002,
		CacheLag:       0.01,
		CacheLagMax:    10 * time.Second,
		FleetLag:       10 * time.Second,
		Problem:        0.005,
		ProblemMax:     15 * time.Minute,
		ForceDeletion:  0.05,
		ClockOffset:    30 * time.Second,

		InPlace:  InPlaceOptions{Fail: 0.2, Stall: 0.1, Down: 0.5},
		Preserve: PreserveOptions{Node: 0.25, Stop: 0.3},

		Config:   lifecycle.DefaultConfig(),
		Traces:   3,
		TraceLen: 80,
	}
}

// Validate reports every problem of the options at once.
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if o.Machines < 1 {
		bad("machines must be at least 1, got %d", o.Machines)
	}
	if o.PerOwner < 1 {
		bad("per-owner must be at least 1, got %d", o.PerOwner)
	}
	if o.Shards < 0 || o.Shards > 1<<20 {
		bad("shards must be within 0..%d, got %d", 1<<20, o.Shards)
	}
	if o.Workers < 0 {
		bad("workers must not be negative, got %d", o.Workers)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"active", o.Active}, {"fleet-every", o.FleetEvery}, {"orphan-every", o.OrphanEvery}} {
		if d.v <= 0 {
			bad("%s must be positive, got %s", d.name, d.v)
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"drain", o.Drain}, {"ramp", o.Ramp}, {"outage", o.Outage}, {"zone-outage", o.ZoneOutage}, {"clock-jump-max", o.ClockJumpMax},
		{"cache-lag-max", o.CacheLagMax}, {"fleet-lag", o.FleetLag}, {"clock-offset", o.ClockOffset}} {
		if d.v < 0 {
			bad("%s must not be negative, got %s", d.name, d.v)
		}
	}
	if o.Ramp > o.Active {
		bad("ramp (%s) must not be longer than active (%s)", o.Ramp, o.Active)
	}
	if o.Teardown < 0 || o.Teardown >= o.Active+o.Drain {
		bad("teardown (%s) must be within the run (%s)", o.Teardown, o.Active+o.Drain)
	}
	if o.Outage > o.Active || o.ZoneOutage > o.Active {
		bad("outage (%s) and zone-outage (%s) must not be longer than active (%s)", o.Outage, o.ZoneOutage, o.Active)
	}
	if o.Zones < 0 || o.Zones > len(zoneNames) || o.ZoneOutage > 0 && o.Zones == 0 {
		bad("zones must be within 0..%d, and at least 1 with a zone outage, got %d", len(zoneNames), o.Zones)
	}
	if o.FlapMin <= 0 || o.FlapMax < o.FlapMin {
		bad("flaps must last a positive FlapMin..FlapMax, got %s..%s", o.FlapMin, o.FlapMax)
	}
	for _, p := range []struct {
		name string
		v    float64
	}{
		{"update", o.Update}, {"metadata", o.Metadata}, {"scale-down", o.ScaleDown}, {"reuse", o.Reuse},
		{"flap", o.Flap}, {"dead", o.Dead}, {"node-gone", o.NodeGone}, {"no-join", o.NoJoin}, {"drop-key", o.DropKey}, {"lost-write", o.LostWrite},
		{"write-fail", o.WriteFail}, {"drain-fail", o.DrainFail}, {"crash", o.Crash}, {"clock-jump", o.ClockJump},
		{"outage-notready", o.OutageNotReady}, {"stale-node", o.StaleNode}, {"owner-tag-lost", o.OwnerTagLost},
		{"force-remove", o.ForceRemove}, {"node-read-fail", o.NodeReadFail}, {"stale-outcome", o.StaleOutcome},
		{"observer-blip", o.ObserverBlip}, {"cache-lag", o.CacheLag}, {"problem", o.Problem},
		{"force-deletion", o.ForceDeletion},
	} {
		if !(p.v >= 0 && p.v <= 1) {
			bad("%s must be a probability within 0..1, got %v", p.name, p.v)
		}
	}
	if o.Flap+o.Dead > 1 {
		bad("flap + dead must not exceed 1, got %v", o.Flap+o.Dead)
	}
	if o.DrainFail == 1 {
		bad("drain-fail must be below 1, or no unforced drain ever succeeds")
	}
	if o.ProblemMax < 30*time.Second {
		bad("problem-max must be at least 30s, got %s", o.ProblemMax)
	}
	if o.ClockOffset > 24*time.Hour || o.ClockJumpMax > 24*time.Hour {
		bad("clock-offset and clock-jump-max must not exceed 24h, got %s and %s", o.ClockOffset, o.ClockJumpMax)
	}
	if !(o.Latency >= 0 && o.Latency <= 100) {
		bad("latency must be within 0..100, got %v", o.Latency)
	}
	if _, err := newFaultTable(o.DriverFaults); err != nil {
		errs = append(errs, err)
	}
	o.validateFlows(bad)
	if err := o.Config.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.Traces < 0 || o.TraceLen < 1 {
		bad("traces must not be negative and trace-len must be positive, got %d and %d", o.Traces, o.TraceLen)
	}
	return errors.Join(errs...)
}

// A DriverFault makes calls of one driver method answer with one outcome
// at a rate. Transient codes and undecodable errors on a mutating call
// (CreateMachine, InitializeMachine, DeleteMachine, UpdateMachine,
// UpdateMetadata) take effect at the provider half of the time before the
// error is returned, as a timed-out call may; every other code leaves the
// provider unchanged, except Unimplemented on InitializeMachine, which means
// there was nothing to initialize.
type DriverFault struct {
	// Method is the method whose calls fail; MethodNone means every method.
	Method driverapi.Method
	// Code is the code returned.
	Code driverapi.Code
	// Undecodable returns an error that is not a status error instead.
	Undecodable bool
	// Empty answers OK with the identity (providerID, node name) left out,
	// after carrying the call out.
	Empty bool
	// Rate is the probability per call, within 0..1.
	Rate float64
}

// String renders the fault as ParseDriverFaults reads it.
func (f DriverFault) String() string {
	m := "*"
	if f.Method != driverapi.MethodNone {
		m = f.Method.String()
	}
	return m + ":" + f.outcome() + "=" + strconv.FormatFloat(f.Rate, 'g', -1, 64)
}

func (f DriverFault) outcome() string {
	switch {
	case f.Undecodable:
		return "undecodable"
	case f.Empty:
		return "empty"
	}
	return f.Code.String()
}

// ParseDriverFaults reads a driver fault spec: comma-separated items
// METHOD:OUTCOME=RATE, where METHOD is a driver method's name (CreateMachine,
// InitializeMachine, GetMachineStatus, DeleteMachine, ListMachines,
// UpdateMachine, UpdateMetadata) or * for every method, OUTCOME a code name
// (Unavailable, ResourceExhausted, ...), "undecodable" or "empty", and RATE
// a probability. "" and "none" mean no faults. The rates of one method add
// up (those of * count for every method) and must not exceed 1.
//
// NotFound on a call about an existing instance, and OK lies, break the
// driver contract; the checks may then report violations that are the
// provider's, not the lifecycle's.
func ParseDriverFaults(spec string) ([]DriverFault, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == "none" {
		return nil, nil
	}
	var out []DriverFault
	for item := range strings.SplitSeq(spec, ",") {
		item = strings.TrimSpace(item)
		method, rest, ok := strings.Cut(item, ":")
		outcome, rate, ok2 := strings.Cut(rest, "=")
		if !ok || !ok2 {
			return nil, fmt.Errorf("driver fault %q: want METHOD:OUTCOME=RATE", item)
		}
		var f DriverFault
		if method != "*" {
			if f.Method = methodNamed(method); f.Method == driverapi.MethodNone {
				return nil, fmt.Errorf("driver fault %q: unknown method %q", item, method)
			}
		}
		switch outcome {
		case "undecodable":
			f.Undecodable, f.Code = true, driverapi.Unknown
		case "empty":
			f.Empty = true
		default:
			c, err := driverapi.ParseCode(outcome)
			if err != nil || c == driverapi.OK {
				return nil, fmt.Errorf("driver fault %q: unknown outcome %q (a code other than OK, undecodable or empty)", item, outcome)
			}
			f.Code = c
		}
		r, err := strconv.ParseFloat(rate, 64)
		if err != nil || !(r >= 0 && r <= 1) {
			return nil, fmt.Errorf("driver fault %q: rate must be a probability", item)
		}
		f.Rate = r
		out = append(out, f)
	}
	if _, err := newFaultTable(out); err != nil {
		return nil, err
	}
	return out, nil
}

// FormatDriverFaults renders faults as ParseDriverFaults reads them.
func FormatDriverFaults(faults []DriverFault) string {
	if len(faults) == 0 {
		return "none"
	}
	parts := make([]string, len(faults))
	for i, f := range faults {
		parts[i] = f.String()
	}
	return strings.Join(parts, ",")
}

func methodNamed(name string) driverapi.Method {
	for m := driverapi.MethodCreate; m <= driverapi.MethodUpdateMetadata; m++ {
		if m.String() == name {
			return m
		}
	}
	return driverapi.MethodNone
}

// The outcomes of an injected driver fault: the codes 1..17, then
// undecodable and empty.
const (
	outUndecodable = 18
	outEmpty       = 19
	outCount       = 20
	methodCount    = int(driverapi.MethodUpdateMetadata) + 1
)

// faultTable holds, per method, the cumulative rates of the outcomes, so
// one uniform draw picks the outcome of a call.
type faultTable struct {
	cum   [methodCount][outCount]float64
	total [methodCount]float64
}

func newFaultTable(faults []DriverFault) (*faultTable, error) {
	var rates [methodCount][outCount]float64
	for _, f := range faults {
		out := int(f.Code)
		switch {
		case f.Undecodable:
			out = outUndecodable
		case f.Empty:
			out = outEmpty
		case out <= 0 || out >= outUndecodable:
			return nil, fmt.Errorf("driver fault %s: code out of range", f)
		}
		if !(f.Rate >= 0 && f.Rate <= 1) {
			return nil, fmt.Errorf("driver fault %s: rate must be a probability", f)
		}
		if f.Method != driverapi.MethodNone && !f.Method.Valid() {
			return nil, fmt.Errorf("driver fault %s: invalid method", f)
		}
		for m := 1; m < methodCount; m++ {
			if f.Method == driverapi.MethodNone || int(f.Method) == m {
				rates[m][out] += f.Rate
			}
		}
	}
	t := &faultTable{}
	for m := 1; m < methodCount; m++ {
		sum := 0.0
		for o := 1; o < outCount; o++ {
			sum += rates[m][o]
			t.cum[m][o] = sum
		}
		if sum > 1+1e-9 {
			return nil, fmt.Errorf("driver faults of %s add up to %v, more than 1", driverapi.Method(m), sum)
		}
		t.total[m] = sum
	}
	return t, nil
}

// pick returns the outcome of a call of method m for the uniform draw u,
// 0 for none.
func (t *faultTable) pick(m driverapi.Method, u float64) int {
	if u >= t.total[m] {
		return 0
	}
	for o := 1; o < outCount; o++ {
		if u < t.cum[m][o] {
			return o
		}
	}
	return 0
}

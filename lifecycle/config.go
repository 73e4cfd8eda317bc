package lifecycle

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/purelifecycle/machine/retry"
)

// Config holds the settings of the lifecycle, with MCM's flags as defaults
// (doc/mcm-rows.md lists them). Per-machine [Overrides] win over it. Build it with
// [DefaultConfig] and change what you need; [Step] refuses a Config that
// fails [Config.Validate] (rule input.invalid-config).
type Config struct {
	// CreationTimeout bounds how long a machine may take from its creation
	// time to a healthy node (MCM --machine-creation-timeout, 20m). It
	// applies in every phase before Running (MCM issue 1110,
	// https://github.com/gardener/machine-controller-manager/issues/1110).
	CreationTimeout time.Duration
	// HealthTimeout bounds how long a machine may stay Unknown before it is
	// marked Failed (MCM --machine-health-timeout, 10m).
	HealthTimeout time.Duration
	// DrainTimeout bounds the drain, counted from the deletion time, after
	// which it is forced (MCM --machine-drain-timeout, 2h).
	DrainTimeout time.Duration
	// InPlaceUpdateTimeout bounds an in-place update, counted from when the
	// machine became InPlaceUpdating (its node drained and the node agent
	// told to go on): past it, a machine the agent has not reported on is
	// InPlaceUpdateFailed (MCM --machine-inplace-update-timeout, 20m).
	InPlaceUpdateTimeout time.Duration
	// PreserveTimeout bounds a preservation, counted from when it began:
	// then the machine is no longer kept (MCM --machine-preserve-timeout,
	// 96h).
	PreserveTimeout time.Duration
	// MaxEvictRetries bounds the eviction rounds of one unforced drain
	// (MCM --machine-max-evict-retries, 360): a drain with pods left after
	// that many rounds, Config.EvictRetryInterval apart, failed, and begins
	// again after a backoff. Must not be negative.
	MaxEvictRetries int32
	// NodeConditions are the node condition types that make a node
	// unhealthy when their status is not False (MCM --node-conditions).
	// Read-only; entries must not be empty.
	NodeConditions []string
	// NoTargetCluster runs without a cluster for nodes (MCM
	// --target-kubeconfig=none): a created machine becomes Available, no
	// node is awaited, no node or token is touched.
	NoTargetCluster bool
	// WaitCheck is how often a waiting machine is looked at again while its
	// deadline has not passed (MCM's literal one minute).
	WaitCheck time.Duration
	// Replacements bounds how many machines of one owner may be in flight
	// (being replaced, created or deleted) before the fleet limiter grants
	// no more Unknown machines their replacement (MCM's hard-coded
	// maxReplacements = 1, MCM issue 688,
	// https://github.com/gardener/machine-controller-manager/issues/688).
	Replacements ReplacementLimit
	// ZoneOutage holds back the marking as Failed of machines whose zone
	// looks down as a whole; its zero value turns it off.
	ZoneOutage ZoneOutage
	// AutoPreserve is how many Failed machines of one owner [Limit] keeps
	// preserved at most, for diagnosis (MCM's MachineDeployment
	// spec.autoPreserveFailedMachineMax, which MCM's MachineSet enforces
	// with the auto-preserved annotation); 0 turns it off, as a shell
	// whose owners annotate machines themselves leaves it. Must not be
	// negative.
	AutoPreserve int
	// ForceDrainAfter forces the drain of a machine whose node has been
	// NotReady, or ReadonlyFilesystem, for longer than this (MCM's
	// hard-coded 5 minutes).
	ForceDrainAfter time.Duration
	// ForcedDrainTimeout bounds a forced drain: when the pods it deletes
	// are not all gone this long after it was forced, deletion goes on
	// without them (MCM's 1 minute).
	ForcedDrainTimeout time.Duration
	// EvictRetryInterval is the pause between two rounds of a drain's
	// evictions; an unforced drain makes at most DrainTimeout /
	// EvictRetryInterval of them (MCM's 20 seconds).
	EvictRetryInterval time.Duration
	// Retry maps outcome classes to retry periods and adds backoff and
	// jitter (retry.DefaultPolicy: ResourceExhausted retried Long).
	Retry retry.Policy
	// PredecessorWait bounds how long a new incarnation of a machine's name
	// waits, from its creation time, for an older one that is still
	// terminating (Input.PredecessorTerminating). 0 means the machine's
	// drain timeout, which bounds the older incarnation's own drain. Must
	// not be negative.
	PredecessorWait time.Duration
	// VerifyOwner makes the metadata sub-flow check that the instance
	// carries the machine's UID as its owner (GetMachineStatus's OwnerUID),
	// and repair it with UpdateMetadata. Turn it off for
	// providers that cannot report owners.
	VerifyOwner bool
}

// DefaultConfig returns MCM's defaults (doc/mcm-rows.md lists them).
func DefaultConfig() Config {
	return Config{
		CreationTimeout: 20 * time.Minute,
		HealthTimeout:   10 * time.Minute,
		DrainTimeout:    2 * time.Hour,
		MaxEvictRetries: 360,
		NodeConditions:  DefaultNodeConditions(),
		WaitCheck:       time.Minute,
		Retry:           retry.DefaultPolicy(),
		VerifyOwner:     true,

		InPlaceUpdateTimeout: 20 * time.Minute,
		PreserveTimeout:      96 * time.Hour,

		Replacements:       ReplacementLimit{Count: 1},
		ForceDrainAfter:    5 * time.Minute,
		ForcedDrainTimeout: time.Minute,
		EvictRetryInterval: 20 * time.Second,
	}
}

// ZoneOutage is the limiter's meltdown protection per failure domain: when
// at least Count of an owner's unhealthy machines (Unknown or
// InPlaceUpdateFailed, not being deleted), and at least Percent of them,
// are in one zone ([Node.Zone]), that zone looks down as a whole rather
// than its machines broken one by one, and replacing them would only
// move the outage's load onto new machines in the same zone. [Limit] then
// grants none of that zone's machines its replacement until Hold after
// the machine's health timeout; afterwards the normal limit applies.
// Machines of the owner's other zones, and machines of no known zone, are
// granted as usual. Count 0 turns it off.
type ZoneOutage struct {
	// Count is the least number of an owner's unhealthy machines in one
	// zone that makes it look down; 0 turns the protection off.
	Count int
	// Percent is the least share, 0..100, of the owner's unhealthy machines
	// in that zone.
	Percent int
	// Hold is how long past its health timeout a machine of such a zone is
	// held at most.
	Hold time.Duration
}

// on reports whether the protection is on.
func (z ZoneOutage) on() bool { return z.Count > 0 }

// ReplacementLimit is a maximum of machines in flight per owner: Count, or
// Percent of the owner's machines (rounded up, at least one). Exactly one
// of them is set.
type ReplacementLimit struct {
	// Count is the maximum as a number.
	Count int
	// Percent is the maximum as a percentage of the owner's machines, 1..100.
	Percent int
}

// max returns the limit for an owner with total machines.
func (l ReplacementLimit) max(total int) int {
	if l.Percent > 0 {
		n := (total*l.Percent + 99) / 100
		if n < 1 {
			n = 1
		}
		return n
	}
	return l.Count
}

// DefaultNodeConditions returns MCM's default --node-conditions list.
func DefaultNodeConditions() []string {
	return []string{"KernelDeadlock", "ReadonlyFilesystem", "DiskPressure", "NetworkUnavailable"}
}

// MaxTimeout bounds every duration of a Config and of a machine's
// [Overrides]: a year. Durations near the limit of a time.Duration would
// overflow once added to a time or doubled.
const MaxTimeout = 365 * 24 * time.Hour

// MaxNodeConditions bounds the node condition types a Config or a machine
// watches. A node's conditions are checked against them one by one, so the
// check stays linear in the node's conditions and allocates nothing.
const MaxNodeConditions = 64

// ErrInvalidConfig is wrapped by every error [Config.Validate] returns.
var ErrInvalidConfig = errors.New("lifecycle: invalid config")

// Validate reports every problem of the Config at once, each wrapping
// [ErrInvalidConfig]; nil when it is usable.
func (c *Config) Validate() error {
	var errs []error
	c.check(func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	})
	return errors.Join(errs...)
}

// valid reports whether Validate returns nil, without building errors:
// Step calls it at every step.
func (c *Config) valid() bool {
	ok := true
	c.check(func(string, ...any) { ok = false })
	return ok
}

// check calls bad with each problem of the Config, as a format and its
// arguments, and never when the Config is usable. It is the one place the
// rules of a Config are written, for Validate and valid.
func (c *Config) check(bad func(format string, args ...any)) {
	timeout := func(name string, d time.Duration) {
		switch {
		case timeoutInRange(d):
		case d <= 0:
			bad("%s must be positive, got %v", name, d)
		default:
			bad("%s must be at most %v, got %v", name, MaxTimeout, d)
		}
	}
	timeout("CreationTimeout", c.CreationTimeout)
	timeout("HealthTimeout", c.HealthTimeout)
	timeout("DrainTimeout", c.DrainTimeout)
	timeout("InPlaceUpdateTimeout", c.InPlaceUpdateTimeout)
	timeout("PreserveTimeout", c.PreserveTimeout)
	timeout("WaitCheck", c.WaitCheck)
	timeout("ForceDrainAfter", c.ForceDrainAfter)
	timeout("ForcedDrainTimeout", c.ForcedDrainTimeout)
	timeout("EvictRetryInterval", c.EvictRetryInterval)
	if c.PredecessorWait < 0 || c.PredecessorWait > MaxTimeout {
		bad("PredecessorWait must be within 0..%v, got %v", MaxTimeout, c.PredecessorWait)
	}
	if len(c.NodeConditions) > MaxNodeConditions {
		bad("NodeConditions has %d types, more than %d", len(c.NodeConditions), MaxNodeConditions)
	}
	if c.AutoPreserve < 0 {
		bad("AutoPreserve must not be negative, got %d", c.AutoPreserve)
	}
	if c.MaxEvictRetries < 0 {
		bad("MaxEvictRetries must not be negative, got %d", c.MaxEvictRetries)
	}
	if r := c.Replacements; (r.Count > 0) == (r.Percent > 0) || r.Count < 0 || r.Percent < 0 || r.Percent > 100 {
		bad("Replacements must set exactly one of Count (>= 1) or Percent (1..100), got %+v", r)
	}
	if z := c.ZoneOutage; z.Count < 0 || z.Percent < 0 || z.Percent > 100 || z.Hold < 0 || z.Hold > MaxTimeout ||
		z.Count > 0 && z.Hold == 0 || z.Count == 0 && (z.Percent != 0 || z.Hold != 0) {
		bad("ZoneOutage must be zero, or set Count >= 1, Percent within 0..100 and Hold within 1ns..%v, got %+v", MaxTimeout, z)
	}
	for i, t := range c.NodeConditions {
		if t == "" {
			bad("NodeConditions[%d] is empty", i)
		}
	}
	if err := c.Retry.Validate(); err != nil {
		bad("Retry: %w", err)
	}
}

// Checked is a Config that passed [Config.Validate], for [StepInto]. A
// controller checks its configuration once, when it starts, and steps every
// machine with the result; StepInto then does not check the configuration
// again at every step, as [Step] does. A Checked holds its own copy of the
// Config, NodeConditions included, so changing the Config afterwards does
// not reach it; it is read-only and may be shared by any number of workers.
//
// The zero Checked holds no configuration: StepInto refuses it
// with rule input.invalid-config, as Step refuses an invalid Config.
type Checked struct {
	cfg Config
	pre derived
}

// derived holds what a step needs from its configuration beyond the
// Config's fields: computed once by Config.Check, and at every step by Step.
type derived struct {
	// valid reports whether the Config passes Validate.
	valid bool
}

// derive computes what a step derives from c.
func derive(c *Config) derived {
	return derived{valid: c.valid()}
}

// Check validates the Config and returns a [Checked] copy of it, or the
// error of [Config.Validate] and the zero Checked.
func (c Config) Check() (Checked, error) {
	if err := c.Validate(); err != nil {
		return Checked{}, err
	}
	k := Checked{cfg: c, pre: derive(&c)}
	k.cfg.NodeConditions = slices.Clone(c.NodeConditions)
	return k, nil
}

// Config returns a copy of the checked configuration (the zero Config for
// the zero Checked). Changing it does not change k.
func (k *Checked) Config() Config {
	c := k.cfg
	c.NodeConditions = slices.Clone(c.NodeConditions)
	return c
}

// Valid reports whether k came from [Config.Check]: false for the zero
// Checked.
func (k *Checked) Valid() bool { return k.pre.valid }

// timeoutInRange reports whether d lies within 1..MaxTimeout: exactly
// when d-1, unsigned, is below MaxTimeout, one comparison.
func timeoutInRange(d time.Duration) bool {
	return uint64(d-1) < uint64(MaxTimeout)
}

// own returns a per-machine setting when it is set (positive), else the
// Config's: the one rule by which every override wins.
func own(setting, config time.Duration) time.Duration {
	if setting > 0 {
		return setting
	}
	return config
}

// creationTimeout is the effective creation timeout of the object.
func (c *Config) creationTimeout(o *Object) time.Duration {
	return own(o.Overrides.CreationTimeout, c.CreationTimeout)
}

// healthTimeout is the effective health timeout of the object.
func (c *Config) healthTimeout(o *Object) time.Duration {
	return own(o.Overrides.HealthTimeout, c.HealthTimeout)
}

// drainTimeout is the effective drain timeout of the object.
func (c *Config) drainTimeout(o *Object) time.Duration {
	return own(o.Overrides.DrainTimeout, c.DrainTimeout)
}

// inPlaceUpdateTimeout is the effective in-place update timeout of the
// object.
func (c *Config) inPlaceUpdateTimeout(o *Object) time.Duration {
	return own(o.Overrides.InPlaceUpdateTimeout, c.InPlaceUpdateTimeout)
}

// preserveTimeout is the effective preservation timeout of the object.
func (c *Config) preserveTimeout(o *Object) time.Duration {
	return own(o.Overrides.PreserveTimeout, c.PreserveTimeout)
}

// predecessorWait bounds the object's wait for an older incarnation of its
// name: PredecessorWait, else its drain timeout.
func (c *Config) predecessorWait(o *Object) time.Duration {
	if c.PredecessorWait > 0 {
		return c.PredecessorWait
	}
	return c.drainTimeout(o)
}

// maxEvictRetries is MCM's effective eviction retries of a normal drain,
// the eviction rounds of one unforced drain here: min(max evict retries,
// drain timeout / eviction retry interval).
func (c *Config) maxEvictRetries(o *Object) int32 {
	n := c.MaxEvictRetries
	if o.Overrides.MaxEvictRetries > 0 {
		n = o.Overrides.MaxEvictRetries
	}
	if byTime := c.drainTimeout(o) / c.EvictRetryInterval; byTime < time.Duration(n) {
		n = int32(byTime)
	}
	return n
}

// nodeConditions is the effective list of condition types of the object.
func (c *Config) nodeConditions(o *Object) []string {
	if o.Overrides.NodeConditions != nil {
		return o.Overrides.NodeConditions
	}
	return c.NodeConditions
}

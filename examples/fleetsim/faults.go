package fleetsim

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// The fault knobs of Options, named as their flags in cmd/fleetsim: what
// Options.SetFaults keeps, turns off and scales, and what a CI run tries
// one at a time. The magnitudes that shape a fault without making it more
// frequent (ClockJumpMax, FlapMin and FlapMax, CacheLagMax, ProblemMax) and
// the latency of driver calls, which is the environment rather than a
// fault, are not knobs. Nor is the zone outage (Options.ZoneOutage): it is
// off unless a run asks for it, and a run that does keeps it as given.

// knobKind is how a knob is turned off and scaled.
type knobKind uint8

const (
	// knobRate is a probability or a share: 0 turns it off; scaled, it is
	// capped at its cap.
	knobRate knobKind = iota
	// knobDuration is a magnitude (a length, a lag, an offset): 0 turns it
	// off; scaled, it is capped at its cap.
	knobDuration
	// knobDriver is the driver fault spec: nil turns it off; scaled, every
	// rate is multiplied, and when a method's rates would add up to more
	// than driverCap, all of them are scaled down together until the
	// largest sum is driverCap.
	knobDriver
)

// driverCap bounds the scaled driver fault rates of one method, so that
// every method's calls still succeed now and then.
const driverCap = 0.9

// faultKnob is one fault of Options.
type faultKnob struct {
	name string
	kind knobKind
	// parent is the knob this one refines (node-gone happens within flaps,
	// outage-notready within the outage): SetFaults keeping only this knob
	// keeps its parent as it is, or it would have no effect.
	parent string
	rate   func(*Options) *float64
	dur    func(*Options) *time.Duration
	// limit caps a scaled rate or duration.
	limit func(*Options) float64
}

func capAt(v float64) func(*Options) float64 { return func(*Options) float64 { return v } }

// faultKnobs lists the knobs in the order of Options' fields.
var faultKnobs = []faultKnob{
	{name: "driver-faults", kind: knobDriver},
	{name: "flap", rate: func(o *Options) *float64 { return &o.Flap }, limit: capAt(1)},
	{name: "dead", rate: func(o *Options) *float64 { return &o.Dead }, limit: capAt(1)},
	{name: "node-gone", parent: "flap", rate: func(o *Options) *float64 { return &o.NodeGone }, limit: capAt(1)},
	{name: "no-join", rate: func(o *Options) *float64 { return &o.NoJoin }, limit: capAt(1)},
	{name: "drop-key", rate: func(o *Options) *float64 { return &o.DropKey }, limit: capAt(1)},
	{name: "lost-write", rate: func(o *Options) *float64 { return &o.LostWrite }, limit: capAt(1)},
	{name: "write-fail", rate: func(o *Options) *float64 { return &o.WriteFail }, limit: capAt(1)},
	// At 1 no unforced drain would ever succeed.
	{name: "drain-fail", rate: func(o *Options) *float64 { return &o.DrainFail }, limit: capAt(0.9)},
	{name: "crash", rate: func(o *Options) *float64 { return &o.Crash }, limit: capAt(1)},
	{name: "clock-jump", rate: func(o *Options) *float64 { return &o.ClockJump }, limit: capAt(1)},
	{name: "outage", kind: knobDuration, dur: func(o *Options) *time.Duration { return &o.Outage },
		limit: func(o *Options) float64 { return float64(o.Active) }},
	{name: "outage-notready", parent: "outage", rate: func(o *Options) *float64 { return &o.OutageNotReady }, limit: capAt(1)},
	{name: "stale-node", rate: func(o *Options) *float64 { return &o.StaleNode }, limit: capAt(1)},
	{name: "owner-tag-lost", rate: func(o *Options) *float64 { return &o.OwnerTagLost }, limit: capAt(1)},
	{name: "force-remove", rate: func(o *Options) *float64 { return &o.ForceRemove }, limit: capAt(1)},
	{name: "node-read-fail", rate: func(o *Options) *float64 { return &o.NodeReadFail }, limit: capAt(1)},
	{name: "stale-outcome", rate: func(o *Options) *float64 { return &o.StaleOutcome }, limit: capAt(1)},
	{name: "observer-blip", rate: func(o *Options) *float64 { return &o.ObserverBlip }, limit: capAt(1)},
	{name: "cache-lag", rate: func(o *Options) *float64 { return &o.CacheLag }, limit: capAt(1)},
	{name: "fleet-lag", kind: knobDuration, dur: func(o *Options) *time.Duration { return &o.FleetLag },
		limit: capAt(float64(time.Hour))},
	{name: "problem", rate: func(o *Options) *float64 { return &o.Problem }, limit: capAt(1)},
	{name: "force-deletion", rate: func(o *Options) *float64 { return &o.ForceDeletion }, limit: capAt(1)},
	{name: "clock-offset", kind: knobDuration, dur: func(o *Options) *time.Duration { return &o.ClockOffset },
		limit: capAt(float64(24 * time.Hour))},
}

// FaultKnobs returns the names of the fault knobs that Options.SetFaults
// knows, which are the names of their flags in cmd/fleetsim.
func FaultKnobs() []string {
	names := make([]string, len(faultKnobs))
	for i := range faultKnobs {
		names[i] = faultKnobs[i].name
	}
	return names
}

// SetFaults keeps only the fault knob named only, turning every other one
// off ("" keeps them all), then multiplies the knobs it kept by scale:
// rates and shares are capped at 1 (drain-fail at 0.9, so that unforced
// drains still succeed now and then; flap and dead together at 1, both
// scaled down alike when they would exceed it), durations at a bound of
// their own (the outage at the active period), and the driver fault rates
// are scaled down together when a method's would add up to more than 0.9.
// A knob that refines another (node-gone, outage-notready) is kept with its
// parent at the parent's own value, which is not scaled. Knob names are
// those FaultKnobs returns.
func (o *Options) SetFaults(only string, scale float64) error {
	if !(scale >= 0) || math.IsInf(scale, 0) {
		return fmt.Errorf("fault scale must be a non-negative number, got %v", scale)
	}
	var kept *faultKnob
	if only != "" {
		for i := range faultKnobs {
			if faultKnobs[i].name == only {
				kept = &faultKnobs[i]
			}
		}
		if kept == nil {
			return fmt.Errorf("unknown fault knob %q; the knobs are %s", only, strings.Join(FaultKnobs(), ", "))
		}
	}
	for i := range faultKnobs {
		k := &faultKnobs[i]
		switch {
		case kept == nil || k == kept:
			k.scale(o, scale)
		case k.name != kept.parent:
			k.off(o)
		}
	}
	if s := o.Flap + o.Dead; s > 1 {
		o.Flap, o.Dead = o.Flap/s, o.Dead/s
	}
	return nil
}

func (k *faultKnob) off(o *Options) {
	switch k.kind {
	case knobRate:
		*k.rate(o) = 0
	case knobDuration:
		*k.dur(o) = 0
	case knobDriver:
		o.DriverFaults = nil
	}
}

func (k *faultKnob) scale(o *Options, x float64) {
	switch k.kind {
	case knobRate:
		r := k.rate(o)
		*r = min(*r*x, k.limit(o))
	case knobDuration:
		d := k.dur(o)
		*d = time.Duration(min(float64(*d)*x, k.limit(o)))
	case knobDriver:
		faults := make([]DriverFault, len(o.DriverFaults))
		var sums [methodCount]float64
		for i, f := range o.DriverFaults {
			f.Rate *= x
			faults[i] = f
			for m := 1; m < methodCount; m++ {
				if int(f.Method) == 0 || int(f.Method) == m {
					sums[m] += f.Rate
				}
			}
		}
		if top := slices.Max(sums[1:]); top > driverCap {
			for i := range faults {
				faults[i].Rate *= driverCap / top
			}
		}
		o.DriverFaults = faults
	}
}

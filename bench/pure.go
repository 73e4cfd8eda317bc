package bench

import (
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// The pure baselines: hand-written functions of the library's own shape,
// Step(Config, Input) Decision, over the library's real Config, Input and
// Status and a Decision of exactly lifecycle.Decision's size and layout
// (TestBaselineSizes checks it). Their logic is a toy, the health edges of
// Table and nothing else: a phase switch on the node's Ready condition, one
// event, a retry period. What they cost is what moving these values costs,
// the floor for any function of this shape; the library's time above it is
// its bookkeeping.

// PureDecision mirrors lifecycle.Decision field by field.
type PureDecision struct {
	Status    lifecycle.Status
	Changed   bool
	Effects   PureEffects
	Call      driverapi.Call
	OpID      lifecycle.OpID
	Requeue   time.Duration
	Period    time.Duration
	Rule      lifecycle.Rule
	Wait      lifecycle.Wait
	Anomalies lifecycle.Anomalies
}

// PureEffects mirrors lifecycle.Effects.
type PureEffects struct {
	N    uint8
	List [lifecycle.MaxEffects]lifecycle.Effect
}

// PureValue is the value baseline (impl=pure-value): configuration and
// input by value, the decision returned by value.
//
//go:noinline
func PureValue(cfg lifecycle.Config, in lifecycle.Input) PureDecision {
	d := PureDecision{Status: in.Status}
	pureDecide(&d, &cfg, &in)
	return d
}

// PureInto is the out-parameter baseline (impl=pure-into): it reads cfg
// and in through pointers and writes every field of d the Decision's API
// can show (the unused effect slots it leaves as they are, since Effects
// hides them), copying the status once.
//
//go:noinline
func PureInto(d *PureDecision, cfg *lifecycle.Config, in *lifecycle.Input) {
	d.Status = in.Status
	d.Call = driverapi.Call{}
	pureDecide(d, cfg, in)
}

// PureIntoZeroing is PureInto clearing the whole decision first, as
// lifecycle.StepInto did until it learnt to clear only the effect slots the
// previous decision used (impl=pure-into-zeroing); the difference to
// PureInto is what clearing ~1 KB costs.
//
//go:noinline
func PureIntoZeroing(d *PureDecision, cfg *lifecycle.Config, in *lifecycle.Input) {
	*d = PureDecision{Status: in.Status}
	pureDecide(d, cfg, in)
}

// pureDecide is the toy decision on d, whose Status holds the input's.
func pureDecide(d *PureDecision, cfg *lifecycle.Config, in *lifecycle.Input) {
	st := &d.Status
	ready := false
	for i := range in.Node.Conditions {
		if c := &in.Node.Conditions[i]; c.Type == lifecycle.ConditionReady {
			ready = c.Status == lifecycle.ConditionTrue
			break
		}
	}
	now := lifecycle.StampOf(in.Now)
	next, rule := st.Phase, lifecycle.RuleHealthy
	switch {
	case ready && st.Phase != phase.Running:
		next, rule = phase.Running, lifecycle.RuleHealthRejoined
	case !ready && st.Phase == phase.Running:
		next, rule = phase.Unknown, lifecycle.RuleHealthUnhealthy
	case !ready:
		rule = lifecycle.RuleHealthWaitUnknown
	}
	d.Changed = next != st.Phase
	if d.Changed {
		st.Phase, st.PhaseSince, st.Conditions = next, now, in.Node.Conditions
		st.Seq++
		d.Effects.N = 1
		d.Effects.List[0] = lifecycle.Effect{Kind: lifecycle.KindEvent, Rule: rule, Warning: !ready}
		d.OpID = lifecycle.OpID(uint64(st.Seq)<<24 | uint64(rule)<<8 | 1)
	} else {
		d.Effects.N = 0
		d.OpID = 0
	}
	if ready {
		d.Period, d.Requeue = retry.Long, retry.Long
		d.Wait = lifecycle.Wait{}
	} else {
		d.Period, d.Requeue = cfg.WaitCheck, cfg.WaitCheck
		d.Wait = lifecycle.Wait{For: lifecycle.WaitRecovery, Since: st.PhaseSince, Until: st.PhaseSince.Add(cfg.HealthTimeout)}
	}
	d.Rule, d.Anomalies = rule, 0
}

package lifecycle_test

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// On any input, with any valid configuration, Step keeps every promise a
// single decision shows (lifecycletest.Check), never changes its input and
// gives the same decision twice. FuzzStep checks the same property from
// fuzzed bytes.
func TestPropertyEveryDecisionKeepsThePromises(t *testing.T) {
	rapid.Check(t, stepProperty)
}

// Step refuses exactly the configurations Validate rejects: its hot-path
// check and Validate cannot drift apart.
func TestPropertyStepRefusesExactlyInvalidConfigs(t *testing.T) {
	in := withIdentity(newInput(), phase.Running)
	in.Node = healthyNode()
	durations := rapid.SampledFrom([]time.Duration{-time.Second, 0, 1, time.Minute})
	counts := rapid.SampledFrom([]int32{-1, 0, 3})
	rapid.Check(t, func(t *rapid.T) {
		cfg := lifecycle.DefaultConfig()
		for _, d := range []*time.Duration{&cfg.CreationTimeout, &cfg.HealthTimeout, &cfg.DrainTimeout, &cfg.WaitCheck,
			&cfg.ForceDrainAfter, &cfg.ForcedDrainTimeout, &cfg.EvictRetryInterval, &cfg.Retry.ResourceExhausted,
			&cfg.Retry.MaxBackoff} {
			if rapid.IntRange(0, 5).Draw(t, "change") == 0 {
				*d = durations.Draw(t, "duration")
			}
		}
		if rapid.Bool().Draw(t, "change retries") {
			cfg.MaxEvictRetries = counts.Draw(t, "max")
		}
		if rapid.IntRange(0, 3).Draw(t, "change jitter") == 0 {
			cfg.Retry.JitterPercent = rapid.IntRange(-5, 105).Draw(t, "jitter")
		}
		if rapid.IntRange(0, 3).Draw(t, "change replacements") == 0 {
			cfg.Replacements = lifecycle.ReplacementLimit{Count: rapid.IntRange(-1, 2).Draw(t, "count"),
				Percent: rapid.IntRange(-1, 101).Draw(t, "percent")}
		}
		if rapid.IntRange(0, 5).Draw(t, "empty condition") == 0 {
			cfg.NodeConditions = append(slices.Clone(cfg.NodeConditions), "")
		}
		d := lifecycle.Step(cfg, in)
		refused := d.Rule == lifecycle.RuleInvalidConfig
		err := cfg.Validate()
		if refused != (err != nil) {
			t.Fatalf("Step refused: %v; Validate: %v; config %+v", refused, err, cfg)
		}
		// Check accepts exactly what Validate accepts, and StepInto with
		// its result decides as Step: the zero Checked of a refused
		// configuration is refused the same way.
		k, kerr := cfg.Check()
		if (kerr != nil) != (err != nil) || k.Valid() != (err == nil) {
			t.Fatalf("Check: %v, valid %v; Validate: %v", kerr, k.Valid(), err)
		}
		var into lifecycle.Decision
		lifecycle.StepInto(&into, &k, &in)
		if !reflect.DeepEqual(d, into) {
			t.Fatalf("StepInto with the checked config differs from Step:\nStep:     %s\nStepInto: %s", d.String(), into.String())
		}
	})
}

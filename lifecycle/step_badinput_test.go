package lifecycle_test

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// Bad input to Step: odd or contradictory inputs, configs and outcomes, and
// values out of the range the lifecycle can represent. The dispatch and its
// rows: step_test.go.

// Bad input never panics and loses nothing: each gets a clear rule or
// anomaly, and the status is kept.
func TestBadInput(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	recorded := withIdentity(newInput(), phase.Pending)

	t.Run("zero Now", func(t *testing.T) {
		in := recorded
		in.Now = time.Time{}
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleZeroNow, d.Rule)
		require.Equal(t, in.Status, d.Status)
		require.True(t, d.Done())
		require.Equal(t, retry.Short, d.Requeue)
	})
	t.Run("object without UID", func(t *testing.T) {
		in := recorded
		in.Object.UID = ""
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleInvalidObject, d.Rule)
		require.Equal(t, in.Status, d.Status)
	})
	t.Run("unknown phase in the status", func(t *testing.T) {
		in := recorded
		in.Status.Phase = phase.Phase(42)
		d := lifecycle.Step(cfg, in)
		require.Equal(t, lifecycle.RuleInvalidStatus, d.Rule)
		require.Equal(t, in.Status, d.Status, "kept as it is")
		require.Equal(t, retry.Long, d.Requeue)
	})
	t.Run("unknown stage or flag in the status", func(t *testing.T) {
		in := recorded
		in.Status.Stage = lifecycle.Stage(200)
		require.Equal(t, lifecycle.RuleInvalidStatus, lifecycle.Step(cfg, in).Rule)
		in = recorded
		in.Status.Flags = 1 << 16
		require.Equal(t, lifecycle.RuleInvalidStatus, lifecycle.Step(cfg, in).Rule)
	})
	t.Run("invalid config", func(t *testing.T) {
		bad := cfg
		bad.CreationTimeout = 0
		bad.Retry.JitterPercent = 300
		d := step(t, bad, recorded)
		require.Equal(t, lifecycle.RuleInvalidConfig, d.Rule)
		require.Equal(t, recorded.Status, d.Status)
		err := bad.Validate()
		require.True(t, errors.Is(err, lifecycle.ErrInvalidConfig))
		require.ErrorContains(t, err, "CreationTimeout must be positive")
		require.ErrorContains(t, err, "Retry")
		require.NoError(t, cfg.Validate())
	})
	t.Run("StepInto with the zero Checked", func(t *testing.T) {
		var zero lifecycle.Checked
		require.False(t, zero.Valid())
		var d lifecycle.Decision
		lifecycle.StepInto(&d, &zero, &recorded)
		require.Equal(t, lifecycle.RuleInvalidConfig, d.Rule)
		require.Equal(t, recorded.Status, d.Status)
		require.Equal(t, retry.Long, d.Requeue)
		require.Equal(t, lifecycle.Config{}, zero.Config())
	})
	t.Run("Check of an invalid config", func(t *testing.T) {
		bad := cfg
		bad.WaitCheck = -time.Second
		k, err := bad.Check()
		require.ErrorIs(t, err, lifecycle.ErrInvalidConfig)
		require.Equal(t, bad.Validate().Error(), err.Error())
		require.False(t, k.Valid())
	})
	t.Run("Check keeps its own copy of the config", func(t *testing.T) {
		mine := cfg
		mine.NodeConditions = []string{"DiskPressure"}
		k, err := mine.Check()
		require.NoError(t, err)
		mine.NodeConditions[0] = "" // now invalid; k must not see it
		mine.HealthTimeout = 0
		got := k.Config()
		require.Equal(t, []string{"DiskPressure"}, got.NodeConditions)
		require.Equal(t, cfg.HealthTimeout, got.HealthTimeout)
		got.NodeConditions[0] = "Changed"
		require.Equal(t, []string{"DiskPressure"}, k.Config().NodeConditions)
		var d lifecycle.Decision
		lifecycle.StepInto(&d, &k, &recorded)
		require.NotEqual(t, lifecycle.RuleInvalidConfig, d.Rule)
		require.Equal(t, lifecycle.Step(k.Config(), recorded), d)
	})
	t.Run("config with an empty node condition", func(t *testing.T) {
		bad := cfg
		bad.NodeConditions = []string{"DiskPressure", ""}
		require.ErrorContains(t, bad.Validate(), "NodeConditions[1] is empty")
		require.Equal(t, lifecycle.RuleInvalidConfig, step(t, bad, recorded).Rule)
	})
	t.Run("a deletion op's outcome for a machine not being deleted", func(t *testing.T) {
		// Found by the property test: an outcome naming the drain (or the
		// finalizer's removal) went on to DeleteMachine (or "gone") for an
		// object whose deletion was never requested.
		in := deletingInput()
		in.Node.VolumesAttached = 0
		d := step(t, cfg, in)
		for d.OpID.Rule() != lifecycle.RuleDeleteDrain && d.Rule != lifecycle.RuleDeleteDone {
			in = then(in, d, driverapi.Result{})
			d = step(t, cfg, in)
		}
		require.Equal(t, lifecycle.RuleDeleteDrain, d.OpID.Rule(), d.String())
		next := then(in, d, driverapi.Result{})
		next.Object.DeletionTime = time.Time{}
		got := step(t, cfg, next)
		require.True(t, got.Anomalies.Has(lifecycle.AnomalyBadOutcome), got.String())
		require.NotEqual(t, driverapi.MethodDelete, got.Call.Method, got.String())
		require.NotEqual(t, lifecycle.RuleDeleteDrained, got.Rule)

		// The same op claiming no effect (the count is the OpID's low
		// byte): no decision has such an OpID.
		zero := then(in, d, driverapi.Result{})
		zero.Outcome.OpID &^= 0xff
		zero.Outcome.Ran = 0
		got = step(t, cfg, zero)
		require.True(t, got.Anomalies.Has(lifecycle.AnomalyBadOutcome), got.String())
		require.NotEqual(t, lifecycle.RuleDeleteDrained, got.Rule)
	})
	t.Run("a creation answer for a machine with a recorded instance", func(t *testing.T) {
		// An outcome of the lookup or of CreateMachine, whose sequence
		// number matches, for a Running machine: carried on, it recorded
		// the instance it names over the machine's own.
		for _, op := range []struct {
			rule   lifecycle.Rule
			method driverapi.Method
		}{{lifecycle.RuleCreateLookup, driverapi.MethodGetStatus}, {lifecycle.RuleCreateVMNotFound, driverapi.MethodCreate}} {
			in := runningInput()
			// The OpID packs the sequence number, the rule and the number
			// of effects (decision.go); no decision emits this one here.
			in.Outcome = &lifecycle.Outcome{OpID: lifecycle.OpID(uint64(in.Status.Seq)<<24 | uint64(op.rule)<<8 | 1), Ran: 1,
				Result: driverapi.Result{Method: op.method, ProviderID: "fake:///eu-1/vm-other", NodeName: "node-other"}}
			got := step(t, cfg, in)
			require.True(t, got.Anomalies.Has(lifecycle.AnomalyBadOutcome), "%s: %s", op.rule, got.String())
			require.Equal(t, in.Status.ProviderID, got.Status.ProviderID, op.rule.String())
			require.Equal(t, lifecycle.StageNone, got.Status.Stage, op.rule.String())
			require.NotEqual(t, driverapi.MethodInitialize, got.Call.Method, op.rule.String())
		}
	})
	t.Run("an answer of an op the status could not have asked", func(t *testing.T) {
		// Outcomes whose sequence number matches, with the op of another
		// flow: carried on, the first set the applied generation of a
		// machine not Running, the second decided a health timeout for a
		// Running machine, the third initialized a machine past creation.
		pending := withIdentity(newInput(), phase.Pending)
		for _, tc := range []struct {
			name   string
			in     lifecycle.Input
			rule   lifecycle.Rule
			method driverapi.Method
		}{
			{"UpdateMachine for a Pending machine", pending, lifecycle.RuleUpdate, driverapi.MethodUpdate},
			{"the confirmation of a health timeout for a Running machine", runningInput(), lifecycle.RuleHealthConfirm, driverapi.MethodGetStatus},
			{"InitializeMachine for a Running machine", runningInput(), lifecycle.RuleCreateCreated, driverapi.MethodInitialize},
		} {
			in := tc.in
			in.Object.UpdateGeneration = 0
			in.Outcome = &lifecycle.Outcome{OpID: lifecycle.OpID(uint64(in.Status.Seq)<<24 | uint64(tc.rule)<<8 | 1), Ran: 1,
				Result: driverapi.Result{Method: tc.method, Generation: 7, ProviderID: providerID, NodeName: nodeName}}
			got := step(t, cfg, in)
			require.True(t, got.Anomalies.Has(lifecycle.AnomalyBadOutcome), "%s: %s", tc.name, got.String())
			require.Equal(t, in.Status.AppliedGeneration, got.Status.AppliedGeneration, tc.name)
			require.Equal(t, in.Status.Phase, got.Status.Phase, tc.name)
			require.NotEqual(t, lifecycle.RuleUpdateApplied, got.Rule, tc.name)
			require.NotEqual(t, lifecycle.RuleHealthTimeout, got.Rule, tc.name)
		}
	})
	t.Run("a lookup by providerID answered about another instance", func(t *testing.T) {
		in := adoptedCreating(phase.None, lastop.Operation{}, true)
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleCreateLookup, d.OpID.Rule())
		other := ok("fake:///eu-1/vm-other", "node-other")
		got := step(t, cfg, then(in, d, other))
		require.True(t, got.Anomalies.Has(lifecycle.AnomalyBadOutcome), got.String())
		require.Equal(t, providerID, got.Status.ProviderID)
		require.Equal(t, nodeName, got.Status.NodeName)
	})
	t.Run("driver code outside 0..17 is undecodable", func(t *testing.T) {
		in := newInput()
		d := step(t, cfg, in)
		d = step(t, cfg, then(in, d, driverapi.Result{Code: driverapi.Code(99), Message: "??"}))
		require.Equal(t, lifecycle.RuleCreateLookupUndecodable, d.Rule)
		require.True(t, d.Anomalies.Has(lifecycle.AnomalyUnknownCode))
		require.False(t, d.Changed)
	})
	t.Run("now before the creation time: no deadline fires", func(t *testing.T) {
		in := newInput()
		in.Object.Overrides.CreationTimeout = time.Minute
		in.Now = t0.Add(-time.Hour)
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleCreateLookup, d.Rule)
		require.True(t, d.Anomalies.Has(lifecycle.AnomalyClockBehind))
	})
	t.Run("zero creation time: no deadline to count", func(t *testing.T) {
		in := newInput()
		in.Object.CreationTime = time.Time{}
		in.Now = t0.Add(48 * time.Hour)
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleCreateLookup, d.Rule)
	})
	t.Run("retry time far in the future after a clock jump is clamped", func(t *testing.T) {
		in := newInput()
		in.Status.Phase = phase.CrashLoopBackOff
		in.Status.Stage = lifecycle.StageCreating
		in.Status.RetryAfter = lifecycle.StampOf(in.Now.Add(72 * time.Hour))
		d := step(t, cfg, in)
		require.Equal(t, lifecycle.RuleCreateLookup, d.Rule)
		require.True(t, d.Anomalies.Has(lifecycle.AnomalyStampClamped))
		require.Equal(t, lifecycle.StampOf(in.Now), d.Status.RetryAfter)
		require.True(t, d.Changed)
	})
	t.Run("OK without providerID loses nothing (B1)", func(t *testing.T) {
		in := newInput()
		ds := run(t, cfg, in, notFound, ok("", ""))
		d := ds[2]
		require.Equal(t, lifecycle.RuleCreateEmptyIdentity, d.Rule)
		require.Equal(t, lifecycle.StageCreating, d.Status.Stage)
		// The next pass looks the instance up on the same key.
		next := lastInput(in, ds, notFound, ok("", ""))
		next.Status, next.Outcome = d.Status, nil
		again := step(t, cfg, next)
		require.Equal(t, driverapi.MethodGetStatus, again.Call.Method)
		require.Equal(t, "uid-1/0", again.Call.IdempotencyKey())
	})
}

// Whatever the input, Step answers: a sweep over odd combinations.
func TestStepNeverPanics(t *testing.T) {
	cfgs := []lifecycle.Config{lifecycle.DefaultConfig(), {}, func() lifecycle.Config {
		c := lifecycle.DefaultConfig()
		c.NoTargetCluster = true
		return c
	}()}
	results := []driverapi.Result{{}, notFound, undecodable("x"), fail(driverapi.Uninitialized, ""),
		{Code: 200}, ok("", ""), ok(providerID, ""), {Method: driverapi.Method(77)}}
	for _, cfg := range cfgs {
		for p := range phase.Phase(phase.Count + 1) {
			for s := range lifecycle.Stage(4) {
				for _, r := range results {
					in := newInput()
					in.Status.Phase, in.Status.Stage = p, s
					d := lifecycle.Step(cfg, in)
					in.Status = d.Status
					in.Outcome = &lifecycle.Outcome{OpID: d.OpID, Ran: d.Effects.Len(), Result: r}
					_ = lifecycle.Step(cfg, in)
					in.Outcome.Ran = -1
					_ = lifecycle.Step(cfg, in)
				}
			}
		}
	}
}

// Step never changes its input: not the values, not the slices and maps it
// reads, not the outcome it is pointed to. Checked on every step of the
// creation happy path and on a sweep of odd inputs (the row tests check it
// on every case too, through step).
func TestStepNeverChangesItsInput(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	inputs := creationHappyPath(t)
	for p := range phase.Phase(phase.Count) {
		in := withIdentity(newInput(), p)
		in.Node = healthyNode()
		in.Node.Taints = lifecycle.InstanceNotReady | lifecycle.CriticalComponentsNotReady
		in.TokenExists = true
		in.Object.Overrides.NodeConditions = []string{"DiskPressure"}
		inputs = append(inputs, in)
		in.Object.DeletionTime = t0.Add(time.Hour)
		inputs = append(inputs, in)
	}
	for i, in := range inputs {
		before := deepCopy(in)
		cfgBefore := cfg
		cfgBefore.NodeConditions = cloneStrings(cfg.NodeConditions)
		d := lifecycle.Step(cfg, in)
		require.Equal(t, before, in, "input %d changed by %s", i, d.Rule)
		require.Equal(t, cfgBefore, cfg, "config changed by %s", d.Rule)
		var into lifecycle.Decision
		lifecycle.StepInto(&into, checked(t, cfg), &in)
		require.Equal(t, before, in, "input %d changed by StepInto", i)
		require.Equal(t, d, into, "Step and StepInto agree")
	}
}

// Input values out of the range the lifecycle can represent or work with
// are refused with a rule, never wrapped or let through to overflow.
func TestBadInputOutOfRange(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	year := func(y int) time.Time { return time.Date(y, 6, 1, 0, 0, 0, 0, time.UTC) }
	for _, tc := range []struct {
		name string
		in   func() lifecycle.Input
	}{
		{"Now in the year 1600", func() lifecycle.Input { in := withIdentity(newInput(), phase.Pending); in.Now = year(1600); return in }},
		{"Now in the year 3000", func() lifecycle.Input { in := withIdentity(newInput(), phase.Pending); in.Now = year(3000); return in }},
		{"a creation time in the year 1600", func() lifecycle.Input { in := newInput(); in.Object.CreationTime = year(1600); return in }},
		{"a deletion time in the year 9999", func() lifecycle.Input { in := deletingInput(); in.Object.DeletionTime = year(9999); return in }},
		{"the observer's since in the year 1", func() lifecycle.Input {
			in := unknownInput()
			in.Observer.Since = time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC)
			return in
		}},
		{"a node-condition list of a thousand types", func() lifecycle.Input {
			in := runningInput()
			for i := range 1000 {
				in.Object.Overrides.NodeConditions = append(in.Object.Overrides.NodeConditions, "C"+strconv.Itoa(i))
			}
			return in
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in()
			d := step(t, cfg, in)
			require.Equal(t, lifecycle.RuleInputOutOfRange, d.Rule, d.String())
			require.False(t, d.Changed, "the status is kept")
			require.Zero(t, d.Effects.Len())
		})
	}
	t.Run("StampOf saturates", func(t *testing.T) {
		require.Equal(t, lifecycle.Stamp(math.MaxInt64), lifecycle.StampOf(year(3000)))
		require.Equal(t, lifecycle.Stamp(math.MinInt64), lifecycle.StampOf(year(1600)))
		require.True(t, lifecycle.InStampRange(year(2026)))
		require.True(t, lifecycle.InStampRange(time.Time{}), "the zero time is the unset stamp")
		require.False(t, lifecycle.InStampRange(year(1600)))
		require.False(t, lifecycle.InStampRange(year(2263)))
	})
}

// Retry periods near the limit of a duration overflow when doubled or
// added to a time: a Config with them is refused.
func TestConfigRefusesHugePeriods(t *testing.T) {
	for _, set := range []func(*lifecycle.Config){
		func(c *lifecycle.Config) { c.Retry.MaxBackoff = math.MaxInt64 - 1 },
		func(c *lifecycle.Config) { c.Retry.ResourceExhausted = math.MaxInt64 / 2 },
		func(c *lifecycle.Config) { c.HealthTimeout = math.MaxInt64 },
		func(c *lifecycle.Config) { c.NodeConditions = make([]string, 1000) },
	} {
		cfg := lifecycle.DefaultConfig()
		set(&cfg)
		require.Error(t, cfg.Validate())
		require.Equal(t, lifecycle.RuleInvalidConfig, lifecycle.Step(cfg, unknownInput()).Rule)
	}
}

// A LastOperation detail is bounded: a patch of 200,000 metadata keys
// names the first keys and how many more, within 1 KiB; a provider error
// of a megabyte is cut.
func TestLastOperationDetailIsBounded(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	in := runningInput()
	in.Object.Metadata = map[string]string{}
	for i := range 200_000 {
		in.Object.Metadata["key-"+strconv.Itoa(i)] = "v"
	}
	d := step(t, cfg, in)
	require.Equal(t, lifecycle.RuleMetadataPatch, d.OpID.Rule(), d.Rule)
	require.LessOrEqual(t, len(d.Status.LastOp.Detail), 1024)
	require.Contains(t, d.Status.LastOp.Detail, "and 19")
	require.True(t, strings.HasPrefix(d.Status.LastOp.Detail, "key-0, key-1, "), d.Status.LastOp.Detail[:40])

	in = unknownInput()
	in.Grant.Fail = true
	d = step(t, cfg, in)
	big := fail(driverapi.Unavailable, strings.Repeat("x", 1<<20))
	d = step(t, cfg, then(in, d, big))
	require.Equal(t, lifecycle.RuleHealthConfirmFailed, d.Rule)
	in = then(in, d, driverapi.Result{})
	in.Now = in.Now.Add(time.Hour)
	in.Outcome = nil
	d = step(t, cfg, in)
	d = step(t, cfg, then(in, d, fail(driverapi.NotFound, strings.Repeat("y", 1<<20))))
	require.Equal(t, lifecycle.RuleHealthTimeout, d.Rule)
	require.LessOrEqual(t, len(d.Status.LastOp.Detail), 1024)
	require.Less(t, len(lifecycle.Describe(&d.Status, machineName)), 4096)
}

package machines

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/lifecycle"
)

// newTestMetrics returns metrics registered with a fresh registry, over a
// fake client that holds no machines.
func newTestMetrics(t *testing.T) (*Metrics, *prometheus.Registry) {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	reg := prometheus.NewRegistry()
	cfg := lifecycle.DefaultConfig()
	m, err := NewMetrics(reg, fake.NewClientBuilder().WithScheme(scheme).Build(), &cfg, time.Now)
	require.NoError(t, err)
	return m, reg
}

func newTestPass() *pass {
	return &pass{m: &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m", UID: "uid-1"}},
		log: logr.Discard()}
}

// recorded drains the events the fake recorder holds.
func recorded(rec *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// reasons returns the "type reason" prefix of each recorded event.
func reasons(evs []string) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		f := strings.Fields(e)
		out[i] = f[0] + " " + f[1]
	}
	return out
}

func TestAnomalyEventsAreRecordedOncePerPassAndInterval(t *testing.T) {
	metrics, _ := newTestMetrics(t)
	rec := events.NewFakeRecorder(100)
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	r := &Reconciler{recorder: rec, metrics: metrics, now: func() time.Time { return now }}

	// A pass of the most steps a pass has, every one reporting the clamped
	// stamp, one of them also the adoption.
	p := newTestPass()
	for step := range lifecycle.MaxStepsPerPass {
		d := &lifecycle.Decision{Rule: lifecycle.RuleHealthy, Anomalies: lifecycle.AnomalyStampClamped}
		if step == 3 {
			d.Rule = lifecycle.RuleCreateAdopted
			d.Anomalies |= lifecycle.AnomalyAdopted
		}
		r.decided(p, step, d)
	}
	evs := recorded(rec)
	require.Equal(t, []string{"Warning StatusStampClamped", "Warning StatusAdopted"}, reasons(evs))
	require.Contains(t, evs[0], "stamp-clamped: ")
	require.Contains(t, evs[0], "(rule health.healthy: "+lifecycle.RuleHealthy.Text()+")")
	require.Contains(t, evs[1], "adopted: ")
	require.Contains(t, evs[1], "(rule create.adopted: ")

	// The metric counts every decision's anomaly, not once per pass.
	require.Equal(t, float64(lifecycle.MaxStepsPerPass),
		testutil.ToFloat64(metrics.anomalies.WithLabelValues("stamp-clamped")))
	require.Equal(t, 1.0, testutil.ToFloat64(metrics.anomalies.WithLabelValues("adopted")))
	require.Equal(t, 0.0, testutil.ToFloat64(metrics.anomalies.WithLabelValues("clock-behind")))

	// A pass within the interval does not report it again, nor does a
	// pass of another machine hide it; a pass after the interval does.
	now = now.Add(repeatInterval - time.Second)
	p = newTestPass()
	r.decided(p, 0, &lifecycle.Decision{Rule: lifecycle.RuleHealthy, Anomalies: lifecycle.AnomalyStampClamped})
	require.Empty(t, recorded(rec))
	other := newTestPass()
	other.m.UID = "uid-2"
	r.decided(other, 0, &lifecycle.Decision{Rule: lifecycle.RuleHealthy, Anomalies: lifecycle.AnomalyStampClamped})
	require.Equal(t, []string{"Warning StatusStampClamped"}, reasons(recorded(rec)))
	now = now.Add(time.Second)
	p = newTestPass()
	r.decided(p, 0, &lifecycle.Decision{Rule: lifecycle.RuleHealthy, Anomalies: lifecycle.AnomalyStampClamped})
	require.Equal(t, []string{"Warning StatusStampClamped"}, reasons(recorded(rec)))
}

func TestEveryAnomalyOfADecisionIsReported(t *testing.T) {
	metrics, _ := newTestMetrics(t)
	rec := events.NewFakeRecorder(100)
	r := &Reconciler{recorder: rec, metrics: metrics, now: time.Now}

	var all lifecycle.Anomalies
	for i := range anomalyBits {
		if bit := lifecycle.Anomalies(1) << i; bit.String() != "" {
			all |= bit
		}
	}
	p := newTestPass()
	r.decided(p, 0, &lifecycle.Decision{Rule: lifecycle.RuleIdle, Anomalies: all})
	r.decided(p, 1, &lifecycle.Decision{Rule: lifecycle.RuleIdle, Anomalies: all})
	evs := recorded(rec)
	var want []string
	forEachAnomaly(all, func(bit lifecycle.Anomalies) {
		reason, _ := anomalyReport(bit)
		want = append(want, "Warning "+reason)
		require.Equal(t, 2.0, testutil.ToFloat64(metrics.anomalies.WithLabelValues(bit.String())), bit.String())
	})
	require.Equal(t, want, reasons(evs))
}

func TestEveryAnomalyHasItsOwnReason(t *testing.T) {
	camel := regexp.MustCompile(`^[A-Z][a-z]+(?:[A-Z][a-z]+)+$`)
	seen := map[string]lifecycle.Anomalies{}
	for i := range anomalyBits {
		bit := lifecycle.Anomalies(1) << i
		if bit.String() == "" {
			continue // a bit the lifecycle does not use
		}
		reason, text := anomalyReport(bit)
		require.NotEqual(t, reasonUnknownAnomaly, reason, "anomaly %s has no reason of its own", bit)
		require.Regexp(t, camel, reason)
		require.NotEmpty(t, text)
		prev, dup := seen[reason]
		require.False(t, dup, "anomalies %s and %s share reason %s", prev, bit, reason)
		seen[reason] = bit
		require.Equal(t, bit.String(), anomalyName(bit))
	}
	for bit, want := range map[lifecycle.Anomalies]string{
		lifecycle.AnomalyStampClamped: "StatusStampClamped",
		lifecycle.AnomalyAdopted:      "StatusAdopted",
		lifecycle.AnomalyBadOutcome:   "OutcomeRefused",
	} {
		reason, _ := anomalyReport(bit)
		require.Equal(t, want, reason)
	}

	// A bit the lifecycle may add later is still reported.
	unknown := lifecycle.Anomalies(1) << (anomalyBits - 1)
	if unknown.String() == "" {
		reason, _ := anomalyReport(unknown)
		require.Equal(t, reasonUnknownAnomaly, reason)
		require.Equal(t, "bit-15", anomalyName(unknown))
	}
}

func TestRefusedInputIsRecordedOncePerPassAndCountedByRule(t *testing.T) {
	metrics, _ := newTestMetrics(t)
	rec := events.NewFakeRecorder(100)
	r := &Reconciler{recorder: rec, metrics: metrics, now: time.Now}

	p := newTestPass()
	for step := range 3 {
		r.decided(p, step, &lifecycle.Decision{Rule: lifecycle.RuleInvalidStatus})
	}
	evs := recorded(rec)
	require.Equal(t, []string{"Warning " + ReasonInputRefused}, reasons(evs))
	require.Contains(t, evs[0], "rule input.invalid-status: "+lifecycle.RuleInvalidStatus.Text())

	// A refusing rule with a reason of its own is recorded under it.
	p = newTestPass()
	p.m.UID = "uid-out-of-range"
	r.decided(p, 0, &lifecycle.Decision{Rule: lifecycle.RuleInputOutOfRange})
	require.Equal(t, []string{"Warning " + lifecycle.RuleInputOutOfRange.Event()}, reasons(recorded(rec)))
	require.Equal(t, 3.0, testutil.ToFloat64(metrics.decisions.WithLabelValues("input.invalid-status")))

	// Every input rule refuses, and no other rule does.
	for _, rule := range lifecycle.Rules() {
		require.Equal(t, strings.HasPrefix(rule.String(), "input."), refusesInput(rule), rule.String())
	}
	for _, rule := range []lifecycle.Rule{lifecycle.RuleInvalidConfig, lifecycle.RuleZeroNow,
		lifecycle.RuleInvalidObject, lifecycle.RuleInvalidStatus, lifecycle.RuleInputOutOfRange} {
		require.True(t, refusesInput(rule), rule.String())
	}

	// A decision that refuses nothing and reports no anomaly records nothing.
	p = newTestPass()
	r.decided(p, 0, &lifecycle.Decision{Rule: lifecycle.RuleHealthy})
	require.Empty(t, recorded(rec))
}

func TestNothingIsRecordedForAGoneMachine(t *testing.T) {
	metrics, _ := newTestMetrics(t)
	rec := events.NewFakeRecorder(100)
	r := &Reconciler{recorder: rec, metrics: metrics, now: time.Now}
	p := newTestPass()
	p.gone = true
	r.decided(p, 0, &lifecycle.Decision{Rule: lifecycle.RuleInvalidStatus, Anomalies: lifecycle.AnomalyStampClamped})
	require.Empty(t, recorded(rec))
	require.Equal(t, 1.0, testutil.ToFloat64(metrics.anomalies.WithLabelValues("stamp-clamped")))
}

func TestAnomaliesMetricIsRegisteredBesideDecisions(t *testing.T) {
	metrics, reg := newTestMetrics(t)
	metrics.decided(&lifecycle.Decision{Rule: lifecycle.RuleInvalidStatus})
	metrics.decided(&lifecycle.Decision{Rule: lifecycle.RuleHealthy,
		Anomalies: lifecycle.AnomalyStampClamped | lifecycle.AnomalyClockBehind})

	mfs, err := reg.Gather()
	require.NoError(t, err)
	help := map[string]string{}
	values := map[string]float64{}
	for _, mf := range mfs {
		help[mf.GetName()] = mf.GetHelp()
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				values[mf.GetName()+"{"+l.GetName()+"="+l.GetValue()+"}"] = m.GetCounter().GetValue()
			}
		}
	}
	require.Contains(t, help["purelifecycle_decisions_total"], `"input."`)
	require.Contains(t, help["purelifecycle_decisions_total"], "refused")
	require.Contains(t, help, "purelifecycle_anomalies_total")
	require.Equal(t, 1.0, values["purelifecycle_decisions_total{rule=input.invalid-status}"])
	require.Equal(t, 1.0, values["purelifecycle_decisions_total{rule=health.healthy}"])
	require.Equal(t, 1.0, values["purelifecycle_anomalies_total{anomaly=stamp-clamped}"])
	require.Equal(t, 1.0, values["purelifecycle_anomalies_total{anomaly=clock-behind}"])
	// Every known anomaly has a series from the start.
	v, ok := values["purelifecycle_anomalies_total{anomaly=adopted}"]
	require.True(t, ok)
	require.Zero(t, v)
}

package machines

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	lifecyclepass "github.com/purelifecycle/machine/lifecycle/pass"
	"github.com/purelifecycle/machine/phase"
)

// metricRow is one row of doc/metrics.md's table.
var metricRow = regexp.MustCompile("^\\| `([a-z_]+)` \\| (counter|gauge|histogram) \\|([^|]*)\\|")

// documentedMetrics returns doc/metrics.md's table: name to "type labels".
func documentedMetrics(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../doc/metrics.md")
	require.NoError(t, err)
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		m := metricRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		labels := strings.Fields(strings.NewReplacer("`", "", ",", " ").Replace(m[3]))
		slices.Sort(labels)
		out[m[1]] = m[2] + " " + strings.Join(labels, ",")
	}
	require.NotEmpty(t, out)
	return out
}

// exercisedMetrics returns what a registry of the controller's metrics
// gathers, name to "type labels", with every metric given a sample: a
// decision with an anomaly, a driver call, a pass, a machine waiting in
// Pending for the fleet gauges, an orphan.
func exercisedMetrics(t *testing.T) map[string]string {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m", UID: "uid-1",
		CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
	st := lifecycle.Status{Phase: phase.Pending, PhaseSince: lifecycle.StampOf(now.Add(-time.Minute)), ProviderID: "fake:///vm-1"}
	m.Status = v1alpha1.StatusOf(m, &st, v1alpha1.Decided{}, now)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(m).Build()

	reg := prometheus.NewRegistry()
	cfg := lifecycle.DefaultConfig()
	metrics, err := NewMetrics(reg, c, &cfg, func() time.Time { return now })
	require.NoError(t, err)
	metrics.decided(&lifecycle.Decision{Rule: lifecycle.RuleHealthy, Anomalies: lifecycle.AnomalyClockBehind})
	d := metrics.Instrument(driverapi.UnimplementedDriver{})
	_, err = d.CreateMachine(context.Background(), &driverapi.CreateMachineRequest{})
	require.Error(t, err)
	metrics.Passed(lifecyclepass.Report{End: lifecyclepass.EndDone, Steps: 2}, time.Millisecond)
	metrics.SetOrphans(1)

	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]string{}
	for _, mf := range mfs {
		var labels []string
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		slices.Sort(labels)
		out[mf.GetName()] = strings.ToLower(mf.GetType().String()) + " " + strings.Join(labels, ",")
	}
	return out
}

// doc/metrics.md lists every metric the controller registers, with its
// type and labels, and nothing else.
func TestMetricsDocListsWhatIsRegistered(t *testing.T) {
	require.Equal(t, exercisedMetrics(t), documentedMetrics(t))
}

func TestInstrumentedDriverCountsCallsByMethodAndCode(t *testing.T) {
	metrics, _ := newTestMetrics(t)
	d := metrics.Instrument(codeDriver{err: driverapi.Error(driverapi.ResourceExhausted, "quota")})
	ctx := context.Background()
	_, err := d.CreateMachine(ctx, &driverapi.CreateMachineRequest{})
	require.Equal(t, driverapi.ResourceExhausted, driverapi.ResultOf(driverapi.MethodCreate, err).Code, "the error passes through")
	_, _ = d.DeleteMachine(ctx, &driverapi.DeleteMachineRequest{})
	require.Equal(t, 1.0, testutil.ToFloat64(metrics.driverCalls.WithLabelValues("CreateMachine", "ResourceExhausted")))
	require.Equal(t, 1.0, testutil.ToFloat64(metrics.driverErrors.WithLabelValues("CreateMachine")))
	require.Equal(t, 1.0, testutil.ToFloat64(metrics.driverErrors.WithLabelValues("DeleteMachine")))
	require.Equal(t, 0.0, testutil.ToFloat64(metrics.driverErrors.WithLabelValues("UpdateMachine")))

	ok := metrics.Instrument(codeDriver{})
	resp, err := ok.GetMachineStatus(ctx, &driverapi.GetMachineStatusRequest{})
	require.NoError(t, err)
	require.Equal(t, "fake:///vm-1", resp.ProviderID)
	require.Equal(t, 1.0, testutil.ToFloat64(metrics.driverCalls.WithLabelValues("GetMachineStatus", "OK")))
	require.Equal(t, 0.0, testutil.ToFloat64(metrics.driverErrors.WithLabelValues("GetMachineStatus")))

	odd := metrics.Instrument(codeDriver{err: context.DeadlineExceeded})
	_, _ = odd.UpdateMachine(ctx, &driverapi.UpdateMachineRequest{})
	require.Equal(t, 1.0, testutil.ToFloat64(metrics.driverCalls.WithLabelValues("UpdateMachine", "Undecodable")))
	require.Equal(t, 4, testutil.CollectAndCount(metrics.driverDuration), "one latency series per method called")
}

func TestPassesAreCountedByEndWithTheirSteps(t *testing.T) {
	metrics, _ := newTestMetrics(t)
	metrics.Passed(lifecyclepass.Report{End: lifecyclepass.EndDone, Steps: 3}, 20*time.Millisecond)
	metrics.Passed(lifecyclepass.Report{End: lifecyclepass.EndSaveFailed, Steps: 2}, time.Second)
	metrics.Passed(lifecyclepass.Report{End: lifecyclepass.EndDone, Steps: 1}, time.Millisecond)
	require.Equal(t, 2.0, testutil.ToFloat64(metrics.passes.WithLabelValues("done")))
	require.Equal(t, 1.0, testutil.ToFloat64(metrics.passes.WithLabelValues("save-failed")))
	require.Equal(t, 2, testutil.CollectAndCount(metrics.passDuration))
	require.NoError(t, testutil.CollectAndCompare(metrics.passSteps, strings.NewReader(`
# HELP purelifecycle_pass_steps Decisions made per reconcile pass.
# TYPE purelifecycle_pass_steps histogram
purelifecycle_pass_steps_bucket{le="1"} 1
purelifecycle_pass_steps_bucket{le="2"} 2
purelifecycle_pass_steps_bucket{le="3"} 3
purelifecycle_pass_steps_bucket{le="4"} 3
purelifecycle_pass_steps_bucket{le="5"} 3
purelifecycle_pass_steps_bucket{le="6"} 3
purelifecycle_pass_steps_bucket{le="7"} 3
purelifecycle_pass_steps_bucket{le="8"} 3
purelifecycle_pass_steps_bucket{le="9"} 3
purelifecycle_pass_steps_bucket{le="+Inf"} 3
purelifecycle_pass_steps_sum 6
purelifecycle_pass_steps_count 3
`)))
}

// codeDriver answers every call with err, and GetMachineStatus with an
// instance.
type codeDriver struct {
	driverapi.UnimplementedDriver
	err error
}

func (c codeDriver) CreateMachine(context.Context, *driverapi.CreateMachineRequest) (*driverapi.CreateMachineResponse, error) {
	return nil, c.err
}

func (c codeDriver) DeleteMachine(context.Context, *driverapi.DeleteMachineRequest) (*driverapi.DeleteMachineResponse, error) {
	return nil, c.err
}

func (c codeDriver) UpdateMachine(context.Context, *driverapi.UpdateMachineRequest) (*driverapi.UpdateMachineResponse, error) {
	return nil, c.err
}

func (c codeDriver) GetMachineStatus(context.Context, *driverapi.GetMachineStatusRequest) (*driverapi.GetMachineStatusResponse, error) {
	return &driverapi.GetMachineStatusResponse{ProviderID: "fake:///vm-1"}, c.err
}

package machines

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/lifecycle"
	lpass "github.com/purelifecycle/machine/lifecycle/pass"
	"github.com/purelifecycle/machine/phase"
)

// Metrics exports the controller's Prometheus metrics, named and labelled
// by Prometheus' conventions (doc/metrics.md lists them, and a test checks
// the list against what is registered):
//
//   - decisions counted by rule as they are made
//     (purelifecycle_decisions_total{rule}; a rule whose identifier starts
//     with "input." counts inputs the lifecycle refused), and the anomalies
//     they report by name (purelifecycle_anomalies_total{anomaly}, one
//     series per name lifecycle.Anomalies.String gives a single anomaly);
//   - driver calls by method and the code of their answer, their latency
//     by method, and the failed ones by method (the driver Instrument
//     returns);
//   - reconcile passes by how they ended, with their steps and duration
//     (Passed);
//   - the fleet summary (lifecycle.Summarize over the machines in the
//     cache with the controller's own writes), computed by the leader's
//     fleet pass, or at every scrape on a replica that does not lead.
type Metrics struct {
	decisions *prometheus.CounterVec
	anomalies *prometheus.CounterVec

	driverCalls    *prometheus.CounterVec
	driverErrors   *prometheus.CounterVec
	driverDuration *prometheus.HistogramVec

	passes       *prometheus.CounterVec
	passSteps    prometheus.Histogram
	passDuration *prometheus.HistogramVec

	fleet fleetCollector
}

// Buckets of the latency histograms, in seconds: a provider's API answers
// within milliseconds to a minute; a pass may wait for a drain.
var (
	driverBuckets = []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	passBuckets   = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}
)

// NewMetrics returns the metrics, registered with reg. The fleet summary
// lists machines through c (the manager's cached client) with cfg.
func NewMetrics(reg prometheus.Registerer, c client.Reader, cfg *lifecycle.Config, now func() time.Time) (*Metrics, error) {
	m := &Metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "purelifecycle_decisions_total",
			Help: "Lifecycle decisions made, by the rule that decided. The rules whose identifier starts with " +
				"\"input.\" count inputs the lifecycle refused and did nothing for (an invalid object, " +
				"configuration or status, a zero clock, or a time or setting out of range).",
		}, []string{"rule"}),
		anomalies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "purelifecycle_anomalies_total",
			Help: "Anomalies the lifecycle's decisions reported (irregular input it clamped, refused or adopted), " +
				"by anomaly; a decision counts each of its anomalies once.",
		}, []string{"anomaly"}),
		driverCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "purelifecycle_driver_calls_total",
			Help: "Driver calls, by method and the code of the answer (OK, a driver error code, or Undecodable for " +
				"an error that is not a status error).",
		}, []string{"method", "code"}),
		driverErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "purelifecycle_driver_call_errors_total",
			Help: "Driver calls that did not answer OK, by method.",
		}, []string{"method"}),
		driverDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "purelifecycle_driver_call_duration_seconds",
			Help:    "How long driver calls took, by method.",
			Buckets: driverBuckets,
		}, []string{"method"}),
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "purelifecycle_passes_total",
			Help: "Reconcile passes, by how they ended (done, gone, save-failed, last-step, observe-failed, canceled).",
		}, []string{"end"}),
		passSteps: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "purelifecycle_pass_steps",
			Help:    "Decisions made per reconcile pass.",
			Buckets: prometheus.LinearBuckets(1, 1, lifecycle.MaxStepsPerPass+1),
		}),
		passDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "purelifecycle_pass_duration_seconds",
			Help:    "How long reconcile passes took, by how they ended.",
			Buckets: passBuckets,
		}, []string{"end"}),
		fleet: fleetCollector{client: c, cfg: cfg, now: now},
	}
	// Every known anomaly and every method has a series from the start, so
	// a rate over it is defined before the first one occurs.
	for i := range anomalyBits {
		if name := lifecycle.Anomalies(1 << i).String(); name != "" {
			m.anomalies.WithLabelValues(name)
		}
	}
	for _, method := range driverMethods {
		m.driverErrors.WithLabelValues(method.String())
	}
	m.fleet.init()
	for _, c := range []prometheus.Collector{m.decisions, m.anomalies, m.driverCalls, m.driverErrors, m.driverDuration,
		m.passes, m.passSteps, m.passDuration, &m.fleet} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// decided counts a decision by its rule, and each of its anomalies.
func (m *Metrics) decided(d *lifecycle.Decision) {
	m.decisions.WithLabelValues(d.Rule.String()).Inc()
	forEachAnomaly(d.Anomalies, func(bit lifecycle.Anomalies) {
		m.anomalies.WithLabelValues(anomalyName(bit)).Inc()
	})
}

// Passed counts a reconcile pass that pass.Run reported, and that took
// took. The reconciler calls it after each of its passes.
func (m *Metrics) Passed(r lpass.Report, took time.Duration) {
	end := r.End.String()
	m.passes.WithLabelValues(end).Inc()
	m.passSteps.Observe(float64(r.Steps))
	m.passDuration.WithLabelValues(end).Observe(took.Seconds())
}

// SetOrphans records how many orphan instances the last collection found.
func (m *Metrics) SetOrphans(n int) { m.fleet.orphans.Store(int64(n)) }

// fleetCollector computes lifecycle.Summarize at scrape time.
type fleetCollector struct {
	client  client.Reader
	cfg     *lifecycle.Config
	now     func() time.Time
	orphans atomic.Int64
	// summary is the summary of the leader's last fleet pass; nil on a
	// replica that does not lead, which computes one at every scrape.
	summary atomic.Pointer[lifecycle.Summary]

	machines, waiting, pastDeadline, oldestWait, deleting, terminated, working, needsReplacement *prometheus.Desc
	updatePending, metadataOutOfSync, orphansDesc                                                *prometheus.Desc
}

func (f *fleetCollector) init() {
	f.machines = prometheus.NewDesc("purelifecycle_machines", "Machines by phase.", []string{"phase"}, nil)
	f.waiting = prometheus.NewDesc("purelifecycle_machines_waiting", "Machines by what they wait for.", []string{"waiting_for"}, nil)
	f.pastDeadline = prometheus.NewDesc("purelifecycle_machines_past_deadline",
		"Machines waiting past their deadline (creation, join, health or drain timeout).", nil, nil)
	f.oldestWait = prometheus.NewDesc("purelifecycle_machines_oldest_wait_seconds",
		"How long the machine longest in each waiting phase has been in it.", []string{"phase"}, nil)
	f.deleting = prometheus.NewDesc("purelifecycle_machines_deleting", "Machines whose deletion was requested.", nil, nil)
	f.terminated = prometheus.NewDesc("purelifecycle_machines_terminated",
		"Machines being deleted whose instance the provider confirmed gone.", nil, nil)
	f.working = prometheus.NewDesc("purelifecycle_machines_working", "Running and Available machines not being deleted.", nil, nil)
	f.needsReplacement = prometheus.NewDesc("purelifecycle_machines_needs_replacement",
		"Machines whose hot update cannot be applied in place.", nil, nil)
	f.updatePending = prometheus.NewDesc("purelifecycle_machines_update_pending",
		"Machines whose desired hot-update generation is not applied yet.", nil, nil)
	f.metadataOutOfSync = prometheus.NewDesc("purelifecycle_machines_metadata_out_of_sync",
		"Running machines whose instance metadata was last seen differing from the desired.", nil, nil)
	f.orphansDesc = prometheus.NewDesc("purelifecycle_orphan_instances",
		"Instances at the provider that no machine owns, as the last collection found.", nil, nil)
}

// Describe implements prometheus.Collector.
func (f *fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{f.machines, f.waiting, f.pastDeadline, f.oldestWait, f.deleting, f.terminated,
		f.working, f.needsReplacement, f.updatePending, f.metadataOutOfSync, f.orphansDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (f *fleetCollector) Collect(ch chan<- prometheus.Metric) {
	s, err := f.summarize()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(f.machines, err)
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, p := range phase.All() {
		gauge(f.machines, float64(s.ByPhase[p]), phaseLabel(p))
		if s.OldestWait[p] > 0 {
			gauge(f.oldestWait, s.OldestWait[p].Seconds(), phaseLabel(p))
		}
	}
	for w := range s.ByWait {
		if w != int(lifecycle.WaitNone) {
			gauge(f.waiting, float64(s.ByWait[w]), lifecycle.WaitFor(w).String())
		}
	}
	gauge(f.pastDeadline, float64(s.PastDeadline))
	gauge(f.deleting, float64(s.Deleting))
	gauge(f.terminated, float64(s.Terminated))
	gauge(f.updatePending, float64(s.UpdatePending))
	gauge(f.metadataOutOfSync, float64(s.MetadataOutOfSync))
	gauge(f.working, float64(s.Working))
	gauge(f.needsReplacement, float64(s.NeedsReplacement))
	gauge(f.orphansDesc, float64(s.Orphans))
}

// phaseLabel names a phase for a label; the empty phase is "None".
func phaseLabel(p phase.Phase) string {
	if p == phase.None {
		return "None"
	}
	return p.String()
}

// members lists the machines of namespace ns ("" for all) as fleet members.
// Machines whose status is unreadable are left out.
func members(ctx context.Context, c client.Reader, cfg *lifecycle.Config, ns string) ([]lifecycle.Member, error) {
	var list v1alpha1.MachineList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	fleet := make([]lifecycle.Member, 0, len(list.Items))
	for i := range list.Items {
		st, err := list.Items[i].Status.ToLifecycle()
		if err != nil {
			continue
		}
		o, _ := objectOf(&list.Items[i])
		fleet = append(fleet, lifecycle.MemberOf(cfg, &lifecycle.Input{Object: o, Status: st}))
	}
	return fleet, nil
}

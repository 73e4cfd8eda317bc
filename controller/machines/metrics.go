package machines

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// Metrics exports the controller's Prometheus metrics: decisions counted by
// rule as they are made (purelifecycle_decisions_total{rule}; a rule whose
// identifier starts with "input." counts inputs the lifecycle refused), the
// anomalies the decisions report counted by name
// (purelifecycle_anomalies_total{anomaly}, one series per name
// lifecycle.Anomalies.String gives a single anomaly), and the fleet summary
// (lifecycle.Summarize over the machines in the cache) computed at every
// scrape.
type Metrics struct {
	decisions *prometheus.CounterVec
	anomalies *prometheus.CounterVec
	fleet     fleetCollector
}

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
		fleet: fleetCollector{client: c, cfg: cfg, now: now},
	}
	// Every known anomaly has a series from the start, so a rate over it
	// is defined before the first one occurs.
	for i := range anomalyBits {
		if name := lifecycle.Anomalies(1 << i).String(); name != "" {
			m.anomalies.WithLabelValues(name)
		}
	}
	m.fleet.init()
	for _, c := range []prometheus.Collector{m.decisions, m.anomalies, &m.fleet} {
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

	machines, waiting, pastDeadline, oldestWait, deleting, working, needsReplacement, orphansDesc *prometheus.Desc
}

func (f *fleetCollector) init() {
	f.machines = prometheus.NewDesc("purelifecycle_machines", "Machines by phase.", []string{"phase"}, nil)
	f.waiting = prometheus.NewDesc("purelifecycle_machines_waiting", "Machines by what they wait for.", []string{"for"}, nil)
	f.pastDeadline = prometheus.NewDesc("purelifecycle_machines_past_deadline",
		"Machines waiting past their deadline (creation, join, health or drain timeout).", nil, nil)
	f.oldestWait = prometheus.NewDesc("purelifecycle_machines_oldest_wait_seconds",
		"How long the machine longest in each waiting phase has been in it.", []string{"phase"}, nil)
	f.deleting = prometheus.NewDesc("purelifecycle_machines_deleting", "Machines whose deletion was requested.", nil, nil)
	f.working = prometheus.NewDesc("purelifecycle_machines_working", "Running and Available machines not being deleted.", nil, nil)
	f.needsReplacement = prometheus.NewDesc("purelifecycle_machines_needs_replacement",
		"Machines whose hot update cannot be applied in place.", nil, nil)
	f.orphansDesc = prometheus.NewDesc("purelifecycle_orphan_instances",
		"Instances at the provider that no machine owns, as the last collection found.", nil, nil)
}

// Describe implements prometheus.Collector.
func (f *fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{f.machines, f.waiting, f.pastDeadline, f.oldestWait, f.deleting,
		f.working, f.needsReplacement, f.orphansDesc} {
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

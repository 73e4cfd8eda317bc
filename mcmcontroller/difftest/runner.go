package difftest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/client/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/purelifecycle/machine/mcmcontroller/mcmfake"
)

// Runner runs scenarios against one API server, one after the other.
type Runner struct {
	// Config reaches the API server (an envtest with MCM's CRDs).
	Config *rest.Config
	// Settings configure every controller; DefaultSettings when zero.
	Settings Settings
	// IgnoredAnnotations are left out of the observations;
	// DefaultIgnoredAnnotations when nil.
	IgnoredAnnotations []string

	runs int
}

// Run builds sc's world in a fresh namespace, runs its steps through ctl
// and returns the observation of each reconcile: one per step, then those
// of the reconciles that let the machine settle, marked Settle. An error
// is one of the world or of an action, never a controller's: those are
// observed.
func (r *Runner) Run(ctx context.Context, ctl Controller, sc *Scenario) ([]Observation, error) {
	core, err := kubernetes.NewForConfig(r.Config)
	if err != nil {
		return nil, err
	}
	machines, err := versioned.NewForConfig(r.Config)
	if err != nil {
		return nil, err
	}
	if err := clearCluster(ctx, core); err != nil {
		return nil, fmt.Errorf("clearing the cluster: %w", err)
	}
	r.runs++
	settings := r.Settings
	if settings == (Settings{}) {
		settings = DefaultSettings
	}
	e := &Env{Config: r.Config, Core: core, Machines: machines, Driver: mcmfake.New(), Frozen: sc.World.Frozen, NoTarget: sc.World.NoTarget,
		Settings: settings, ctl: ctl,
		Namespace: fmt.Sprintf("%s-%d-%s", strings.ToLower(ctl.Name()), r.runs, sc.Name)}
	if len(e.Namespace) > 63 {
		e.Namespace = e.Namespace[:63]
	}
	if err := e.build(ctx, &sc.World); err != nil {
		return nil, fmt.Errorf("building the world: %w", err)
	}
	if err := ctl.Start(ctx, e); err != nil {
		return nil, fmt.Errorf("starting %s: %w", ctl.Name(), err)
	}
	defer ctl.Stop()
	ignored := r.IgnoredAnnotations
	if ignored == nil {
		ignored = DefaultIgnoredAnnotations
	}
	n := &Normalizer{Namespace: e.Namespace, IgnoredAnnotations: ignored}
	obs := make([]Observation, 0, len(sc.Steps)+SettleReconciles)
	for i, st := range sc.Steps {
		for _, a := range st.Do {
			if err := a.Do(ctx, e); err != nil {
				return obs, fmt.Errorf("step %d: %s: %w", i, a.Name, err)
			}
		}
		o, err := e.reconcile(ctx, n, i)
		if err != nil {
			return obs, err
		}
		obs = append(obs, o)
	}
	// The world is left alone and the machine reconciled until it
	// settles: gone, or a reconcile that neither calls the driver nor
	// writes (quiet) and asks to be reconciled only after a Long period
	// (or never), or two quiet reconciles in a row. After a quiet
	// reconcile time moves on by the period it asked, so a retry one
	// controller holds for its period is not taken for an end, and a
	// machine that waits for its world (a node that never comes) is.
	quiet := func(o *Observation) bool { return len(o.Calls) == 0 && len(o.Writes) == 0 }
	for i := range SettleReconciles {
		last := &obs[len(obs)-1]
		if last.Machine.Gone || quiet(last) && (last.Result.Requeue <= 0 || last.Result.Requeue >= long) ||
			i > 0 && quiet(last) && quiet(&obs[len(obs)-2]) {
			break
		}
		if quiet(last) {
			if err := e.Advance(ctx, last.Result.Requeue); err != nil {
				return obs, fmt.Errorf("settling: %w", err)
			}
		}
		o, err := e.reconcile(ctx, n, len(sc.Steps)+i)
		if err != nil {
			return obs, err
		}
		o.Settle = true
		obs = append(obs, o)
	}
	return obs, nil
}

// SettleReconciles is the most reconciles [Runner.Run] adds after a
// scenario's steps for the machine to settle.
const SettleReconciles = 10

// reconcile has the controller reconcile the machine once and observes
// the reconcile as step i.
func (e *Env) reconcile(ctx context.Context, n *Normalizer, i int) (Observation, error) {
	before, err := e.snapshot(ctx, n)
	if err != nil {
		return Observation{}, err
	}
	calls := len(e.Driver.Calls())
	res, rerr := e.ctl.Reconcile(ctx, e.Machine, time.Now())
	after, err := e.snapshot(ctx, n)
	if err != nil {
		return Observation{}, err
	}
	o := Observation{Step: i, Machine: machineView(after, e.Machine), Calls: callViews(e.Driver.Calls()[calls:], n),
		Writes: writes(before, after), Nodes: nodeViews(after), Result: res}
	if rerr != nil {
		o.Err = n.Text(rerr.Error())
	}
	return o, nil
}

// Differential runs sc through the reference controller (MCM's) and the
// controller under test, each in a world of its own, and compares their
// observations step by step (Compare) and where they end (CompareEnds).
// It returns the differences refused and accepted, and the observations of
// both runs, for reports.
func (r *Runner) Differential(ctx context.Context, ref, under Controller, sc *Scenario) (refused, accepted []string,
	refObs, underObs []Observation, err error) {
	refObs, err = r.Run(ctx, ref, sc)
	if err != nil {
		return nil, nil, refObs, nil, fmt.Errorf("%s: %w", ref.Name(), err)
	}
	underObs, err = r.Run(ctx, under, sc)
	if err != nil {
		return nil, nil, refObs, underObs, fmt.Errorf("%s: %w", under.Name(), err)
	}
	refused, accepted = Compare(sc, refObs, underObs)
	r2, a2 := CompareEnds(sc, refObs, underObs)
	return append(refused, r2...), append(accepted, a2...), refObs, underObs, nil
}

// clearCluster deletes what scenarios leave cluster-wide: the refusals of
// node writes, the nodes (their finalizers removed), the pods of every
// namespace (at once: no kubelet confirms a graceful deletion; a drain
// lists a node's pods in all namespaces), the bootstrap tokens of
// kube-system and the volume attachments. A refusal lingers a moment
// after its binding is gone, so the node writes are retried.
func clearCluster(ctx context.Context, core kubernetes.Interface) error {
	if err := liftFaults(ctx, core); err != nil {
		return err
	}
	all := metav1.ListOptions{}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		nodes, err := core.CoreV1().Nodes().List(ctx, all)
		if err != nil {
			return false, err
		}
		for i := range nodes.Items {
			n := &nodes.Items[i]
			if len(n.Finalizers) > 0 {
				n.Finalizers = nil
				if _, err := core.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
					return false, nil
				}
			}
		}
		return core.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, all) == nil, nil
	})
	if err != nil {
		return fmt.Errorf("deleting the nodes: %w", err)
	}
	pods, err := core.CoreV1().Pods(metav1.NamespaceAll).List(ctx, all)
	if err != nil {
		return err
	}
	var zero int64
	for _, p := range pods.Items {
		err := core.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	if err := core.CoreV1().Secrets(metav1.NamespaceSystem).DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{FieldSelector: "type=bootstrap.kubernetes.io/token"}); err != nil {
		return err
	}
	return core.StorageV1().VolumeAttachments().DeleteCollection(ctx, metav1.DeleteOptions{}, all)
}

// Check is an expectation about one reconcile's observation.
type Check struct {
	// Name says what is expected.
	Name string
	// OK reports whether the observation meets it.
	OK func(o *Observation) bool
}

// Failed returns the names of the step's checks that the observation
// fails.
func (st *Step) Failed(o *Observation) []string {
	var out []string
	for _, c := range st.Want {
		if !c.OK(o) {
			out = append(out, c.Name)
		}
	}
	return out
}

// Compare compares two controllers' observations of sc, step by step, and
// returns the differences it does not accept and those it accepts because
// a deviation of sc covers their step. A run cut short is a difference no
// deviation accepts. The reconciles that let the machine settle after the
// steps are left to [CompareEnds].
func Compare(sc *Scenario, a, b []Observation) (refused, accepted []string) {
	a, b = steps(a), steps(b)
	first := -1
	for i := 0; i < max(len(a), len(b)); i++ {
		if i >= len(a) || i >= len(b) {
			refused = append(refused, fmt.Sprintf("%s step %d: one run has no observation of it", sc.Name, i))
			continue
		}
		d := Diff(&a[i], &b[i])
		if len(d) == 0 {
			continue
		}
		if first < 0 {
			first = i
		}
		refused, accepted = sc.judge(refused, accepted, i, first, fmt.Sprintf("%s step %d: ", sc.Name, i), d)
	}
	return refused, accepted
}

// judge sorts the difference lines d at step i (End for where the runs
// end; first is the first step that differed) into those no deviation of
// sc accepts and those one does, each prefixed, and appends them.
func (sc *Scenario) judge(refused, accepted []string, i, first int, prefix string, d []string) ([]string, []string) {
	for _, line := range d {
		dev, ok := sc.deviationFor(i, first, line)
		if ok {
			accepted = append(accepted, prefix+line+" (deviation "+q(dev.Heading)+", "+dev.Test+")")
		} else {
			refused = append(refused, prefix+line)
		}
	}
	return refused, accepted
}

// lastMachines returns the differences of the machines where the runs a
// and b end: the fields Diff compares, the machine's conditions and
// preservation, and the nodes' part in the in-place update and in
// preservation.
func lastMachines(a, b []Observation) []string {
	la, lb := &a[len(a)-1], &b[len(b)-1]
	d := Diff(&Observation{Machine: la.Machine}, &Observation{Machine: lb.Machine})
	if !slices.Equal(la.Machine.Conditions, lb.Machine.Conditions) {
		d = append(d, fmt.Sprintf("machine conditions: %q | %q", la.Machine.Conditions, lb.Machine.Conditions))
	}
	if !slices.Equal(la.Machine.Preservation, lb.Machine.Preservation) {
		d = append(d, fmt.Sprintf("machine preservation: %q | %q", la.Machine.Preservation, lb.Machine.Preservation))
	}
	if !slices.Equal(la.Nodes, lb.Nodes) {
		d = append(d, fmt.Sprintf("nodes: %q | %q", la.Nodes, lb.Nodes))
	}
	return d
}

// steps returns the observations of a scenario's steps, without those of
// the reconciles that let the machine settle.
func steps(obs []Observation) []Observation {
	for i := range obs {
		if obs[i].Settle {
			return obs[:i]
		}
	}
	return obs
}

// CompareEnds compares where two controllers' runs of sc end, once the
// machine settled, whatever the deviations of its steps: the machine after
// the last reconcile, its conditions and preservation included, each
// node's cordon, InPlaceUpdate and Preserved conditions and annotations of
// preservation, and all the driver calls of the run, in order.
// A difference is accepted only by a deviation of sc at step [End].
func CompareEnds(sc *Scenario, a, b []Observation) (refused, accepted []string) {
	if len(a) == 0 || len(b) == 0 {
		return nil, nil
	}
	diffs := lastMachines(a, b)
	calls := func(obs []Observation) []string {
		var cs []string
		for _, o := range obs {
			for _, c := range o.Calls {
				cs = append(cs, c.String())
			}
		}
		return cs
	}
	if ca, cb := calls(a), calls(b); !slices.Equal(ca, cb) {
		diffs = append(diffs, fmt.Sprintf("all driver calls: %v | %v", ca, cb))
	}
	return sc.judge(nil, nil, End, 0, sc.Name+" end: ", diffs)
}

// deviationFor returns the deviation of sc that accepts the difference
// line at step i (End for where the runs end), first being the first
// step that differed.
func (sc *Scenario) deviationFor(i, first int, line string) (Deviation, bool) {
	for _, d := range sc.Deviations {
		if d.covers(i, first, line) {
			return d, true
		}
	}
	return Deviation{}, false
}

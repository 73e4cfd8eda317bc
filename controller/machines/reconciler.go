// Package machines is a controller-runtime reconciler that drives Machine
// resources (api/v1alpha1) with the purelifecycle core. It carries out each
// decision exactly as the caller's obligations of package lifecycle say:
// persist the status first through the status subresource, carry out the
// effects in order and stop at the first failure, feed the outcome back,
// repeat until a decision has no effects (at most lifecycle.MaxStepsPerPass
// steps), then requeue after Decision.Requeue.
//
// The input of each step is built from the Machine as this pass last wrote
// it (never an older cached copy), its Node (by the machine's node label,
// else by the node name its status records, else by the node's
// machine-name label, else by the recorded providerID),
// the node's VolumeAttachments, and the bootstrap token secret, read from
// the manager's caches. Writes go to the API server; a node is read afresh
// before it is written, so a write does not lose to a stale cache.
//
// Every decision is counted by rule, and every anomaly it reports
// (lifecycle.Anomalies) by name; each anomaly of a pass, and an input the
// lifecycle refused, is also recorded as a Warning event on the machine, once
// per pass (see Metrics and Reconciler.Recorder).
//
// Machines of one controller are reconciled one at a time (controller-runtime's
// default of one worker), which serialises the fleet limiter's grants as
// lifecycle.Limit asks.
package machines

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// Reconciler reconciles Machines. Fill the fields and call SetupWithManager.
type Reconciler struct {
	// Client is the manager's client: reads from the cache, writes to the
	// API server.
	Client client.Client
	// Reader reads from the API server directly (the manager's API reader).
	Reader client.Reader
	// Recorder records the decisions' events, and a Warning event for
	// every anomaly a pass's decisions report and for a refused input.
	Recorder events.EventRecorder
	// Driver is the cloud provider.
	Driver driverapi.Driver
	// Class is the provider configuration handed to every driver call.
	// The text BootstrapTokenPlaceholder in Class.Secret["userData"] is
	// replaced with the machine's bootstrap token for CreateMachine.
	Class driverapi.Class
	// Config is the lifecycle configuration. SetupWithManager checks it;
	// changing it afterwards does not change the passes.
	Config lifecycle.Config
	// Metrics, when set, counts decisions and their anomalies and exports
	// the fleet summary.
	Metrics *Metrics
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// EvictRetryInterval is the pause between eviction retries of a drain;
	// 0 means Config.EvictRetryInterval.
	EvictRetryInterval time.Duration

	checked lifecycle.Checked // Config, checked by SetupWithManager
}

// BootstrapTokenPlaceholder is replaced in the user data with the machine's
// bootstrap token ("<id>.<secret>") for CreateMachine.
const BootstrapTokenPlaceholder = "{{BOOTSTRAP_TOKEN}}"

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// pass is one reconcile pass of one machine: the machine as this pass last
// wrote it, whether it is gone, and what the pass reported in events.
type pass struct {
	m    *v1alpha1.Machine
	gone bool
	log  logr.Logger
	// reported holds the anomalies whose event this pass recorded.
	reported lifecycle.Anomalies
	// refused reports whether this pass recorded the event of a refused
	// input.
	refused bool
}

// Reconcile runs one pass for the machine req names.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	// The machine is read from the API server, not the cache: the cache may
	// not show this controller's own last write yet, and Step must never be
	// given an older copy than that (obligation 4). A controller for large
	// fleets would remember the resourceVersion it last wrote and wait for
	// its cache instead.
	m := &v1alpha1.Machine{}
	if err := r.Reader.Get(ctx, req.NamespacedName, m); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	st, err := m.Status.ToLifecycle()
	if err != nil {
		// Without its saved state no step can be trusted, and saving a
		// status decided from a guess would overwrite what is left.
		log.Error(err, "machine status unreadable; machine left alone")
		r.Recorder.Eventf(m, nil, "Warning", "InvalidStatus", "Reconcile", "status unreadable: %v", err)
		return ctrl.Result{RequeueAfter: retry.Long}, nil
	}
	p := &pass{m: m, log: log}
	grant, err := r.grant(ctx, m, &st)
	if err != nil {
		return ctrl.Result{}, err
	}

	in := r.observe(ctx, p, &st)
	in.Grant = grant
	var d lifecycle.Decision
	for step := 0; step < lifecycle.MaxStepsPerPass; step++ {
		lifecycle.StepInto(&d, &r.checked, &in)
		r.decided(p, step, &d)
		out := &lifecycle.Outcome{OpID: d.OpID}
		// 1. Persist first: the status is the write-ahead record.
		if d.Changed {
			if w, err := r.saveStatus(ctx, p, &d.Status); w != lifecycle.WriteOK {
				log.Info("saving status failed", "write", w.String(), "error", err.Error())
				out.Persist = w
				in.Outcome = out
				lifecycle.StepInto(&d, &r.checked, &in)
				r.decided(p, step+1, &d)
				break
			}
		}
		if d.Done() {
			break
		}
		if step == lifecycle.MaxStepsPerPass-1 {
			// No step is left to feed this decision's outcome back: carry
			// out nothing (its status is saved and acted on next pass).
			d.Requeue = retry.Short
			break
		}
		// 2. Effects in order, stopping at the first failure.
		for _, e := range d.Effects.Slice() {
			if e.Kind == lifecycle.KindCallDriver {
				class, err := r.classFor(ctx, p, &d.Call)
				if err != nil {
					// The token could not be read: nothing was called.
					out.Stopped, out.Error = writeOf(err), err.Error()
					break
				}
				out.Result = driverapi.Invoke(ctx, r.Driver, d.Call, class)
				log.V(1).Info("driver", "call", lifecycle.CallString(d.Call), "code", out.Result.Code.String(),
					"error", out.Result.ErrorText())
			} else if w, err := r.apply(ctx, p, &d, e); w != lifecycle.WriteOK && e.Kind != lifecycle.KindEvent {
				out.Stopped = w
				if err != nil {
					out.Error = err.Error()
				}
				log.Info("effect failed", "effect", e.String(), "write", w.String(), "error", out.Error)
				break
			}
			out.Ran++
		}
		// 3. Feed the outcome back, with the object as the last write left it.
		status := d.Status
		in = r.observe(ctx, p, &status)
		in.Status = status
		in.Grant = grant
		in.Outcome = out
		if d.Call.Method == driverapi.MethodCreate && out.Ran == d.Effects.Len() && out.Result.NodeName != "" {
			out.CreatedNode = r.nodeNamed(ctx, out.Result.NodeName)
		}
	}
	// 4. Requeue after the last decision's period.
	if p.gone || d.Requeue <= 0 {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: d.Requeue}, nil
}

// decided logs and counts a decision, and records the events of its
// anomalies and of a refused input (see report).
func (r *Reconciler) decided(p *pass, step int, d *lifecycle.Decision) {
	if r.Metrics != nil {
		r.Metrics.decided(d)
	}
	r.report(p, d)
	log := p.log.V(1)
	if d.Changed || d.Effects.Len() > 0 || d.Anomalies != 0 {
		log = p.log
	}
	if !log.Enabled() {
		return
	}
	kv := []any{"step", step, "rule", d.Rule.String(), "phase", d.Status.Phase.String(),
		"stage", d.Status.Stage.String(), "changed", d.Changed, "effects", d.Lines(), "requeue", d.Requeue.String()}
	if d.Wait.For != lifecycle.WaitNone {
		kv = append(kv, "waitFor", d.Wait.For.String(), "waitUntil", d.Wait.Until.String())
	}
	if d.Anomalies != 0 {
		kv = append(kv, "anomalies", d.Anomalies.String())
	}
	log.Info(d.Rule.Text(), kv...)
}

// saveStatus persists st through the status subresource, with optimistic
// concurrency: a machine changed since this pass read it gives a conflict.
func (r *Reconciler) saveStatus(ctx context.Context, p *pass, st *lifecycle.Status) (lifecycle.Write, error) {
	if p.gone {
		return lifecycle.WriteNotFound, errors.New("machine is gone")
	}
	mm := p.m.DeepCopy()
	mm.Status = v1alpha1.StatusOf(st, mm.Name, &p.m.Status, r.now())
	if err := r.Client.Status().Update(ctx, mm); err != nil {
		if apierrors.IsNotFound(err) {
			p.gone = true
		}
		return writeOf(err), err
	}
	p.m = mm
	return lifecycle.WriteOK, nil
}

// writeOf classifies an API error.
func writeOf(err error) lifecycle.Write {
	switch {
	case err == nil:
		return lifecycle.WriteOK
	case apierrors.IsConflict(err):
		return lifecycle.WriteConflict
	case apierrors.IsNotFound(err):
		return lifecycle.WriteNotFound
	}
	return lifecycle.WriteFailed
}

// grant computes the fleet limiter's grant for the machine: lifecycle.Limit
// over the machines of its namespace, as the cache shows them, with this
// machine as read. Only machines that may be marked Failed need one.
func (r *Reconciler) grant(ctx context.Context, m *v1alpha1.Machine, st *lifecycle.Status) (lifecycle.Grant, error) {
	if st.Phase != phase.Unknown && st.Phase != phase.InPlaceUpdateFailed {
		return lifecycle.Grant{}, nil
	}
	var list v1alpha1.MachineList
	if err := r.Client.List(ctx, &list, client.InNamespace(m.Namespace)); err != nil {
		return lifecycle.Grant{}, err
	}
	fleet := make([]lifecycle.Member, 0, len(list.Items)+1)
	self := -1
	for i := range list.Items {
		mi := &list.Items[i]
		if mi.UID == m.UID {
			continue
		}
		sti, err := mi.Status.ToLifecycle()
		if err != nil {
			continue // left alone by its own reconcile
		}
		o, _ := objectOf(mi)
		fleet = append(fleet, lifecycle.MemberOf(&r.Config, &lifecycle.Input{Object: o, Status: sti}))
	}
	o, _ := objectOf(m)
	self = len(fleet)
	fleet = append(fleet, lifecycle.MemberOf(&r.Config, &lifecycle.Input{Object: o, Status: *st}))
	grants := lifecycle.Limit(nil, &r.Config, r.now(), lifecycle.Observer{}, fleet)
	return grants[self], nil
}

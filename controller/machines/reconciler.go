// Package machines is a controller-runtime controller that drives Machine
// resources (api/v1alpha1) with the purelifecycle core. New builds it on a
// manager from Options (the driver, the lifecycle configuration, how many
// workers, ...).
//
// Each reconcile is one pass of lifecycle/pass (pass.Run), which keeps the
// caller's obligations of package lifecycle: the status saved first,
// through the status subresource with optimistic concurrency, the effects
// carried out in order up to the first that fails, every outcome reported,
// at most lifecycle.MaxStepsPerPass steps, the requeue of the last
// decision. The Reconciler is the pass's shell (pass.Shell): it observes
// the machine, saves its status, carries out the effects and invokes the
// driver.
//
// The input of each step is built from the Machine as the controller last
// wrote it or newer, never an older cached copy: a pass reads the machine
// from the manager's cache and lays the controller's own last write over
// it while the cache does not show it yet (or, with
// Options.ReadFromAPIServer, reads it from the API server), and goes on
// with what its own writes return. Its Node (by the machine's node label,
// else by the node name its status records, else by the node's
// machine-name label, else by the recorded providerID), the node's
// VolumeAttachments, the bootstrap token secret and the machine's
// MachineClass are read from the caches; the class's Secret, once per
// pass, from the API server (class.go). Writes go to the API server; a node is read afresh before it is
// written, so a write does not lose to a stale cache.
//
// Machines are reconciled by Options.MaxConcurrentReconciles workers, one
// machine in one worker at a time, each worker with its own pass.Scratch.
// The fleet functions (lifecycle.Limit, Orphans, Summarize) run in one
// periodic pass of the elected leader over the cache and the controller's
// own writes: the fleet limiter's grants are computed there, once per
// owner per fleet pass, and each worker reads its machine's grant, so
// grants stay serialised however many workers run.
//
// When the manager stops, a pass in flight is not cut off: its writes and
// driver calls run detached from the reconcile's context (each bounded by
// Options.CallTimeout), so it finishes the effects of its current decision,
// reports their outcome, saves the status the next decision records, and
// ends (pass.EndCanceled) before carrying out anything more; a drain is
// one round of evictions that does not wait for the pods, so it holds no
// worker either. The manager's GracefulShutdownTimeout must leave the time
// for this.
//
// Every decision is counted by rule, and every anomaly it reports
// (lifecycle.Anomalies) by name (see Metrics). Every rule's declared event
// is recorded on the machine: the lifecycle's event effects, and the event
// of a decision that changes nothing (a persisting problem), which the
// lifecycle does not emit; each anomaly of a pass, and an input the
// lifecycle refused, is recorded as a Warning event; a repeated report of
// one machine at most once per 10 minutes (events.go). Options.Observer
// sees every decision too.
package machines

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/kubeshell"
	"github.com/purelifecycle/machine/lifecycle"
	lpass "github.com/purelifecycle/machine/lifecycle/pass"
)

// Reconciler reconciles Machines: one pass of lifecycle/pass per
// reconcile. Make one with New.
type Reconciler struct {
	client   client.Client // the manager's: reads from the cache, writes to the API server
	reader   client.Reader // the manager's API reader
	recorder events.EventRecorder
	driver   driverapi.Driver
	class    driverapi.Class
	config   lifecycle.Config
	checked  lifecycle.Checked // config, checked by New
	metrics  *Metrics
	observer lpass.Observer
	now      func() time.Time
	tokenID  TokenIDFunc

	fromAPIServer bool
	callTimeout   time.Duration

	nodes   kubeshell.Nodes // reads nodes and pods from the API server, writes them
	writes  *ownWrites
	grants  *kubeshell.Grants
	workers sync.Pool     // of *worker
	repeats repeatLimiter // repeated reports of a machine (events.go)
}

// worker is what one reconcile uses: its pass's scratch and shell, reused
// from pass to pass.
type worker struct {
	scratch lpass.Scratch
	pass    pass
}

// pass is one reconcile pass of one machine, and its shell (lpass.Shell)
// and observer (lpass.Observer): the machine as this pass last read or
// wrote it, whether it is gone, and what the pass reported in events.
type pass struct {
	r   *Reconciler
	key types.NamespacedName
	now time.Time
	log logr.Logger

	m    *v1alpha1.Machine
	gone bool
	// observed reports that the pass read the machine; later observations
	// go on from m.
	observed bool
	// decision is the pass's current decision, step its number.
	decision *lifecycle.Decision
	step     int
	// token is the bootstrap token ("<id>.<secret>") the pass made sure
	// of, for the CreateMachine that follows.
	token string
	// nodeWritten reports that the pass wrote a node: its later steps
	// read the node from the API server, not from the cache, which may
	// not show the write yet.
	nodeWritten bool
	// zone is the zone label of the instance's node as this pass last
	// read it, "" when it read none; the status records it
	// (keepControllerFields).
	zone string

	// reported holds the anomalies whose event this pass recorded.
	reported lifecycle.Anomalies
	// refused reports whether this pass recorded the event of a refused
	// input.
	refused bool
	// class is the machine's class, read once per pass (classOf).
	class *classRead
	// nameHolder is the machine of another namespace that holds the
	// machine's name, "" when the name is its own (names.go).
	nameHolder string
	// instanceHolder is the machine that holds the instance or node this
	// machine names, which instanceWhat says; "" when they are its own
	// (names.go).
	instanceHolder, instanceWhat string
}

// errGone is the error of a write to a machine that is gone.
var errGone = errors.New("machine is gone")

// Reconcile runs one pass for the machine req names.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	w := r.workers.Get().(*worker)
	defer r.workers.Put(w)
	p := &w.pass
	*p = pass{r: r, key: req.NamespacedName, now: r.now(), log: logf.FromContext(ctx)}
	defer func() { *p = pass{} }()
	rep := lpass.Run(ctx, &r.checked, p, p.now, &w.scratch, p)
	if rep.End == lpass.EndDone {
		p.refreshStatus(ctx, &w.scratch.Decision)
	}
	if r.metrics != nil {
		r.metrics.Passed(rep, r.now().Sub(p.now))
	}
	return kubeshell.ResultOf(p.log, rep)
}

// io returns the context of a pass's write, read or driver call: detached
// from ctx's cancellation, so that a pass the manager stops finishes what
// it started, and bounded by Options.CallTimeout.
func (p *pass) io(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), p.r.callTimeout)
}

// Observe implements lpass.Shell: the first observation reads the machine,
// later ones go on from the machine as the pass's own writes left it.
func (p *pass) Observe(ctx context.Context, now time.Time, in *lifecycle.Input) error {
	ctx, cancel := p.io(ctx)
	defer cancel()
	*in = lifecycle.Input{Now: now}
	var st lifecycle.Status
	if !p.observed {
		p.observed = true
		m, err := p.r.readMachine(ctx, p.key, now)
		if err != nil {
			return err
		}
		if m == nil {
			p.gone = true
			return nil
		}
		p.m = m
		if p.nameHolder, err = p.r.nameHolder(ctx, m); err != nil {
			return err
		}
		if p.instanceHolder, p.instanceWhat, err = p.r.instanceHolder(ctx, m); err != nil {
			return err
		}
		if st, err = m.Status.ToLifecycle(); err != nil {
			p.r.recorder.Eventf(m, nil, "Warning", "InvalidStatus", "Reconcile", "status unreadable: %v", err)
			return &kubeshell.StatusUnreadable{Err: err}
		}
		in.Status = st
	} else if p.decision != nil {
		st = p.decision.Status // what Run gives the next step
	}
	if p.gone {
		return nil
	}
	p.r.observe(ctx, p, &st, in)
	return nil
}

// readMachine reads the machine: from the cache, with this controller's
// own last write laid over it when the cache does not show it yet, or from
// the API server. nil when it is gone.
func (r *Reconciler) readMachine(ctx context.Context, key types.NamespacedName, now time.Time) (*v1alpha1.Machine, error) {
	m := &v1alpha1.Machine{}
	if !r.fromAPIServer {
		err := r.client.Get(ctx, key, m)
		if apierrors.IsNotFound(err) {
			r.writes.forgetMachine(key)
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if newest, ok := r.writes.newest(m, now); ok {
			return newest, nil
		}
		m = &v1alpha1.Machine{}
	}
	if err := r.reader.Get(ctx, key, m); err != nil {
		if apierrors.IsNotFound(err) {
			r.writes.forgetMachine(key)
			return nil, nil
		}
		return nil, err
	}
	return m, nil
}

// Save implements lpass.Shell: the status through the status subresource,
// with optimistic concurrency (a machine changed since this pass read it
// gives a conflict). The recorded bootstrap token ID is kept.
func (p *pass) Save(ctx context.Context, st *lifecycle.Status) lifecycle.Write {
	if p.gone {
		return lifecycle.WriteNotFound
	}
	ctx, cancel := p.io(ctx)
	defer cancel()
	mm := p.m.DeepCopy()
	mm.Status = v1alpha1.StatusOf(p.m, st, v1alpha1.Decided{Rule: p.decision.Rule, Wait: p.decision.Wait, Detail: problemDetail(p, p.decision.Rule)}, p.now)
	p.keepControllerFields(&mm.Status)
	w, err := p.r.writeMachine(ctx, p, mm, true)
	if w != lifecycle.WriteOK {
		p.log.Info("saving status failed", "write", w.String(), "error", err.Error())
	}
	return w
}

// Apply implements lpass.Shell. Effects run detached from the reconcile's
// context (see io); a drain is one round of evictions, as short as any
// other write.
func (p *pass) Apply(ctx context.Context, e *lifecycle.Effect) (lifecycle.Write, string) {
	io, cancel := p.io(ctx)
	w, err := p.r.apply(io, p, *e)
	cancel()
	if w == lifecycle.WriteOK {
		return w, ""
	}
	msg := w.String()
	if err != nil {
		msg = err.Error()
	}
	if e.Kind != lifecycle.KindEvent {
		p.log.Info("effect failed", "effect", e.String(), "write", w.String(), "error", msg)
	}
	return w, msg
}

// Invoke implements lpass.Shell: the driver, with the provider
// configuration of the call (classFor). A class that cannot be used is
// the input's Problem, on which the lifecycle calls no driver; should it
// call one anyway, the driver is not called and the answer is Unavailable.
func (p *pass) Invoke(ctx context.Context, c *driverapi.Call, res *driverapi.Result) {
	ctx, cancel := p.io(ctx)
	defer cancel()
	class, err := p.r.classFor(ctx, p, c)
	if err != nil {
		*res = driverapi.ResultOf(c.Method, driverapi.Wrap(driverapi.Unavailable, "machine class unusable; the driver was not called", err))
	} else {
		*res = driverapi.Invoke(ctx, p.r.driver, *c, class)
	}
	p.log.V(1).Info("driver", "call", lifecycle.CallString(*c), "code", res.Code.String(), "error", res.ErrorText())
}

// Node implements lpass.Shell: the node of that name, read from the API
// server, or the zero Node (the stale-node check after CreateMachine).
func (p *pass) Node(ctx context.Context, name string) lifecycle.Node {
	ctx, cancel := p.io(ctx)
	defer cancel()
	return p.r.nodeNamed(ctx, name)
}

// Decided implements lpass.Observer: it logs and counts the decision,
// records the events of its anomalies and of a refused input, and shows it
// to Options.Observer.
func (p *pass) Decided(in *lifecycle.Input, d *lifecycle.Decision) {
	p.decision = d
	p.r.decided(p, p.step, d)
	p.step++
	if p.r.observer != nil {
		p.r.observer.Decided(in, d)
	}
}

// decided logs and counts a decision, and records the events of its
// anomalies and of a refused input (see report).
func (r *Reconciler) decided(p *pass, step int, d *lifecycle.Decision) {
	if r.metrics != nil {
		r.metrics.decided(d)
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

// writeMachine writes mm, a changed copy of the pass's machine (its status
// when status is set), with optimistic concurrency; the pass goes on with
// the object the write returned, and the fleet and later passes see it
// (ownWrites).
func (r *Reconciler) writeMachine(ctx context.Context, p *pass, mm *v1alpha1.Machine, status bool) (lifecycle.Write, error) {
	var err error
	if status {
		err = r.client.Status().Update(ctx, mm)
	} else {
		err = r.client.Update(ctx, mm)
	}
	if err != nil {
		if apierrors.IsNotFound(err) {
			p.gone = true
			r.writes.forgetMachine(p.key)
		}
		return kubeshell.WriteOf(err), err
	}
	p.m = mm
	if mm.DeletionTimestamp != nil && len(mm.Finalizers) == 0 {
		// The last finalizer went: the API server deleted the machine.
		p.gone = true
		r.writes.forgetMachine(p.key)
		return lifecycle.WriteOK, nil
	}
	r.writes.recordMachine(mm, r.now())
	return lifecycle.WriteOK, nil
}

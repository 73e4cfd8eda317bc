package machines

import (
	"context"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcmadapter "github.com/purelifecycle/machine/adapters/mcm"
	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/kubeshell"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/mcmcontroller/bootstrap"
	"github.com/purelifecycle/machine/mcmcontroller/mcmdriver"
)

// Observe implements lpass.Shell: the first observation reads the machine
// from the API server, later ones go on from the machine as the pass's own
// writes left it. Every field of the input is set at every observation.
func (p *pass) Observe(ctx context.Context, now time.Time, in *lifecycle.Input) error {
	ctx, cancel := p.io(ctx)
	defer cancel()
	*in = lifecycle.Input{Now: now}
	var st lifecycle.Status
	if !p.observed {
		p.observed = true
		m, err := p.r.readMachine(ctx, p.key)
		if err != nil {
			return err
		}
		if m == nil {
			p.gone = true
			return nil
		}
		p.m = m
		if st, err = mcmadapter.StatusFrom(m); err != nil {
			p.r.c.Recorder.Eventf(m, corev1.EventTypeWarning, "InvalidStatus", "status unreadable: %v", err)
			return &kubeshell.StatusUnreadable{Err: err}
		}
		in.Status = st
	} else if p.decision != nil {
		st = p.decision.Status // what Run gives the next step
	}
	if p.gone {
		return nil
	}
	p.observe(ctx, &st, in)
	return nil
}

// observe fills in the input of a step from the pass's machine, its class
// and the target cluster; st is the status the step is given (for finding
// the node).
func (p *pass) observe(ctx context.Context, st *lifecycle.Status, in *lifecycle.Input) {
	in.Object = mcmadapter.ObjectFrom(p.m)
	if f := p.r.opts.Observer; f != nil {
		in.Observer = f()
	}
	in.Grant = p.r.grants.Of(p.m.UID)
	in.Problem = p.classOf(ctx).problem
	if p.r.noTarget {
		return
	}
	node, err := p.r.findNode(ctx, p.m, st)
	if err == nil && node != nil && p.nodeWritten {
		// A step after one that wrote the node decides on what was
		// written, which the cache may not show yet.
		node, err = kubeshell.ReadNode(ctx, p.r.c.TargetReader, node.Name)
	}
	if err != nil {
		p.log.Info("reading the node failed", "error", err.Error())
		in.NodeReadFailed = true
	} else if node != nil {
		in.Node = mcmadapter.NodeFrom(node)
		if lifecycle.NeedsPods(st, &in.Object, &in.Node) {
			// The pods a drain must remove: the drain is done when none
			// is left.
			pods, err := p.r.nodes.PodsToDrain(ctx, node.Name)
			if err != nil {
				p.log.Info("listing the node's pods failed", "error", err.Error())
				in.NodeReadFailed = true
			}
			in.Node.Pods = len(pods)
		}
		n, err := p.r.volumeAttachments(ctx, node.Name)
		if err != nil {
			p.log.Info("listing the node's volume attachments failed", "error", err.Error())
			in.NodeReadFailed = true
		}
		in.VolumeAttachments = n
	}
	tokens, err := p.r.tokensOf(ctx, p.m)
	if err != nil {
		p.log.Info("reading the bootstrap token failed", "error", err.Error())
	}
	in.TokenExists = len(tokens) > 0
}

// Save implements lpass.Shell: the status where MCM keeps it
// (mcmadapter.ApplyStatus), through the status subresource with
// optimistic concurrency, then the annotations that hold the rest of the
// lifecycle's state; both before any effect.
func (p *pass) Save(ctx context.Context, st *lifecycle.Status) lifecycle.Write {
	if p.gone {
		return lifecycle.WriteNotFound
	}
	ctx, cancel := p.io(ctx)
	defer cancel()
	mm := p.m.DeepCopy()
	mcmadapter.ApplyStatus(*st, mm, p.now)
	// The status write decodes the API server's answer into mm, whose
	// annotations are still the old ones: keep the new apart.
	annotations := maps.Clone(mm.Annotations)
	if err := p.r.c.Control.Status().Update(ctx, mm); err != nil {
		return p.failed("saving the status", err)
	}
	p.m = mm.DeepCopy()
	if !maps.Equal(mm.Annotations, annotations) {
		mm.Annotations = annotations
		if err := p.r.c.Control.Update(ctx, mm); err != nil {
			return p.failed("saving the lifecycle's annotations", err)
		}
		p.m = mm
	}
	return lifecycle.WriteOK
}

// failed logs a failed write of the machine and classifies it; a machine
// that is gone ends the pass's writes.
func (p *pass) failed(what string, err error) lifecycle.Write {
	w := kubeshell.WriteOf(err)
	if w == lifecycle.WriteNotFound {
		p.gone = true
	}
	p.log.Info(what+" failed", "write", w.String(), "error", err.Error())
	return w
}

// Apply implements lpass.Shell (effects.go).
func (p *pass) Apply(ctx context.Context, e *lifecycle.Effect) (lifecycle.Write, string) {
	io, cancel := p.io(ctx)
	w, err := p.apply(io, e)
	cancel()
	if w == lifecycle.WriteOK {
		return w, ""
	}
	msg := w.String()
	if err != nil {
		msg = err.Error()
	}
	p.log.Info("effect failed", "effect", e.String(), "write", w.String(), "error", msg)
	return w, msg
}

// Invoke implements lpass.Shell: the provider, through mcmdriver.For with
// the machine, its class and the class's Secret as this pass read them,
// the user data filled for a CreateMachine. A class that cannot be used is
// the input's Problem, on which the lifecycle calls no provider; should it
// call one anyway, the provider is not called and the answer is
// Unavailable.
func (p *pass) Invoke(ctx context.Context, c *driverapi.Call, res *driverapi.Result) {
	ctx, cancel := p.io(ctx)
	defer cancel()
	cr := p.classOf(ctx)
	if cr.problem != lifecycle.ProblemNone {
		*res = driverapi.ResultOf(c.Method, driverapi.Wrap(driverapi.Unavailable, "machine class unusable; the provider was not called", cr.err))
		return
	}
	class := driverapi.Class{Name: cr.class.Name, ProviderSpec: cr.class.ProviderSpec.Raw, Secret: cr.data}
	if ud, ok := cr.data[userDataKey]; ok && c.Method == driverapi.MethodCreate {
		filled, how := bootstrap.Fill(ud, p.token, p.m.Name)
		class.Secret = make(map[string][]byte, len(cr.data))
		for k, v := range cr.data {
			class.Secret[k] = v
		}
		class.Secret[userDataKey] = filled
		p.log.V(1).Info("user data filled", "token", how.Token.String(), "name", how.MachineName.String())
	}
	drv := mcmdriver.For(p.r.opts.Provider, mcmdriver.Objects{Machine: p.m, Class: cr.class, Secret: cr.secret})
	*res = driverapi.Invoke(ctx, drv, *c, class)
	p.log.V(1).Info("provider", "call", lifecycle.CallString(*c), "code", res.Code.String(), "error", res.ErrorText())
}

// Node implements lpass.Shell: the node of that name, read from the target
// cluster's API server, or the zero Node (the stale-node check after
// CreateMachine).
func (p *pass) Node(ctx context.Context, name string) lifecycle.Node {
	if p.r.noTarget {
		return lifecycle.Node{}
	}
	ctx, cancel := p.io(ctx)
	defer cancel()
	n := &corev1.Node{}
	if err := p.r.c.TargetReader.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		return lifecycle.Node{}
	}
	return mcmadapter.NodeFrom(n)
}

// Decided implements lpass.Observer: it logs the decision.
func (p *pass) Decided(in *lifecycle.Input, d *lifecycle.Decision) {
	p.decision = d
	log := p.log.V(1)
	if d.Changed || d.Effects.Len() > 0 || d.Anomalies != 0 {
		log = p.log
	}
	if !log.Enabled() {
		return
	}
	kv := []any{"rule", d.Rule.String(), "phase", d.Status.Phase.String(), "stage", d.Status.Stage.String(),
		"changed", d.Changed, "effects", d.Lines(), "requeue", d.Requeue.String()}
	if d.Wait.For != lifecycle.WaitNone {
		kv = append(kv, "waitFor", d.Wait.For.String(), "waitUntil", d.Wait.Until.String())
	}
	if d.Anomalies != 0 {
		kv = append(kv, "anomalies", d.Anomalies.String())
	}
	log.Info(d.Rule.Text(), kv...)
}

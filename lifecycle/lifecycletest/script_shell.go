package lifecycletest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/pass"
)

// scriptClass is the machine class of a script's driver calls.
var scriptClass = driverapi.Class{Name: "tiny"}

// shellWorld is the script's world as the pass.Shell of one pass command,
// and the pass's Observer: it carries the pass's writes and calls into
// the script's world, checks them against the decisions the pass
// reported and checks each decision as the harness's steps are checked,
// and renders the pass.
//
// It checks the caller's obligations as the pass meets them: a write or
// call before the changed status was saved, an effect out of the
// decision's order, one after a failed write, or a decision made before
// the previous one was carried out or from an input that is not the
// world as observed (the status just saved included), fails the pass
// command.
type shellWorld struct {
	e      *scriptEnv
	out    strings.Builder
	err    error // the first obligation broken or decision refused
	broke  bool  // err is an obligation broken
	cancel context.CancelFunc

	seen    lifecycle.Input     // the last observation, deep-copied
	d       *lifecycle.Decision // the decision being carried out
	n       int                 // decisions reported in the pass
	line    string              // the decision's line, until its save is known
	saved   bool                // its changed status was saved
	next    int                 // its next effect to carry out
	stopped bool                // a write of it failed
}

// cmdPass runs a whole reconcile pass from the persisted status: pass.Run
// over the script's world, through the options' WrapShell when set.
func (e *scriptEnv) cmdPass() (string, error) {
	if e.pending != nil {
		return "", errors.New("the previous decision's effects are pending: run outcome or crash first")
	}
	if e.outcome != nil {
		return "", errors.New("a pass starts from the persisted status: finish the pass in progress with step, or crash")
	}
	cfg, err := e.cfg.Check()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &shellWorld{e: e, cancel: cancel}
	var sh pass.Shell = w
	if e.opts.WrapShell != nil {
		sh = e.opts.WrapShell(w)
	}
	before := e.status.LastOp
	var s pass.Scratch
	r := pass.Run(ctx, &cfg, sh, e.now, &s, w)
	w.flush()
	if w.err == nil && w.d == nil {
		w.fail("the pass reported no decision")
	}
	if w.err != nil && !w.broke {
		return "", w.err
	}
	if w.err != nil {
		return "", fmt.Errorf("the shell broke an obligation: %w\n--- its pass so far:\n%s", w.err, w.out.String())
	}
	if r.End == pass.EndLastStep {
		w.out.WriteString("  (MaxStepsPerPass reached: effects left to the next pass)\n")
	}
	d := *w.d
	d.Requeue = r.Requeue
	e.passEnd(&w.out, &d, before)
	return w.out.String(), nil
}

// fail records the first obligation the pass broke, and ends the pass.
func (w *shellWorld) fail(format string, a ...any) {
	if w.err == nil {
		w.err, w.broke = fmt.Errorf(format, a...), true
		w.cancel()
	}
}

// refuse records a decision the checks refused, and ends the pass.
func (w *shellWorld) refuse(err error) {
	if w.err == nil {
		w.err = err
		w.cancel()
	}
}

// flush writes the reported decision's line once its save is known.
func (w *shellWorld) flush() {
	if w.line == "" {
		return
	}
	if w.saved {
		w.line = strings.Replace(w.line, "\x00", ", saved", 1)
	} else {
		w.line = strings.Replace(w.line, "\x00", "", 1)
	}
	w.out.WriteString(w.line + "\n")
	w.line = ""
}

// effect is called before the pass carries out an effect or a call: it
// must be the decision's next one, after its status was saved.
func (w *shellWorld) effect(what string, kind lifecycle.Kind) *lifecycle.Effect {
	w.flush()
	switch {
	case w.err != nil:
	case w.d == nil:
		w.fail("%s before any decision", what)
	case w.stopped:
		w.fail("%s after a failed write", what)
	case w.d.Changed && !w.saved:
		w.fail("%s before the changed status was saved", what)
	case w.next >= w.d.Effects.Len():
		w.fail("%s, which decision %s does not ask", what, w.d.Rule)
	case w.d.Effects.Slice()[w.next].Kind != kind:
		w.fail("%s where decision %s asks %s", what, w.d.Rule, w.d.Effects.Slice()[w.next])
	default:
		w.next++
		return &w.d.Effects.Slice()[w.next-1]
	}
	return nil
}

// Observe implements pass.Shell: the world as it is now, with the
// persisted status.
func (w *shellWorld) Observe(_ context.Context, now time.Time, in *lifecycle.Input) error {
	if w.err != nil {
		return w.err
	}
	*in = w.e.input()
	in.Now, in.Outcome = now, nil
	w.seen = deepCopyInput(*in)
	return nil
}

// Decided implements pass.Observer: the previous decision must have been
// carried out, and the decision is checked as the harness's steps are.
func (w *shellWorld) Decided(in *lifecycle.Input, d *lifecycle.Decision) {
	w.flush()
	if w.err != nil {
		return
	}
	// After a failed save the lifecycle decides on it at once, from the
	// status as it was: nothing of the unsaved decision is carried out.
	failedSave := in.Outcome != nil && in.Outcome.Persist != lifecycle.WriteOK
	switch p := w.d; {
	case p == nil:
	case p.Changed && !w.saved && !failedSave:
		w.fail("decision %s reported before the status of %s was saved", d.Rule, p.Rule)
	case w.next < p.Effects.Len() && !w.stopped && !failedSave:
		w.fail("decision %s reported before the effects of %s were carried out", d.Rule, p.Rule)
	}
	got := deepCopyInput(*in)
	got.Outcome = nil
	if w.err == nil && !reflect.DeepEqual(got, w.seen) {
		w.fail("decision %s was made from an input that is not the world as observed", d.Rule)
	}
	if w.err == nil {
		if err := w.e.check(in, d); err != nil {
			w.refuse(err)
		}
	}
	c := *d
	w.d, w.saved, w.next, w.stopped = &c, false, 0, false
	w.n++
	w.line = fmt.Sprintf("%d %s: phase=%s stage=%s\x00", w.n, d.Rule, d.Status.Phase.Label(), d.Status.Stage)
	if d.Anomalies != 0 {
		w.line += ", anomalies: " + d.Anomalies.String()
	}
}

// Save implements pass.Shell: the status persists, as the decision being
// carried out changed it.
func (w *shellWorld) Save(_ context.Context, st *lifecycle.Status) lifecycle.Write {
	switch {
	case w.err != nil:
		return lifecycle.WriteFailed
	case w.d == nil:
		w.fail("a status saved before any decision")
	case !w.d.Changed:
		w.fail("a status saved for decision %s, which changed none", w.d.Rule)
	case w.saved || w.next > 0:
		w.fail("the status of decision %s saved twice, or after its effects", w.d.Rule)
	case !reflect.DeepEqual(*st, w.d.Status):
		w.fail("a status saved that is not decision %s's", w.d.Rule)
	default:
		w.saved = true
		w.e.status, w.e.savedAt = cloneStatus(st), w.e.now
		return lifecycle.WriteOK
	}
	return lifecycle.WriteFailed
}

// Apply implements pass.Shell: the decision's next effect, carried out in
// the script's world.
func (w *shellWorld) Apply(_ context.Context, eff *lifecycle.Effect) (lifecycle.Write, string) {
	if want := w.effect("effect "+eff.String(), eff.Kind); want == nil {
		return lifecycle.WriteFailed, "refused"
	} else if *want != *eff {
		w.fail("effect %s where decision %s asks %s", eff, w.d.Rule, want)
		return lifecycle.WriteFailed, "refused"
	}
	wr, err := w.e.apply(*eff)
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	line := "    " + eff.String()
	if wr != lifecycle.WriteOK && eff.Kind != lifecycle.KindEvent {
		w.stopped = true
		line += " => " + wr.String() + ": " + msg
	}
	w.out.WriteString(line + "\n")
	return wr, msg
}

// Invoke implements pass.Shell: the decision's driver call, against the
// script's provider.
func (w *shellWorld) Invoke(ctx context.Context, c *driverapi.Call, res *driverapi.Result) {
	if w.effect("a call of "+c.Method.String(), lifecycle.KindCallDriver) == nil {
		*res = driverapi.ResultOf(c.Method, errors.New("refused"))
		return
	}
	if !reflect.DeepEqual(*c, w.d.Call) {
		w.fail("a call %s where decision %s asks %s", lifecycle.CallString(*c), w.d.Rule, lifecycle.CallString(w.d.Call))
		*res = driverapi.ResultOf(c.Method, errors.New("refused"))
		return
	}
	w.e.note = ""
	*res = driverapi.Invoke(ctx, w.e.prov, *c, scriptClass)
	w.out.WriteString("    call " + lifecycle.CallString(*c) + " => " + scriptResult(*res, w.e.note) + "\n")
}

// Node implements pass.Shell: the node of that name, or the zero Node.
func (w *shellWorld) Node(_ context.Context, name string) lifecycle.Node {
	if n := w.e.nodeNamed(name); n != nil {
		return n.view()
	}
	return lifecycle.Node{}
}

// cloneStatus copies a status with the slices it holds, as a status
// written to and read back from an API server is its own.
func cloneStatus(st *lifecycle.Status) lifecycle.Status {
	c := *st
	c.Conditions = slices.Clone(st.Conditions)
	c.Addresses = slices.Clone(st.Addresses)
	return c
}

// deepCopyInput copies an Input with the slices and outcome it points to,
// so that a later comparison sees any write through them.
func deepCopyInput(in lifecycle.Input) lifecycle.Input {
	out := in
	out.Node.Conditions = slices.Clone(in.Node.Conditions)
	out.Status.Conditions = slices.Clone(in.Status.Conditions)
	out.Status.Addresses = slices.Clone(in.Status.Addresses)
	out.Object.Overrides.NodeConditions = slices.Clone(in.Object.Overrides.NodeConditions)
	if in.Outcome != nil {
		o := *in.Outcome
		o.Result.Addresses = slices.Clone(o.Result.Addresses)
		out.Outcome = &o
	}
	return out
}

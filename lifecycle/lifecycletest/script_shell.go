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
)

// Shell is a caller's reconcile loop around lifecycle.Step: what a
// [Script]'s pass command runs when ScriptOptions.Shell is set, so that
// the scripts of package lifecycle, or a user's own, exercise the user's
// shell against the script's world.
type Shell interface {
	// Pass runs one reconcile pass of the script's machine at now, as the
	// caller's obligations of package lifecycle say: it reads the machine
	// with w.Observe, reports every decision to w.Decided before carrying
	// it out, saves a changed status with w.SaveStatus before anything
	// else, carries out the effects in order with w.Apply and the driver
	// call with w.Driver, stops at the first failed write, feeds the
	// outcome back, and returns the requeue of its last decision.
	Pass(ctx context.Context, w ShellWorld, now time.Time) (requeue time.Duration)
}

// ShellWorld is a script's world as a [Shell] sees it during a pass. Its
// Observe, SaveStatus, Apply and NodeNamed have the shapes of the world
// interface of examples/shell, so a shell written against such an
// interface runs on it unchanged. It checks the caller's obligations as
// the shell meets them: a write or call before the changed status was
// saved, an effect out of the decision's order, or one after a failed
// write fails the pass command.
type ShellWorld interface {
	// Config returns the script's configuration.
	Config() lifecycle.Config
	// Observe returns the machine's input as the world is now: the object
	// as last written, its persisted status, its node, token, observer and
	// grant. Outcome is nil.
	Observe(now time.Time) lifecycle.Input
	// Decided reports a decision the shell is about to carry out.
	Decided(d *lifecycle.Decision)
	// SaveStatus persists the status of the machine.
	SaveStatus(st lifecycle.Status) lifecycle.Write
	// Apply carries out one effect that is not a driver call.
	Apply(e lifecycle.Effect) (lifecycle.Write, error)
	// NodeNamed returns the node of that name, or the zero Node.
	NodeNamed(name string) lifecycle.Node
	// Driver returns the script's provider, for the driver call.
	Driver() driverapi.Driver
}

// shellWorld is the ShellWorld of one pass command: it carries the shell's
// writes and calls into the script's world, checks them against the
// decisions the shell reported, and renders the pass as the harness's own
// loop does.
type shellWorld struct {
	e   *scriptEnv
	out strings.Builder
	err error // the first obligation the shell broke

	d       *lifecycle.Decision // the decision being carried out
	n       int                 // decisions reported in the pass
	line    string              // the decision's line, until its save is known
	saved   bool                // its changed status was saved
	next    int                 // its next effect to carry out
	stopped bool                // a write of it failed
}

// shellPass runs one pass of the options' Shell.
func (e *scriptEnv) shellPass() (string, error) {
	if e.outcome != nil {
		return "", errors.New("a shell's pass starts from the persisted status: finish the pass in progress with step, or crash")
	}
	w := &shellWorld{e: e}
	before := e.status.LastOp
	requeue := e.opts.Shell.Pass(context.Background(), w, e.now)
	w.flush()
	if w.err == nil && w.d == nil {
		w.err = errors.New("the shell reported no decision")
	}
	if w.err == nil && !w.d.Done() && w.next == 0 && w.n == lifecycle.MaxStepsPerPass {
		w.out.WriteString("  (MaxStepsPerPass reached: effects left to the next pass)\n")
	}
	if w.err != nil {
		return "", fmt.Errorf("the shell broke an obligation: %w\n--- its pass so far:\n%s", w.err, w.out.String())
	}
	d := *w.d
	d.Requeue = requeue
	e.steps, e.outcome = 0, nil
	e.passEnd(&w.out, &d, before)
	return w.out.String(), nil
}

// fail records the first obligation the shell broke.
func (w *shellWorld) fail(format string, a ...any) {
	if w.err == nil {
		w.err = fmt.Errorf(format, a...)
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

// effect is called before the shell carries out an effect or a call: it
// must be the decision's next one, after its status was saved.
func (w *shellWorld) effect(what string, kind lifecycle.Kind) *lifecycle.Effect {
	w.flush()
	switch {
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

func (w *shellWorld) Config() lifecycle.Config { return w.e.cfg }

func (w *shellWorld) Observe(now time.Time) lifecycle.Input {
	in := w.e.input()
	in.Now, in.Outcome = now, nil
	return in
}

func (w *shellWorld) Decided(d *lifecycle.Decision) {
	w.flush()
	switch p := w.d; {
	case p == nil:
	case p.Changed && !w.saved:
		w.fail("decision %s reported before the status of %s was saved", d.Rule, p.Rule)
	case w.next < p.Effects.Len() && !w.stopped:
		w.fail("decision %s reported before the effects of %s were carried out", d.Rule, p.Rule)
	}
	c := *d
	w.d, w.saved, w.next, w.stopped = &c, false, 0, false
	w.n++
	w.line = fmt.Sprintf("%d %s: phase=%s stage=%s\x00", w.n, d.Rule, d.Status.Phase.Label(), d.Status.Stage)
	if d.Anomalies != 0 {
		w.line += ", anomalies: " + d.Anomalies.String()
	}
}

func (w *shellWorld) SaveStatus(st lifecycle.Status) lifecycle.Write {
	switch {
	case w.d == nil:
		w.fail("a status saved before any decision")
	case !w.d.Changed:
		w.fail("a status saved for decision %s, which changed none", w.d.Rule)
	case w.saved || w.next > 0:
		w.fail("the status of decision %s saved twice, or after its effects", w.d.Rule)
	case !reflect.DeepEqual(st, w.d.Status):
		w.fail("a status saved that is not decision %s's", w.d.Rule)
	default:
		w.saved = true
		w.e.status, w.e.savedAt = st, w.e.now
	}
	return lifecycle.WriteOK
}

func (w *shellWorld) Apply(eff lifecycle.Effect) (lifecycle.Write, error) {
	if want := w.effect("effect "+eff.String(), eff.Kind); want == nil {
		return lifecycle.WriteFailed, w.err
	} else if *want != eff {
		w.fail("effect %s where decision %s asks %s", eff, w.d.Rule, want)
		return lifecycle.WriteFailed, w.err
	}
	wr, err := w.e.apply(eff)
	line := "    " + eff.String()
	if wr != lifecycle.WriteOK && eff.Kind != lifecycle.KindEvent {
		w.stopped = true
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		line += " => " + wr.String() + ": " + msg
	}
	w.out.WriteString(line + "\n")
	return wr, err
}

func (w *shellWorld) NodeNamed(name string) lifecycle.Node {
	if n := w.e.nodeNamed(name); n != nil {
		return n.view()
	}
	return lifecycle.Node{}
}

func (w *shellWorld) Driver() driverapi.Driver { return shellDriver{w} }

// call carries out the driver call of the decision the shell carries out,
// whose method m the shell called, through the provider's Driver method
// do, and renders it with the Result driverapi.Invoke makes of its answer.
func (w *shellWorld) call(m driverapi.Method, do func() (any, error)) (any, error) {
	if w.effect("a call of "+m.String(), lifecycle.KindCallDriver) == nil {
		return nil, w.err
	}
	if m != w.d.Call.Method {
		w.fail("a call of %s where decision %s asks %s", m, w.d.Rule, w.d.Call.Method)
		return nil, w.err
	}
	w.e.note = ""
	resp, err := do()
	r := driverapi.Invoke(context.Background(), replayDriver{resp, err}, w.d.Call, driverapi.Class{})
	w.out.WriteString("    call " + lifecycle.CallString(w.d.Call) + " => " + scriptResult(r, w.e.note) + "\n")
	return resp, err
}

// ref checks that a call is about the machine the decision's call names.
func (w *shellWorld) ref(m driverapi.MachineRef) {
	if w.d != nil && m != w.d.Call.Machine {
		w.fail("a call about %+v where decision %s asks about %+v", m, w.d.Rule, w.d.Call.Machine)
	}
}

// shellDriver is the provider as a Shell calls it: every call must be the
// driver call of the decision being carried out.
type shellDriver struct{ w *shellWorld }

// answer returns a call's answer as the Driver method returns it.
func answer[R any](resp any, err error) (*R, error) {
	r, _ := resp.(*R)
	return r, err
}

func (s shellDriver) CreateMachine(ctx context.Context, req *driverapi.CreateMachineRequest) (*driverapi.CreateMachineResponse, error) {
	s.w.ref(req.Machine)
	return answer[driverapi.CreateMachineResponse](s.w.call(driverapi.MethodCreate, func() (any, error) {
		return s.w.e.prov.CreateMachine(ctx, req)
	}))
}

func (s shellDriver) InitializeMachine(ctx context.Context, req *driverapi.InitializeMachineRequest) (*driverapi.InitializeMachineResponse, error) {
	s.w.ref(req.Machine)
	return answer[driverapi.InitializeMachineResponse](s.w.call(driverapi.MethodInitialize, func() (any, error) {
		return s.w.e.prov.InitializeMachine(ctx, req)
	}))
}

func (s shellDriver) GetMachineStatus(ctx context.Context, req *driverapi.GetMachineStatusRequest) (*driverapi.GetMachineStatusResponse, error) {
	s.w.ref(req.Machine)
	return answer[driverapi.GetMachineStatusResponse](s.w.call(driverapi.MethodGetStatus, func() (any, error) {
		return s.w.e.prov.GetMachineStatus(ctx, req)
	}))
}

func (s shellDriver) DeleteMachine(ctx context.Context, req *driverapi.DeleteMachineRequest) (*driverapi.DeleteMachineResponse, error) {
	s.w.ref(req.Machine)
	return answer[driverapi.DeleteMachineResponse](s.w.call(driverapi.MethodDelete, func() (any, error) {
		return s.w.e.prov.DeleteMachine(ctx, req)
	}))
}

func (s shellDriver) ListMachines(ctx context.Context, req *driverapi.ListMachinesRequest) (*driverapi.ListMachinesResponse, error) {
	return answer[driverapi.ListMachinesResponse](s.w.call(driverapi.MethodList, func() (any, error) {
		return s.w.e.prov.ListMachines(ctx, req)
	}))
}

func (s shellDriver) GetVolumeIDs(ctx context.Context, req *driverapi.GetVolumeIDsRequest) (*driverapi.GetVolumeIDsResponse, error) {
	return answer[driverapi.GetVolumeIDsResponse](s.w.call(driverapi.MethodGetVolumeIDs, func() (any, error) {
		return s.w.e.prov.GetVolumeIDs(ctx, req)
	}))
}

func (s shellDriver) UpdateMachine(ctx context.Context, req *driverapi.UpdateMachineRequest) (*driverapi.UpdateMachineResponse, error) {
	s.w.ref(req.Machine)
	return answer[driverapi.UpdateMachineResponse](s.w.call(driverapi.MethodUpdate, func() (any, error) {
		return s.w.e.prov.UpdateMachine(ctx, req)
	}))
}

func (s shellDriver) UpdateMetadata(ctx context.Context, req *driverapi.UpdateMetadataRequest) (*driverapi.UpdateMetadataResponse, error) {
	s.w.ref(req.Machine)
	return answer[driverapi.UpdateMetadataResponse](s.w.call(driverapi.MethodUpdateMetadata, func() (any, error) {
		return s.w.e.prov.UpdateMetadata(ctx, req)
	}))
}

// replayDriver answers any call with the answer it holds, so that
// driverapi.Invoke makes of a shell's call the Result it would have made
// calling the provider itself.
type replayDriver struct {
	resp any
	err  error
}

func (r replayDriver) CreateMachine(context.Context, *driverapi.CreateMachineRequest) (*driverapi.CreateMachineResponse, error) {
	return answer[driverapi.CreateMachineResponse](r.resp, r.err)
}

func (r replayDriver) InitializeMachine(context.Context, *driverapi.InitializeMachineRequest) (*driverapi.InitializeMachineResponse, error) {
	return answer[driverapi.InitializeMachineResponse](r.resp, r.err)
}

func (r replayDriver) GetMachineStatus(context.Context, *driverapi.GetMachineStatusRequest) (*driverapi.GetMachineStatusResponse, error) {
	return answer[driverapi.GetMachineStatusResponse](r.resp, r.err)
}

func (r replayDriver) DeleteMachine(context.Context, *driverapi.DeleteMachineRequest) (*driverapi.DeleteMachineResponse, error) {
	return answer[driverapi.DeleteMachineResponse](r.resp, r.err)
}

func (r replayDriver) ListMachines(context.Context, *driverapi.ListMachinesRequest) (*driverapi.ListMachinesResponse, error) {
	return answer[driverapi.ListMachinesResponse](r.resp, r.err)
}

func (r replayDriver) GetVolumeIDs(context.Context, *driverapi.GetVolumeIDsRequest) (*driverapi.GetVolumeIDsResponse, error) {
	return answer[driverapi.GetVolumeIDsResponse](r.resp, r.err)
}

func (r replayDriver) UpdateMachine(context.Context, *driverapi.UpdateMachineRequest) (*driverapi.UpdateMachineResponse, error) {
	return answer[driverapi.UpdateMachineResponse](r.resp, r.err)
}

func (r replayDriver) UpdateMetadata(context.Context, *driverapi.UpdateMetadataRequest) (*driverapi.UpdateMetadataResponse, error) {
	return answer[driverapi.UpdateMetadataResponse](r.resp, r.err)
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

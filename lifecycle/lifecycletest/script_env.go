package lifecycletest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
)

// scriptEnv plays the shell of ONE machine for a Script: it holds the
// config, the machine object, the persisted status, the nodes, the
// bootstrap token, the provider, the clock, and the decision whose outcome
// is pending. The harness's own steps call Step through it, with the input
// the shell would observe.
type scriptEnv struct {
	opts     ScriptOptions
	cfg      lifecycle.Config
	t0, now  time.Time
	obj      lifecycle.Object
	gone     bool // the object was deleted (its finalizer removed while deleting)
	status   lifecycle.Status
	savedAt  time.Time // when the status was last persisted
	nodes    []*scriptNode
	token    bool
	expiry   lifecycle.Stamp
	observer lifecycle.Observer
	grant    lifecycle.Grant
	prov     *Provider
	note     string // what the provider said it did in the current call
	pdb      bool   // a pod disruption budget refuses every eviction

	// The pass in progress.
	pending *lifecycle.Decision // a decision whose effects await `outcome`
	outcome *lifecycle.Outcome  // the outcome the next step is fed
	created string              // the node name a CreateMachine outcome returned
}

func newScriptEnv(opts ScriptOptions) *scriptEnv {
	e := &scriptEnv{opts: opts, cfg: lifecycle.DefaultConfig(), t0: Epoch, now: Epoch, prov: NewProvider()}
	e.prov.IDPrefix, e.prov.NodePrefix = "tiny:///vm-", "ip-10-0-0-"
	e.prov.Log = func(note string) {
		if e.note != "" {
			note = e.note + "; " + note
		}
		e.note = note
	}
	return e
}

// handle runs one command; Script's doc lists them.
func (e *scriptEnv) handle(c *scriptCmd) (string, error) {
	var out string
	var err error
	switch c.name {
	case "new":
		// new name=m-1 uid=u-1 [owner=ms-1] [creation-timeout=5m] [health-timeout=5m]
		//     [drain-timeout=10m] [target-cluster=false]
		out, err = e.cmdNew(c)
	case "config":
		// config [creation-timeout=20m] [health-timeout=10m] [drain-timeout=2h]
		//        [replacements=1] [no-target-cluster=true] [verify-owner=false]
		err = e.cmdConfig(c)
	case "step":
		// step [persist=conflict|failed]
		out, err = e.cmdStep(c)
	case "outcome":
		// outcome [code=NotFound msg="..." | undecodable="..."] [ran=N stopped=conflict|failed|notfound err="..."]
		out, err = e.cmdOutcome(c)
	case "pass":
		// pass
		out, err = e.cmdPass()
	case "crash":
		// crash
		out = e.cmdCrash()
	case "tick":
		// tick 90s
		out, err = e.cmdTick(c)
	case "node":
		// node register [volumes=1] [pods=1] | ready | not-ready | gone | pods=N | pdb=true|false
		//      | taint=critical|startup | untaint=critical|startup
		//      | add name=... provider-id=... [machine=m-1] [ready=true]
		// node (alone) prints the nodes.
		out, err = e.cmdNode(c)
	case "delete":
		// delete: set the machine's deletion time to now.
		out = e.cmdDelete(false)
	case "force-delete":
		// force-delete: set the force-deletion label (and the deletion time).
		out = e.cmdDelete(true)
	case "observer":
		// observer degraded|healthy
		out, err = e.cmdObserver(c)
	case "grant":
		// grant [in-flight=N]: ask the fleet limiter, with N other machines
		//                      of the owner being replaced or deleted
		// grant fail=true|false: set the grant by hand
		out, err = e.cmdGrant(c)
	case "spec":
		// spec [generation=2] [metadata=team=a,pool=web]
		out, err = e.cmdSpec(c)
	case "provider":
		// provider fail method=CreateMachine code=ResourceExhausted [times=1] [msg="..."]
		// provider drop-metadata keys=pool[,team] [times=1]
		// provider instance name=m-1 uid=u-0 [initialized=true]
		// provider (alone) lists the instances.
		out, err = e.cmdProvider(c)
	case "adopt":
		// adopt phase=Terminating type=Delete state=Processing description="..."
		//       provider-id=... node=...: take over a machine MCM was managing
		out, err = e.cmdAdopt(c)
	case "status":
		// status: the persisted status, compactly.
		out = e.statusString()
	case "mcm":
		// mcm: the LastOperation record MCM would show, and the phase.
		out = e.mcmString()
	case "world":
		// world: the object, the token, the nodes and the provider.
		out = e.worldString()
	case "_breakpoint":
		// _breakpoint: a no-op to set a debugger breakpoint on.
	default:
		return "", fmt.Errorf("unknown command %q", c.name)
	}
	if err != nil {
		return "", err
	}
	return out, c.unused()
}

// input is what the shell observes now, fed with the pending outcome.
func (e *scriptEnv) input() lifecycle.Input {
	in := lifecycle.Input{Now: e.now, Status: e.status, TokenExists: e.token, Observer: e.observer,
		Grant: e.grant, Outcome: e.outcome}
	if e.gone {
		return in
	}
	in.Object = e.obj
	if n := e.machineNode(); n != nil {
		in.Node = n.view()
		in.VolumeAttachments = n.attachments
	}
	if e.created != "" && in.Outcome != nil {
		if n := e.nodeNamed(e.created); n != nil {
			o := *in.Outcome // the pending outcome stays as recorded
			o.CreatedNode = n.view()
			in.Outcome = &o
		}
	}
	return in
}

// decide calls Step for in and checks the decision: the input unchanged,
// and as check checks it.
func (e *scriptEnv) decide(in lifecycle.Input) (lifecycle.Decision, error) {
	before := deepCopyInput(in)
	d := lifecycle.Step(e.cfg, in)
	if !reflect.DeepEqual(before, in) {
		return d, errors.New("lifecycle.Step changed its input")
	}
	return d, e.check(&in, &d)
}

// check checks decision d, made from in: Step, asked again, neither
// changes in nor decides otherwise; the promises Check lists; and the
// options' Check.
func (e *scriptEnv) check(in *lifecycle.Input, d *lifecycle.Decision) error {
	before := deepCopyInput(*in)
	if again := lifecycle.Step(e.cfg, before); !reflect.DeepEqual(*d, again) {
		return errors.New("lifecycle.Step is not deterministic")
	}
	if !reflect.DeepEqual(before, deepCopyInput(*in)) {
		return errors.New("lifecycle.Step changed its input")
	}
	if err := Check(&e.cfg, in, d); err != nil {
		return err
	}
	if e.opts.Check != nil {
		if err := e.opts.Check(&e.cfg, in, d); err != nil {
			return err
		}
	}
	return nil
}

// step takes one step and persists its status first, as the shell must.
func (e *scriptEnv) step(persist lifecycle.Write) (lifecycle.Decision, error) {
	in := e.input()
	d, err := e.decide(in)
	if err != nil {
		return d, err
	}
	e.outcome, e.created = nil, ""
	switch {
	case d.Changed && persist != lifecycle.WriteOK:
		// The save failed: nothing is carried out, the next step learns it.
		e.outcome = &lifecycle.Outcome{OpID: d.OpID, Persist: persist}
		return d, nil
	case d.Changed:
		e.status, e.savedAt = d.Status, e.now
	}
	switch {
	case d.Done(): // the pass ends
	case d.Effects.Len() == 0:
		e.outcome = &lifecycle.Outcome{} // only the status changed: step again
	default:
		e.pending = &d
	}
	return d, nil
}

func (e *scriptEnv) cmdStep(c *scriptCmd) (string, error) {
	if e.pending != nil {
		return "", errors.New("the previous decision's effects are pending: run outcome or crash first")
	}
	persist := lifecycle.WriteOK
	if c.has("persist") {
		var err error
		if persist, err = scriptWrite(c.args["persist"]); err != nil {
			return "", err
		}
	}
	before := e.status.LastOp
	d, err := e.step(persist)
	if err != nil {
		return "", err
	}
	out := d.String()
	if d.Changed && persist != lifecycle.WriteOK {
		out += "\n  persist: " + persist.String() + ", nothing carried out"
	} else if d.Status.LastOp != before {
		out += "\n  lastop: " + scriptOp(&d.Status, e.obj.Name)
	}
	if d.Done() {
		out += "\n  (pass ends)"
	}
	return out, nil
}

func (e *scriptEnv) cmdOutcome(c *scriptCmd) (string, error) {
	if e.pending == nil {
		return "", errors.New("no decision awaits its outcome")
	}
	d := e.pending
	var override *driverapi.Result
	switch {
	case c.has("code"):
		code, err := driverapi.ParseCode(c.args["code"])
		if err != nil {
			return "", err
		}
		r := driverapi.ResultOf(d.Call.Method, driverapi.Error(code, c.str("msg", "scripted "+code.String())))
		override = &r
	case c.has("undecodable"):
		r := driverapi.ResultOf(d.Call.Method, errors.New(c.args["undecodable"]))
		override = &r
	}
	ran := -1
	stopped := lifecycle.WriteFailed
	if c.has("ran") {
		n, err := strconv.Atoi(c.args["ran"])
		if err != nil || n < 0 || n >= d.Effects.Len() {
			return "", fmt.Errorf("ran=%s: want 0..%d", c.args["ran"], d.Effects.Len()-1)
		}
		ran = n
	}
	if c.has("stopped") {
		var err error
		if stopped, err = scriptWrite(c.args["stopped"]); err != nil {
			return "", err
		}
	}
	lines := e.carryOut(override, ran, stopped, c.str("err", "scripted "+stopped.String()))
	o := e.outcome
	head := fmt.Sprintf("carried out %d of %d effects", o.Ran, d.Effects.Len())
	if o.Ran < d.Effects.Len() {
		head += ", stopped: " + o.Stopped.String()
	}
	return strings.Join(append([]string{head}, lines...), "\n"), nil
}

// carryOut carries out the pending decision's effects in order, stopping
// at the first failure (or at effect ran, which then fails with stopped),
// and prepares the outcome for the next step. It returns a line for the
// driver call and one for the failure.
func (e *scriptEnv) carryOut(override *driverapi.Result, ran int, stopped lifecycle.Write, errText string) []string {
	d := e.pending
	e.pending = nil
	out := &lifecycle.Outcome{OpID: d.OpID}
	var lines []string
	for i, eff := range d.Effects.Slice() {
		if i == ran {
			out.Stopped, out.Error = stopped, errText
			lines = append(lines, "  "+eff.String()+" => "+stopped.String()+": "+errText)
			break
		}
		if eff.Kind == lifecycle.KindCallDriver {
			e.note = ""
			r := driverapi.Result{}
			if override != nil {
				r = *override
			} else {
				r = driverapi.Invoke(context.Background(), e.prov, d.Call, scriptClass)
			}
			out.Result = r
			out.Ran++
			lines = append(lines, "  call "+lifecycle.CallString(d.Call)+" => "+scriptResult(r, e.note))
			continue
		}
		w, err := e.apply(eff)
		if w != lifecycle.WriteOK && eff.Kind != lifecycle.KindEvent {
			out.Stopped = w
			if err != nil {
				out.Error = err.Error()
			}
			lines = append(lines, "  "+eff.String()+" => "+w.String()+": "+out.Error)
			break
		}
		out.Ran++
	}
	e.outcome = out
	if d.Call.Method == driverapi.MethodCreate && out.Ran == d.Effects.Len() && out.Result.NodeName != "" {
		e.created = out.Result.NodeName
	}
	return lines
}

// passEnd writes the end of a pass's output: the requeue and wait of its
// last decision d, and the last operation when the pass changed it from
// before.
func (e *scriptEnv) passEnd(b *strings.Builder, d *lifecycle.Decision, before lastop.Operation) {
	fmt.Fprintf(b, "requeue %s", d.Requeue)
	if d.Wait.For != lifecycle.WaitNone {
		b.WriteString(", waiting for " + d.Wait.For.String())
		if !d.Wait.Until.IsZero() {
			b.WriteString(" until " + e.rel(d.Wait.Until.Time()))
		}
	}
	if e.status.LastOp != before {
		b.WriteString("\nlastop: " + scriptOp(&e.status, e.obj.Name))
	}
}

func (e *scriptEnv) cmdCrash() string {
	out := "controller restarts"
	switch {
	case e.pending != nil:
		out += ": the last decision's effects were never carried out"
	case e.outcome != nil:
		out += ": the last decision's outcome is lost"
	}
	e.pending, e.outcome, e.created = nil, nil, ""
	return out + fmt.Sprintf("\npersisted status: phase=%s stage=%s", e.status.Phase.Label(), e.status.Stage)
}

package lifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// scriptEnv plays the shell of ONE machine for the scenario scripts: it
// holds the config, the machine object, the persisted status, the nodes,
// the bootstrap token, the tiny provider, the clock, and the decision whose
// outcome is pending. Step is only ever called through it, with the input
// the shell would observe.
type scriptEnv struct {
	t        *testing.T
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
	prov     *scriptProvider
	pdb      bool // a pod disruption budget makes every unforced drain fail

	// The pass in progress.
	pending *lifecycle.Decision // a decision whose effects await `outcome`
	outcome *lifecycle.Outcome  // the outcome the next step is fed
	created string              // the node name a CreateMachine outcome returned
	steps   int                 // steps taken in this pass
}

func newScriptEnv(t *testing.T) *scriptEnv {
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	return &scriptEnv{t: t, cfg: lifecycle.DefaultConfig(), t0: t0, now: t0, prov: newScriptProvider()}
}

// handle runs one command. Each case names the command's usage.
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
		// node register [volumes=1] | ready | not-ready | gone | pdb=true|false
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

func (e *scriptEnv) cmdNew(c *scriptCmd) (string, error) {
	name, uid := c.str("name", ""), c.str("uid", "")
	if name == "" || uid == "" {
		return "", errors.New("new needs name= and uid=")
	}
	o := lifecycle.Object{Name: name, UID: uid, Owner: c.str("owner", "ms-1"), CreationTime: e.now}
	var err error
	if o.Overrides.CreationTimeout, err = scriptDuration(c, "creation-timeout"); err != nil {
		return "", err
	}
	if o.Overrides.HealthTimeout, err = scriptDuration(c, "health-timeout"); err != nil {
		return "", err
	}
	if o.Overrides.DrainTimeout, err = scriptDuration(c, "drain-timeout"); err != nil {
		return "", err
	}
	if c.str("target-cluster", "true") == "false" {
		e.cfg.NoTargetCluster = true
	}
	e.obj, e.gone, e.status = o, false, lifecycle.Status{}
	e.pending, e.outcome, e.steps = nil, nil, 0
	return fmt.Sprintf("machine %s uid=%s owner=%s created at %s", name, uid, o.Owner, e.rel(e.now)), nil
}

func (e *scriptEnv) cmdConfig(c *scriptCmd) error {
	durations := []struct {
		key string
		to  *time.Duration
	}{
		{"creation-timeout", &e.cfg.CreationTimeout}, {"health-timeout", &e.cfg.HealthTimeout},
		{"drain-timeout", &e.cfg.DrainTimeout}, {"wait-check", &e.cfg.WaitCheck},
	}
	for _, d := range durations {
		if c.has(d.key) {
			v, err := time.ParseDuration(c.args[d.key])
			if err != nil {
				return err
			}
			*d.to = v
		}
	}
	if c.has("replacements") {
		n, err := strconv.Atoi(c.args["replacements"])
		if err != nil {
			return err
		}
		e.cfg.Replacements = lifecycle.ReplacementLimit{Count: n}
	}
	if c.has("no-target-cluster") {
		e.cfg.NoTargetCluster = c.args["no-target-cluster"] == "true"
	}
	if c.has("verify-owner") {
		e.cfg.VerifyOwner = c.args["verify-owner"] == "true"
	}
	return e.cfg.Validate()
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

// step takes one step and persists its status first, as the shell must.
func (e *scriptEnv) step(persist lifecycle.Write) lifecycle.Decision {
	in := e.input()
	d := step(e.t, e.cfg, in) // helpers_test.go: also checks the per-decision promises
	e.outcome, e.created = nil, ""
	e.steps++
	switch {
	case d.Changed && persist != lifecycle.WriteOK:
		// The save failed: nothing is carried out, the next step learns it.
		e.outcome = &lifecycle.Outcome{OpID: d.OpID, Persist: persist}
		return d
	case d.Changed:
		e.status, e.savedAt = d.Status, e.now
	}
	switch {
	case d.Done():
		e.steps = 0 // the pass ends
	case d.Effects.Len() == 0:
		e.outcome = &lifecycle.Outcome{} // only the status changed: step again
	default:
		e.pending = &d
	}
	return d
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
	d := e.step(persist)
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
	lines := e.carryOut(override, ran, stopped, c.str("err", "scripted "+stopped.String()), false)
	o := e.outcome
	head := fmt.Sprintf("carried out %d of %d effects", o.Ran, d.Effects.Len())
	if o.Ran < d.Effects.Len() {
		head += ", stopped: " + o.Stopped.String()
	}
	return strings.Join(append([]string{head}, lines...), "\n"), nil
}

// carryOut carries out the pending decision's effects in order, stopping
// at the first failure (or at effect ran, which then fails with stopped),
// and prepares the outcome for the next step. It returns a line per effect
// worth showing: every one when all is true, else the driver call and the
// failure.
func (e *scriptEnv) carryOut(override *driverapi.Result, ran int, stopped lifecycle.Write, errText string, all bool) []string {
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
			e.prov.note = ""
			r := driverapi.Result{}
			if override != nil {
				r = *override
			} else {
				r = driverapi.Invoke(context.Background(), e.prov, d.Call, driverapi.Class{Name: "tiny"})
			}
			out.Result = r
			out.Ran++
			lines = append(lines, "  call "+lifecycle.CallString(d.Call)+" => "+scriptResult(r, e.prov.note))
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
		if all {
			lines = append(lines, "  "+eff.String())
		}
	}
	e.outcome = out
	if d.Call.Method == driverapi.MethodCreate && out.Ran == d.Effects.Len() && out.Result.NodeName != "" {
		e.created = out.Result.NodeName
	}
	return lines
}

// cmdPass runs a whole reconcile pass as the caller's obligations say,
// continuing the pass in progress if an outcome is pending.
func (e *scriptEnv) cmdPass() (string, error) {
	if e.pending != nil {
		return "", errors.New("the previous decision's effects are pending: run outcome or crash first")
	}
	var b strings.Builder
	before := e.status.LastOp
	var d lifecycle.Decision
	for {
		n := e.steps + 1
		d = e.step(lifecycle.WriteOK)
		fmt.Fprintf(&b, "%d %s: phase=%s stage=%s", n, d.Rule, d.Status.Phase.Label(), d.Status.Stage)
		if d.Changed {
			b.WriteString(", saved")
		}
		if d.Anomalies != 0 {
			b.WriteString(", anomalies: " + d.Anomalies.String())
		}
		b.WriteString("\n")
		if d.Done() {
			break
		}
		if n == lifecycle.MaxStepsPerPass {
			// No step is left to feed the outcome back: carry out nothing;
			// the saved status is acted on in the next pass.
			e.pending, e.outcome, e.steps = nil, nil, 0
			b.WriteString("  (MaxStepsPerPass reached: effects left to the next pass)\n")
			break
		}
		if e.pending != nil {
			for _, l := range e.carryOut(nil, -1, lifecycle.WriteOK, "", true) {
				b.WriteString("  " + l + "\n")
			}
		}
	}
	fmt.Fprintf(&b, "requeue %s", d.Requeue)
	if d.Wait.For != lifecycle.WaitNone {
		b.WriteString(", waiting for " + d.Wait.For.String())
		if !d.Wait.Until.IsZero() {
			b.WriteString(" until " + e.rel(d.Wait.Until.Time()))
		}
	}
	if e.status.LastOp != before {
		b.WriteString("\nlastop: " + scriptOp(&e.status, e.obj.Name))
	}
	return b.String(), nil
}

func (e *scriptEnv) cmdCrash() string {
	out := "controller restarts"
	switch {
	case e.pending != nil:
		out += ": the last decision's effects were never carried out"
	case e.outcome != nil:
		out += ": the last decision's outcome is lost"
	}
	e.pending, e.outcome, e.created, e.steps = nil, nil, "", 0
	return out + fmt.Sprintf("\npersisted status: phase=%s stage=%s", e.status.Phase.Label(), e.status.Stage)
}

func (e *scriptEnv) cmdTick(c *scriptCmd) (string, error) {
	if len(c.pos) != 1 {
		return "", errors.New("tick needs one duration")
	}
	d, err := time.ParseDuration(c.pos[0])
	if err != nil {
		return "", err
	}
	e.now = e.now.Add(d)
	return "now " + e.rel(e.now), nil
}

func (e *scriptEnv) cmdDelete(force bool) string {
	if e.obj.DeletionTime.IsZero() {
		e.obj.DeletionTime = e.now
	}
	out := "deletion requested at " + e.rel(e.obj.DeletionTime)
	if force {
		e.obj.ForceDeletion = true
		out += ", label force-deletion=true"
	}
	return out
}

func (e *scriptEnv) cmdObserver(c *scriptCmd) (string, error) {
	if len(c.pos) != 1 || (c.pos[0] != "degraded" && c.pos[0] != "healthy") {
		return "", errors.New("observer degraded|healthy")
	}
	e.observer = lifecycle.Observer{Degraded: c.pos[0] == "degraded", Since: e.now}
	return "observer " + c.pos[0] + " since " + e.rel(e.now), nil
}

func (e *scriptEnv) cmdGrant(c *scriptCmd) (string, error) {
	if c.has("fail") {
		e.grant.Fail = c.args["fail"] == "true"
		return fmt.Sprintf("grant fail=%t (by hand)", e.grant.Fail), nil
	}
	others, err := strconv.Atoi(c.str("in-flight", "0"))
	if err != nil {
		return "", err
	}
	fleet := []lifecycle.Member{lifecycle.MemberOf(&e.cfg, &lifecycle.Input{Object: e.obj, Status: e.status})}
	for i := range others {
		fleet = append(fleet, lifecycle.Member{Name: fmt.Sprintf("other-%d", i+1), UID: fmt.Sprintf("other-uid-%d", i+1),
			Owner: e.obj.Owner, Phase: phase.Terminating, Deleting: true,
			CreationTime: lifecycle.StampOf(e.t0), DeletionTime: lifecycle.StampOf(e.now)})
	}
	e.grant = lifecycle.Limit(nil, &e.cfg, e.now, e.observer, fleet)[0]
	return fmt.Sprintf("limiter: fail=%t (owner %s: %d other machine(s) in flight, limit %d)",
		e.grant.Fail, e.obj.Owner, others, e.cfg.Replacements.Count), nil
}

func (e *scriptEnv) cmdSpec(c *scriptCmd) (string, error) {
	if c.has("generation") {
		g, err := strconv.ParseInt(c.args["generation"], 10, 64)
		if err != nil {
			return "", err
		}
		e.obj.UpdateGeneration = g
	}
	if c.has("metadata") {
		md := map[string]string{}
		for _, kv := range strings.Split(c.args["metadata"], ",") {
			if kv == "" {
				continue
			}
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return "", fmt.Errorf("metadata %q: want key=value", kv)
			}
			md[k] = v
		}
		e.obj.Metadata = md
	}
	return fmt.Sprintf("spec: generation=%d metadata=%s", e.obj.UpdateGeneration, scriptMap(e.obj.Metadata)), nil
}

func (e *scriptEnv) cmdProvider(c *scriptCmd) (string, error) {
	if len(c.pos) == 0 {
		return e.prov.String(), nil
	}
	switch c.pos[0] {
	case "fail":
		var m driverapi.Method
		for _, x := range []driverapi.Method{driverapi.MethodCreate, driverapi.MethodInitialize, driverapi.MethodGetStatus,
			driverapi.MethodDelete, driverapi.MethodUpdate, driverapi.MethodUpdateMetadata} {
			if x.String() == c.str("method", "") {
				m = x
			}
		}
		if m == driverapi.MethodNone {
			return "", fmt.Errorf("unknown method %q", c.args["method"])
		}
		code, err := driverapi.ParseCode(c.str("code", ""))
		if err != nil {
			return "", err
		}
		times, err := strconv.Atoi(c.str("times", "1"))
		if err != nil {
			return "", err
		}
		msg := c.str("msg", "scripted "+code.String())
		e.prov.faults[m] = &scriptFault{code: code, msg: msg, times: times}
		return fmt.Sprintf("%s fails with %s %q the next %d time(s)", m, code, msg, times), nil
	case "drop-metadata":
		times, err := strconv.Atoi(c.str("times", "1"))
		if err != nil {
			return "", err
		}
		keys := strings.Split(c.str("keys", ""), ",")
		for range times {
			e.prov.drop = append(e.prov.drop, keys)
		}
		return fmt.Sprintf("UpdateMetadata silently drops %s the next %d time(s)", strings.Join(keys, ","), times), nil
	case "instance":
		name, uid := c.str("name", e.obj.Name), c.str("uid", "")
		i := e.prov.add(name, uid, uid+"/0", 0, nil)
		i.initialized = c.str("initialized", "true") == "true"
		return "provider: " + i.providerID + " of machine " + name + " owner " + uid + " node " + i.node, nil
	}
	return "", fmt.Errorf("unknown provider command %q", c.pos[0])
}

// cmdAdopt takes over a machine MCM was managing: the status is read from
// MCM's phase and LastOperation record (its description parsed once), the
// instance from spec.providerID and the node from the node label.
func (e *scriptEnv) cmdAdopt(c *scriptCmd) (string, error) {
	p, err := phase.Parse(c.str("phase", ""))
	if err != nil {
		return "", err
	}
	typ, err := lastop.ParseType(c.str("type", ""))
	if err != nil {
		return "", err
	}
	state, err := lastop.ParseState(c.str("state", ""))
	if err != nil {
		return "", err
	}
	var st lifecycle.Status
	st.Phase, st.PhaseSince = p, lifecycle.StampOf(e.now)
	st.LastOp, _ = lastop.FromLastOperation(lastop.LastOperation{Description: c.str("description", ""),
		Type: typ, State: state, LastUpdateTime: e.now})
	st.ProviderID, st.NodeName = c.str("provider-id", ""), c.str("node", "")
	e.obj.ProviderID, e.obj.NodeLabel = st.ProviderID, st.NodeName
	e.obj.Priority, e.obj.Finalizer = lifecycle.DefaultPriority, true
	e.status, e.savedAt = st, e.now
	return fmt.Sprintf("adopted: phase=%s lastop %s/%s parsed as %s (MCM's next step: %s)", p.Label(), typ, state,
		st.LastOp.Desc, st.LastOp.Desc.Step()), nil
}

// rel renders a time relative to the start of the script.
func (e *scriptEnv) rel(t time.Time) string {
	if t.IsZero() {
		return "unset"
	}
	return "T+" + t.Sub(e.t0).String()
}

// scriptDuration reads an optional duration argument (0 when absent).
func scriptDuration(c *scriptCmd, k string) (time.Duration, error) {
	if !c.has(k) {
		return 0, nil
	}
	return time.ParseDuration(c.args[k])
}

func scriptWrite(s string) (lifecycle.Write, error) {
	for _, w := range []lifecycle.Write{lifecycle.WriteOK, lifecycle.WriteConflict, lifecycle.WriteNotFound, lifecycle.WriteFailed} {
		if strings.EqualFold(w.String(), s) || strings.EqualFold(strings.ReplaceAll(w.String(), "-", ""), s) {
			return w, nil
		}
	}
	return 0, fmt.Errorf("unknown write result %q (ok, conflict, notfound, failed)", s)
}

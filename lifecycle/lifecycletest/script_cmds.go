package lifecycletest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// The commands of a Script that set up and change the world: the machine
// object, the configuration, the clock, the observer, the grant, the spec,
// the provider's faults and instances, and an adopted MCM machine.

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
	e.pending, e.outcome = nil, nil
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
		other := lifecycle.Input{
			Object: lifecycle.Object{Name: fmt.Sprintf("other-%d", i+1), UID: fmt.Sprintf("other-uid-%d", i+1),
				Owner: e.obj.Owner, CreationTime: e.t0, DeletionTime: e.now},
			Status: lifecycle.Status{Phase: phase.Terminating},
		}
		fleet = append(fleet, lifecycle.MemberOf(&e.cfg, &other))
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
	return fmt.Sprintf("spec: generation=%d metadata=%s", e.obj.UpdateGeneration, mapString(e.obj.Metadata)), nil
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
		e.prov.FailNext(m, Fault{Code: code, Message: msg}, times)
		return fmt.Sprintf("%s fails with %s %q the next %d time(s)", m, code, msg, times), nil
	case "drop-metadata":
		times, err := strconv.Atoi(c.str("times", "1"))
		if err != nil {
			return "", err
		}
		keys := strings.Split(c.str("keys", ""), ",")
		for range times {
			e.prov.DropNext(keys...)
		}
		return fmt.Sprintf("UpdateMetadata silently drops %s the next %d time(s)", strings.Join(keys, ","), times), nil
	case "instance":
		name, uid := c.str("name", e.obj.Name), c.str("uid", "")
		i := e.prov.At(e.prov.Add(Instance{MachineName: name, CreatorUID: uid, OwnerUID: uid,
			Initialized: c.str("initialized", "true") == "true"}))
		return "provider: " + i.ProviderID + " of machine " + name + " owner " + uid + " node " + i.NodeName, nil
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

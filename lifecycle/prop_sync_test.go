package lifecycle_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
)

// instance is a provider-side instance in the property tests.
type instance struct {
	meta  map[string]string
	owner string
}

// metadataWorld plays the shell and the provider for one Running machine:
// UpdateMetadata applies each change unless the test drops it.
type metadataWorld struct {
	t    *rapid.T
	cfg  lifecycle.Config
	in   lifecycle.Input
	inst instance
	// drops enables silently dropped changes; crashes, shell crashes after
	// any effect.
	drops, crashes bool
}

// pass runs one reconcile pass with pass.Run (inputPass), with dropped
// metadata changes and crashes after any effect drawn from t.
func (w *metadataWorld) pass() {
	p := inputPass{answer: w.call}
	if w.crashes {
		// The controller dies; the next pass starts from the saved status.
		p.crash = func(*lifecycle.Decision, int) bool { return rapid.IntRange(0, 3).Draw(w.t, "crash") == 0 }
	}
	p.run(w.t, w.cfg, &w.in)
}

func (w *metadataWorld) call(c driverapi.Call) driverapi.Result {
	r := driverapi.Result{Method: c.Method}
	switch c.Method {
	case driverapi.MethodGetStatus:
		r.ProviderID, r.NodeName, r.OwnerUID = providerID, nodeName, w.inst.owner
		r.Metadata = maps.Clone(w.inst.meta)
	case driverapi.MethodUpdateMetadata:
		next := maps.Clone(w.inst.meta)
		if next == nil {
			next = map[string]string{}
		}
		for k, v := range c.Metadata {
			if !w.drops || !rapid.Bool().Draw(w.t, "drop set "+k) {
				next[k] = v
			}
		}
		for _, k := range c.Remove {
			if !w.drops || !rapid.Bool().Draw(w.t, "drop remove "+k) {
				delete(next, k)
			}
		}
		if !w.drops || !rapid.Bool().Draw(w.t, "drop owner") {
			next["owner"] = c.Machine.UID
			w.inst.owner = c.Machine.UID
		}
		delete(next, "owner")
		w.inst.meta = next
	default:
		w.t.Fatalf("unexpected call %s", c.Method)
	}
	return r
}

// actuallyInSync reports whether the instance carries every desired key,
// no key the lifecycle manages that is not desired, and the machine's UID.
func (w *metadataWorld) actuallyInSync() bool {
	if w.inst.owner != w.in.Object.UID {
		return false
	}
	for k, v := range w.in.Object.Metadata {
		if w.inst.meta[k] != v {
			return false
		}
	}
	for k := range w.in.Status.Metadata {
		if _, desired := w.in.Object.Metadata[k]; !desired {
			if _, there := w.inst.meta[k]; there {
				return false
			}
		}
	}
	return true
}

func (w *metadataWorld) reportedInSync() bool {
	m := lifecycle.MemberOf(&w.cfg, &w.in)
	return m.MetadataInSync()
}

// For any sequence of partial metadata applications (each change may be
// dropped), crashes and reconciles at any times, the machine is never
// reported in sync while a key differs, and it converges once drops stop.
func TestPropertyMetadataNeverInSyncWhileAKeyDiffers(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		keys := []string{"team", "pool", "cost-center", "uid-tag"}
		genMeta := rapid.MapOfN(rapid.SampledFrom(keys), rapid.SampledFrom([]string{"a", "b", "c"}), 0, len(keys))
		w := &metadataWorld{t: t, cfg: lifecycle.DefaultConfig(), drops: true, crashes: true}
		w.in = runningInput()
		w.in.Object.Metadata = genMeta.Draw(t, "desired")
		w.inst = instance{meta: genMeta.Draw(t, "initial instance metadata"),
			owner: rapid.SampledFrom([]string{machineUID, "uid-lagging", ""}).Draw(t, "initial owner")}
		w.in.Status.MetadataObserved = 0 // nothing observed yet
		w.in.Status.Metadata = nil
		w.in.Status.OwnerUID = ""

		check := func() {
			if w.reportedInSync() && !w.actuallyInSync() {
				t.Fatalf("reported in sync while the instance differs: desired %v owner %s, instance %v owner %s",
					w.in.Object.Metadata, w.in.Object.UID, w.inst.meta, w.inst.owner)
			}
			if w.in.Status.Phase != phase.Running {
				t.Fatalf("metadata changed the phase to %s", w.in.Status.Phase.Label())
			}
		}
		t.Repeat(map[string]func(*rapid.T){
			"reconcile":       func(t *rapid.T) { w.pass() },
			"reconcile again": func(t *rapid.T) { w.pass() },
			"advance": func(t *rapid.T) {
				w.in.Now = w.in.Now.Add(time.Duration(rapid.IntRange(1, 900).Draw(t, "seconds")) * time.Second)
			},
			"change desired": func(t *rapid.T) { w.in.Object.Metadata = genMeta.Draw(t, "new desired") },
			"":               func(t *rapid.T) { check() },
		})
		// Drops and crashes stop: the machine converges.
		w.drops, w.crashes = false, false
		for i := 0; i < 20 && !w.reportedInSync(); i++ {
			w.in.Now = w.in.Now.Add(11 * time.Minute)
			w.pass()
			check()
		}
		if !w.reportedInSync() || !w.actuallyInSync() {
			t.Fatalf("did not converge: desired %v, instance %v owner %s, status %+v", w.in.Object.Metadata,
				w.inst.meta, w.inst.owner, w.in.Status)
		}
	})
}

// incarnationWorld is a provider holding instances of several incarnations
// of one machine name; lookups by name may return any of them.
type incarnationWorld struct {
	t         *rapid.T
	instances map[string]string // providerID -> owner UID
	seq       int
}

func (w *incarnationWorld) call(c driverapi.Call) driverapi.Result {
	r := driverapi.Result{Method: c.Method}
	fault := rapid.SampledFrom([]driverapi.Code{driverapi.OK, driverapi.OK, driverapi.OK, driverapi.Unavailable,
		driverapi.Internal}).Draw(w.t, "fault")
	if fault != driverapi.OK {
		r.Code, r.Message, r.Text = fault, "injected", "injected"
		return r
	}
	switch c.Method {
	case driverapi.MethodGetStatus, driverapi.MethodInitialize:
		pid := c.Machine.ProviderID
		if pid == "" {
			// By name: any instance of the name may come back, whoever owns it.
			var all []string
			for p := range w.instances {
				all = append(all, p)
			}
			if len(all) == 0 || rapid.Bool().Draw(w.t, "not found") {
				r.Code, r.Message, r.Text = driverapi.NotFound, "none", "none"
				return r
			}
			sortStrings(all)
			pid = rapid.SampledFrom(all).Draw(w.t, "instance")
		}
		owner, ok := w.instances[pid]
		if !ok {
			r.Code, r.Message, r.Text = driverapi.NotFound, "none", "none"
			return r
		}
		r.ProviderID, r.NodeName, r.OwnerUID = pid, "node-"+pid, owner
	case driverapi.MethodCreate:
		w.seq++
		pid := fmt.Sprintf("p-new-%d", w.seq)
		w.instances[pid] = c.Machine.UID
		r.ProviderID, r.NodeName = pid, "node-"+pid
	case driverapi.MethodDelete:
		delete(w.instances, c.Machine.ProviderID)
	}
	return r
}

// No instance of another incarnation of the machine (another UID) is ever
// adopted, whatever lookups by name return, with failures and crashes.
func TestPropertyNoForeignIncarnationAdopted(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := &incarnationWorld{t: t, instances: map[string]string{}}
		for i := range rapid.IntRange(0, 3).Draw(t, "old incarnations") {
			w.instances[fmt.Sprintf("p-old-%d", i)] = fmt.Sprintf("uid-old-%d", i)
		}
		cfg := lifecycle.DefaultConfig()
		in := newInput()
		p := inputPass{answer: w.call,
			decided: func(_ *lifecycle.Input, d *lifecycle.Decision) bool {
				if pid := d.Status.ProviderID; pid != "" {
					if owner, ok := w.instances[pid]; ok && owner != machineUID {
						t.Fatalf("adopted %s of another incarnation (%s)", pid, owner)
					}
				}
				if d.Call.Method == driverapi.MethodDelete && d.Call.Machine.ProviderID != "" {
					if owner := w.instances[d.Call.Machine.ProviderID]; owner == machineUID && d.Status.Phase != phase.Failed {
						t.Fatalf("deleted this incarnation's instance %s", d.Call.Machine.ProviderID)
					}
				}
				return false
			},
			// The controller may die once a decision's effects ran.
			crash: func(d *lifecycle.Decision, ran int) bool {
				return ran == d.Effects.Len() && rapid.Bool().Draw(t, "crash")
			},
		}
		for range 30 {
			p.run(t, cfg, &in)
			in.Now = in.Now.Add(time.Duration(rapid.IntRange(1, 120).Draw(t, "seconds")) * time.Second)
		}
	})
}

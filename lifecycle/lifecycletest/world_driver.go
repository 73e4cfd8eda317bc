package lifecycletest

import (
	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
)

// wResult is a driver result a call may get, with the instance after the
// call.
type wResult struct {
	r         driverapi.Result
	inst      wInstance
	faultFree bool
	label     string // what happened, when the result's class does not say
}

// results gives the driver results a call of the op of rule op may get:
// the fault-free answer first, then the faults of its method. The provider
// is idempotent on the creation key, and it may fail, answer undecodably,
// lose sight of an existing instance for a moment (an eventually consistent
// API answers GetMachineStatus NotFound), answer CreateMachine without the
// instance's identity, and take an UpdateMetadata without applying it, or
// one of its keys.
func (s *wState) results(c driverapi.Call, op lifecycle.Rule) []wResult {
	inst := s.inst
	ok := func(r driverapi.Result, i wInstance) wResult { return wResult{r, i, true, ""} }
	fault := func(r driverapi.Result, i wInstance) wResult { return wResult{r, i, false, ""} }
	errR := func(code driverapi.Code) driverapi.Result {
		return driverapi.Result{Method: c.Method, Code: code, Message: "x", Text: "x"}
	}
	undecodable := driverapi.Result{Method: c.Method, Code: driverapi.Unknown, Undecodable: true, Message: "x", Text: "x"}
	found := func(i wInstance) driverapi.Result {
		return driverapi.Result{Method: c.Method, ProviderID: wPID, NodeName: wNode, OwnerUID: i.owner,
			Generation: i.generation, Metadata: metaMap(i.meta)}
	}
	var out []wResult
	switch c.Method {
	case driverapi.MethodGetStatus:
		switch {
		case inst.exists && (c.Machine.ProviderID == wPID || c.Machine.ProviderID == ""):
			r := found(inst)
			if !inst.initialized {
				r.Code, r.Message, r.Text = driverapi.Uninitialized, "x", "x"
			}
			out = append(out, ok(r, inst), wResult{errR(driverapi.NotFound), inst, false, "GetMachineStatus loses sight"})
		case s.oldInst && c.Machine.ProviderID == "":
			r := found(wInstance{owner: "uid-0"})
			r.ProviderID, r.NodeName = "test:///vm-old", "node-old"
			out = append(out, ok(r, inst))
		default:
			out = append(out, ok(errR(driverapi.NotFound), inst))
		}
		out = append(out, fault(errR(driverapi.Unavailable), inst), fault(undecodable, inst))
		if op == lifecycle.RuleDeleteLookup {
			out = append(out, fault(errR(driverapi.Internal), inst), fault(errR(driverapi.Unimplemented), inst))
		}
	case driverapi.MethodCreate:
		made := inst
		if !made.exists {
			made = wInstance{exists: true, generation: c.Generation, meta: metaOf(c.Metadata), owner: c.Machine.UID}
		}
		r := driverapi.Result{Method: c.Method, ProviderID: wPID, NodeName: wNode}
		out = append(out, ok(r, made), fault(errR(driverapi.Unavailable), made),
			fault(errR(driverapi.ResourceExhausted), inst), fault(errR(driverapi.Internal), inst),
			fault(undecodable, inst),
			wResult{driverapi.Result{Method: c.Method}, made, false, "CreateMachine OK without identity"})
	case driverapi.MethodInitialize:
		if !inst.exists {
			return []wResult{ok(errR(driverapi.NotFound), inst)}
		}
		done := inst
		done.initialized = true
		out = append(out, ok(driverapi.Result{Method: c.Method}, done), fault(errR(driverapi.Unimplemented), done),
			fault(errR(driverapi.Internal), inst), fault(undecodable, inst))
	case driverapi.MethodDelete:
		if c.Machine.ProviderID == "test:///vm-old" || c.Machine.UID == "uid-0" {
			out = append(out, ok(driverapi.Result{Method: c.Method}, inst))
			break
		}
		gone := wInstance{}
		if inst.exists {
			out = append(out, ok(driverapi.Result{Method: c.Method}, gone))
		} else {
			out = append(out, ok(errR(driverapi.NotFound), gone))
		}
		out = append(out, fault(errR(driverapi.Unavailable), inst), fault(errR(driverapi.Internal), inst),
			fault(undecodable, inst))
	case driverapi.MethodUpdate:
		up := inst
		up.generation = c.Generation
		out = append(out, ok(driverapi.Result{Method: c.Method, Generation: c.Generation}, up),
			fault(errR(driverapi.FailedPrecondition), inst), fault(errR(driverapi.Unavailable), inst))
	case driverapi.MethodUpdateMetadata:
		set := inst
		set.meta = inst.meta | metaOf(c.Metadata)
		for _, k := range c.Remove {
			for _, m := range wMetaKeys {
				if m.key == k {
					set.meta &^= m.bit
				}
			}
		}
		set.owner = c.Machine.UID
		out = append(out, ok(driverapi.Result{Method: c.Method}, set))
		if add := metaOf(c.Metadata) &^ inst.meta; add != 0 {
			// OK, but the first key it sets is not applied.
			dropped := set
			for _, m := range wMetaKeys {
				if add&m.bit != 0 {
					dropped.meta &^= m.bit
					break
				}
			}
			out = append(out, wResult{driverapi.Result{Method: c.Method}, dropped, false, "UpdateMetadata OK, a key dropped"})
		}
		out = append(out, wResult{driverapi.Result{Method: c.Method}, inst, false, "UpdateMetadata OK, every change dropped"},
			fault(errR(driverapi.Unavailable), inst))
	default:
		panic("lifecycletest: the explored world has no answer to " + c.Method.String())
	}
	return out
}

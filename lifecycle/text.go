package lifecycle

import (
	"slices"
	"strconv"
	"strings"

	"github.com/purelifecycle/machine/driverapi"
)

// This file renders decisions as text for logs, examples and scenario
// tests. It allocates; the core never calls it.

// String renders the effect in one line, such as
// "remove-taint node-1 node.machine.sapcloud.io/instance-not-ready". A
// driver call renders as "call-driver"; [Decision.Lines] renders it in full.
func (e Effect) String() string {
	switch e.Kind {
	case KindEnsureFinalizer, KindRemoveFinalizer:
		return e.Kind.String() + " " + e.Key
	case KindEnsureNodeLabel, KindEnsurePriority, KindEnsureProviderID:
		return e.Kind.String() + " " + e.Value
	case KindLabelNode, KindAnnotateNode:
		return e.Kind.String() + " " + e.Node + " " + e.Key + "=" + e.Value
	case KindRemoveAnnotation:
		return e.Kind.String() + " " + e.Key
	case KindRemoveTaint, KindRemoveNodeFinalizer, KindRemoveNodeLabel, KindRemoveNodeAnnotation:
		return e.Kind.String() + " " + e.Node + " " + e.Key
	case KindSetNodeCondition:
		return e.Kind.String() + " " + e.Node + " " + e.Key + "=" + e.Status.String() + " reason=" + e.Value
	case KindCordon, KindUncordon:
		s := e.Kind.String() + " " + e.Node
		if e.Key != "" && e.Kind == KindCordon {
			s += " marking " + e.Key // [CordonMarkAnnotation]
		} else if e.Key != "" {
			s += " unmarking " + e.Key
		}
		return s
	case KindDeleteVolumeAttachments, KindDeleteNode:
		return e.Kind.String() + " " + e.Node
	case KindDrain:
		s := e.Kind.String() + " " + e.Node
		if e.Force {
			s += " force"
		}
		return s
	case KindEnsureBootstrapToken:
		return e.Kind.String() + " " + e.Value + " expires " + e.Expiry.String()
	case KindDeleteBootstrapToken:
		return e.Kind.String() + " " + e.Value
	case KindEvent:
		typ := "Normal"
		if e.Warning {
			typ = "Warning"
		}
		return e.Kind.String() + " " + typ + " " + e.Rule.Event() + " (" + e.Rule.String() + ")"
	}
	return e.Kind.String()
}

// CallString renders a driver call in one line, such as
// "GetMachineStatus machine-1 uid=uid-1 key=uid-1/0".
func CallString(c driverapi.Call) string {
	var b strings.Builder
	b.WriteString(c.Method.String())
	b.WriteString(" " + c.Machine.Name)
	if c.Machine.ProviderID != "" {
		b.WriteString(" providerID=" + c.Machine.ProviderID)
	}
	b.WriteString(" uid=" + c.Machine.UID)
	if c.Method == driverapi.MethodCreate || c.Method == driverapi.MethodGetStatus {
		b.WriteString(" key=" + c.IdempotencyKey())
	}
	if c.Method == driverapi.MethodUpdate || (c.Method == driverapi.MethodCreate && c.Generation != 0) {
		b.WriteString(" generation=" + strconv.FormatInt(c.Generation, 10))
	}
	if c.Method == driverapi.MethodUpdateMetadata || (c.Method == driverapi.MethodCreate && len(c.Metadata) > 0) {
		keys := make([]string, 0, len(c.Metadata))
		for k := range c.Metadata {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b.WriteString(" set " + k + "=" + c.Metadata[k])
		}
		for _, k := range c.Remove {
			b.WriteString(" remove " + k)
		}
	}
	if c.LastKnownState != "" {
		b.WriteString(" lastKnownState=" + strconv.Quote(c.LastKnownState))
	}
	return b.String()
}

// Lines renders the decision's effects, one line each, the driver call in
// full.
func (d *Decision) Lines() []string {
	out := make([]string, 0, d.Effects.Len())
	for _, e := range d.Effects.Slice() {
		if e.Kind == KindCallDriver {
			out = append(out, "call "+CallString(d.Call))
			continue
		}
		out = append(out, e.String())
	}
	return out
}

// String renders the decision in a few lines: the rule, the phase and stage
// after it, the effects, and the requeue.
func (d *Decision) String() string {
	var b strings.Builder
	b.WriteString(d.Rule.String())
	b.WriteString(": " + d.Rule.Text())
	b.WriteString("\n  status: phase=" + d.Status.Phase.Label() + " stage=" + d.Status.Stage.String())
	if d.Changed {
		b.WriteString(" (changed)")
	}
	for _, l := range d.Lines() {
		b.WriteString("\n  effect: " + l)
	}
	if d.Wait.For != WaitNone {
		b.WriteString("\n  waiting for " + d.Wait.For.String())
		if !d.Wait.Until.IsZero() {
			b.WriteString(" until " + d.Wait.Until.String())
		}
	}
	if d.Anomalies != 0 {
		b.WriteString("\n  anomalies: " + d.Anomalies.String())
	}
	b.WriteString("\n  requeue: " + d.Requeue.String())
	return b.String()
}

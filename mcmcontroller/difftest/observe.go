package difftest

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/purelifecycle/machine/mcmcontroller/mcmfake"
)

// Observation is what one reconcile did, as the world shows it: the
// machine after it, the driver calls made during it and the writes to the
// machine, its class and secret, the nodes and the bootstrap tokens. Two
// controllers' observations of the same step are compared with Diff;
// Result and Err are recorded for reports only.
type Observation struct {
	// Step is the index of the step in its scenario, counting on past
	// the last step for the reconciles that let the machine settle.
	Step int
	// Settle marks a reconcile after the scenario's steps, with the world
	// left alone, for the machine to settle (see [Runner.Run]).
	Settle bool
	// Machine is the machine after the reconcile.
	Machine MachineView
	// Calls are the driver calls made during the reconcile, in order.
	Calls []CallView
	// Writes are the changes the reconcile made, normalised and sorted:
	// "<kind> <name>: <path>: <before> -> <after>", "+" and "-" for a
	// value set or removed, "created" and "deleted" for whole objects.
	Writes []string
	// Nodes is each node's part in the in-place update and in
	// preservation after the reconcile: whether it is cordoned, its
	// InPlaceUpdate and Preserved conditions and its annotations of
	// preservation, one line a node, sorted. Like Machine.Conditions,
	// compared only where the runs end.
	Nodes []string
	// Result and Err are what the controller reported; not compared.
	Result Result
	Err    string
}

// MachineView is the part of a Machine the test compares.
type MachineView struct {
	// Gone reports that the machine no longer exists.
	Gone bool
	// Phase is status.currentStatus.phase.
	Phase string
	// Op is status.lastOperation without its time.
	Op OpView
	// ProviderID is spec.providerID, NodeLabel the label "node".
	ProviderID, NodeLabel string
	// Finalizers are the machine's finalizers, sorted.
	Finalizers []string
	// Conditions are the machine's copy of its node's conditions, one
	// "type status reason: message" line each, sorted. They are compared
	// only where the runs end (lastMachines); at each step their writes
	// are.
	Conditions []string
	// Preservation is whether the machine has a preservation's expiry and
	// its annotations of preservation, one "key=value" line each, in that
	// order; like Conditions, compared only where the runs end.
	Preservation []string
}

// OpView is a LastOperation without its time; the description normalised.
type OpView struct {
	Type, State, Description, ErrorCode string
}

// CallView is one driver call: the method, the request's machine and
// providerID, and the code answered.
type CallView struct {
	Method, Machine, ProviderID, Code string
}

// String renders the call on one line.
func (c CallView) String() string {
	s := c.Method + "(" + c.Machine
	if c.ProviderID != "" {
		s += ", " + c.ProviderID
	}
	return s + ") " + c.Code
}

// Diff returns the differences between two observations of the same step,
// one line each, in a fixed order; none when they agree. Result and Err
// are not compared.
func Diff(a, b *Observation) []string {
	var out []string
	add := func(what string, x, y any) {
		out = append(out, fmt.Sprintf("%s: %v | %v", what, x, y))
	}
	ma, mb := a.Machine, b.Machine
	if ma.Gone != mb.Gone {
		add("machine gone", ma.Gone, mb.Gone)
	}
	if ma.Phase != mb.Phase {
		add("phase", q(ma.Phase), q(mb.Phase))
	}
	if ma.Op.Type != mb.Op.Type {
		add("lastOperation.type", q(ma.Op.Type), q(mb.Op.Type))
	}
	if ma.Op.State != mb.Op.State {
		add("lastOperation.state", q(ma.Op.State), q(mb.Op.State))
	}
	if ma.Op.Description != mb.Op.Description {
		add("lastOperation.description", q(ma.Op.Description), q(mb.Op.Description))
	}
	if ma.Op.ErrorCode != mb.Op.ErrorCode {
		add("lastOperation.errorCode", q(ma.Op.ErrorCode), q(mb.Op.ErrorCode))
	}
	if ma.ProviderID != mb.ProviderID {
		add("spec.providerID", q(ma.ProviderID), q(mb.ProviderID))
	}
	if ma.NodeLabel != mb.NodeLabel {
		add("node label", q(ma.NodeLabel), q(mb.NodeLabel))
	}
	if !slices.Equal(ma.Finalizers, mb.Finalizers) {
		add("finalizers", ma.Finalizers, mb.Finalizers)
	}
	if !slices.Equal(a.Calls, b.Calls) {
		add("driver calls", a.Calls, b.Calls)
	}
	for _, w := range onlyIn(a.Writes, b.Writes) {
		out = append(out, "write only by the first: "+w)
	}
	for _, w := range onlyIn(b.Writes, a.Writes) {
		out = append(out, "write only by the second: "+w)
	}
	return out
}

// q quotes s.
func q(s string) string { return fmt.Sprintf("%q", s) }

// onlyIn returns the lines of a that b lacks (a multiset difference).
func onlyIn(a, b []string) []string {
	left := map[string]int{}
	for _, s := range b {
		left[s]++
	}
	var out []string
	for _, s := range a {
		if left[s] > 0 {
			left[s]--
			continue
		}
		out = append(out, s)
	}
	return out
}

// Normalizer removes from what is observed what legitimately differs
// between two runs of a scenario: resourceVersions, UIDs, generations,
// managed fields and every timestamp (a leaf that is a time, but for the
// preservation's expiry, kept as "<time>" so that it is seen set or
// cleared, and a time printed inside a text), the scenario's namespace (different per run), the
// names and generated values of bootstrap tokens, and annotations under
// the prefixes a controller keeps its own state in.
type Normalizer struct {
	// Namespace is the run's namespace, replaced by "<ns>".
	Namespace string
	// IgnoredAnnotations are prefixes of annotation keys left out.
	IgnoredAnnotations []string
}

// DefaultIgnoredAnnotations are the annotations of the project's own
// state (adapters/mcm StateAnnotation and UIDHashAnnotation).
var DefaultIgnoredAnnotations = []string{"machine.purelifecycle.dev/"}

var (
	// printedTime matches a time as Go prints it, and an RFC 3339 time.
	printedTime = regexp.MustCompile(`\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?( ?[+-]\d\d:?\d\d)?( [A-Z]{3,4})?Z?( m=[+-][0-9.]+)?`)
	// tokenName matches the name of a bootstrap token secret.
	tokenName = regexp.MustCompile(`bootstrap-token-[a-z0-9]{6}`)
	// uid matches a UID, which the API server gives each object anew.
	uid = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	// measured matches a duration as Go prints one measured by a clock
	// (with a fraction), such as the time a machine took to join.
	measured = regexp.MustCompile(`\b(\d+h)?(\d+m)?\d+\.\d+(µs|ms|ns|s)\b`)
)

// Text normalises a text: times, measured durations, UIDs, the namespace
// and token names replaced.
func (n *Normalizer) Text(s string) string {
	s = printedTime.ReplaceAllString(s, "<time>")
	s = measured.ReplaceAllString(s, "<elapsed>")
	s = uid.ReplaceAllString(s, "<uid>")
	if n.Namespace != "" {
		s = strings.ReplaceAll(s, n.Namespace, "<ns>")
	}
	return tokenName.ReplaceAllString(s, "bootstrap-token-<id>")
}

// snapshot is the world at one instant: each object by "<kind> <name>",
// flattened to its normalised leaves.
type snapshot map[string]map[string]string

// snapshot reads the machine, the classes, secrets and pods of the
// namespace, every node, the bootstrap tokens of kube-system and every
// volume attachment, each normalised by n.
func (e *Env) snapshot(ctx context.Context, n *Normalizer) (snapshot, error) {
	s := snapshot{}
	put := func(key string, obj any) error {
		leaves, err := flatten(obj, n)
		if err != nil {
			return err
		}
		s[n.Text(key)] = leaves
		return nil
	}
	m, err := e.machineClient().Get(ctx, e.Machine, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, err
	default:
		if err := put("machine "+m.Name, m); err != nil {
			return nil, err
		}
	}
	classes, err := e.Machines.MachineV1alpha1().MachineClasses(e.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range classes.Items {
		if err := put("class "+classes.Items[i].Name, &classes.Items[i]); err != nil {
			return nil, err
		}
	}
	nodes, err := e.Core.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range nodes.Items {
		if err := put("node "+nodes.Items[i].Name, &nodes.Items[i]); err != nil {
			return nil, err
		}
	}
	pods, err := e.Core.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range pods.Items {
		if err := put("pod "+pods.Items[i].Name, &pods.Items[i]); err != nil {
			return nil, err
		}
	}
	for _, ns := range []string{e.Namespace, metav1.NamespaceSystem} {
		secrets, err := e.Core.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for i := range secrets.Items {
			sec := &secrets.Items[i]
			if ns == metav1.NamespaceSystem && sec.Type != "bootstrap.kubernetes.io/token" {
				continue
			}
			// The data as text, readable in a report; a token's generated
			// values replaced.
			sec = sec.DeepCopy()
			sec.StringData = map[string]string{}
			for k, v := range sec.Data {
				sec.StringData[k] = string(v)
			}
			sec.Data = nil
			if sec.Type == "bootstrap.kubernetes.io/token" {
				for _, k := range []string{"token-id", "token-secret", "expiration"} {
					if _, ok := sec.StringData[k]; ok {
						sec.StringData[k] = "<generated>"
					}
				}
			}
			if err := put("secret "+ns+"/"+sec.Name, sec); err != nil {
				return nil, err
			}
		}
	}
	vas, err := e.Core.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range vas.Items {
		if err := put("volumeattachment "+vas.Items[i].Name, &vas.Items[i]); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// droppedMeta are the metadata fields a snapshot leaves out.
var droppedMeta = []string{"resourceVersion", "managedFields", "generation", "uid", "creationTimestamp", "selfLink"}

// flatten returns the normalised leaves of obj by path.
func flatten(obj any, n *Normalizer) (map[string]string, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	if meta, ok := v["metadata"].(map[string]any); ok {
		for _, k := range droppedMeta {
			delete(meta, k)
		}
		if anns, ok := meta["annotations"].(map[string]any); ok {
			for k := range anns {
				for _, p := range n.IgnoredAnnotations {
					if strings.HasPrefix(k, p) {
						delete(anns, k)
					}
				}
			}
		}
	}
	out := map[string]string{}
	walk("", v, n, out)
	return out, nil
}

// walk adds the leaves of v under path to out. A list of objects with a
// "type" (conditions) or "key" (taints) is indexed by it, other lists by
// position. Leaves that are times are left out.
func walk(path string, v any, n *Normalizer, out map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			walk(join(path, k), x, n, out)
		}
	case []any:
		for i, x := range v {
			idx := fmt.Sprint(i)
			if m, ok := x.(map[string]any); ok {
				for _, k := range []string{"type", "key"} {
					if id, ok := m[k].(string); ok {
						idx = k + "=" + id
						break
					}
				}
			}
			walk(path+"["+idx+"]", x, n, out)
		}
	case string:
		if _, err := time.Parse(time.RFC3339, v); err == nil {
			if presentTimes[path] {
				out[path] = "<time>"
			}
			return
		}
		out[path] = n.Text(v)
	case nil:
	default:
		out[path] = fmt.Sprint(v)
	}
}

// presentTimes are the time leaves kept, as "<time>", so that setting or
// clearing one is a write: the preservation's expiry.
var presentTimes = map[string]bool{"status.currentStatus.preserveExpiryTime": true}

// join joins a path and a key.
func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// writes returns the changes from before to after, sorted.
func writes(before, after snapshot) []string {
	var out []string
	for key, b := range before {
		a, ok := after[key]
		if !ok {
			out = append(out, key+": deleted")
			continue
		}
		for p, bv := range b {
			av, ok := a[p]
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("%s: %s: -%q", key, p, bv))
			case av != bv:
				out = append(out, fmt.Sprintf("%s: %s: %q -> %q", key, p, bv, av))
			}
		}
		for p, av := range a {
			if _, ok := b[p]; !ok {
				out = append(out, fmt.Sprintf("%s: %s: +%q", key, p, av))
			}
		}
	}
	for key, a := range after {
		if _, ok := before[key]; ok {
			continue
		}
		out = append(out, key+": created")
		for p, av := range a {
			out = append(out, fmt.Sprintf("%s: %s: +%q", key, p, av))
		}
	}
	sort.Strings(out)
	return out
}

// machineView reads the machine's view from a snapshot.
func machineView(s snapshot, name string) MachineView {
	leaves, ok := s["machine "+name]
	if !ok {
		return MachineView{Gone: true}
	}
	v := MachineView{
		Phase: leaves["status.currentStatus.phase"],
		Op: OpView{Type: leaves["status.lastOperation.type"], State: leaves["status.lastOperation.state"],
			Description: leaves["status.lastOperation.description"], ErrorCode: leaves["status.lastOperation.errorCode"]},
		ProviderID: leaves["spec.providerID"],
		NodeLabel:  leaves["metadata.labels.node"],
	}
	for p, f := range leaves {
		if strings.HasPrefix(p, "metadata.finalizers[") {
			v.Finalizers = append(v.Finalizers, f)
		}
	}
	sort.Strings(v.Finalizers)
	v.Conditions = conditionLines(leaves, "status.conditions")
	if t, ok := leaves["status.currentStatus.preserveExpiryTime"]; ok {
		v.Preservation = append(v.Preservation, "preserveExpiryTime="+t)
	}
	v.Preservation = append(v.Preservation, annotationLines(leaves, preserveAnnotation, lastAppliedNodePreserve)...)
	return v
}

// The annotations of preservation: the preserve annotation of machines
// and nodes, MCM's record on a machine of its node's value, and the
// cluster autoscaler's on a preserved node.
const (
	preserveAnnotation      = "node.machine.sapcloud.io/preserve"
	lastAppliedNodePreserve = "node.machine.sapcloud.io/last-applied-node-preserve-value"
	scaleDownDisabled       = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
	scaleDownDisabledByMCM  = "cluster-autoscaler.kubernetes.io/scale-down-disabled-by-mcm"
)

// annotationLines returns the annotations of an object's leaves with the
// keys given, one "key=value" line each, in the keys' order.
func annotationLines(leaves map[string]string, keys ...string) []string {
	var out []string
	for _, k := range keys {
		if v, ok := leaves["metadata.annotations."+k]; ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// conditionLines returns the conditions under path of an object's leaves,
// one "type status reason: message" line each, sorted.
func conditionLines(leaves map[string]string, path string) []string {
	var out []string
	for p, t := range leaves {
		c, ok := strings.CutSuffix(p, ".type")
		if !ok || !strings.HasPrefix(c, path+"[type=") {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s %s: %s", t, leaves[c+".status"], leaves[c+".reason"], leaves[c+".message"]))
	}
	sort.Strings(out)
	return out
}

// nodeViews returns each node's part in the in-place update and in
// preservation, from a snapshot: "<name>: unschedulable <v>", then its
// InPlaceUpdate and Preserved conditions' lines and its annotations of
// preservation, sorted.
func nodeViews(s snapshot) []string {
	var out []string
	for key, leaves := range s {
		name, ok := strings.CutPrefix(key, "node ")
		if !ok {
			continue
		}
		line := fmt.Sprintf("%s: unschedulable %q", name, leaves["spec.unschedulable"])
		for _, c := range conditionLines(leaves, "status.conditions") {
			if strings.HasPrefix(c, "InPlaceUpdate ") || strings.HasPrefix(c, "Preserved ") {
				line += ", " + c
			}
		}
		for _, a := range annotationLines(leaves, preserveAnnotation, scaleDownDisabled, scaleDownDisabledByMCM) {
			line += ", " + a
		}
		out = append(out, line)
	}
	sort.Strings(out)
	return out
}

// callViews returns the views of calls, normalised.
func callViews(calls []mcmfake.Call, n *Normalizer) []CallView {
	out := make([]CallView, 0, len(calls))
	for _, c := range calls {
		out = append(out, CallView{Method: string(c.Method), Machine: n.Text(c.Machine), ProviderID: c.ProviderID,
			Code: c.Code.String()})
	}
	return out
}

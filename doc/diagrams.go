package doc

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
)

// Explored is what the bounded explorations of package lifecycletest found,
// gathered once for the pages drawn from it.
type Explored struct {
	// Reports are the explorations' reports, in the order of
	// lifecycletest.Explorations.
	Reports []lifecycletest.Report
	// Explorations are the explorations run.
	Explorations []lifecycletest.Exploration

	arcs    map[arc]bool           // every decision, refined in the sections that refine
	decided map[lifecycle.Rule]int // how many explored states decided each rule
	emitted map[lifecycle.Rule]int // how many decisions' effects each rule emitted
}

// node is a drawn state: a place, refined by a sub-flow's state in the
// sections that refine (sub), or the machine gone.
type node struct {
	place lifecycletest.Place
	sub   string
	gone  bool
}

// arc is a decision by a rule, from a node to a node.
type arc struct {
	from, to node
	rule     lifecycle.Rule
}

func (n node) compare(m node) int {
	return cmp.Or(cmpBool(n.gone, m.gone), n.place.Compare(m.place), cmp.Compare(n.sub, m.sub))
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// Explore runs lifecycletest.Explorations, each on its own goroutine, and
// gathers their decisions. It fails when an exploration fails (a broken
// promise, a broken invariant of its world, or too many states).
func Explore() (*Explored, error) {
	xs := lifecycletest.Explorations()
	reports := make([]lifecycletest.Report, len(xs))
	errs := make([]error, len(xs))
	arcSets := make([]map[arc]bool, len(xs))
	var wg sync.WaitGroup
	for i := range xs {
		arcs := map[arc]bool{}
		arcSets[i] = arcs
		xs[i].Observe = func(cfg *lifecycle.Config, in *lifecycle.Input, d *lifecycle.Decision) {
			s := sectionOf(d.Rule)
			if s == nil || s.refine == nil {
				return // drawn from the report's edges
			}
			arcs[arc{
				from: node{place: lifecycletest.PlaceOf(&in.Status), sub: s.refine(cfg, &in.Object, &in.Status)},
				to:   node{place: lifecycletest.PlaceOf(&d.Status), sub: s.refine(cfg, &in.Object, &d.Status)},
				rule: d.Rule,
			}] = true
		}
		wg.Go(func() { reports[i], errs[i] = lifecycletest.Explore(xs[i]) })
	}
	wg.Wait()
	x := &Explored{Reports: reports, Explorations: xs, arcs: map[arc]bool{},
		decided: map[lifecycle.Rule]int{}, emitted: map[lifecycle.Rule]int{}}
	for i := range xs {
		if errs[i] != nil {
			return nil, errs[i]
		}
		xs[i].Observe = nil
		for a := range arcSets[i] {
			x.arcs[a] = true
		}
		for _, e := range reports[i].Edges {
			x.decided[e.Rule] += e.Count
			if e.OpRule.Valid() {
				x.emitted[e.OpRule] += e.Count
			}
			if s := sectionOf(e.Rule); s != nil && s.refine == nil {
				x.arcs[placeArc(e)] = true
			}
		}
	}
	return x, nil
}

// placeArc draws a report's edge between places; a step that found the
// machine gone ends at the gone node.
func placeArc(e lifecycletest.Edge) arc {
	a := arc{from: node{place: e.From}, to: node{place: e.To}, rule: e.Rule}
	if gone(e.Rule) {
		a.to = node{gone: true}
	}
	return a
}

func gone(r lifecycle.Rule) bool {
	return r == lifecycle.RuleNoMachine || r == lifecycle.RuleDeleteDone
}

// section is one flow of the diagrams page: the rules it draws (by the
// prefix of their identifiers), and how it refines places.
type section struct {
	title, intro string
	prefixes     []string
	also         []lifecycle.Rule // rules of another prefix the section draws
	refine       func(cfg *lifecycle.Config, o *lifecycle.Object, st *lifecycle.Status) string
}

var sections = []section{
	{title: "Creation and initialization", prefixes: []string{"create."},
		intro: "Rules `create.*` (`lifecycle/create.go`): the lookup, CreateMachine, InitializeMachine, their failures and the creation timeout."},
	{title: "Health", prefixes: []string{"health."},
		intro: "Rules `health.*` (`lifecycle/health.go`): joining, losing and regaining the node, the health timeout and the limiter's grant."},
	{title: "Deletion", prefixes: []string{"delete."}, also: []lifecycle.Rule{lifecycle.RuleNoMachine},
		intro: "Rules `delete.*` (`lifecycle/delete.go`, `lifecycle/drain.go`), and `dispatch.no-machine` where the machine object is found gone."},
	{title: "Hot update", prefixes: []string{"update."}, refine: updateState,
		intro: "Rules `update.*` (`lifecycle/hotupdate.go`). A hot update never moves the place, so the place is refined " +
			"by the update's state: `FlagNeedsReplacement` set, else the desired generation applied or not " +
			"(`lifecycle.MemberOf(...).UpdatePending()`)."},
	{title: "Instance metadata", prefixes: []string{"metadata."}, refine: metadataState,
		intro: "Rules `metadata.*` (`lifecycle/metadata.go`). Metadata never moves the place either, so the place is refined " +
			"by the metadata's state: in sync (`lifecycle.MemberOf(...).MetadataInSync()`), else a patch not yet verified " +
			"(`FlagMetadataUnverified`), else differing."},
	{title: "In-place update", prefixes: []string{"inplace."},
		intro: "Rules `inplace.*` (`lifecycle/inplace.go`): the node's InPlaceUpdate condition kept in line with its " +
			"owner's labels, the drain of a Running machine's node selected for an update (the stage `in-place-drain`), " +
			"ReadyForUpdate told to the node agent only once the node is drained, the agent's verdict and the in-place " +
			"timeout, for an update its owner asks and for one asked through the machine's spec. The phases after the " +
			"verdict end in Running or Failed by the health flow."},
	{title: "Preservation", prefixes: []string{"preserve."}, refine: preserveState,
		intro: "Rules `preserve.*` (`lifecycle/preserve.go`, `lifecycle/autopreserve.go`, and the drain of a kept node " +
			"in `lifecycle/keepdrain.go`): a machine and its node kept for diagnosis until the preservation expires. " +
			"Its expiry is set when it begins, or in the decision that makes the machine Failed; a Failed machine's " +
			"node is cordoned and drained (the stage `preserve-drain`), then marked (the autoscaler's annotations, " +
			"the Preserved condition); the machine is kept until its expiry; then the annotations that asked for it " +
			"are removed and it stops, the node given back. Preservation never moves the phase, so the place is " +
			"refined by its state: preserved (`Status.PreserveUntil` set) or not, and the preserved node drained " +
			"(`FlagPreserveDrained`). Every exploration of preservation is drawn."},
	{title: "Dispatch, outcomes and input checks", prefixes: []string{"dispatch.", "outcome.", "input."},
		intro: "Rules `dispatch.*`, `outcome.*` and `input.*` (`lifecycle/step.go`), which every flow passes through."},
}

// sectionOf returns the section that draws rule r, nil for none.
func sectionOf(r lifecycle.Rule) *section {
	for i := range sections {
		if slices.Contains(sections[i].also, r) {
			return &sections[i]
		}
	}
	for i := range sections {
		for _, p := range sections[i].prefixes {
			if strings.HasPrefix(r.String(), p) {
				return &sections[i]
			}
		}
	}
	return nil
}

func updateState(cfg *lifecycle.Config, o *lifecycle.Object, st *lifecycle.Status) string {
	switch {
	case st.Flags.Has(lifecycle.FlagNeedsReplacement):
		return "needs replacement"
	case lifecycle.MemberOf(cfg, &lifecycle.Input{Object: *o, Status: *st}).UpdatePending():
		return "update pending"
	}
	return "update applied"
}

func preserveState(_ *lifecycle.Config, _ *lifecycle.Object, st *lifecycle.Status) string {
	switch {
	case st.PreserveUntil == 0:
		return "not preserved"
	case st.Flags.Has(lifecycle.FlagPreserveDrained):
		return "preserved and drained"
	}
	return "preserved"
}

func metadataState(cfg *lifecycle.Config, o *lifecycle.Object, st *lifecycle.Status) string {
	switch {
	case lifecycle.MemberOf(cfg, &lifecycle.Input{Object: *o, Status: *st}).MetadataInSync():
		return "metadata in sync"
	case st.Flags.Has(lifecycle.FlagMetadataUnverified):
		return "patch unverified"
	}
	return "metadata differs"
}

// DiagramsPage renders one Mermaid diagram per flow from what the
// explorations decided, the decisions that keep their place as tables, and
// the rules the explorations never reached.
func DiagramsPage(x *Explored) (string, error) {
	for _, r := range lifecycle.Rules() {
		if sectionOf(r) == nil {
			return "", fmt.Errorf("doc: rule %s belongs to no section of the diagrams page", r)
		}
	}
	var b strings.Builder
	b.WriteString(generated)
	b.WriteString(diagramsIntro)
	for _, e := range x.Explorations {
		starts := make([]string, len(e.Starts))
		for i, s := range e.Starts {
			starts[i] = s.String()
		}
		from := starts[len(starts)-1]
		if len(starts) > 1 {
			from = strings.Join(starts[:len(starts)-1], ", ") + " and " + from
		}
		fmt.Fprintf(&b, "- *%s*: from %s; events: %s", e.Name, from, e.Events)
		if e.Variants != 0 {
			fmt.Fprintf(&b, "; variants: %s", e.Variants)
		}
		b.WriteString(".\n")
	}
	all := lifecycle.Rules()
	reached := 0
	for _, r := range all {
		if x.decided[r] > 0 {
			reached++
		}
	}
	fmt.Fprintf(&b, "\nTheir decisions name %d of the %d rules; each section ends with the rules of its flow that no "+
		"decision named, which its diagram cannot show.\n", reached, len(all))
	for i := range sections {
		x.writeSection(&b, &sections[i])
	}
	return b.String(), nil
}

const diagramsIntro = `# Flow diagrams

These diagrams are not drawn by hand: ` + "`go generate ./doc`" + ` runs the bounded explorations of
` + "`lifecycletest.Explorations`" + ` (the ones the model check ` + "`lifecycle/modelcheck_test.go`" + ` runs), which feed
` + "`lifecycle.Step`" + ` every state of one machine's small world breadth first, with every outcome of every
decision (driver answers by class, failed writes, lost status writes, crashes) and the world's events, and
draws every decision made.

- A node is a *place*: the machine's phase and the stage of its creation or deletion flow
  (` + "`Status.Phase`, `Status.Stage`" + `), shown as "Phase / stage". *gone* is the machine object found deleted.
- An edge goes from the place of the status a step was given to the place of the status it decided, labelled
  with the rule (` + "`Decision.Rule`" + `) of every such decision: parallel edges are merged into one with all
  their rules. A decision that goes on within the same step (an outcome's handler that decides its row and
  carries out the next stage's action at once) moves straight to the place of that action, so a stage it
  crosses has no node on that path.
- Edges are grouped by flow, by the prefix of the rule's identifier.
- Decisions that keep their place (waiting, retrying, asking the provider, writing the node) are not drawn as
  loops, which would cover every node: the table under each diagram lists them by place.
- Places that no edge of a diagram enters and that leave by the same edges are drawn as one node.
- The world is small (see ` + "`lifecycletest.Explore`" + `): one machine with valid input; a target cluster but in
  one exploration; a provider that implements every method (its deletion lookup may also answer
  Unimplemented), may lose sight of an instance for a moment, answer CreateMachine without the instance's
  identity, and drop a metadata key; an instance that may vanish out of band; one node name, held by the
  instance's node, which outlives its instance until deleted and has one volume attached, or by a stale
  node of another instance; an object that another controller's finalizer may hold; the problems the shell
  may find; machines another controller ran or was deleting; the node's owner, which asks an in-place update
  of it, and its node agent, which performs it, succeeding or stalling, and machines found in the middle of
  one; users who ask and take back a machine's preservation, the fleet that grants auto-preservation, time
  that passes a preservation's expiry, machines found preserved, and an administrator who cordons the node.
  What it never shows, the diagrams do not show. What ` + "`lifecycletest.KnownIssueExplorations`" + ` lists,
  where the lifecycle is known to break a promise or liveness, the model check leaves out.

The explorations:

`

// writeSection renders one section: its diagram, its table of decisions
// that keep their place, and its rules never reached.
func (x *Explored) writeSection(b *strings.Builder, s *section) {
	fmt.Fprintf(b, "\n## %s\n\n%s\n", s.title, s.intro)
	var moves []arc
	stays := map[node][]lifecycle.Rule{}
	for a := range x.arcs {
		if sectionOf(a.rule) != s {
			continue
		}
		if a.from == a.to {
			stays[a.from] = append(stays[a.from], a.rule)
		} else {
			moves = append(moves, a)
		}
	}
	if len(moves) == 0 {
		b.WriteString("\nNo decision of these rules moved a machine to another place.\n")
	} else {
		writeFlowchart(b, moves)
	}
	if len(stays) > 0 {
		b.WriteString("\n| place | decided there, keeping the place |\n|---|---|\n")
		for _, n := range sortedKeys(stays) {
			fmt.Fprintf(b, "| %s | %s |\n", n.text(" — "), ruleList(stays[n], ", ", true))
		}
	}
	var never, onlyEmitted []string
	for _, r := range lifecycle.Rules() {
		if sectionOf(r) != s || x.decided[r] > 0 {
			continue
		}
		line := fmt.Sprintf("- `%s`: %s", r, r.Text())
		if x.emitted[r] > 0 {
			onlyEmitted = append(onlyEmitted, line)
		} else {
			never = append(never, line)
		}
	}
	if len(onlyEmitted) > 0 {
		b.WriteString("\nOnly emitted, as the action a decision by another rule went on with (`Decision.OpID.Rule()`):\n\n")
		b.WriteString(strings.Join(onlyEmitted, "\n") + "\n")
	}
	if len(never) > 0 {
		b.WriteString("\nNever reached by the explorations:\n\n")
		b.WriteString(strings.Join(never, "\n") + "\n")
	} else {
		b.WriteString("\nThe explorations reached every rule of this flow.\n")
	}
}

// writeFlowchart draws moves as a Mermaid flowchart, merging parallel
// edges, and the sources no edge enters that leave by the same edges.
func writeFlowchart(b *strings.Builder, moves []arc) {
	type pair struct{ from, to node }
	labels := map[pair][]lifecycle.Rule{}
	entered := map[node]bool{}
	for _, a := range moves {
		p := pair{a.from, a.to}
		labels[p] = append(labels[p], a.rule)
		entered[a.to] = true
	}
	pairs := sortedPairs(labels, func(p pair) (node, node) { return p.from, p.to })
	// The outgoing edges of each source, as one text, to find sources that
	// leave alike.
	out := map[node]string{}
	for _, p := range pairs {
		if !entered[p.from] {
			out[p.from] += p.to.id() + ":" + ruleList(labels[p], ",", false) + ";"
		}
	}
	ids := map[node]string{}
	members := map[string][]node{}
	var order []string
	byOut := map[string]string{}
	for _, n := range sortedKeys(nodeSet(pairs, func(p pair) (node, node) { return p.from, p.to })) {
		id := n.id()
		if o, ok := out[n]; ok {
			if first, ok := byOut[o]; ok {
				id = first
			} else {
				byOut[o] = id
			}
		}
		if _, ok := members[id]; !ok {
			order = append(order, id)
		}
		ids[n] = id
		members[id] = append(members[id], n)
	}
	b.WriteString("\n```mermaid\nflowchart TD\n")
	for _, id := range order {
		texts := make([]string, len(members[id]))
		for i, n := range members[id] {
			texts[i] = n.text("<br/>")
		}
		fmt.Fprintf(b, "    %s[\"%s\"]\n", id, strings.Join(texts, "<br/>"))
	}
	drawn := map[string]bool{}
	for _, p := range pairs {
		line := fmt.Sprintf("    %s -->|\"%s\"| %s\n", ids[p.from], ruleList(labels[p], "<br/>", false), ids[p.to])
		if !drawn[line] {
			drawn[line] = true
			b.WriteString(line)
		}
	}
	b.WriteString("```\n")
}

// id is the node's Mermaid identifier.
func (n node) id() string {
	if n.gone {
		return "gone"
	}
	id := n.place.Phase.Label() + "_" + n.place.Stage.String()
	if n.sub != "" {
		id += "_" + n.sub
	}
	return strings.NewReplacer("-", "_", " ", "_").Replace(id)
}

// text is the node's label, its refinement after sep.
func (n node) text(sep string) string {
	if n.gone {
		return "gone"
	}
	t := n.place.Phase.Label() + " / " + n.place.Stage.String()
	if n.sub != "" {
		t += sep + n.sub
	}
	return t
}

// ruleList joins the rules' identifiers in declaration order, without
// repeats, as code spans when code is set.
func ruleList(rs []lifecycle.Rule, sep string, code bool) string {
	rs = slices.Clone(rs)
	slices.Sort(rs)
	rs = slices.Compact(rs)
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
		if code {
			out[i] = "`" + out[i] + "`"
		}
	}
	return strings.Join(out, sep)
}

func sortedKeys[V any](m map[node]V) []node {
	out := make([]node, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	slices.SortFunc(out, node.compare)
	return out
}

func sortedPairs[P comparable, V any](m map[P]V, ends func(P) (node, node)) []P {
	out := make([]P, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b P) int {
		af, at := ends(a)
		bf, bt := ends(b)
		return cmp.Or(af.compare(bf), at.compare(bt))
	})
	return out
}

func nodeSet[P any](ps []P, ends func(P) (node, node)) map[node]bool {
	out := map[node]bool{}
	for _, p := range ps {
		f, t := ends(p)
		out[f], out[t] = true, true
	}
	return out
}

package lastop

import "testing"

// FuzzParse checks that Parse never panics and loses nothing: rendering the
// parsed form of any text gives the text back, and DescUnknown renders its
// Detail verbatim.
func FuzzParse(f *testing.F) {
	for _, c := range descCases() {
		f.Add(c.want)
	}
	for _, s := range []string{
		"", "Deleting machine from cloud provider", "Machine  successfully re-joined the cluster",
		`No node object found for "\u00e9", continuing deletion flow. Initiate machine object finalizer removal`,
		"Machine m failed to join the cluster in 1h0m0s minutes.", "<detail>", "Machine <machine> is undergoing an in-place update",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if got := (Operation{Desc: DescUnknown, Detail: text}).Describe(Args{}); got != text {
			t.Fatalf("DescUnknown rendered %q as %q", text, got)
		}
		p := Parse(text)
		if !p.Desc.Valid() {
			t.Fatalf("Parse(%q) returned invalid %v", text, p.Desc)
		}
		if p.Desc == DescUnknown && p.Step != StepOf(text) {
			t.Fatalf("Parse(%q): unknown text with step %v, StepOf says %v", text, p.Step, StepOf(text))
		}
		if p.Desc != DescUnknown && p.Desc != DescNone && p.Step != p.Desc.Step() {
			t.Fatalf("Parse(%q): step %v, %v ends with %v", text, p.Step, p.Desc, p.Desc.Step())
		}
		op, a := FromLastOperation(LastOperation{Description: text})
		if got := op.Describe(a); got != text {
			t.Fatalf("Parse(%q) = %+v renders as %q", text, p, got)
		}
	})
}

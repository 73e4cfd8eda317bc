package pass

import (
	"reflect"
	"testing"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
)

// fillOutcome sets every field of o that keep does not name to a value
// other than its zero value, so a field added to lifecycle.Outcome is
// filled too.
func fillOutcome(t *testing.T, o *lifecycle.Outcome, keep ...string) {
	t.Helper()
	v := reflect.ValueOf(o).Elem()
next:
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		for _, k := range keep {
			if k == name {
				continue next
			}
		}
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			f.SetUint(3)
		case reflect.Int, reflect.Int32, reflect.Int64:
			f.SetInt(3)
		case reflect.String:
			f.SetString("left over")
		case reflect.Struct:
			// Result and CreatedNode: a field of theirs is enough.
			switch p := f.Addr().Interface().(type) {
			case *driverapi.Result:
				p.Method, p.NodeName = driverapi.MethodCreate, "node-1"
			case *lifecycle.Node:
				p.Name = "node-1"
			default:
				t.Fatalf("Outcome.%s: a struct field this test does not fill", name)
			}
		default:
			t.Fatalf("Outcome.%s: a field of kind %s this test does not fill", name, f.Kind())
		}
	}
}

// A new outcome carries nothing of the previous one: after a step without
// a driver call every field but the answer and its node is cleared (which
// no one wrote), after one with a call every field.
func TestNewOutcomeCarriesNothingOver(t *testing.T) {
	var s Scratch
	fillOutcome(t, &s.outcome, "Result", "CreatedNode")
	s.newOutcome(7)
	if want := (lifecycle.Outcome{OpID: 7}); !reflect.DeepEqual(s.outcome, want) {
		t.Fatalf("after a step without a call: %+v, want %+v", s.outcome, want)
	}
	fillOutcome(t, &s.outcome)
	s.called = true
	s.newOutcome(8)
	if want := (lifecycle.Outcome{OpID: 8}); !reflect.DeepEqual(s.outcome, want) || s.called {
		t.Fatalf("after a step with a call: %+v (called %v), want %+v", s.outcome, s.called, want)
	}
}

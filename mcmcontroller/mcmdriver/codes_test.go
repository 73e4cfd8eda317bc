package mcmdriver

import (
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/codes"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/status"

	"github.com/purelifecycle/machine/driverapi"
)

// mcmCodes returns MCM's codes, found by their names (a number MCM does
// not name prints as "Code(N)"), not by the code table.
func mcmCodes() []codes.Code {
	var out []codes.Code
	for n := range 256 {
		if c := codes.Code(n); c.String() != "Code("+strconv.Itoa(n)+")" {
			out = append(out, c)
		}
	}
	return out
}

// Every MCM code and every driverapi code is in exactly one row of the
// table, the two codes of a row have the same name, and a number neither
// side knows is refused, not defaulted.
func TestEveryCodeIsMapped(t *testing.T) {
	rows := map[codes.Code]int{}
	apiRows := map[driverapi.Code]int{}
	for _, row := range codeTable {
		rows[row.mcm]++
		apiRows[row.api]++
		if row.mcm.String() != row.api.String() {
			t.Errorf("row %s pairs MCM's %s", row.api, row.mcm)
		}
	}
	mcm := mcmCodes()
	if len(mcm) != len(codeTable) || len(driverapi.Codes()) != len(codeTable) {
		t.Errorf("MCM has %d codes, driverapi %d, the table %d rows", len(mcm), len(driverapi.Codes()), len(codeTable))
	}
	for _, c := range mcm {
		if rows[c] != 1 {
			t.Errorf("MCM code %s is in %d rows", c, rows[c])
		}
		d, ok := CodeFromMCM(c)
		back, okBack := CodeToMCM(d)
		if !ok || !okBack || back != c || d.String() != c.String() || codes.StringToCode(d.String()) != c {
			t.Errorf("MCM code %s: driverapi %s (%v), back %s (%v)", c, d, ok, back, okBack)
		}
	}
	for _, d := range driverapi.Codes() {
		if apiRows[d] != 1 {
			t.Errorf("driverapi code %s is in %d rows", d, apiRows[d])
		}
		c, ok := CodeToMCM(d)
		if back, okBack := CodeFromMCM(c); !ok || !okBack || back != d {
			t.Errorf("driverapi code %s: MCM %s (%v), back %s", d, c, ok, back)
		}
	}
	for n := range 256 {
		if c := codes.Code(n); rows[c] == 0 {
			if _, ok := CodeFromMCM(c); ok {
				t.Errorf("MCM number %d is mapped", n)
			}
		}
		if d := driverapi.Code(n); !d.Valid() {
			if _, ok := CodeToMCM(d); ok {
				t.Errorf("driverapi number %d is mapped", n)
			}
		}
	}
	if _, ok := CodeFromMCM(codes.Code(1 << 20)); ok {
		t.Error("a large MCM number is mapped")
	}
}

// An MCM status error, as a value in the chain or as its text inside
// another error, reaches the lifecycle with its code and message, and
// brackets in a message survive.
func TestErrorsFromMCM(t *testing.T) {
	for _, c := range mcmCodes() {
		if c == codes.OK {
			continue
		}
		want, _ := CodeFromMCM(c)
		for _, err := range []error{
			status.Error(c, "it failed [twice]"),
			fmt.Errorf("calling the cloud: %w", status.Error(c, "it failed [twice]")),
			fmt.Errorf("calling the cloud: %v", status.Error(c, "it failed [twice]")),
			status.WrapError(c, "it failed [twice]", errors.New("the cause")),
		} {
			got := driverapi.ResultOf(driverapi.MethodCreate, fromMCM(err))
			if got.Code != want || got.Message != "it failed [twice]" || got.Undecodable {
				t.Errorf("%v: %+v", err, got)
			}
		}
	}
	// A message with an unbalanced bracket, which MCM's own decoding of
	// the text refuses, keeps its code here: the status value is read.
	odd := status.Error(codes.ResourceExhausted, "quota [zone-a exhausted")
	if _, ok := status.FromError(odd); ok {
		t.Fatal("MCM's decoding changed: it reads the unbalanced message")
	}
	if got := driverapi.ResultOf(driverapi.MethodCreate, fromMCM(odd)); got.Code != driverapi.ResourceExhausted || got.Undecodable {
		t.Errorf("unbalanced bracket: %+v", got)
	}
}

// What is no MCM status error becomes driverapi's undecodable error
// (Unknown, the whole text), with no code guessed: a plain error, a
// foreign text with two bracketed groups (which MCM's lenient decoding
// takes for a status error), a status error claiming OK, and one with a
// number MCM does not know.
func TestUndecodableErrorsFromMCM(t *testing.T) {
	foreign := errors.New("failed [a] because [b]")
	if st, ok := status.FromError(foreign); !ok || st.Message() != "b" {
		t.Fatalf("MCM's decoding changed: %v %v", st, ok)
	}
	for _, err := range []error{
		errors.New("connection refused"),
		foreign,
		status.Error(codes.OK, "fine?"),
		status.Error(codes.Code(99), "from the future"),
		fmt.Errorf("wrapped: %w", status.Error(codes.Code(99), "from the future")),
	} {
		got := driverapi.ResultOf(driverapi.MethodGetStatus, fromMCM(err))
		if !got.Undecodable || got.Code != driverapi.Unknown || got.Message != err.Error() {
			t.Errorf("%v: %+v", err, got)
		}
	}
	if fromMCM(nil) != nil || errToMCM(nil) != nil {
		t.Error("nil is not nil")
	}
}

// A driverapi status error, as a value or as its text, reaches MCM with
// its code and message; an error driverapi cannot classify stays as it
// is.
func TestErrorsToMCM(t *testing.T) {
	for _, c := range driverapi.Codes() {
		if c == driverapi.OK {
			continue
		}
		want, _ := CodeToMCM(c)
		for _, err := range []error{
			fmt.Errorf("wrapped: %w", driverapi.Error(c, "no capacity [zone-a]")),
			fmt.Errorf("flattened: %v", driverapi.Error(c, "no capacity [zone-a]")),
		} {
			mcmErr := errToMCM(err)
			st, ok := errors.AsType[*status.Status](mcmErr)
			if !ok || st.Code() != want || st.Message() != "no capacity [zone-a]" || st.Cause() != err {
				t.Errorf("%v: %v", err, mcmErr)
			}
		}
	}
	for _, err := range []error{errors.New("broken pipe"), &driverapi.StatusError{Code: driverapi.OK, Message: "fine?"},
		&driverapi.StatusError{Code: 99, Message: "odd"}} {
		if got := errToMCM(err); got != err {
			t.Errorf("%v became %v", err, got)
		}
	}
}

// Every code goes to MCM and back, and from MCM and back, unchanged.
func TestErrorRoundTrips(t *testing.T) {
	for _, c := range driverapi.Codes()[1:] {
		got := driverapi.ResultOf(driverapi.MethodDelete, fromMCM(errToMCM(driverapi.Error(c, "m"))))
		if got.Code != c || got.Message != "m" || got.Undecodable {
			t.Errorf("%s through MCM: %+v", c, got)
		}
	}
	for _, c := range mcmCodes()[1:] {
		st, ok := status.FromError(errToMCM(fromMCM(status.Error(c, "m"))))
		if !ok || st.Code() != c || st.Message() != "m" {
			t.Errorf("%s through driverapi: %v", c, st)
		}
	}
	plain := errors.New("no status")
	if errToMCM(fromMCM(plain)) != plain || fromMCM(errToMCM(plain)) != plain {
		t.Error("a plain error changed on the way")
	}
}

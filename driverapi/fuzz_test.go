package driverapi_test

import (
	"strings"
	"testing"

	"github.com/purelifecycle/machine/driverapi"
)

// FuzzDecode checks that Decode never panics, that what it accepts is a
// status error's text behind some prefix, and that Error and Decode
// round-trip for every valid code and any message.
func FuzzDecode(f *testing.F) {
	for i, tc := range decodeCases {
		f.Add(tc.text, uint8(i))
	}
	f.Add("", uint8(255))
	f.Fuzz(func(t *testing.T, text string, code uint8) {
		d, ok := driverapi.Decode(text)
		if ok {
			if !d.Code.Valid() {
				t.Fatalf("Decode(%q) gave invalid code %d", text, d.Code)
			}
			if !strings.HasSuffix(text, d.Error()) {
				t.Fatalf("Decode(%q) = %+v, whose text is not a suffix of the input", text, d)
			}
		} else if d != (driverapi.StatusError{}) {
			t.Fatalf("refused Decode(%q) returned %+v", text, d)
		}
		c, msg, _ := driverapi.FromError(errorString(text))
		if !c.Valid() || (!ok && (c != driverapi.Unknown || msg != text)) {
			t.Fatalf("FromError(%q) = %v, %q", text, c, msg)
		}

		c = driverapi.Code(code)
		if !c.Valid() {
			return
		}
		want := driverapi.StatusError{Code: c, Message: text}
		encoded := want.Error()
		if c != driverapi.OK {
			encoded = driverapi.Error(c, text).Error()
		}
		got, ok := driverapi.Decode(encoded)
		if !ok || got != want {
			t.Fatalf("Decode(Error(%v, %q)) = %+v, %v", c, text, got, ok)
		}
		if got, ok := driverapi.Decode("prefix: " + encoded); !ok || got != want {
			t.Fatalf("Decode of prefixed Error(%v, %q) = %+v, %v", c, text, got, ok)
		}
	})
}

// errorString is an error with a fixed text, not a status error.
type errorString string

func (e errorString) Error() string { return string(e) }

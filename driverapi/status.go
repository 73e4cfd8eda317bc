package driverapi

import (
	"errors"
	"fmt"
	"strings"
)

// The pieces of MCM's wire format
//
//	machine codes error: code = [<Name>] message = [<msg>]
//
// which status.Status.Error renders and status.FromError parses. The text is
// the compatibility contract with MCM and its providers: never change it.
const (
	wireMarker = "machine codes error: code = ["
	wireSep    = "] message = ["
	wireEnd    = "]"
)

// StatusError is an error carrying a Code, MCM's status.Status. Drivers
// return it (usually through Error, Errorf or Wrap); callers classify any
// error with FromError.
type StatusError struct {
	// Code classifies the failure. A StatusError should never carry OK;
	// the constructors return nil instead.
	Code Code
	// Message is the developer-facing text. It may contain brackets.
	Message string
	// Cause is the underlying error, if any, returned by Unwrap. It is not
	// part of the text.
	Cause error
}

// Error renders MCM's wire format byte for byte:
//
//	machine codes error: code = [<Code>] message = [<Message>]
//
// A nil *StatusError renders as code OK with an empty message, as MCM's nil
// status reports OK.
func (e *StatusError) Error() string {
	if e == nil {
		return wireMarker + OK.String() + wireSep + wireEnd
	}
	return wireMarker + e.Code.String() + wireSep + e.Message + wireEnd
}

// Unwrap returns Cause, so errors.Is and errors.As see through a StatusError
// to the error it wraps.
func (e *StatusError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Cause
}

// Is makes errors.Is(err, &StatusError{Code: c}) true for any status error
// with code c, and errors.Is(err, &StatusError{Code: c, Message: m}) true
// only when the message is m as well. Cause is ignored.
func (e *StatusError) Is(target error) bool {
	t, ok := target.(*StatusError)
	if !ok || t == nil || e == nil {
		return false
	}
	return e.Code == t.Code && (t.Message == "" || t.Message == e.Message)
}

// Error returns a *StatusError with code c and message msg, or nil when c is
// OK: as in MCM, OK is never an error.
func Error(c Code, msg string) error {
	if c == OK {
		return nil
	}
	return &StatusError{Code: c, Message: msg}
}

// Errorf is Error with a message formatted by fmt. Errors given to %w verbs
// become the Cause (one %w: that error; several: the error fmt.Errorf builds
// around them), so errors.Is and errors.As reach them. Nil when c is OK.
func Errorf(c Code, format string, a ...any) error {
	if c == OK {
		return nil
	}
	formatted := fmt.Errorf(format, a...)
	var cause error
	switch x := formatted.(type) {
	case interface{ Unwrap() error }:
		cause = x.Unwrap()
	case interface{ Unwrap() []error }:
		cause = formatted
	}
	return &StatusError{Code: c, Message: formatted.Error(), Cause: cause}
}

// Wrap returns a *StatusError with code c and message msg whose Cause is
// cause (the text of cause is not added to the message). Nil when c is OK,
// even with a non-nil cause: OK is never an error, so a caller must not wrap
// a failure with OK.
func Wrap(c Code, msg string, cause error) error {
	if c == OK {
		return nil
	}
	return &StatusError{Code: c, Message: msg, Cause: cause}
}

// Decode parses text in the wire format, strictly. The first occurrence of
// the marker "machine codes error: code = [" decides: it may be preceded by
// any prefix (a caller that wrapped the error text, as fmt.Errorf("...: %v")
// does), and must be followed by one of the 18 exact code names, then
// "] message = [", and text must end with "]". The message is everything
// between "message = [" and that final "]", brackets included. Anything else
// is refused (ok false), in particular unknown code names and foreign texts
// such as "failed [a] because [b]", both of which MCM's bracket counting
// accepts. The returned Cause is nil. Decode does not allocate.
func Decode(text string) (StatusError, bool) {
	i := strings.Index(text, wireMarker)
	if i < 0 {
		return StatusError{}, false
	}
	rest := text[i+len(wireMarker):]
	j := strings.IndexByte(rest, ']')
	if j < 0 {
		return StatusError{}, false
	}
	c, ok := lookupCode(rest[:j])
	if !ok || !strings.HasPrefix(rest[j:], wireSep) {
		return StatusError{}, false
	}
	tail := rest[j+len(wireSep):]
	if !strings.HasSuffix(tail, wireEnd) {
		return StatusError{}, false
	}
	return StatusError{Code: c, Message: tail[:len(tail)-len(wireEnd)]}, true
}

// FromError classifies any error, as MCM's status.FromError does but
// strictly:
//   - nil: (OK, "", true);
//   - an error whose chain holds a *StatusError with a valid code (found with
//     errors.As, so %w wrapping is seen through): its code and message, true;
//   - an error whose text Decode accepts (a status error flattened to text,
//     for example by %v or by a transport): the decoded code and message, true;
//   - anything else: (Unknown, err.Error(), false), MCM's "cannot decode".
//
// A non-nil error that carries or spells OK breaks the status invariant; it
// is reported as such (OK, message, true), and ResultOf treats it as
// undecodable. FromError does not allocate for a *StatusError in the chain.
func FromError(err error) (code Code, message string, ok bool) {
	if err == nil {
		return OK, "", true
	}
	if se, found := errors.AsType[*StatusError](err); found && se != nil && se.Code.Valid() {
		return se.Code, se.Message, true
	}
	text := err.Error()
	if d, decoded := Decode(text); decoded {
		return d.Code, d.Message, true
	}
	return Unknown, text, false
}

// CodeOf returns the code FromError assigns to err: OK for nil, Unknown for
// an error that is not a status error.
func CodeOf(err error) Code {
	c, _, _ := FromError(err)
	return c
}

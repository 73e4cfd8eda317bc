package driverapi

import (
	"errors"
	"fmt"
	"strconv"
)

// Code is the canonical status code of a driver call. The numbers and names
// are MCM's (pkg/util/provider/machinecodes/codes), which in turn follow
// gRPC's, plus Uninitialized. The zero value is OK.
type Code uint8

// The codes, with MCM's numbers. Only the meaning the lifecycle gives a code
// is described here; providers choose codes as MCM's drivers do.
const (
	// OK means the call succeeded. It is never carried by an error.
	OK Code = 0
	// Canceled means the call was canceled, typically by the caller.
	Canceled Code = 1
	// Unknown is an error without a more specific code; it is also what
	// an error that is not a status error is classified as. Transient.
	Unknown Code = 2
	// InvalidArgument means the request itself is wrong, whatever the
	// state of the provider.
	InvalidArgument Code = 3
	// DeadlineExceeded means the call ran out of time; a mutating call may
	// still have taken effect. Transient.
	DeadlineExceeded Code = 4
	// NotFound means the instance (or another named entity) does not exist.
	NotFound Code = 5
	// AlreadyExists means the entity to create exists already.
	AlreadyExists Code = 6
	// PermissionDenied means the credentials may not perform the call.
	PermissionDenied Code = 7
	// ResourceExhausted means a quota or capacity limit was hit; the
	// lifecycle retries creation after a configurable, long period.
	ResourceExhausted Code = 8
	// FailedPrecondition means the provider is not in a state that allows
	// the call; retrying is pointless until that state changes. For
	// UpdateMachine it means "cannot apply in place".
	FailedPrecondition Code = 9
	// Aborted means the call was aborted, typically by a concurrency
	// conflict. Transient.
	Aborted Code = 10
	// OutOfRange means the call went past a valid range.
	OutOfRange Code = 11
	// Unimplemented means the driver does not support the call.
	Unimplemented Code = 12
	// Internal means an invariant of the provider broke.
	Internal Code = 13
	// Unavailable means the provider cannot be reached right now. Transient.
	Unavailable Code = 14
	// DataLoss means unrecoverable loss or corruption of data.
	DataLoss Code = 15
	// Unauthenticated means the call carried no valid credentials.
	Unauthenticated Code = 16
	// Uninitialized means the instance exists but InitializeMachine has
	// not (successfully) run on it; GetMachineStatus reports it.
	Uninitialized Code = 17
)

// numCodes is the number of valid codes, OK through Uninitialized.
const numCodes = 18

// ErrUnknownCode is wrapped by the error ParseCode returns for a name that is
// not one of the 18 code names. Match it with errors.Is.
var ErrUnknownCode = errors.New("driverapi: unknown code")

// String returns MCM's name of the code ("OK", "Canceled", ...,
// "Uninitialized"), the name used in the wire format. A code outside 0..17
// renders as "Code(N)", as in MCM. It does not allocate for valid codes.
func (c Code) String() string {
	switch c {
	case OK:
		return "OK"
	case Canceled:
		return "Canceled"
	case Unknown:
		return "Unknown"
	case InvalidArgument:
		return "InvalidArgument"
	case DeadlineExceeded:
		return "DeadlineExceeded"
	case NotFound:
		return "NotFound"
	case AlreadyExists:
		return "AlreadyExists"
	case PermissionDenied:
		return "PermissionDenied"
	case ResourceExhausted:
		return "ResourceExhausted"
	case FailedPrecondition:
		return "FailedPrecondition"
	case Aborted:
		return "Aborted"
	case OutOfRange:
		return "OutOfRange"
	case Unimplemented:
		return "Unimplemented"
	case Internal:
		return "Internal"
	case Unavailable:
		return "Unavailable"
	case DataLoss:
		return "DataLoss"
	case Unauthenticated:
		return "Unauthenticated"
	case Uninitialized:
		return "Uninitialized"
	default:
		return "Code(" + strconv.FormatUint(uint64(c), 10) + ")"
	}
}

// Valid reports whether c is one of the 18 codes, OK through Uninitialized.
func (c Code) Valid() bool { return c < numCodes }

// Transient reports whether c is one of the codes MCM retries after its short
// period (ShortRetry): Unknown, DeadlineExceeded, Aborted and Unavailable.
func (c Code) Transient() bool {
	switch c {
	case Unknown, DeadlineExceeded, Aborted, Unavailable:
		return true
	default:
		return false
	}
}

// Codes returns the 18 valid codes in numeric order, in a new slice.
func Codes() []Code {
	cs := make([]Code, numCodes)
	for i := range cs {
		cs[i] = Code(i)
	}
	return cs
}

// ParseCode returns the code whose String is exactly name. Unlike MCM's
// StringToCode, which maps any unknown name to Unknown, it refuses every
// other text (including "Code(N)", other capitalisations and surrounding
// space) with an error wrapping ErrUnknownCode; the code returned with an
// error is Unknown, never OK.
func ParseCode(name string) (Code, error) {
	if c, ok := lookupCode(name); ok {
		return c, nil
	}
	return Unknown, fmt.Errorf("%w %q", ErrUnknownCode, name)
}

// lookupCode is ParseCode without the error; it does not allocate.
func lookupCode(name string) (Code, bool) {
	for c := range Code(numCodes) {
		if c.String() == name {
			return c, true
		}
	}
	return Unknown, false
}

package phase

import (
	"errors"
	"fmt"
	"strconv"
)

// Phase is the phase of a machine. The zero value is [None], MCM's empty
// phase of a machine that is being created.
type Phase uint8

// The phases, in MCM's order of declaration.
const (
	// None is MCM's empty phase: the machine is being created.
	None Phase = iota
	// Pending: the instance exists and its node has not joined yet.
	Pending
	// Available: the instance exists and the controller runs without a
	// target cluster, so there is no node to wait for.
	Available
	// Running: the node joined and is healthy.
	Running
	// Terminating: deletion has begun.
	Terminating
	// Unknown: the node is unhealthy or went missing.
	Unknown
	// Failed: the creation or health timeout passed; the machine's owner
	// replaces it.
	Failed
	// CrashLoopBackOff: creating or initializing the instance failed; the
	// lifecycle retries.
	CrashLoopBackOff
	// InPlaceUpdating: MCM's node agent is updating the node in place.
	InPlaceUpdating
	// InPlaceUpdateSuccessful: the node agent reported a successful update.
	InPlaceUpdateSuccessful
	// InPlaceUpdateFailed: the node agent reported a failed update, or the
	// in-place update timed out.
	InPlaceUpdateFailed
)

// Count is the number of valid phases; every valid Phase is below it.
const Count = 11

// ErrUnknownPhase is the error [Parse] wraps when a text names no phase.
var ErrUnknownPhase = errors.New("phase: unknown phase")

// String returns MCM's text for p: "" for [None], the constant's name for
// the others, and "Phase(N)" for a value that is not a phase.
func (p Phase) String() string {
	switch p {
	case None:
		return ""
	case Pending:
		return "Pending"
	case Available:
		return "Available"
	case Running:
		return "Running"
	case Terminating:
		return "Terminating"
	case Unknown:
		return "Unknown"
	case Failed:
		return "Failed"
	case CrashLoopBackOff:
		return "CrashLoopBackOff"
	case InPlaceUpdating:
		return "InPlaceUpdating"
	case InPlaceUpdateSuccessful:
		return "InPlaceUpdateSuccessful"
	case InPlaceUpdateFailed:
		return "InPlaceUpdateFailed"
	}
	return "Phase(" + strconv.Itoa(int(p)) + ")"
}

// Label returns a name for display: "None" for [None], otherwise
// [Phase.String].
func (p Phase) Label() string {
	if p == None {
		return "None"
	}
	return p.String()
}

// Valid reports whether p is one of the declared phases.
func (p Phase) Valid() bool { return p < Count }

// Parse returns the phase MCM writes as s. The empty text is [None]. Any
// other text, including differently cased names and "None", is refused with
// an error that wraps [ErrUnknownPhase].
func Parse(s string) (Phase, error) {
	for p := range Phase(Count) {
		if p.String() == s {
			return p, nil
		}
	}
	return None, fmt.Errorf("%w %q", ErrUnknownPhase, s)
}

// All returns every valid phase in declaration order.
func All() []Phase {
	all := make([]Phase, Count)
	for i := range all {
		all[i] = Phase(i)
	}
	return all
}

// MarshalText implements encoding.TextMarshaler with MCM's text. A value
// that is not a phase cannot be marshalled.
func (p Phase) MarshalText() ([]byte, error) {
	if !p.Valid() {
		return nil, fmt.Errorf("%w: %d", ErrUnknownPhase, uint8(p))
	}
	return []byte(p.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with [Parse]. On error
// p is left unchanged.
func (p *Phase) UnmarshalText(text []byte) error {
	v, err := Parse(string(text))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// Creating reports whether p is a phase of a machine whose instance is not
// yet known to be up: [None], [CrashLoopBackOff] and [Pending]. The creation
// timeout applies to all of them (MCM issue 1110,
// https://github.com/gardener/machine-controller-manager/issues/1110).
func (p Phase) Creating() bool {
	return p == None || p == CrashLoopBackOff || p == Pending
}

// InPlace reports whether p is one of the three phases of MCM's node-agent
// in-place update protocol.
func (p Phase) InPlace() bool {
	return p == InPlaceUpdating || p == InPlaceUpdateSuccessful || p == InPlaceUpdateFailed
}

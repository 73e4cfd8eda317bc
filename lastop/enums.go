package lastop

import (
	"fmt"
	"strconv"
)

// Type is the kind of operation a LastOperation reports (MCM's
// MachineOperationType). The zero value is [TypeNone], the empty type of a
// machine that has no last operation yet.
type Type uint8

// The operation types, in MCM's order of declaration.
const (
	// TypeNone is the empty type: no operation was recorded.
	TypeNone Type = iota
	// TypeCreate: creating, initializing or joining the machine.
	TypeCreate
	// TypeUpdate: declared by MCM and never written by it; the library uses
	// it for hot updates and metadata syncs.
	TypeUpdate
	// TypeInPlaceUpdate: MCM's node-agent in-place update.
	TypeInPlaceUpdate
	// TypeDrainNode: MCM writes it only when the drain before an in-place
	// update fails.
	TypeDrainNode
	// TypeHealthCheck: a health transition of a running machine.
	TypeHealthCheck
	// TypeDelete: the deletion pipeline.
	TypeDelete
	typeCount
)

// String returns MCM's text for t: "" for [TypeNone], the constant's name
// without the prefix for the others, and "Type(N)" for a value that is not a
// type.
func (t Type) String() string {
	switch t {
	case TypeNone:
		return ""
	case TypeCreate:
		return "Create"
	case TypeUpdate:
		return "Update"
	case TypeInPlaceUpdate:
		return "InPlaceUpdate"
	case TypeDrainNode:
		return "DrainNode"
	case TypeHealthCheck:
		return "HealthCheck"
	case TypeDelete:
		return "Delete"
	}
	return "Type(" + strconv.Itoa(int(t)) + ")"
}

// ParseType returns the type MCM writes as s. The empty text is [TypeNone];
// any other text that is not exactly one of MCM's names is an error.
func ParseType(s string) (Type, error) {
	for t := range typeCount {
		if t.String() == s {
			return t, nil
		}
	}
	return TypeNone, fmt.Errorf("lastop: unknown operation type %q", s)
}

// State is the state of the operation a LastOperation reports (MCM's
// MachineState). The zero value is [StateNone], the empty state.
type State uint8

// The operation states, in MCM's order of declaration.
const (
	// StateNone is the empty state: no operation was recorded.
	StateNone State = iota
	// StateProcessing: the operation is not complete yet.
	StateProcessing
	// StateFailed: the operation failed.
	StateFailed
	// StateSuccessful: the operation completed.
	StateSuccessful
	stateCount
)

// String returns MCM's text for s: "" for [StateNone], the constant's name
// without the prefix for the others, and "State(N)" for a value that is not
// a state.
func (s State) String() string {
	switch s {
	case StateNone:
		return ""
	case StateProcessing:
		return "Processing"
	case StateFailed:
		return "Failed"
	case StateSuccessful:
		return "Successful"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// ParseState returns the state MCM writes as s. The empty text is
// [StateNone]; any other text that is not exactly one of MCM's names is an
// error.
func ParseState(s string) (State, error) {
	for st := range stateCount {
		if st.String() == s {
			return st, nil
		}
	}
	return StateNone, fmt.Errorf("lastop: unknown operation state %q", s)
}

// Package driverapi is the boundary between the machine lifecycle core and
// cloud providers, modelled on the driver of Gardener's
// machine-controller-manager (MCM): its status codes, its error wire format
// and its Driver interface, with Kubernetes types replaced by plain data.
//
// # Codes
//
// A Code classifies the outcome of a driver call. The 18 codes and their
// numbers and names are MCM's (gRPC's sixteen, Unauthenticated and
// Uninitialized): OK=0 through Uninitialized=17. Code.String returns MCM's
// name; ParseCode accepts exactly those names and nothing else. MCM maps an
// unknown name to Unknown; ParseCode refuses it with ErrUnknownCode, since a
// name that no driver can send is a bug, not a failure class.
// Code.Transient marks the codes MCM retries after its short period.
//
// # Wire format and strict decoding
//
// A StatusError is an error with a Code and a message. Its text is MCM's,
// byte for byte, because MCM and its providers exchange errors as text (over
// gRPC and in Machine status):
//
//	machine codes error: code = [NotFound] message = [instance i-0abc not found]
//
// Error, Errorf and Wrap build one and return nil for OK: a non-nil error
// never means success. FromError classifies any error: a *StatusError found
// anywhere in its chain (errors.As), else its text if Decode accepts it (a
// status error flattened by fmt.Errorf("...: %v") or a transport), else
// Unknown with ok false, MCM's "cannot decode".
//
// Decode is strict where MCM is lenient. MCM takes any text with exactly two
// top-level bracket groups as a status error, so "failed [a] because [b]" is
// read as code Unknown (the name "a" is unknown) with message "b", and
// ok=true. Decode requires the marker "machine codes error: code = [", one of
// the 18 exact names, "] message = [", and a final "]": the message is all
// between, brackets included. Any prefix before the marker is allowed;
// nothing may follow the final bracket. Foreign texts and unknown names are
// refused (MCM design problem d.13 in doc/mcm-rows.md).
//
// # The Driver contract
//
// Driver is what a provider implements: CreateMachine, InitializeMachine,
// GetMachineStatus, DeleteMachine, ListMachines and GetVolumeIDs as in MCM,
// plus UpdateMachine (hot update in place, which MCM proposed and never
// shipped) and UpdateMetadata (metadata only). Each method's doc states the
// codes the lifecycle relies on; the main promises are:
//
//  1. CreateMachine is idempotent per IdempotencyKey, so a retried or
//     replayed create never makes a second instance.
//  2. GetMachineStatus returns NotFound when no instance exists for the ref,
//     Uninitialized with a non-nil response when the instance exists but
//     must be initialized (again), and the OwnerUID the instance was created
//     for.
//  3. DeleteMachine with an empty ProviderID finds the instance by name, UID
//     and idempotency key, so an unrecorded instance is not leaked.
//  4. InitializeMachine returning Unimplemented means nothing to initialize;
//     UpdateMachine returning Unimplemented or FailedPrecondition means the
//     change cannot be applied in place.
//  5. UpdateMetadata may drop changes silently; callers verify with
//     GetMachineStatus.
//
// Providers embed UnimplementedDriver and override what they support.
//
// # Calls and results as data
//
// The lifecycle core never calls a driver. It emits a Call (method, machine,
// creation attempt, generation, metadata, LastKnownState) and later receives
// a Result (code, message, the response's fields). The shell in between runs
// Invoke(ctx, driver, call, class), which builds the request with the
// provider configuration (Class) that only the shell knows, calls the driver
// and flattens response and error into a Result. ResultOf builds a Result
// from an error alone, for tests and for shells that call drivers their own
// way. This package performs no I/O, keeps no state and starts no
// goroutines; Invoke only forwards to the driver it is given.
package driverapi

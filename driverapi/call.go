package driverapi

import (
	"context"
	"errors"
	"strconv"
)

// Call is a driver call as plain data: the lifecycle core emits it and never
// calls a driver itself. The shell carries it out, usually with Invoke, and
// feeds the Result back. Maps and slices in a Call are shared with whoever
// built it and are read-only.
type Call struct {
	// Method is the Driver method to call.
	Method Method
	// Machine names the machine and, if recorded, its instance.
	Machine MachineRef
	// Attempt is the machine's creation attempt; with Machine.UID it forms
	// the idempotency key of CreateMachine, GetMachineStatus and
	// DeleteMachine.
	Attempt uint32
	// Generation is, for CreateMachine, the hot-update generation to create
	// the instance at and, for UpdateMachine, the one to bring it to.
	Generation int64
	// Metadata is, for CreateMachine, the desired metadata and, for
	// UpdateMetadata, the keys to set. Read-only.
	Metadata map[string]string
	// Remove is, for UpdateMetadata, the keys to remove. Read-only.
	Remove []string
	// LastKnownState is, for DeleteMachine, the provider's opaque state.
	LastKnownState string
	// Volumes is, for GetVolumeIDs, the volumes to map. Read-only. The
	// lifecycle core never sets it; a shell that asks GetVolumeIDs does.
	Volumes []Volume
}

// IdempotencyKey returns Machine.UID + "/" + the decimal Attempt, e.g.
// "6f1c…/3", or "" when Machine.UID is "". The same machine incarnation and
// attempt always give the same key, so a repeated CreateMachine is
// recognised by the provider.
func (c Call) IdempotencyKey() string {
	if c.Machine.UID == "" {
		return ""
	}
	return c.Machine.UID + "/" + strconv.FormatUint(uint64(c.Attempt), 10)
}

// Result is the outcome of a Call as plain data, what the shell feeds back
// to the lifecycle core. On success the fields of the method's response are
// filled; on an error they are filled too when the driver returned a
// response along with the error (GetMachineStatus with Uninitialized,
// CreateMachine and DeleteMachine with a LastKnownState). Maps and slices are
// shared with the driver's response and are read-only.
type Result struct {
	// Method is the method that was called.
	Method Method
	// Code is the status code of the error, OK on success.
	Code Code
	// Undecodable is set when the error was not a status error (MCM's
	// "cannot decode"); Code is then Unknown.
	Undecodable bool
	// Message is the error's message, "" on OK. For an undecodable error
	// it is the whole error text.
	Message string
	// Text is the error's whole text, err.Error(), as MCM embeds it in
	// LastOperation descriptions ("" on OK). ResultOf and Invoke fill it.
	Text string
	// ProviderID is from Create, Initialize and GetStatus responses.
	ProviderID string
	// NodeName is from Create, Initialize and GetStatus responses.
	NodeName string
	// OwnerUID is from a GetStatus response.
	OwnerUID string
	// LastKnownState is from Create and Delete responses.
	LastKnownState string
	// Addresses are from Create, Initialize and GetStatus responses.
	Addresses []Address
	// Metadata is from a GetStatus response.
	Metadata map[string]string
	// Generation is from GetStatus and Update responses.
	Generation int64
	// Instances are from a List response.
	Instances []Instance
	// VolumeIDs are from a GetVolumeIDs response.
	VolumeIDs []string
}

// OK reports whether the call succeeded: Code is OK and the error, if any,
// was decodable.
func (r Result) OK() bool { return r.Code == OK && !r.Undecodable }

// Err turns the result back into an error: nil when OK, errors.New(Message)
// when Undecodable, else a *StatusError with Code and Message (its text is
// MCM's wire format; the original Cause is not kept).
func (r Result) Err() error {
	switch {
	case r.OK():
		return nil
	case r.Undecodable:
		return errors.New(r.Message)
	default:
		return &StatusError{Code: r.Code, Message: r.Message}
	}
}

// ResultOf returns the Result of method m failing with err (nil err: OK),
// with the response fields empty. A status error, wrapped or flattened to
// text, gives its code and message; any other error gives Code Unknown,
// Undecodable and the error text as Message. A non-nil error that claims OK
// breaks the status invariant and is treated as undecodable too, so a Result
// is never OK while its call returned an error.
func ResultOf(m Method, err error) Result {
	code, msg, ok := FromError(err)
	if err != nil && (!ok || code == OK) {
		text := err.Error()
		return Result{Method: m, Code: Unknown, Undecodable: true, Message: text, Text: text}
	}
	if err == nil {
		return Result{Method: m, Code: code, Message: msg}
	}
	return Result{Method: m, Code: code, Message: msg, Text: err.Error()}
}

// ErrorText returns the error's whole text: Text when set, else the text
// Err would give ("" on OK). Only a hand-built Result without Text makes it
// allocate.
func (r Result) ErrorText() string {
	if r.Text != "" || r.OK() {
		return r.Text
	}
	return r.Err().Error()
}

// Invoke carries out call against d with the shell-supplied class and
// returns its Result: the request is built from call (the idempotency key
// from Call.IdempotencyKey), the error converted by ResultOf and the
// response's fields copied, also when an error came with a non-nil response.
// A nil response with a nil error gives an OK Result with empty fields.
// MethodNone, an invalid method or a nil d give a Result with Code
// InvalidArgument, without calling d. Invoke performs no I/O itself; it only
// forwards to the caller's driver.
func Invoke(ctx context.Context, d Driver, call Call, class Class) Result {
	m := call.Method
	if !m.Valid() {
		return invalidMethod(m)
	}
	if d == nil {
		return Result{Method: m, Code: InvalidArgument, Message: "driverapi: nil driver for " + m.String()}
	}
	switch m {
	case MethodCreate:
		return invokeCreate(ctx, d, &call, class)
	case MethodInitialize:
		return invokeInitialize(ctx, d, &call, class)
	case MethodGetStatus:
		return invokeGetStatus(ctx, d, &call, class)
	case MethodDelete:
		return invokeDelete(ctx, d, &call, class)
	case MethodList:
		return invokeList(ctx, d, class)
	case MethodGetVolumeIDs:
		return invokeGetVolumeIDs(ctx, d, &call, class)
	case MethodUpdate:
		return invokeUpdate(ctx, d, &call, class)
	case MethodUpdateMetadata:
		return invokeUpdateMetadata(ctx, d, &call, class)
	}
	return invalidMethod(m)
}

// The invoke functions make one call of Invoke: the request from the Call,
// the Result from the response and the error.

func invokeCreate(ctx context.Context, d Driver, call *Call, class Class) Result {
	resp, err := d.CreateMachine(ctx, &CreateMachineRequest{
		Machine:        call.Machine,
		IdempotencyKey: call.IdempotencyKey(),
		Generation:     call.Generation,
		Metadata:       call.Metadata,
		Class:          class,
	})
	r := ResultOf(MethodCreate, err)
	if resp != nil {
		r.ProviderID, r.NodeName, r.LastKnownState = resp.ProviderID, resp.NodeName, resp.LastKnownState
		r.Addresses = resp.Addresses
	}
	return r
}

func invokeInitialize(ctx context.Context, d Driver, call *Call, class Class) Result {
	resp, err := d.InitializeMachine(ctx, &InitializeMachineRequest{Machine: call.Machine, Class: class})
	r := ResultOf(MethodInitialize, err)
	if resp != nil {
		r.ProviderID, r.NodeName, r.Addresses = resp.ProviderID, resp.NodeName, resp.Addresses
	}
	return r
}

func invokeGetStatus(ctx context.Context, d Driver, call *Call, class Class) Result {
	resp, err := d.GetMachineStatus(ctx, &GetMachineStatusRequest{
		Machine:        call.Machine,
		IdempotencyKey: call.IdempotencyKey(),
		Class:          class,
	})
	r := ResultOf(MethodGetStatus, err)
	if resp != nil {
		r.ProviderID, r.NodeName, r.OwnerUID = resp.ProviderID, resp.NodeName, resp.OwnerUID
		r.Addresses, r.Metadata, r.Generation = resp.Addresses, resp.Metadata, resp.Generation
	}
	return r
}

func invokeDelete(ctx context.Context, d Driver, call *Call, class Class) Result {
	resp, err := d.DeleteMachine(ctx, &DeleteMachineRequest{
		Machine:        call.Machine,
		IdempotencyKey: call.IdempotencyKey(),
		LastKnownState: call.LastKnownState,
		Class:          class,
	})
	r := ResultOf(MethodDelete, err)
	if resp != nil {
		r.LastKnownState = resp.LastKnownState
	}
	return r
}

func invokeList(ctx context.Context, d Driver, class Class) Result {
	resp, err := d.ListMachines(ctx, &ListMachinesRequest{Class: class})
	r := ResultOf(MethodList, err)
	if resp != nil {
		r.Instances = resp.Instances
	}
	return r
}

func invokeGetVolumeIDs(ctx context.Context, d Driver, call *Call, class Class) Result {
	resp, err := d.GetVolumeIDs(ctx, &GetVolumeIDsRequest{Volumes: call.Volumes, Class: class})
	r := ResultOf(MethodGetVolumeIDs, err)
	if resp != nil {
		r.VolumeIDs = resp.VolumeIDs
	}
	return r
}

func invokeUpdate(ctx context.Context, d Driver, call *Call, class Class) Result {
	resp, err := d.UpdateMachine(ctx, &UpdateMachineRequest{
		Machine:    call.Machine,
		Generation: call.Generation,
		Class:      class,
	})
	r := ResultOf(MethodUpdate, err)
	if resp != nil {
		r.Generation = resp.Generation
	}
	return r
}

func invokeUpdateMetadata(ctx context.Context, d Driver, call *Call, class Class) Result {
	_, err := d.UpdateMetadata(ctx, &UpdateMetadataRequest{
		Machine: call.Machine,
		Set:     call.Metadata,
		Remove:  call.Remove,
		Class:   class,
	})
	return ResultOf(MethodUpdateMetadata, err)
}

// invalidMethod is the Result of a Call whose Method names no Driver method.
func invalidMethod(m Method) Result {
	return Result{Method: m, Code: InvalidArgument, Message: "driverapi: invalid method " + m.String()}
}

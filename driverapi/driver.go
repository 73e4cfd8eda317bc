package driverapi

import (
	"context"
	"strconv"
	"time"
)

// Method names one Driver method. The zero value, MethodNone, names none.
type Method uint8

// The driver methods.
const (
	// MethodNone is the zero value: no call.
	MethodNone Method = iota
	// MethodCreate is Driver.CreateMachine.
	MethodCreate
	// MethodInitialize is Driver.InitializeMachine.
	MethodInitialize
	// MethodGetStatus is Driver.GetMachineStatus.
	MethodGetStatus
	// MethodDelete is Driver.DeleteMachine.
	MethodDelete
	// MethodList is Driver.ListMachines.
	MethodList
	// MethodGetVolumeIDs is Driver.GetVolumeIDs.
	MethodGetVolumeIDs
	// MethodUpdate is Driver.UpdateMachine.
	MethodUpdate
	// MethodUpdateMetadata is Driver.UpdateMetadata.
	MethodUpdateMetadata

	// numMethods is one past the last method.
	numMethods
)

// String returns the Driver method's name ("CreateMachine", ...) or "none"
// for MethodNone; an out-of-range value renders as "Method(N)".
func (m Method) String() string {
	switch m {
	case MethodNone:
		return "none"
	case MethodCreate:
		return "CreateMachine"
	case MethodInitialize:
		return "InitializeMachine"
	case MethodGetStatus:
		return "GetMachineStatus"
	case MethodDelete:
		return "DeleteMachine"
	case MethodList:
		return "ListMachines"
	case MethodGetVolumeIDs:
		return "GetVolumeIDs"
	case MethodUpdate:
		return "UpdateMachine"
	case MethodUpdateMetadata:
		return "UpdateMetadata"
	default:
		return "Method(" + strconv.FormatUint(uint64(m), 10) + ")"
	}
}

// Valid reports whether m names a Driver method (MethodNone does not).
func (m Method) Valid() bool { return m > MethodNone && m < numMethods }

// Address is one way to reach an instance, like a Kubernetes NodeAddress.
type Address struct {
	// Type is the kind of address, e.g. "InternalIP", "ExternalIP",
	// "Hostname".
	Type string
	// Address is the address itself.
	Address string
}

// Class is the provider configuration of a call: MCM's MachineClass and its
// Secret. The shell supplies it to Invoke; the lifecycle core never fills or
// reads it. Drivers must treat it as read-only.
type Class struct {
	// Name names the class, for messages.
	Name string
	// ProviderSpec is the provider-specific machine configuration, opaque
	// here (MCM's MachineClass.ProviderSpec, usually JSON).
	ProviderSpec []byte
	// Secret holds the credentials and user data (MCM's Secret data).
	Secret map[string][]byte
}

// MachineRef says which machine, and which instance, a call is about.
type MachineRef struct {
	// Name is the machine's name. A provider finds an instance that is not
	// recorded by it (with UID and the idempotency key), and the lifecycle
	// takes an instance of the name created for another UID for one of an
	// older incarnation, which it deletes: among the machines whose
	// instances a provider's lookups can see, a name belongs to one machine
	// and its incarnations. A shell managing machines of several namespaces
	// with one provider keeps their names apart.
	Name string
	// UID is the machine's UID: it tells incarnations of one name apart.
	UID string
	// ProviderID identifies the instance at the provider. Empty means the
	// instance is not recorded yet: the driver must find it by Name and UID
	// (and, for create and delete, by the idempotency key).
	ProviderID string
	// NodeName is the name of the machine's node, if known.
	NodeName string
}

// Instance is one entry of ListMachines: an instance the class may have
// created.
type Instance struct {
	// ProviderID identifies the instance.
	ProviderID string
	// MachineName is the name of the machine the instance was created for.
	MachineName string
	// OwnerUID is the UID of the machine the instance was created for, ""
	// when the provider cannot tell.
	OwnerUID string
	// Created is when the instance was created; zero when the provider
	// cannot tell. Orphan collection leaves young instances alone (they may
	// belong to a creation the shell's caches do not show yet).
	Created time.Time
}

// CreateMachineRequest asks for an instance for Machine.
type CreateMachineRequest struct {
	// Machine is the machine to create an instance for; ProviderID is "".
	Machine MachineRef
	// IdempotencyKey identifies this creation attempt (Call.IdempotencyKey).
	IdempotencyKey string
	// Generation is the hot-update generation to create the instance at.
	Generation int64
	// Metadata is the metadata (tags, labels) the instance must carry.
	// Read-only.
	Metadata map[string]string
	// Class is the provider configuration.
	Class Class
}

// CreateMachineResponse describes the created instance.
type CreateMachineResponse struct {
	// ProviderID identifies the new instance; it should match the node's
	// spec.providerID, e.g. "gce://project/zone/name".
	ProviderID string
	// NodeName is the name the instance's node registers with.
	NodeName string
	// LastKnownState is the provider's opaque state, returned also with an
	// error so that a later DeleteMachine can clean up.
	LastKnownState string
	// Addresses reach the instance (optional).
	Addresses []Address
}

// InitializeMachineRequest asks to initialize an existing instance after
// creation (network setup and the like).
type InitializeMachineRequest struct {
	// Machine names the machine and its instance.
	Machine MachineRef
	// Class is the provider configuration.
	Class Class
}

// InitializeMachineResponse describes the initialized instance.
type InitializeMachineResponse struct {
	// ProviderID identifies the instance.
	ProviderID string
	// NodeName is the name the instance's node registers with.
	NodeName string
	// Addresses reach the instance (optional).
	Addresses []Address
}

// GetMachineStatusRequest asks what the provider knows of a machine's
// instance.
type GetMachineStatusRequest struct {
	// Machine names the machine and, if recorded, its instance.
	Machine MachineRef
	// IdempotencyKey is the key of the machine's last creation attempt, ""
	// when none is recorded; it helps find an instance whose ProviderID was
	// never recorded.
	IdempotencyKey string
	// Class is the provider configuration.
	Class Class
}

// GetMachineStatusResponse describes an existing instance.
type GetMachineStatusResponse struct {
	// ProviderID identifies the instance.
	ProviderID string
	// NodeName is the name the instance's node registers with.
	NodeName string
	// OwnerUID is the UID of the machine the instance was created for; it
	// differs from Machine.UID for an instance of an older incarnation.
	OwnerUID string
	// Addresses reach the instance (optional).
	Addresses []Address
	// Metadata is the metadata the instance carries now.
	Metadata map[string]string
	// Generation is the hot-update generation the instance runs at.
	Generation int64
}

// DeleteMachineRequest asks to delete a machine's instance.
type DeleteMachineRequest struct {
	// Machine names the machine and, if recorded, its instance.
	Machine MachineRef
	// IdempotencyKey is the key of the machine's last creation attempt, ""
	// when none is recorded.
	IdempotencyKey string
	// LastKnownState is the provider's opaque state from earlier calls.
	LastKnownState string
	// Class is the provider configuration.
	Class Class
}

// DeleteMachineResponse reports a deletion.
type DeleteMachineResponse struct {
	// LastKnownState is the provider's opaque state, returned also with an
	// error so that the next DeleteMachine can resume.
	LastKnownState string
}

// ListMachinesRequest asks for every instance the class may have created.
type ListMachinesRequest struct {
	// Class is the provider configuration.
	Class Class
}

// ListMachinesResponse lists instances.
type ListMachinesResponse struct {
	// Instances are the instances found, in the provider's order.
	Instances []Instance
}

// Volume is the source of one PersistentVolume, opaque to the core.
type Volume struct {
	// Name is the PersistentVolume's name.
	Name string
	// Driver is the CSI driver name, "" for an in-tree source.
	Driver string
	// Handle is the CSI volume handle, "" for an in-tree source.
	Handle string
	// Spec is the serialized volume source, for in-tree volumes.
	Spec []byte
}

// GetVolumeIDsRequest asks which of Volumes the provider manages.
type GetVolumeIDsRequest struct {
	// Volumes are the volumes to map. Read-only.
	Volumes []Volume
	// Class is the provider configuration.
	Class Class
}

// GetVolumeIDsResponse maps volumes to provider volume IDs.
type GetVolumeIDsResponse struct {
	// VolumeIDs are the provider's IDs of the volumes it manages; volumes
	// of other providers are left out.
	VolumeIDs []string
}

// UpdateMachineRequest asks to bring a running instance to a new hot-update
// generation in place: the Driver.UpdateMachine of Stage-B of MCM's
// initialization proposal, which MCM never shipped
// (https://github.com/gardener/machine-controller-manager/blob/master/docs/proposals/initialize-machine.md).
type UpdateMachineRequest struct {
	// Machine names the machine and its instance.
	Machine MachineRef
	// Generation is the generation to bring the instance to.
	Generation int64
	// Class is the provider configuration of that generation.
	Class Class
}

// UpdateMachineResponse reports a hot update.
type UpdateMachineResponse struct {
	// Generation is the generation the instance runs at now.
	Generation int64
}

// UpdateMetadataRequest asks to change an instance's metadata only.
type UpdateMetadataRequest struct {
	// Machine names the machine and its instance.
	Machine MachineRef
	// Set holds the keys to set, with their values. Read-only.
	Set map[string]string
	// Remove holds the keys to remove. Read-only.
	Remove []string
	// Class is the provider configuration.
	Class Class
}

// UpdateMetadataResponse reports a metadata update. It is empty: success
// does not mean every key was applied (see Driver.UpdateMetadata).
type UpdateMetadataResponse struct{}

// Driver is the interface a cloud provider implements: MCM's driver.Driver
// with k8s types replaced by plain data, plus UpdateMachine and
// UpdateMetadata. Every method reports failure with a *StatusError (see
// Error); an error that is not one is treated as Unknown and undecodable.
// Requests are read-only. Methods must honour ctx. The transient codes
// (Code.Transient) are retried after a short period; which other codes the
// lifecycle accepts is stated per method.
//
// A provider embeds UnimplementedDriver and overrides the methods it supports.
type Driver interface {
	// CreateMachine creates an instance for req.Machine at req.Generation
	// carrying req.Metadata, with req.Machine.UID as its owner (reported by
	// GetMachineStatus and ListMachines as OwnerUID), and returns its
	// identity. It must be
	// idempotent for the same IdempotencyKey: a repeated call (after a
	// timeout, a crash or a lost status write) returns the instance the
	// first call created instead of creating another. On an error it may
	// return a non-nil response whose LastKnownState the lifecycle keeps.
	// ResourceExhausted is retried after a long period; the transient codes
	// after a short one; other codes fail the attempt.
	CreateMachine(ctx context.Context, req *CreateMachineRequest) (*CreateMachineResponse, error)
	// InitializeMachine configures an instance after creation. Unimplemented
	// means there is nothing to initialize: the lifecycle moves on. Any
	// other error (Uninitialized when initialization itself failed,
	// NotFound when the instance vanished, ...) puts the machine into
	// CrashLoopBackOff and initialization is retried.
	InitializeMachine(ctx context.Context, req *InitializeMachineRequest) (*InitializeMachineResponse, error)
	// GetMachineStatus reports the instance for req.Machine: by ProviderID,
	// or by Name, UID and IdempotencyKey when ProviderID is "". It returns
	// NotFound when no instance exists for the ref (Unimplemented is read
	// the same way during creation, as MCM does), and Uninitialized together
	// with a non-nil response when the instance exists but InitializeMachine
	// must run (again). OwnerUID is the UID of the machine the instance was
	// created for, so an instance of an older incarnation is recognised.
	// Metadata is what the instance carries now, which is how the caller
	// verifies UpdateMetadata.
	GetMachineStatus(ctx context.Context, req *GetMachineStatusRequest) (*GetMachineStatusResponse, error)
	// DeleteMachine deletes the instance for req.Machine; with ProviderID ""
	// it finds the instance by Name, UID and IdempotencyKey (so an instance
	// whose creation was never recorded is not leaked). Deleting an instance
	// that is already gone succeeds (or returns NotFound; both mean gone).
	// It may return a non-nil response with an error; its LastKnownState is
	// kept for the next attempt.
	DeleteMachine(ctx context.Context, req *DeleteMachineRequest) (*DeleteMachineResponse, error)
	// ListMachines lists every instance the class may have created, with
	// the machine name and UID each was created for, for orphan collection.
	ListMachines(ctx context.Context, req *ListMachinesRequest) (*ListMachinesResponse, error)
	// GetVolumeIDs returns the provider's IDs of those req.Volumes it
	// manages, so the drain can wait for them to detach.
	GetVolumeIDs(ctx context.Context, req *GetVolumeIDsRequest) (*GetVolumeIDsResponse, error)
	// UpdateMachine brings a running instance to req.Generation in place
	// and returns the generation now applied. Unimplemented or
	// FailedPrecondition mean the change cannot be applied in place: the
	// lifecycle marks the machine as needing replacement and never replaces
	// it silently. Transient codes are retried with backoff.
	UpdateMachine(ctx context.Context, req *UpdateMachineRequest) (*UpdateMachineResponse, error)
	// UpdateMetadata sets req.Set and removes req.Remove on the instance's
	// metadata, and records req.Machine.UID as the instance's owner (the UID
	// GetMachineStatus reports as OwnerUID), touching nothing else. It may
	// drop some changes silently (eventual consistency, tag limits); the
	// caller never trusts OK alone and verifies with GetMachineStatus.
	UpdateMetadata(ctx context.Context, req *UpdateMetadataRequest) (*UpdateMetadataResponse, error)
}

// UnimplementedDriver answers every Driver method with a nil response and an
// Unimplemented *StatusError. Providers embed it and override the methods
// they support; a provider embedding it keeps compiling when Driver grows.
// (It cannot be called Unimplemented: that is the Code.)
type UnimplementedDriver struct{}

// unimplemented is the error every Unimplemented method returns.
func unimplemented(m Method) error {
	return Error(Unimplemented, "driverapi: "+m.String()+" is not implemented")
}

// CreateMachine returns Unimplemented.
func (UnimplementedDriver) CreateMachine(context.Context, *CreateMachineRequest) (*CreateMachineResponse, error) {
	return nil, unimplemented(MethodCreate)
}

// InitializeMachine returns Unimplemented: nothing to initialize.
func (UnimplementedDriver) InitializeMachine(context.Context, *InitializeMachineRequest) (*InitializeMachineResponse, error) {
	return nil, unimplemented(MethodInitialize)
}

// GetMachineStatus returns Unimplemented.
func (UnimplementedDriver) GetMachineStatus(context.Context, *GetMachineStatusRequest) (*GetMachineStatusResponse, error) {
	return nil, unimplemented(MethodGetStatus)
}

// DeleteMachine returns Unimplemented.
func (UnimplementedDriver) DeleteMachine(context.Context, *DeleteMachineRequest) (*DeleteMachineResponse, error) {
	return nil, unimplemented(MethodDelete)
}

// ListMachines returns Unimplemented.
func (UnimplementedDriver) ListMachines(context.Context, *ListMachinesRequest) (*ListMachinesResponse, error) {
	return nil, unimplemented(MethodList)
}

// GetVolumeIDs returns Unimplemented.
func (UnimplementedDriver) GetVolumeIDs(context.Context, *GetVolumeIDsRequest) (*GetVolumeIDsResponse, error) {
	return nil, unimplemented(MethodGetVolumeIDs)
}

// UpdateMachine returns Unimplemented: no change can be applied in place.
func (UnimplementedDriver) UpdateMachine(context.Context, *UpdateMachineRequest) (*UpdateMachineResponse, error) {
	return nil, unimplemented(MethodUpdate)
}

// UpdateMetadata returns Unimplemented.
func (UnimplementedDriver) UpdateMetadata(context.Context, *UpdateMetadataRequest) (*UpdateMetadataResponse, error) {
	return nil, unimplemented(MethodUpdateMetadata)
}

// UnimplementedDriver implements Driver.
var _ Driver = UnimplementedDriver{}

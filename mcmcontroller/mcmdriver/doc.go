// Package mcmdriver connects the providers of Gardener's
// machine-controller-manager (MCM) with the lifecycle's driver interface,
// both ways: [For] wraps an implementation of MCM's driver.Driver (v0.62.1)
// as a driverapi.Driver, so the lifecycle calls MCM's out-of-tree providers
// (AWS, Azure, GCP, ...); [ToMCM] wraps a driverapi.Driver as an MCM
// driver.Driver, so MCM's own controller can run the project's providers.
// Requests, responses and status errors are converted.
//
// # Where MCM's objects come from
//
// MCM's requests carry Kubernetes objects (the Machine, its MachineClass and
// the class's Secret), driverapi's requests plain data. The controller that
// calls a provider has read the objects; it hands them to [For] for the calls
// of one pass, as [Objects]. Each request gets deep copies, with the call's
// data written over them (the call is what the lifecycle decided, the objects
// are what the API server held when the pass began). An object that is nil
// is built from the call's data alone: a Machine with the ref's name, UID,
// providerID and node label; a MachineClass with the class's name and
// provider spec; a Secret holding the class's secret data. That fallback is
// enough for providers that read only those fields; a provider that reads
// more (the class's Provider, the machine's namespace or labels) needs the
// real objects. A call about another machine than Objects.Machine (the
// machine's name and UID decide) gets a Machine built from its ref.
//
// # What maps to what
//
// For (driverapi request -> MCM request, MCM response -> driverapi response):
//
//	driverapi                          MCM driver.Driver
//	MachineRef.Name, UID               Machine.Name, UID
//	MachineRef.ProviderID              Machine.Spec.ProviderID (when set: the recorded instance wins over an unwritten spec)
//	MachineRef.NodeName                Machine's node label (v1alpha1.NodeLabelKey)
//	DeleteMachineRequest.LastKnownState  Machine.Status.LastKnownState
//	Class.Name, ProviderSpec           MachineClass.Name, ProviderSpec.Raw
//	Class.Secret                       Secret.Data (the call's: the user data with its placeholders filled in)
//	Volume{Driver, Handle}             PersistentVolumeSpec with a CSI source
//	Volume.Spec                        PersistentVolumeSpec decoded from it as JSON
//	ProviderID, NodeName               the responses' ProviderID, NodeName
//	Addresses                          the responses' Addresses (corev1.NodeAddress)
//	LastKnownState                     Create's and Delete's LastKnownState
//	ListMachinesResponse.Instances     MachineList (providerID -> machine name), sorted by providerID
//	GetVolumeIDsResponse.VolumeIDs     GetVolumeIDsResponse.VolumeIDs
//	Code                               machinecodes/codes.Code, pair by pair ([CodeFromMCM], [CodeToMCM])
//
// ToMCM maps the same fields the other way; its CreateMachine,
// GetMachineStatus and DeleteMachine send the machine's UID as the
// idempotency key (MCM has none), so MCM's repeated CreateMachine for one
// machine finds the instance the first one made.
//
// Errors: an MCM status error (the type of MCM's machinecodes/status, or its
// text) becomes a driverapi status error with the paired code and the same
// message, and a driverapi status error becomes an MCM one. Every code has a
// pair: MCM's and driverapi's lists are the same eighteen codes, OK to
// Uninitialized, and a test checks each list against the table. An error
// that is not a status error is passed on unchanged, which driverapi reads
// as undecodable (code Unknown, the whole text as the message) and MCM as an
// error it cannot decode. MCM decodes errors from their text with a lenient
// bracket count; For decodes strictly, as driverapi does, so a foreign error
// that happens to hold two bracketed groups stays undecodable.
//
// # What cannot be mapped, and why
//
//	driverapi                          through For
//	UpdateMachine, UpdateMetadata      Unimplemented: MCM v0.62.1's driver.Driver has no in-place update and no metadata call; the lifecycle reads Unimplemented as "cannot be done in place"
//	GetMachineStatusResponse.OwnerUID  "": MCM's response has no owner, so the lifecycle's VerifyOwner must be off (options.Config does it)
//	  .Metadata, .Generation           nil, 0: MCM's response has neither
//	Instance.OwnerUID, Created         "", zero: MCM's listing maps a providerID to a machine name and nothing else
//	CreateMachineRequest.IdempotencyKey, Generation, Metadata
//	                                   not sent: MCM's request has no place for them; an MCM provider is idempotent, if at all, by machine name, and takes tags from the class's provider spec
//	GetVolumeIDsRequest.Class          not sent: MCM's request holds only the volume specs
//
//	MCM                                through ToMCM
//	GenerateMachineClassForMigration   not part of v0.62.1's driver.Driver (only its request types remain), so there is nothing to answer
//	a MachineList entry per providerID  instances sharing a providerID (a broken driverapi provider) collapse into one entry
//
// Nil requests, nil machines and nil responses are handled: a nil request
// or provider answers InvalidArgument, a nil response with a nil error is
// an empty success, and a nil response with an error is the error alone.
package mcmdriver

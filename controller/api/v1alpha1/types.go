package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Machine is a virtual machine (or any instance a provider creates) whose
// lifecycle the controller decides with github.com/purelifecycle/machine.
//
// kubectl get shows its phase, what it waits for and until when, and its
// age. Until is a string column, the deadline in RFC 3339: kubectl shows a
// date column as the time since it, which a deadline still to come does
// not have ("<invalid>").
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mc
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.currentStatus.phase`,description="MCM's phase of the machine."
// +kubebuilder:printcolumn:name="Waiting For",type=string,JSONPath=`.status.wait.for`,description="What the machine waits for, empty when it waits for nothing."
// +kubebuilder:printcolumn:name="Until",type=string,JSONPath=`.status.wait.until`,description="When the wait ends by its deadline (RFC 3339), empty when it has none."
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.node`,description="Node of the machine's instance.",priority=1
// +kubebuilder:printcolumn:name="ProviderID",type=string,JSONPath=`.spec.providerID`,description="Instance backing the machine.",priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Machine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired machine.
	Spec MachineSpec `json:"spec,omitempty"`
	// Status is the machine as last observed and decided.
	Status MachineStatus `json:"status,omitempty"`
}

// MachineList is a list of Machines.
//
// +kubebuilder:object:root=true
type MachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the machines.
	Items []Machine `json:"items"`
}

// MachineSpec is the desired machine (MCM's MachineSpec without the node
// template).
type MachineSpec struct {
	// Class names the MachineClass that configures the machine's instance
	// (provider spec, credentials, user data, node template).
	// +optional
	Class ClassSpec `json:"class,omitempty"`
	// ProviderID identifies the machine's instance at the provider. The
	// controller sets it once the instance is recorded.
	// +optional
	ProviderID string `json:"providerID,omitempty"`
	// UpdateGeneration is the desired hot-update generation: the version of
	// the part of the machine the provider can apply to a running instance
	// in place. Raising it asks the provider to update the instance.
	// +optional
	UpdateGeneration int64 `json:"updateGeneration,omitempty"`
	// InPlaceGeneration is the desired in-place update generation of the
	// machine's node. Raising it asks the node agent to update the node in
	// place: the controller labels the node candidate and selected for an
	// update, drains it, tells the agent ReadyForUpdate, and once the
	// agent's update succeeded and the node is healthy takes the labels off
	// and uncordons the node. The agent reads what to install from its own
	// configuration.
	// +optional
	InPlaceGeneration int64 `json:"inPlaceGeneration,omitempty"`
	// Preserve asks to keep the machine and its node for diagnosis instead
	// of replacing it: "now" (whatever its phase), "when-failed" (once it
	// is Failed) or "false". While it is preserved its node is kept from
	// the cluster autoscaler, a Failed machine's node is drained, and the
	// machine is not replaced until its preservation expires
	// (status.currentStatus.preserveExpiryTime, one machinePreserveTimeout
	// after it began); then the controller clears this field. Left empty,
	// the machine annotation node.machine.sapcloud.io/preserve asks.
	// +optional
	// +kubebuilder:validation:Enum=now;when-failed;"false"
	Preserve string `json:"preserve,omitempty"`
	// InstanceMetadata is the metadata (tags, labels) the instance must
	// carry at the provider.
	// +optional
	InstanceMetadata map[string]string `json:"instanceMetadata,omitempty"`
	// MachineConfiguration holds per-machine settings that win over the
	// controller's configuration.
	MachineConfiguration `json:",inline"`
}

// ClassSpec names the machine's class: a MachineClass in the machine's
// namespace. Kind and APIGroup may be left empty; any other kind or group
// than MachineClass of machine.purelifecycle.dev makes the machine invalid.
type ClassSpec struct {
	// APIGroup of the class: machine.purelifecycle.dev.
	// +optional
	APIGroup string `json:"apiGroup,omitempty"`
	// Kind of the class: MachineClass.
	// +optional
	Kind string `json:"kind,omitempty"`
	// Name of the class.
	// +optional
	Name string `json:"name,omitempty"`
}

// MachineConfiguration holds MCM's per-machine settings, with MCM's field
// names.
type MachineConfiguration struct {
	// MachineDrainTimeout bounds the drain, after which it is forced.
	// +optional
	MachineDrainTimeout *metav1.Duration `json:"drainTimeout,omitempty"`
	// MachineHealthTimeout bounds how long the machine may stay Unknown
	// before it is marked Failed.
	// +optional
	MachineHealthTimeout *metav1.Duration `json:"healthTimeout,omitempty"`
	// MachineCreationTimeout bounds how long the machine may take to join.
	// +optional
	MachineCreationTimeout *metav1.Duration `json:"creationTimeout,omitempty"`
	// DisableHealthTimeout, when true, never marks the machine Failed for
	// being unhealthy.
	// +optional
	DisableHealthTimeout *bool `json:"disableHealthTimeout,omitempty"`
	// MaxEvictRetries bounds the eviction retries of a drain.
	// +optional
	MaxEvictRetries *int32 `json:"maxEvictRetries,omitempty"`
	// NodeConditions is a comma-separated list of node condition types that
	// make the node unhealthy when not False.
	// +optional
	NodeConditions *string `json:"nodeConditions,omitempty"`
	// MachineInPlaceUpdateTimeout bounds an in-place update of the node,
	// after which it failed.
	// +optional
	MachineInPlaceUpdateTimeout *metav1.Duration `json:"inPlaceUpdateTimeout,omitempty"`
	// MachinePreserveTimeout bounds a preservation of the machine.
	// +optional
	MachinePreserveTimeout *metav1.Duration `json:"machinePreserveTimeout,omitempty"`
}

// MachineStatus is the machine's status: what a person reads first (the
// observed generation, the conditions, what the machine waits for), MCM's
// fields with MCM's names and texts, and the library's own state in
// Lifecycle.
type MachineStatus struct {
	// ObservedGeneration is the metadata.generation of the machine the
	// controller last decided on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions follow the Kubernetes API conventions: Ready (True while
	// the machine is Running or Available and not being deleted) and one
	// condition per thing the machine has waited for (WaitingForNodeJoin,
	// WaitingForRetry, ...), True while it waits for it. Each reason is the
	// deciding rule's identifier in CamelCase (health.joined gives
	// HealthJoined).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Wait says what the machine waits for; absent when it waits for
	// nothing.
	// +optional
	Wait *Wait `json:"wait,omitempty"`
	// Addresses of the instance; only kept without a target cluster.
	// +optional
	Addresses []corev1.NodeAddress `json:"addresses,omitempty"`
	// NodeConditions mirror the conditions of the machine's node (MCM's
	// status.conditions).
	// +optional
	NodeConditions []corev1.NodeCondition `json:"nodeConditions,omitempty"`
	// LastOperation is the last operation, with MCM's exact description.
	// +optional
	LastOperation LastOperation `json:"lastOperation,omitempty"`
	// CurrentStatus holds the phase.
	// +optional
	CurrentStatus CurrentStatus `json:"currentStatus,omitempty"`
	// LastKnownState is the provider's opaque state of the instance.
	// +optional
	LastKnownState string `json:"lastKnownState,omitempty"`
	// Node is the name of the instance's node, as the provider reported it.
	// +optional
	Node string `json:"node,omitempty"`
	// Lifecycle is the library's state that MCM's fields do not carry.
	// +optional
	Lifecycle *LifecycleState `json:"lifecycle,omitempty"`
	// BootstrapTokenID is the ID of the machine's bootstrap token (secret
	// kube-system/bootstrap-token-<ID>), recorded before the token is made.
	// +optional
	BootstrapTokenID string `json:"bootstrapTokenID,omitempty"`
	// Zone is the zone the machine's node showed (its
	// topology.kubernetes.io/zone label) when the status was last written
	// with the node at hand, kept once the node object is gone: the
	// fleet's protection per failure domain counts the machine in it.
	// +optional
	Zone string `json:"zone,omitempty"`
}

// Wait is what the machine waits for, as the last decision saw it.
type Wait struct {
	// For names what is awaited: retry, node-join, observer, problem,
	// replacement, finalizer, recovery, grant, creation, deletion or
	// predecessor.
	For string `json:"for"`
	// Since is when the wait began.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
	// Until is when the wait ends by its deadline; absent when it has none.
	// +optional
	Until *metav1.Time `json:"until,omitempty"`
	// Rule is the identifier of the rule that decided the wait.
	// +optional
	Rule string `json:"rule,omitempty"`
	// Detail says what keeps the machine waiting beyond the rule's text,
	// where the controller knows it: the MachineClass or Secret that is
	// missing or unreadable, the refused class reference, the machine of
	// another namespace that holds the name.
	// +optional
	Detail string `json:"detail,omitempty"`
}

// LastOperation is MCM's LastOperation record.
type LastOperation struct {
	// Description is MCM's text for the operation.
	// +optional
	Description string `json:"description,omitempty"`
	// ErrorCode is the driver's error code name, if the operation failed
	// with one.
	// +optional
	ErrorCode string `json:"errorCode,omitempty"`
	// LastUpdateTime is when the record last changed.
	// +optional
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`
	// State is Processing, Failed or Successful.
	// +optional
	State string `json:"state,omitempty"`
	// Type is Create, Update, InPlaceUpdate, DrainNode, HealthCheck or
	// Delete.
	// +optional
	Type string `json:"type,omitempty"`
}

// CurrentStatus is MCM's CurrentStatus.
type CurrentStatus struct {
	// Phase is MCM's machine phase.
	// +optional
	Phase string `json:"phase,omitempty"`
	// TimeoutActive reports that a timeout (creation or health) runs.
	// +optional
	TimeoutActive bool `json:"timeoutActive,omitempty"`
	// LastUpdateTime is when the phase was entered.
	// +optional
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`
	// PreserveExpiryTime is when the machine's preservation ends; unset
	// while it is not preserved.
	// +optional
	PreserveExpiryTime *metav1.Time `json:"preserveExpiryTime,omitempty"`
}

// LifecycleState is the part of lifecycle.Status that MCM's fields do not
// carry. Times are RFC 3339 with nanoseconds, so they round-trip exactly.
type LifecycleState struct {
	// Stage is the step of the creation or deletion flow.
	// +optional
	Stage string `json:"stage,omitempty"`
	// StageSince is when the stage was entered.
	// +optional
	StageSince string `json:"stageSince,omitempty"`
	// PhaseSince is when the phase was entered (currentStatus.lastUpdateTime
	// to the nanosecond).
	// +optional
	PhaseSince string `json:"phaseSince,omitempty"`
	// RetryAfter is the earliest time the stage may ask the driver again.
	// +optional
	RetryAfter string `json:"retryAfter,omitempty"`
	// Flags name the facts the flows recorded (drain-forced, terminated,
	// ...; a bit this version does not name is "bit-N").
	// +optional
	Flags FlagList `json:"flags,omitempty"`
	// Failures count consecutive failures per sub-flow.
	// +optional
	Failures Failures `json:"failures,omitempty"`
	// Attempt is the creation attempt (part of the idempotency key).
	// +optional
	Attempt uint32 `json:"attempt,omitempty"`
	// Seq grows with every change of the status.
	// +optional
	Seq uint32 `json:"seq,omitempty"`
	// ProviderID is the recorded instance; spec.providerID follows it.
	// +optional
	ProviderID string `json:"providerID,omitempty"`
	// Operation is the last operation in structured form; the description
	// in lastOperation is rendered from it.
	// +optional
	Operation Operation `json:"operation,omitempty"`
	// OwnerUID is the machine UID the provider last reported the instance
	// belongs to.
	// +optional
	OwnerUID string `json:"ownerUID,omitempty"`
	// AppliedGeneration is the hot-update generation the instance is at.
	// +optional
	AppliedGeneration int64 `json:"appliedGeneration,omitempty"`
	// RejectedGeneration is the hot-update generation the provider could
	// not apply in place.
	// +optional
	RejectedGeneration int64 `json:"rejectedGeneration,omitempty"`
	// InPlaceGeneration is the in-place update generation the node is at.
	// +optional
	InPlaceGeneration int64 `json:"inPlaceGeneration,omitempty"`
	// Metadata is the instance metadata last observed, restricted to the
	// keys the lifecycle manages.
	// +optional
	Metadata map[string]string `json:"metadata,omitempty"`
	// MetadataObserved is when the provider last reported the metadata.
	// +optional
	MetadataObserved string `json:"metadataObserved,omitempty"`
	// MetadataSince is when the current metadata patch was asked.
	// +optional
	MetadataSince string `json:"metadataSince,omitempty"`
	// CreationFrom is when the creation timeout starts counting, when later
	// than the creation time: the end of a wait for an older incarnation of
	// the machine's name.
	// +optional
	CreationFrom string `json:"creationFrom,omitempty"`
	// PreserveUntil is when the preservation ends, with its nanoseconds.
	// +optional
	PreserveUntil string `json:"preserveUntil,omitempty"`
	// UIDHash is the machine's UID hashed for its deterministic jitter, 16
	// hexadecimal digits; without it the lifecycle hashes the UID again.
	// +optional
	UIDHash string `json:"uidHash,omitempty"`
}

// Failures count consecutive failures per sub-flow.
type Failures struct {
	// Create counts failed creation steps.
	// +optional
	Create uint8 `json:"create,omitempty"`
	// Health counts failed health confirmations.
	// +optional
	Health uint8 `json:"health,omitempty"`
	// Delete counts failed deletion steps.
	// +optional
	Delete uint8 `json:"delete,omitempty"`
	// Update counts failed hot updates.
	// +optional
	Update uint8 `json:"update,omitempty"`
	// Metadata counts metadata patches that did not converge.
	// +optional
	Metadata uint8 `json:"metadata,omitempty"`
	// Drain counts failed drains of a node whose machine stays (before an
	// in-place update, or of a preserved Failed machine).
	// +optional
	Drain uint8 `json:"drain,omitempty"`
}

// Operation is the structured form of the last operation: which of MCM's
// descriptions, and the values it embeds.
type Operation struct {
	// Desc is the description's stable id (lastop.Desc.String).
	// +optional
	Desc string `json:"desc,omitempty"`
	// Detail is the free text the description embeds.
	// +optional
	Detail string `json:"detail,omitempty"`
	// Elapsed is the duration the description names.
	// +optional
	Elapsed string `json:"elapsed,omitempty"`
}

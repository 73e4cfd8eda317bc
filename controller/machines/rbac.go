package machines

// The permissions the controller needs, as controller-gen's RBAC markers;
// `go generate ./...` in controller/ writes them to config/rbac/role.yaml
// (a ClusterRole, and a Role in each namespace a marker names).
// doc/deploying.md says why each is needed.

//go:generate go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0 rbac:roleName=purelifecycle-machine-controller paths=./ output:rbac:dir=../config/rbac

// Machines: read and watch them, write their finalizer, labels,
// annotations and providerID, and their status. MachineClasses: read and
// watch them, write the finalizer of those in use.
// +kubebuilder:rbac:groups=machine.purelifecycle.dev,resources=machines,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=machine.purelifecycle.dev,resources=machines/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=machine.purelifecycle.dev,resources=machines/finalizers,verbs=update
// +kubebuilder:rbac:groups=machine.purelifecycle.dev,resources=machineclasses,verbs=get;list;watch;update

// Each class's Secret is read, by name, from the API server.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// Nodes: found, watched, labelled, untainted, cordoned, given the
// Terminating condition, and deleted with their finalizer removed.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes/status,verbs=get;update;patch

// The drain: the node's pods are listed, evicted, and deleted when forced.
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create

// The node's volume attachments are counted and, after a forced drain,
// deleted.
// +kubebuilder:rbac:groups=storage.k8s.io,resources=volumeattachments,verbs=get;list;watch;delete

// Events on machines (and the leader election's).
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch;update
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch;update

// The metrics endpoint authenticates and authorizes its scrapers.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Bootstrap tokens live in kube-system: cached (listed and watched), read
// afresh, created, their expiry updated, deleted (token.go; never
// patched).
// +kubebuilder:rbac:groups="",namespace=kube-system,resources=secrets,verbs=get;list;watch;create;update;delete

// Leader election: a Lease in the controller's own namespace, read, made
// once and renewed (controller-runtime's lease lock does no more).
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=purelifecycle-system,resources=leases,verbs=get;create;update

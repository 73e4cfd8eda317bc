package lifecycle

import "github.com/purelifecycle/machine/driverapi"

// ruleSpec is what the package knows of a rule besides its doc comment: its
// stable identifier, its text and event reason, and for a rule that emits an
// op whose outcome it handles, the op's driver method, its handler, and the
// statuses a decision emitting it leaves (ops.go). Adding a driver
// operation adds its rule here, with its handler.
type ruleSpec struct {
	// id is the stable identifier ([Rule.String]), text the sentence for
	// people ([Rule.Text]), event the Kubernetes event reason ([Rule.Event],
	// "" for none).
	id, text, event string
	// warn makes the rule's event a Warning: the machine needs attention.
	warn bool
	// method is the driver method of the rule's op; MethodNone for a rule
	// whose op asks no driver.
	method driverapi.Method
	// handler decides on the outcome of the rule's op: on the driver's
	// answer when the op asks one (method), else on the outcome of its API
	// writes. handleNone for a rule whose op's outcome only leads to a
	// fresh decision.
	handler handler
	// stage is the deletion stage at which a rule of the deletion flow
	// emits its op; StageNone for the rules of other flows.
	stage Stage
	// at says which statuses a decision emitting the rule's op may leave,
	// for the ops of other flows (ops.go); anyStatus for the rest.
	at opStatus
}

// handlesWrites reports whether the rule's op is one of API writes whose
// outcome its handler decides on.
func (s *ruleSpec) handlesWrites() bool {
	return s.method == driverapi.MethodNone && s.handler != handleNone
}

// handler names a method of the decider that decides on an op's outcome.
// The table names handlers rather than holding method values: a decider
// passed to a function value escapes to the heap, and every step would
// allocate it.
type handler uint8

// The handlers, one per method; handle calls them.
const (
	handleNone handler = iota
	handleConfirm
	handleCreate
	handleDeleteLookup
	handleDeleteVM
	handleForeignDelete
	handleInitialize
	handleLookup
	handleObserve
	handlePatch
	handleStaleDelete
	handleTimeoutLookup
	handleUpdate
	handleDrain
	handleDrainRound
	handleFinalizerRemoved
	handleNodeDelete
	handleVolumesDetaching
	handleKeepDrain
)

// handle runs the handler h on the driver's answer res, or on the outcome o
// of an op of API writes, and returns what the decision goes on with.
func (x *decider) handle(h handler, res *driverapi.Result, o *Outcome) next {
	switch h {
	case handleConfirm:
		return x.onConfirm(res)
	case handleCreate:
		return x.onCreate(res)
	case handleDeleteLookup:
		return x.onDeleteLookup(res)
	case handleDeleteVM:
		return x.onDeleteVM(res)
	case handleForeignDelete:
		return x.onForeignDelete(res)
	case handleInitialize:
		return x.onInitialize(res)
	case handleLookup:
		return x.onLookup(res)
	case handleObserve:
		return x.onObserve(res)
	case handlePatch:
		return x.onPatch(res)
	case handleStaleDelete:
		return x.onStaleDelete(res)
	case handleTimeoutLookup:
		return x.onTimeoutLookup(res)
	case handleUpdate:
		return x.onUpdate(res)
	case handleDrain:
		return x.onDrain(o)
	case handleDrainRound:
		return x.onDrainRound(o)
	case handleFinalizerRemoved:
		return x.onFinalizerRemoved(o)
	case handleNodeDelete:
		return x.onNodeDelete(o)
	case handleVolumesDetaching:
		return x.onVolumesDetaching(o)
	case handleKeepDrain:
		return x.onKeepDrain(o)
	}
	return fresh
}

// ruleSpecs is the table of every rule, indexed by Rule. It is read-only:
// a test (doc/tables_test.go) proves no code of the package writes it.
var ruleSpecs = [ruleCount]ruleSpec{
	RuleNone:                      {id: "none", text: "no rule"},
	RuleNoMachine:                 {id: "dispatch.no-machine", text: "the machine object is gone"},
	RuleInvalidConfig:             {id: "input.invalid-config", text: "the configuration is invalid (see Config.Validate)"},
	RuleZeroNow:                   {id: "input.zero-now", text: "the input's Now is the zero time"},
	RuleInvalidObject:             {id: "input.invalid-object", text: "the machine object lacks a name or a UID"},
	RuleInvalidStatus:             {id: "input.invalid-status", text: "the status holds an unknown phase, stage or flag"},
	RuleInputOutOfRange:           {id: "input.out-of-range", text: "a time or a per-machine setting of the input is out of range", event: "InputOutOfRange", warn: true},
	RulePersistConflict:           {id: "outcome.persist-conflict", text: "saving the status met a conflict"},
	RulePersistFailed:             {id: "outcome.persist-failed", text: "saving the status failed"},
	RuleWriteConflict:             {id: "outcome.write-conflict", text: "an effect's write met a conflict"},
	RuleWriteFailed:               {id: "outcome.write-failed", text: "an effect's write failed"},
	RuleFrozen:                    {id: "dispatch.observer-degraded", text: "the observer is degraded; the machine waits"},
	RuleInvalidMachine:            {id: "dispatch.invalid-machine", text: "the machine failed validation", event: "InvalidMachine", warn: true},
	RuleClassUnavailable:          {id: "dispatch.class-unavailable", text: "the machine class or its secret is unavailable", event: "ClassUnavailable", warn: true},
	RuleClassNotReady:             {id: "dispatch.class-not-ready", text: "the machine class is not ready yet"},
	RuleInvalidNodeTemplate:       {id: "dispatch.invalid-node-template", text: "the machine class's node template is invalid", event: "InvalidNodeTemplate", warn: true},
	RuleIdle:                      {id: "dispatch.idle", text: "nothing to do until the next resync"},
	RuleAwaitReplacement:          {id: "dispatch.await-replacement", text: "the machine failed; its owner replaces it"},
	RuleDeleteBegins:              {id: "delete.begins", text: "deletion requested; the machine is terminating", event: "MachineTerminating"},
	RuleDeleteNoFinalizer:         {id: "delete.no-finalizer", text: "deletion cannot proceed without the finalizer"},
	RuleCreateLookup:              {id: "create.lookup", text: "asking the provider whether the instance exists", method: driverapi.MethodGetStatus, handler: handleLookup, at: atLookup},
	RuleCreateLookupUndecodable:   {id: "create.lookup-undecodable", text: "the provider's lookup error could not be decoded"},
	RuleCreateVMNotFound:          {id: "create.vm-not-found", text: "no instance exists; creating it", method: driverapi.MethodCreate, handler: handleCreate, at: atIntent},
	RuleCreateResourceExhausted:   {id: "create.resource-exhausted", text: "the provider is out of capacity", event: "CreateFailed", warn: true},
	RuleCreateTransient:           {id: "create.transient-error", text: "creating the instance failed transiently", event: "CreateFailed", warn: true},
	RuleCreateFailed:              {id: "create.failed", text: "creating the instance failed", event: "CreateFailed", warn: true},
	RuleCreateStaleNode:           {id: "create.stale-node", text: "the created instance uses a stale node object; deleting it", event: "StaleNode", warn: true, method: driverapi.MethodDelete, handler: handleStaleDelete, at: atStaleInstance},
	RuleCreateStaleDeleted:        {id: "create.stale-deleted", text: "the instance on a stale node object is gone"},
	RuleCreateCreated:             {id: "create.created", text: "the instance was created; initializing it", event: "InstanceCreated", method: driverapi.MethodInitialize, handler: handleInitialize, at: atInitializing},
	RuleCreateEmptyIdentity:       {id: "create.empty-identity", text: "the provider answered without a providerID or node name", event: "EmptyIdentity", warn: true},
	RuleCreateRecorded:            {id: "create.recorded-instance", text: "the provider lookup found nothing; using the recorded instance", method: driverapi.MethodInitialize, handler: handleInitialize, at: atInitializing},
	RuleCreateUninitialized:       {id: "create.uninitialized", text: "the instance exists but is not initialized", method: driverapi.MethodInitialize, handler: handleInitialize, at: atInitializing},
	RuleCreateLookupFailed:        {id: "create.lookup-failed", text: "asking the provider for the instance failed", event: "CreateFailed", warn: true},
	RuleCreateAdopted:             {id: "create.adopted", text: "the instance exists; recording it", method: driverapi.MethodInitialize, handler: handleInitialize, at: atInitializing},
	RuleCreateForeignInstance:     {id: "create.foreign-instance", text: "the instance belongs to another incarnation; deleting it", event: "ForeignInstance", warn: true, method: driverapi.MethodDelete, handler: handleForeignDelete, at: atUnrecorded},
	RuleCreateForeignDeleted:      {id: "create.foreign-deleted", text: "the other incarnation's instance is gone; creating afresh"},
	RuleCreateInitUnimplemented:   {id: "create.init-unimplemented", text: "the provider needs no initialization"},
	RuleCreateInitUndecodable:     {id: "create.init-undecodable", text: "the provider's initialization error could not be decoded"},
	RuleCreateInitFailed:          {id: "create.init-failed", text: "initializing the instance failed", event: "InitializeFailed", warn: true},
	RuleCreatePending:             {id: "create.pending", text: "the instance is ready; waiting for its node", event: "InstanceReady"},
	RuleCreateAvailable:           {id: "create.available", text: "the instance is ready; no target cluster to join", event: "MachineAvailable"},
	RuleCreateTimeout:             {id: "create.timeout", text: "the machine was not created within the creation timeout", event: "MachineFailed", warn: true},
	RuleCreateTimeoutLookup:       {id: "create.timeout-lookup", text: "creation timed out; looking the instance up before failing", method: driverapi.MethodGetStatus, handler: handleTimeoutLookup, at: atIntent},
	RuleCreateInstanceMissing:     {id: "create.instance-missing", text: "past creation the provider has no instance; not creating again"},
	RuleCreateAwaitPredecessor:    {id: "create.await-predecessor", text: "an older incarnation of the name is still terminating; waiting for it"},
	RuleCreateBackoff:             {id: "create.backoff", text: "waiting to retry a failed creation step"},
	RuleHealthWaitJoin:            {id: "health.waiting-for-node", text: "waiting for the node to join and turn healthy"},
	RuleHealthJoined:              {id: "health.joined", text: "the node joined and is healthy", event: "MachineRunning"},
	RuleHealthRejoined:            {id: "health.rejoined", text: "the node is healthy again", event: "MachineRunning"},
	RuleHealthJoinTimeout:         {id: "health.join-timeout", text: "the node did not join within the creation timeout", event: "MachineFailed", warn: true},
	RuleHealthUnhealthy:           {id: "health.unhealthy", text: "the node is unhealthy", event: "MachineUnhealthy", warn: true},
	RuleHealthNodeMissing:         {id: "health.node-missing", text: "the node went missing", event: "MachineUnhealthy", warn: true},
	RuleHealthConditions:          {id: "health.conditions", text: "the node's conditions changed"},
	RuleHealthSync:                {id: "health.sync", text: "the machine is running; bringing the node in line"},
	RuleHealthy:                   {id: "health.healthy", text: "the machine is running and healthy"},
	RuleHealthWaitUnknown:         {id: "health.waiting-for-recovery", text: "the node is unhealthy; waiting for it to recover"},
	RuleHealthNodeUnreadable:      {id: "health.node-unreadable", text: "the node could not be read"},
	RuleHealthTimeoutDisabled:     {id: "health.timeout-disabled", text: "unhealthy past the health timeout, which the machine disables"},
	RuleHealthAwaitGrant:          {id: "health.await-grant", text: "unhealthy past the health timeout; waiting for the fleet limiter"},
	RuleHealthConfirm:             {id: "health.confirm", text: "asking the provider before marking the machine Failed", method: driverapi.MethodGetStatus, handler: handleConfirm, at: atGranted},
	RuleHealthConfirmFailed:       {id: "health.confirm-failed", text: "the provider could not be asked; not marking Failed now"},
	RuleHealthTimeout:             {id: "health.timeout", text: "unhealthy past the health timeout; Failed", event: "MachineFailed", warn: true},
	RuleDeleteProblem:             {id: "delete.problem", text: "the machine class or its secret is unavailable; deletion waits"},
	RuleDeleteAdopted:             {id: "delete.adopted", text: "resuming a deletion at the step its last operation names"},
	RuleDeleteRestart:             {id: "delete.restart", text: "no known deletion step; deletion restarts"},
	RuleDeleteNoTargetCluster:     {id: "delete.no-target-cluster", text: "no target cluster; skipping drain and volume attachments"},
	RuleDeleteNodeKnown:           {id: "delete.node-known", text: "the node is known; draining it next"},
	RuleDeleteLookup:              {id: "delete.lookup", text: "asking the provider for the instance and its node", method: driverapi.MethodGetStatus, handler: handleDeleteLookup, stage: StageGetVMStatus},
	RuleDeleteLookupOK:            {id: "delete.lookup-ok", text: "the provider named the node; draining it next"},
	RuleDeleteLookupUndecodable:   {id: "delete.lookup-undecodable", text: "the provider's lookup error could not be decoded"},
	RuleDeleteLookupUnimplemented: {id: "delete.lookup-unimplemented", text: "the provider cannot look up instances; draining next"},
	RuleDeleteLookupNotFound:      {id: "delete.lookup-not-found", text: "the provider has no instance; going on"},
	RuleDeleteLookupRetry:         {id: "delete.lookup-retry", text: "looking up the instance failed transiently"},
	RuleDeleteLookupUninitialized: {id: "delete.lookup-uninitialized", text: "the instance was never initialized; going on"},
	RuleDeleteLookupFailed:        {id: "delete.lookup-failed", text: "looking up the instance failed"},
	RuleDeleteDrain:               {id: "delete.drain", text: "cordoning and draining the node", handler: handleDrain, stage: StageDrain},
	RuleDeleteDrainForce:          {id: "delete.drain-force", text: "cordoning and draining the node by force", handler: handleDrain, stage: StageDrain},
	RuleDeleteDrainRound:          {id: "delete.drain-round", text: "asking again to evict the pods left on the node", handler: handleDrainRound, stage: StageDrain},
	RuleDeleteDraining:            {id: "delete.draining", text: "the node is draining; waiting for its pods to go"},
	RuleDeleteDrainSkipped:        {id: "delete.drain-skipped", text: "no node to drain"},
	RuleDeleteDrainFailed:         {id: "delete.drain-failed", text: "draining the node failed; draining again after a backoff", event: "DrainFailed", warn: true},
	RuleDeleteDrainForcedOn:       {id: "delete.drain-forced-on", text: "the forced drain failed or timed out; deletion goes on"},
	RuleDeleteForceDrained:        {id: "delete.force-drained", text: "the node was drained by force"},
	RuleDeleteDrained:             {id: "delete.drained", text: "the node was drained"},
	RuleDeleteVolumes:             {id: "delete.volume-attachments", text: "deleting the node's volume attachments", handler: handleVolumesDetaching, stage: StageVolumes},
	RuleDeleteVolumesWait:         {id: "delete.volume-attachments-wait", text: "waiting for volume attachments to go"},
	RuleDeleteVolumesNodeMissing:  {id: "delete.volume-attachments-no-node", text: "the node is gone; skipping volume attachments"},
	RuleDeleteVolumesDetached:     {id: "delete.volumes-detached", text: "the node's volumes are detached"},
	RuleDeleteVolumesDone:         {id: "delete.volume-attachments-done", text: "no live volume attachments remain"},
	RuleDeleteNodeUnreadable:      {id: "delete.node-unreadable", text: "the node could not be read"},
	RuleDeleteVM:                  {id: "delete.vm", text: "deleting the instance at the provider", method: driverapi.MethodDelete, handler: handleDeleteVM, stage: StageDeleteVM},
	RuleDeleteVMDeleted:           {id: "delete.vm-deleted", text: "the provider deleted the instance"},
	RuleDeleteVMNotFound:          {id: "delete.vm-not-found", text: "the provider has no instance"},
	RuleDeleteVMRetry:             {id: "delete.vm-retry", text: "deleting the instance failed transiently"},
	RuleDeleteVMFailed:            {id: "delete.vm-failed", text: "deleting the instance failed", event: "DeleteFailed", warn: true},
	RuleDeleteVMUndecodable:       {id: "delete.vm-undecodable", text: "the provider's delete error could not be decoded", event: "DeleteFailed", warn: true},
	RuleDeleteNode:                {id: "delete.node", text: "deleting the node object", handler: handleNodeDelete, stage: StageDeleteNode},
	RuleDeleteNodeUnnamed:         {id: "delete.node-unnamed", text: "no node is known for the machine"},
	RuleDeleteNodeNotFound:        {id: "delete.node-not-found", text: "the node does not exist"},
	RuleDeleteNodeFinalizerFailed: {id: "delete.node-finalizer-failed", text: "removing the node's finalizer failed"},
	RuleDeleteNodeDeleted:         {id: "delete.node-deleted", text: "the node was deleted"},
	RuleDeleteNodeFailed:          {id: "delete.node-failed", text: "deleting the node failed"},
	RuleDeleteRemoveFinalizer:     {id: "delete.remove-finalizer", text: "removing the machine's finalizer", handler: handleFinalizerRemoved, stage: StageRemoveFinalizer},
	RuleDeleteDone:                {id: "delete.done", text: "the machine is deleted"},
	RuleDeleteBackoff:             {id: "delete.backoff", text: "waiting to retry a failed deletion step"},
	RuleUpdate:                    {id: "update.apply", text: "applying the desired hot-update generation", method: driverapi.MethodUpdate, handler: handleUpdate, at: atRunning},
	RuleUpdateApplied:             {id: "update.applied", text: "the hot update was applied", event: "HotUpdateApplied"},
	RuleUpdateNeedsReplacement:    {id: "update.needs-replacement", text: "the change cannot be applied in place; the machine needs replacement", event: "NeedsReplacement", warn: true},
	RuleUpdateFailed:              {id: "update.failed", text: "the hot update failed; retrying with backoff"},
	RuleMetadataObserve:           {id: "metadata.observe", text: "asking the provider what metadata the instance carries", method: driverapi.MethodGetStatus, handler: handleObserve, at: atRunning},
	RuleMetadataObserveFailed:     {id: "metadata.observe-failed", text: "the provider could not report the instance; looking again later"},
	RuleMetadataPatch:             {id: "metadata.patch", text: "patching every differing metadata key", method: driverapi.MethodUpdateMetadata, handler: handlePatch, at: atRunning},
	RuleMetadataPatched:           {id: "metadata.patched", text: "the metadata patch was accepted; verifying it"},
	RuleMetadataPatchFailed:       {id: "metadata.patch-failed", text: "the metadata patch failed; retrying with backoff"},
	RuleMetadataSynced:            {id: "metadata.synced", text: "the instance carries every desired metadata key"},
	RuleMetadataDiffers:           {id: "metadata.differs", text: "the instance's metadata differs from the desired; patching it"},
	RuleInPlaceCondition:          {id: "inplace.condition", text: "setting the node's InPlaceUpdate condition to what its labels say"},
	RuleInPlaceDrain:              {id: "inplace.drain", text: "cordoning and draining the node for its in-place update", handler: handleKeepDrain, at: atInPlaceDrain},
	RuleInPlaceDrainForce:         {id: "inplace.drain-force", text: "cordoning and draining the node by force for its in-place update", handler: handleKeepDrain, at: atInPlaceDrain},
	RuleInPlaceDrainRound:         {id: "inplace.drain-round", text: "asking again to remove the pods left on the node", handler: handleKeepDrain, at: atInPlaceDrain},
	RuleInPlaceDraining:           {id: "inplace.draining", text: "the node drains for its in-place update; waiting for its pods to go"},
	RuleInPlaceDrainFailed:        {id: "inplace.drain-failed", text: "draining the node for its in-place update failed; draining again after a backoff", event: "DrainFailed", warn: true},
	RuleInPlaceDrainBackoff:       {id: "inplace.drain-backoff", text: "waiting to retry a failed drain for an in-place update"},
	RuleInPlaceDeselected:         {id: "inplace.deselected", text: "the node is no longer selected for an in-place update; the drain ends"},
	RuleInPlaceDrained:            {id: "inplace.drained", text: "the node is drained; the node agent may update it", event: "InPlaceUpdating"},
	RuleInPlaceReady:              {id: "inplace.ready", text: "telling the node agent again that the node is ready for its update"},
	RuleInPlaceWaitAgent:          {id: "inplace.waiting-for-agent", text: "waiting for the node agent to update the node"},
	RuleInPlaceUpdated:            {id: "inplace.updated", text: "the node agent updated the node", event: "InPlaceUpdateSuccessful"},
	RuleInPlaceFailed:             {id: "inplace.failed", text: "the node agent could not update the node", event: "InPlaceUpdateFailed", warn: true},
	RuleInPlaceTimeout:            {id: "inplace.timeout", text: "the in-place update did not finish within its timeout", event: "InPlaceUpdateFailed", warn: true},
	RuleInPlaceRequest:            {id: "inplace.request", text: "asking the node's in-place update: labelling it candidate and selected"},
	RuleInPlaceDone:               {id: "inplace.done", text: "the in-place update asked is done; taking the labels off and uncordoning the node", event: "InPlaceUpdated"},
	RulePreserve:                  {id: "preserve.begin", text: "the machine is preserved until its preservation expires", event: "MachinePreserved"},
	RulePreserveNode:              {id: "preserve.node", text: "bringing the node in line with the machine's preservation"},
	RulePreserveDrain:             {id: "preserve.drain", text: "cordoning and draining the preserved machine's node", handler: handleKeepDrain, at: atPreserveDrain},
	RulePreserveDrainForce:        {id: "preserve.drain-force", text: "cordoning and draining the preserved machine's node by force", handler: handleKeepDrain, at: atPreserveDrain},
	RulePreserveDrainRound:        {id: "preserve.drain-round", text: "asking again to remove the pods left on the preserved node", handler: handleKeepDrain, at: atPreserveDrain},
	RulePreserveDraining:          {id: "preserve.draining", text: "the preserved node drains; waiting for its pods to go"},
	RulePreserveDrainFailed:       {id: "preserve.drain-failed", text: "draining the preserved node failed; draining again after a backoff", event: "DrainFailed", warn: true},
	RulePreserveDrainBackoff:      {id: "preserve.drain-backoff", text: "waiting to retry a failed drain of the preserved node"},
	RulePreserveDrained:           {id: "preserve.drained", text: "the preserved node is drained"},
	RulePreserveKept:              {id: "preserve.kept", text: "the failed machine is kept until its preservation expires"},
	RulePreserveStop:              {id: "preserve.stop", text: "preservation is no longer asked; it stops", event: "PreservationStopped"},
	RulePreserveEnd:               {id: "preserve.end", text: "preservation is over; removing the annotations that asked for it"},
}

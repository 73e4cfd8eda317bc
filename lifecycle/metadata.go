package lifecycle

import (
	"maps"
	"slices"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lastop"
	"github.com/purelifecycle/machine/retry"
)

// Instance metadata: the desired metadata (Object.Metadata, and
// the machine's UID as the instance's owner) is compared with what
// GetMachineStatus last reported. Every differing key goes out in one
// UpdateMetadata; whatever it returns, the machine is in sync only once an
// observation shows every key, so a silently dropped key is patched again,
// with backoff, until it converges. GetMachineStatus is asked after each
// patch and at least every Long period on a Running machine. The instance is
// found by its providerID, never by a metadata key, so a lagging UID is
// repaired instead of making the machine look as if it were being created.
//
// The lifecycle manages the desired keys and the keys it observed before
// (Status.Metadata holds only those): a key dropped from the desired set is
// removed from the instance; keys the provider adds itself are left alone.

// metadata runs the metadata sub-flow of a Running machine. With nothing
// to keep on the instance (no key desired or managed, owners not
// verified) it asks nothing: an observation could change nothing.
func (x *decider) metadata() {
	st := x.st
	if !x.cfg.VerifyOwner && !st.Flags.Has(FlagMetadataUnverified) &&
		len(x.in.Object.Metadata) == 0 && len(st.Metadata) == 0 {
		return
	}
	stale := st.MetadataObserved == 0 || st.MetadataObserved > x.now ||
		x.now.Sub(st.MetadataObserved) >= retry.Long || st.Flags.Has(FlagMetadataUnverified)
	if x.metadataHold() {
		return
	}
	if stale {
		x.observe()
		return
	}
	if x.inSync() {
		return
	}
	x.patch()
}

// metadataHold reports whether a failed metadata step waits for its retry
// time (MetadataSince plus the backoff of Failures.Metadata).
func (x *decider) metadataHold() bool {
	st := x.st
	if st.Failures.Metadata == 0 || st.MetadataSince == 0 {
		return false
	}
	wait := x.cfg.Retry.Backoff(retry.Short, 0, uint32(st.Failures.Metadata), x.in.Object.UID)
	at := st.MetadataSince.Add(wait)
	if at <= x.now || at.Sub(x.now) > x.maxBackoff() {
		return false
	}
	x.requeue(at.Sub(x.now))
	return true
}

// observe asks GetMachineStatus for the instance's metadata, by providerID.
func (x *decider) observe() {
	x.act(RuleMetadataObserve)
	x.call(driverapi.Call{Method: driverapi.MethodGetStatus, Machine: x.ref(), Attempt: x.st.Attempt})
	x.requeue(retry.Short)
}

// inSync reports whether the last observation shows every desired key, no
// managed key that is not desired, and, when the Config verifies owners, the
// machine's UID as the owner. It does not allocate.
func (x *decider) inSync() bool { return metadataInSync(x.cfg.VerifyOwner, &x.in.Object, x.st) }

func metadataInSync(verifyOwner bool, o *Object, st *Status) bool {
	if st.Flags.Has(FlagMetadataUnverified) {
		// A patch was asked after the last observation: only a new
		// observation can tell what the instance carries now.
		return false
	}
	if verifyOwner && st.OwnerUID != o.UID {
		return false
	}
	// Equal sizes and every desired key present with its value: then the
	// observed map holds no other key, and one pass over a map suffices.
	if len(o.Metadata) != len(st.Metadata) {
		return false
	}
	if len(o.Metadata) == 0 {
		// Nothing desired, nothing managed: ranging over an empty map
		// still starts an iterator.
		return true
	}
	for k, v := range o.Metadata {
		if got, ok := st.Metadata[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// patch asks one UpdateMetadata with every differing key.
func (x *decider) patch() {
	st, o := x.st, &x.in.Object
	var toSet map[string]string
	var remove, keys []string
	for k, v := range o.Metadata {
		if got, ok := st.Metadata[k]; !ok || got != v {
			if toSet == nil {
				toSet = make(map[string]string)
			}
			toSet[k] = v
			keys = append(keys, k)
		}
	}
	for k := range st.Metadata {
		if _, ok := o.Metadata[k]; !ok {
			remove = append(remove, k)
			keys = append(keys, k)
		}
	}
	if x.cfg.VerifyOwner && st.OwnerUID != o.UID {
		keys = append(keys, "owner UID")
	}
	slices.Sort(remove)
	slices.Sort(keys)
	x.manage(toSet)
	x.act(RuleMetadataPatch)
	set(x, &st.MetadataSince, x.now)
	set(x, &st.Flags, st.Flags|FlagMetadataUnverified)
	x.setOp(lastop.Operation{Type: lastop.TypeUpdate, State: lastop.StateProcessing, Desc: lastop.DescMetadataPending,
		Detail: keyList(keys)})
	x.call(driverapi.Call{Method: driverapi.MethodUpdateMetadata, Machine: x.ref(), Metadata: toSet, Remove: remove})
	x.requeue(retry.Short)
}

// manage adds the keys a patch sets to the keys the lifecycle manages
// (Status.Metadata), with the value asked, before the patch is asked: saved
// with the patch, a key the instance may now carry is looked at by every
// later observation, and removed if it leaves the desired metadata, even
// when the patch's outcome is lost before anything observes it. The value
// is what was asked, not what the instance carries; FlagMetadataUnverified
// keeps the machine out of sync until an observation replaces it.
func (x *decider) manage(toSet map[string]string) {
	st := x.st
	missing := false
	for k := range toSet {
		if _, ok := st.Metadata[k]; !ok {
			missing = true
			break
		}
	}
	if !missing {
		return
	}
	m := maps.Clone(st.Metadata)
	if m == nil {
		m = make(map[string]string, len(toSet))
	}
	for k, v := range toSet {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	st.Metadata = m
	x.changed = true
}

// onPatch decides on UpdateMetadata's answer: whatever it is, the instance
// is asked what it now carries.
func (x *decider) onPatch(res *driverapi.Result) next {
	if res.OK() {
		x.pin(RuleMetadataPatched)
	} else {
		x.pin(RuleMetadataPatchFailed)
		set(x, &x.st.Failures.Metadata, bump(x.st.Failures.Metadata))
	}
	x.resync()
	if !res.OK() && x.metadataHold() {
		return done
	}
	return then(nextObserve, RuleNone)
}

// onObserve decides on GetMachineStatus's answer about a Running machine's
// instance: the observation is recorded, and the metadata patched again
// (after backoff) while any key still differs.
func (x *decider) onObserve(res *driverapi.Result) next {
	st := x.st
	code, _ := x.classify(res)
	if code != driverapi.OK && code != driverapi.Uninitialized {
		// The provider could not say: look again after backoff; health
		// decides about an instance that is gone.
		x.pin(RuleMetadataObserveFailed)
		set(x, &st.Failures.Metadata, bump(st.Failures.Metadata))
		set(x, &st.MetadataSince, x.now)
		x.resync()
		x.metadataHold()
		return done
	}
	patched := st.Flags.Has(FlagMetadataUnverified) // a patch awaited this observation
	set(x, &st.Flags, st.Flags&^FlagMetadataUnverified)
	before := x.changed
	x.changed = false
	x.recordObservation(res)
	if x.changed || patched || st.MetadataObserved == 0 {
		// The observation time is saved with what the observation changed
		// (and after a patch, or the first observation). An observation
		// that finds the instance as recorded writes nothing: saved, the
		// time would make every healthy machine write its status once a
		// Long period. The next pass asks again, once a Long period
		// after the last time saved, which resyncs come at.
		set(x, &st.MetadataObserved, x.now)
	}
	x.changed = x.changed || before
	x.resync()
	if x.inSync() {
		x.pin(RuleMetadataSynced)
		if st.Failures.Metadata > 0 || st.LastOp.Desc == lastop.DescMetadataPending {
			x.setOp(lastop.Operation{Type: lastop.TypeUpdate, State: lastop.StateSuccessful, Desc: lastop.DescMetadataSynced})
		}
		set(x, &st.Failures.Metadata, 0)
		return done
	}
	x.pin(RuleMetadataDiffers)
	if patched {
		// The patch did not take (a dropped key): back off before the next.
		set(x, &st.Failures.Metadata, bump(st.Failures.Metadata))
	}
	if x.metadataHold() {
		return done
	}
	return then(nextPatch, RuleNone)
}

// recordObservation records what GetMachineStatus reported of the
// instance: its owner, its generation and the managed metadata keys. A new
// map is built only when a managed key changed.
func (x *decider) recordObservation(res *driverapi.Result) {
	st, o := x.st, &x.in.Object
	set(x, &st.OwnerUID, res.OwnerUID)
	if res.Generation > 0 {
		set(x, &st.AppliedGeneration, res.Generation)
	}
	changed := false
	for k := range o.Metadata {
		v, ok := res.Metadata[k]
		old, had := st.Metadata[k]
		if ok != had || v != old {
			changed = true
			break
		}
	}
	if !changed {
		for k, old := range st.Metadata {
			if _, desired := o.Metadata[k]; desired {
				continue
			}
			if v, ok := res.Metadata[k]; !ok || v != old {
				changed = true
				break
			}
		}
	}
	if !changed {
		return
	}
	observed := make(map[string]string)
	for k := range o.Metadata {
		if v, ok := res.Metadata[k]; ok {
			observed[k] = v
		}
	}
	for k := range st.Metadata {
		if v, ok := res.Metadata[k]; ok {
			observed[k] = v
		}
	}
	if len(observed) == 0 {
		observed = nil
	}
	if !maps.Equal(observed, st.Metadata) {
		st.Metadata = observed
		x.changed = true
	}
}

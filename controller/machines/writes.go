package machines

import (
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
)

// ownWrites remembers what this controller itself last wrote, so that what
// it reads through the manager's cache is never older than its own writes
// (the caller's obligation 4 of package lifecycle, and what the fleet
// functions ask of their fleet): the machine object each write returned,
// and the bootstrap token secrets it made and deleted. An entry goes once
// the cache shows the write, or after ownWriteTTL, by when any cache has
// caught up. It is safe for concurrent use.
type ownWrites struct {
	mu       sync.Mutex
	machines map[types.NamespacedName]ownWrite
	// deleted holds the UIDs of the token secrets this controller deleted.
	deleted map[types.UID]time.Time
	// made holds the token secrets this controller made, by name.
	made map[string]madeToken
}

// madeToken is a bootstrap token secret this controller made (or found
// made, reading the API server): the UIDs of its machine and of the
// secret, and when.
type madeToken struct {
	machine, secret types.UID
	at              time.Time
}

// ownWrite is one machine as a write of this controller returned it. The
// object is never changed after it is recorded: writers copy it first.
type ownWrite struct {
	m  *v1alpha1.Machine
	rv uint64
	at time.Time
}

// ownWriteTTL is how long a write is remembered at most. The cache follows
// the API server's watch within well under a second; a write it has not
// shown after this long is taken as seen (or lost with a deleted object).
const ownWriteTTL = 10 * time.Minute

func newOwnWrites() *ownWrites {
	return &ownWrites{machines: map[types.NamespacedName]ownWrite{}, deleted: map[types.UID]time.Time{},
		made: map[string]madeToken{}}
}

// resourceVersion returns the object's resource version as a number, and
// whether it is one. Kubernetes API servers backed by etcd give the etcd
// revision, which grows with every write; versions that are not numbers
// cannot be ordered, and a reader then goes to the API server.
func resourceVersion(rv string) (uint64, bool) {
	n, err := strconv.ParseUint(rv, 10, 64)
	return n, err == nil
}

// recordMachine remembers m, as a write of this controller returned it, at
// now.
func (w *ownWrites) recordMachine(m *v1alpha1.Machine, now time.Time) {
	key := types.NamespacedName{Namespace: m.Namespace, Name: m.Name}
	rv, ok := resourceVersion(m.ResourceVersion)
	w.mu.Lock()
	defer w.mu.Unlock()
	if !ok {
		delete(w.machines, key)
		return
	}
	w.machines[key] = ownWrite{m: m, rv: rv, at: now}
}

// forgetMachine drops what is remembered of the machine (it is gone).
func (w *ownWrites) forgetMachine(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.machines, key)
}

// newest returns the newer of cached (a copy read from the cache) and this
// controller's last write of the same machine, and ok false when the two
// cannot be ordered (a resource version that is not a number): the caller
// then reads the machine from the API server. A remembered write the cache
// has caught up with is dropped. The machine returned must not be changed.
func (w *ownWrites) newest(cached *v1alpha1.Machine, now time.Time) (m *v1alpha1.Machine, ok bool) {
	key := types.NamespacedName{Namespace: cached.Namespace, Name: cached.Name}
	w.mu.Lock()
	defer w.mu.Unlock()
	own, found := w.machines[key]
	if !found {
		return cached, true
	}
	if own.m.UID != cached.UID || now.Sub(own.at) > ownWriteTTL {
		// Another incarnation of the name, or a write long seen.
		delete(w.machines, key)
		return cached, true
	}
	rv, ok := resourceVersion(cached.ResourceVersion)
	if !ok {
		return nil, false
	}
	if rv >= own.rv {
		delete(w.machines, key)
		return cached, true
	}
	return own.m, true
}

// recordTokenDeleted remembers that this controller deleted the token
// secret of that UID at now.
func (w *ownWrites) recordTokenDeleted(uid types.UID, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.deleted[uid] = now
}

// tokenDeleted reports whether the token secret of that UID, which the
// cache still shows, is one this controller deleted.
func (w *ownWrites) tokenDeleted(uid types.UID, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.deleted[uid]
	if ok && now.Sub(at) > ownWriteTTL {
		delete(w.deleted, uid)
		return false
	}
	return ok
}

// recordTokenMade remembers that the token secret of that name and UID,
// made for the machine of UID machine, exists at now.
func (w *ownWrites) recordTokenMade(name string, machine, secret types.UID, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.made[name] = madeToken{machine: machine, secret: secret, at: now}
}

// tokenMade reports whether this controller made the token secret of that
// name for the machine of UID machine, and did not delete it since: a
// cache that does not show it yet lags.
func (w *ownWrites) tokenMade(name string, machine types.UID, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.made[name]
	if ok && now.Sub(t.at) > ownWriteTTL {
		delete(w.made, name)
		return false
	}
	_, deleted := w.deleted[t.secret]
	return ok && t.machine == machine && !deleted
}

// tokenSeen drops what is remembered of the making of the token secret of
// that name and UID: the cache shows it.
func (w *ownWrites) tokenSeen(name string, secret types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t, ok := w.made[name]; ok && t.secret == secret {
		delete(w.made, name)
	}
}

// forgetToken drops what is remembered of the making of the token secret
// of that name: it is gone.
func (w *ownWrites) forgetToken(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.made, name)
}

// prune drops the entries older than ownWriteTTL: the writes of machines
// deleted since, and of token secrets the cache no longer shows or never
// showed.
func (w *ownWrites) prune(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, own := range w.machines {
		if now.Sub(own.at) > ownWriteTTL {
			delete(w.machines, k)
		}
	}
	for uid, at := range w.deleted {
		if now.Sub(at) > ownWriteTTL {
			delete(w.deleted, uid)
		}
	}
	for name, t := range w.made {
		if now.Sub(t.at) > ownWriteTTL {
			delete(w.made, name)
		}
	}
}

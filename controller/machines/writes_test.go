package machines

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
)

func machineAt(uid, rv, phase string) *v1alpha1.Machine {
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m", UID: types.UID(uid), ResourceVersion: rv}}
	m.Status.CurrentStatus.Phase = phase
	return m
}

func TestOwnWritesLayTheNewerOverTheCache(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	w := newOwnWrites()
	own := machineAt("u1", "120", "Pending")
	w.recordMachine(own, t0)

	// A cache behind the write: the write wins, and stays remembered.
	got, ok := w.newest(machineAt("u1", "100", ""), t0)
	require.True(t, ok)
	require.Same(t, own, got)
	got, _ = w.newest(machineAt("u1", "119", ""), t0)
	require.Same(t, own, got)

	// A cache that caught up (or passed it): the cache's copy, and the
	// write is forgotten.
	caught := machineAt("u1", "120", "Pending")
	got, ok = w.newest(caught, t0)
	require.True(t, ok)
	require.Same(t, caught, got)
	got, _ = w.newest(machineAt("u1", "100", ""), t0)
	require.Equal(t, "100", got.ResourceVersion, "forgotten once seen")
}

func TestOwnWritesIgnoreAnotherIncarnationAndOldWrites(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	w := newOwnWrites()
	w.recordMachine(machineAt("u1", "120", "Running"), t0)
	newer := machineAt("u2", "5", "")
	got, ok := w.newest(newer, t0)
	require.True(t, ok)
	require.Same(t, newer, got, "a write of another UID of the name is not laid over")

	w.recordMachine(machineAt("u1", "120", "Running"), t0)
	stale := machineAt("u1", "100", "")
	got, _ = w.newest(stale, t0.Add(ownWriteTTL+time.Second))
	require.Same(t, stale, got, "a write older than the TTL is taken as seen")

	w.recordMachine(machineAt("u1", "120", "Running"), t0)
	w.forgetMachine(types.NamespacedName{Namespace: "ns", Name: "m"})
	got, _ = w.newest(stale, t0)
	require.Same(t, stale, got)
}

func TestOwnWritesCannotOrderVersionsThatAreNotNumbers(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	w := newOwnWrites()
	w.recordMachine(machineAt("u1", "120", ""), t0)
	_, ok := w.newest(machineAt("u1", "opaque", ""), t0)
	require.False(t, ok, "the reader must go to the API server")

	// A write whose version is not a number is not remembered: the cache's
	// copy is all there is.
	w = newOwnWrites()
	w.recordMachine(machineAt("u1", "opaque", ""), t0)
	cached := machineAt("u1", "7", "")
	got, ok := w.newest(cached, t0)
	require.True(t, ok)
	require.Same(t, cached, got)
}

func TestOwnWritesRememberDeletedTokensForATime(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	w := newOwnWrites()
	require.False(t, w.tokenDeleted("s1", t0))
	w.recordTokenDeleted("s1", t0)
	require.True(t, w.tokenDeleted("s1", t0.Add(time.Second)))
	require.False(t, w.tokenDeleted("s2", t0))
	require.False(t, w.tokenDeleted("s1", t0.Add(ownWriteTTL+time.Second)))

	w.recordTokenDeleted("s3", t0)
	w.recordMachine(machineAt("u1", "1", ""), t0)
	w.prune(t0.Add(ownWriteTTL + time.Second))
	require.Empty(t, w.deleted)
	require.Empty(t, w.machines)
}

func TestOwnWritesRememberMadeTokensUntilSeenOrDeleted(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	w := newOwnWrites()
	require.False(t, w.tokenMade("bootstrap-token-a", "m1", t0))
	w.recordTokenMade("bootstrap-token-a", "m1", "s1", t0)
	require.True(t, w.tokenMade("bootstrap-token-a", "m1", t0.Add(time.Second)))
	require.False(t, w.tokenMade("bootstrap-token-a", "m2", t0), "another machine's")
	require.False(t, w.tokenMade("bootstrap-token-b", "m1", t0))

	w.tokenSeen("bootstrap-token-a", "s0")
	require.True(t, w.tokenMade("bootstrap-token-a", "m1", t0), "the cache shows an older secret of the name")
	w.tokenSeen("bootstrap-token-a", "s1")
	require.False(t, w.tokenMade("bootstrap-token-a", "m1", t0), "the cache shows it")

	w.recordTokenMade("bootstrap-token-a", "m1", "s1", t0)
	w.recordTokenDeleted("s1", t0)
	require.False(t, w.tokenMade("bootstrap-token-a", "m1", t0), "deleted since")

	w.recordTokenMade("bootstrap-token-a", "m1", "s2", t0)
	require.False(t, w.tokenMade("bootstrap-token-a", "m1", t0.Add(ownWriteTTL+time.Second)), "older than the TTL")
	w.recordTokenMade("bootstrap-token-b", "m1", "s3", t0)
	w.prune(t0.Add(ownWriteTTL + time.Second))
	require.Empty(t, w.made)
}

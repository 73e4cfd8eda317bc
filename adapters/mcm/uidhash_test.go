package mcm

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/phase"
	"github.com/purelifecycle/machine/retry"
)

// releasedState is the JSON of StateAnnotation as the release of
// 2026-11-24 decodes it, unknown fields refused.
type releasedState struct {
	Stage          string            `json:"stage,omitempty"`
	StageSince     string            `json:"stageSince,omitempty"`
	PhaseSince     string            `json:"phaseSince,omitempty"`
	RetryAfter     string            `json:"retryAfter,omitempty"`
	Flags          lifecycle.Flags   `json:"flags,omitempty"`
	Failures       *releasedFailures `json:"failures,omitempty"`
	Attempt        uint32            `json:"attempt,omitempty"`
	Seq            uint32            `json:"seq,omitempty"`
	ProviderID     string            `json:"providerID,omitempty"`
	Node           string            `json:"node,omitempty"`
	OwnerUID       string            `json:"ownerUID,omitempty"`
	Applied        int64             `json:"appliedGeneration,omitempty"`
	Rejected       int64             `json:"rejectedGeneration,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
	MetaSeen       string            `json:"metadataObserved,omitempty"`
	MetaSince      string            `json:"metadataSince,omitempty"`
	CreationFrom   string            `json:"creationFrom,omitempty"`
	Op             *operation        `json:"op,omitempty"`
	ConditionNanos []int32           `json:"conditionNanos,omitempty"`
	Check          string            `json:"check"`
}

// releasedFailures is the JSON of the failures as the release of
// 2026-11-24 decodes them.
type releasedFailures struct {
	Create   uint8 `json:"create,omitempty"`
	Health   uint8 `json:"health,omitempty"`
	Delete   uint8 `json:"delete,omitempty"`
	Update   uint8 `json:"update,omitempty"`
	Metadata uint8 `json:"metadata,omitempty"`
}

// A status that holds the UID's hash writes the same StateAnnotation as
// without it, which the previous release decodes (it refuses unknown
// fields); the hash is in an annotation of its own, which that release
// never reads. Read back without that annotation, as the previous release
// reads it, the status is the same but for the hash. The in-place update's
// and preservation's state (the stages in-place-drain and preserve-drain,
// InPlaceGeneration, Failures.Drain, PreserveUntil), new since, is written
// only for a machine that had an in-place update or was preserved; the
// previous release refuses such a machine's annotation (CHANGELOG.md says
// so).
func TestPreviousReleaseReadsAStatusWithUIDHash(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		st := statusGen().Draw(t, "status")
		st.InPlaceGeneration, st.Failures.Drain, st.PreserveUntil = 0, 0, 0
		st.UIDHash = retry.HashKey("uid-1")
		now := time.Unix(1.76e9, 5)
		with, without := newMachine(), newMachine()
		ApplyStatus(st, with, now)
		bare := st
		bare.UIDHash = 0
		ApplyStatus(bare, without, now)
		require.Equal(t, without.Annotations[StateAnnotation], with.Annotations[StateAnnotation])
		require.Equal(t, uidHashText(st.UIDHash), with.Annotations[UIDHashAnnotation])
		require.NotContains(t, without.Annotations, UIDHashAnnotation)

		var s releasedState
		dec := json.NewDecoder(bytes.NewReader([]byte(with.Annotations[StateAnnotation])))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&s))

		delete(with.Annotations, UIDHashAnnotation)
		got, err := StatusFrom(viaJSON(t, with))
		require.NoError(t, err)
		require.Equal(t, bare, got)
	})
}

// The hash reads back only on the machine whose UID it is the hash of; a
// status without one removes an annotation left from before.
func TestUIDHashOfAnotherUIDIsDropped(t *testing.T) {
	now := time.Unix(1.76e9, 0)
	st := lifecycle.Status{Phase: phase.Running, Seq: 3, UIDHash: retry.HashKey("uid-1")}
	m := newMachine()
	ApplyStatus(st, m, now)
	got, err := StatusFrom(m)
	require.NoError(t, err)
	require.Equal(t, st.UIDHash, got.UIDHash)

	// The same annotations on an object with another UID (a restore that
	// copies annotations to a new object, say).
	other := m.DeepCopy()
	other.UID = "uid-2"
	got, err = StatusFrom(other)
	require.NoError(t, err)
	require.Zero(t, got.UIDHash)
	got.UIDHash = st.UIDHash
	require.Equal(t, st, got, "the rest reads back")

	for _, text := range []string{"", "xyz", "0", uidHashText(st.UIDHash) + "0", uidHashText(retry.HashKey("uid-2"))} {
		bad := m.DeepCopy()
		bad.Annotations[UIDHashAnnotation] = text
		got, err = StatusFrom(bad)
		require.NoError(t, err, "%q", text)
		require.Zero(t, got.UIDHash, "%q", text)
	}

	st.UIDHash = 0
	ApplyStatus(st, m, now)
	require.NotContains(t, m.Annotations, UIDHashAnnotation)
}

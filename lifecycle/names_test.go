package lifecycle_test

import (
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/lifecycle"
)

func TestBootstrapTokenID(t *testing.T) {
	// MCM: hex.EncodeToString([]byte(name)[len(name)-5:])[:6].
	for _, name := range []string{"shoot--a--worker-z1-5f7c9-xk2lp", "machine-1", "abcde"} {
		mcm := hex.EncodeToString([]byte(name)[len(name)-5:])[:6]
		require.Equal(t, mcm, lifecycle.BootstrapTokenID(name), name)
	}
	require.Equal(t, "616263", lifecycle.BootstrapTokenID("abc"))
	require.Equal(t, "006162", lifecycle.BootstrapTokenID("ab"), "short names are padded")
	require.Equal(t, "000000", lifecycle.BootstrapTokenID(""))
}

// Events come only with decisions that change the status: a decision that
// is repeated (a retry, a wait) never repeats its event.
func TestEventsOnlyWithStatusChanges(t *testing.T) {
	cfg := lifecycle.DefaultConfig()
	for i, in := range append(creationHappyPath(t), deletionHappyPath(t)...) {
		d := lifecycle.Step(cfg, in)
		for _, e := range d.Effects.Slice() {
			if e.Kind == lifecycle.KindEvent {
				require.True(t, d.Changed, "input %d: event %s without a status change", i, e.Rule)
			}
		}
	}
}

package lifecycle_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/lifecycle"
)

// Every stage reads back from its name; the empty text is StageNone, and
// anything else is refused.
func TestParseStage(t *testing.T) {
	for s := lifecycle.StageNone; s.Valid(); s++ {
		got, err := lifecycle.ParseStage(s.String())
		require.NoError(t, err)
		require.Equal(t, s, got)
	}
	got, err := lifecycle.ParseStage("")
	require.NoError(t, err)
	require.Equal(t, lifecycle.StageNone, got)
	for _, bad := range []string{"unknown-stage", "Drain", " drain", "drain "} {
		_, err := lifecycle.ParseStage(bad)
		require.Error(t, err, bad)
	}
}

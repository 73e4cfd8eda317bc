package lifecycle_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/purelifecycle/machine/lifecycle"
)

func TestFlagsNameEveryDeclaredFlag(t *testing.T) {
	require.Equal(t, "", lifecycle.Flags(0).String())
	require.Equal(t, "drain-succeeded,terminated", (lifecycle.FlagDrainSucceeded | lifecycle.FlagTerminated).String())
	require.Equal(t, "draining,deleting-pods", (lifecycle.FlagDraining | lifecycle.FlagDeletingPods).String())
	require.Equal(t, "granted,bit-16", (lifecycle.FlagGranted | 1<<16).String())
	for f := lifecycle.FlagStaleInstance; f <= lifecycle.FlagPreserveCordonMarked; f <<= 1 {
		require.NotContains(t, f.String(), "bit-", "flag %d has a name", uint32(f))
	}
	_, err := lifecycle.ParseFlags("granted,sleepy")
	require.ErrorContains(t, err, `unknown flag "sleepy"`)
	_, err = lifecycle.ParseFlags("bit-3")
	require.Error(t, err, "a declared flag is read by its name only")
}

func TestFlagsRoundTripThroughTheirNames(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := lifecycle.Flags(rapid.Uint32().Draw(t, "flags"))
		got, err := lifecycle.ParseFlags(f.String())
		require.NoError(t, err)
		require.Equal(t, f, got)
	})
}

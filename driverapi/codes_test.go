package driverapi_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
)

// mcmCodes is MCM's code table, read from
// pkg/util/provider/machinecodes/codes/codes.go (numbers) and code_string.go
// (names) in the MCM snapshot. It is hard-coded on purpose: a change to our
// constants must break this test.
var mcmCodes = []struct {
	number uint8
	name   string
}{
	{0, "OK"},
	{1, "Canceled"},
	{2, "Unknown"},
	{3, "InvalidArgument"},
	{4, "DeadlineExceeded"},
	{5, "NotFound"},
	{6, "AlreadyExists"},
	{7, "PermissionDenied"},
	{8, "ResourceExhausted"},
	{9, "FailedPrecondition"},
	{10, "Aborted"},
	{11, "OutOfRange"},
	{12, "Unimplemented"},
	{13, "Internal"},
	{14, "Unavailable"},
	{15, "DataLoss"},
	{16, "Unauthenticated"},
	{17, "Uninitialized"},
}

func TestCodesMatchMCMNumbersAndNames(t *testing.T) {
	constants := []driverapi.Code{
		driverapi.OK, driverapi.Canceled, driverapi.Unknown, driverapi.InvalidArgument,
		driverapi.DeadlineExceeded, driverapi.NotFound, driverapi.AlreadyExists,
		driverapi.PermissionDenied, driverapi.ResourceExhausted, driverapi.FailedPrecondition,
		driverapi.Aborted, driverapi.OutOfRange, driverapi.Unimplemented, driverapi.Internal,
		driverapi.Unavailable, driverapi.DataLoss, driverapi.Unauthenticated, driverapi.Uninitialized,
	}
	require.Len(t, constants, len(mcmCodes))
	require.Equal(t, constants, driverapi.Codes())
	for i, want := range mcmCodes {
		c := constants[i]
		require.Equal(t, want.number, uint8(c), want.name)
		require.Equal(t, want.name, c.String())
		require.True(t, c.Valid(), want.name)
	}
}

func TestCodesReturnsAFreshSlice(t *testing.T) {
	a := driverapi.Codes()
	a[0] = driverapi.Internal
	require.Equal(t, driverapi.OK, driverapi.Codes()[0])
}

func TestCodeOutOfRangeRendersAsMCMDoesAndIsInvalid(t *testing.T) {
	for _, tc := range []struct {
		code driverapi.Code
		want string
	}{
		{18, "Code(18)"},
		{42, "Code(42)"},
		{255, "Code(255)"},
	} {
		require.Equal(t, tc.want, tc.code.String())
		require.False(t, tc.code.Valid())
		require.False(t, tc.code.Transient())
	}
}

func TestParseCodeRoundTripsEveryName(t *testing.T) {
	for _, c := range driverapi.Codes() {
		got, err := driverapi.ParseCode(c.String())
		require.NoError(t, err)
		require.Equal(t, c, got)
	}
}

func TestParseCodeRefusesEverythingButExactNames(t *testing.T) {
	for _, name := range []string{
		"", "ok", "notfound", "NOTFOUND", " NotFound", "NotFound ", "Code(5)", "5",
		"Cancelled", "Initialization", "Bogus", "NotFound]",
	} {
		got, err := driverapi.ParseCode(name)
		require.Error(t, err, "%q", name)
		require.ErrorIs(t, err, driverapi.ErrUnknownCode, "%q", name)
		require.Equal(t, driverapi.Unknown, got, "an unparsable name must never read as OK")
		require.Contains(t, err.Error(), "driverapi: unknown code")
	}
	require.False(t, errors.Is(driverapi.Error(driverapi.NotFound, "x"), driverapi.ErrUnknownCode))
}

func TestTransientIsMCMsShortRetryClass(t *testing.T) {
	transient := map[driverapi.Code]bool{
		driverapi.Unknown:          true,
		driverapi.DeadlineExceeded: true,
		driverapi.Aborted:          true,
		driverapi.Unavailable:      true,
	}
	for _, c := range driverapi.Codes() {
		require.Equal(t, transient[c], c.Transient(), c.String())
	}
}

// FuzzParseCode: ParseCode never panics, and accepts exactly the names
// Code.String gives for valid codes.
func FuzzParseCode(f *testing.F) {
	for _, c := range driverapi.Codes() {
		f.Add(c.String())
	}
	f.Add("Code(18)")
	f.Add("notfound")
	f.Fuzz(func(t *testing.T, name string) {
		c, err := driverapi.ParseCode(name)
		if err != nil {
			return
		}
		if !c.Valid() || c.String() != name {
			t.Fatalf("ParseCode(%q) = %v", name, c)
		}
	})
}

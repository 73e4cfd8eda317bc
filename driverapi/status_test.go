package driverapi_test

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
)

// The expected texts are what MCM's status.Status.Error renders, i.e.
// fmt.Sprintf("machine codes error: code = [%s] message = [%s]", code, msg).
func TestErrorTextIsMCMWireFormatByteForByte(t *testing.T) {
	for _, tc := range []struct {
		code driverapi.Code
		msg  string
		want string
	}{
		{driverapi.NotFound, "instance i-0abc not found",
			"machine codes error: code = [NotFound] message = [instance i-0abc not found]"},
		{driverapi.Uninitialized, "",
			"machine codes error: code = [Uninitialized] message = []"},
		{driverapi.ResourceExhausted, "quota [vCPU] exceeded in eu-west-1",
			"machine codes error: code = [ResourceExhausted] message = [quota [vCPU] exceeded in eu-west-1]"},
		{driverapi.Internal, "line1\nline2 ü",
			"machine codes error: code = [Internal] message = [line1\nline2 ü]"},
		{driverapi.Code(42), "x",
			"machine codes error: code = [Code(42)] message = [x]"},
	} {
		got := (&driverapi.StatusError{Code: tc.code, Message: tc.msg}).Error()
		require.Equal(t, tc.want, got)
		if tc.code != driverapi.OK {
			require.Equal(t, tc.want, driverapi.Error(tc.code, tc.msg).Error())
		}
	}
}

func TestNilStatusErrorRendersAsOKAndDoesNotPanic(t *testing.T) {
	var e *driverapi.StatusError
	require.Equal(t, "machine codes error: code = [OK] message = []", e.Error())
	require.NoError(t, e.Unwrap())
	require.False(t, e.Is(&driverapi.StatusError{Code: driverapi.OK}))
}

func TestConstructorsReturnNilForOK(t *testing.T) {
	require.NoError(t, driverapi.Error(driverapi.OK, "fine"))
	require.NoError(t, driverapi.Errorf(driverapi.OK, "fine %d", 1))
	require.NoError(t, driverapi.Wrap(driverapi.OK, "fine", io.EOF))
	// The result is an untyped nil, not a nil *StatusError in an interface.
	require.True(t, driverapi.Error(driverapi.OK, "") == nil)
}

func TestErrorfFormatsAndKeepsWrappedErrorsAsCause(t *testing.T) {
	err := driverapi.Errorf(driverapi.Unavailable, "api %s: %w", "eu-1", io.EOF)
	var se *driverapi.StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, driverapi.Unavailable, se.Code)
	require.Equal(t, "api eu-1: EOF", se.Message)
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, io.EOF, se.Unwrap())

	two := driverapi.Errorf(driverapi.Internal, "%w and %w", io.EOF, io.ErrUnexpectedEOF)
	require.ErrorIs(t, two, io.EOF)
	require.ErrorIs(t, two, io.ErrUnexpectedEOF)

	plain := driverapi.Errorf(driverapi.Internal, "n=%d", 3)
	require.Equal(t, "machine codes error: code = [Internal] message = [n=3]", plain.Error())
	require.NoError(t, errors.Unwrap(plain))
}

func TestWrapKeepsCauseOutOfTheText(t *testing.T) {
	err := driverapi.Wrap(driverapi.PermissionDenied, "cannot create", io.ErrClosedPipe)
	require.Equal(t, "machine codes error: code = [PermissionDenied] message = [cannot create]", err.Error())
	require.ErrorIs(t, err, io.ErrClosedPipe)
}

func TestIsMatchesCodeAndOptionallyMessage(t *testing.T) {
	err := fmt.Errorf("reconcile: %w", driverapi.Wrap(driverapi.NotFound, "gone", io.EOF))
	for _, tc := range []struct {
		name   string
		target error
		want   bool
	}{
		{"same code, any message", &driverapi.StatusError{Code: driverapi.NotFound}, true},
		{"same code and message", &driverapi.StatusError{Code: driverapi.NotFound, Message: "gone"}, true},
		{"same code, other message", &driverapi.StatusError{Code: driverapi.NotFound, Message: "other"}, false},
		{"other code", &driverapi.StatusError{Code: driverapi.Internal}, false},
		{"cause through Unwrap", io.EOF, true},
		{"nil target pointer", (*driverapi.StatusError)(nil), false},
		{"foreign error", io.ErrUnexpectedEOF, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, errors.Is(err, tc.target))
		})
	}
}

func TestErrorsAsFindsStatusErrorThroughWrapping(t *testing.T) {
	inner := driverapi.Error(driverapi.Aborted, "conflict")
	err := fmt.Errorf("a: %w", fmt.Errorf("b: %w", inner))
	var se *driverapi.StatusError
	require.ErrorAs(t, err, &se)
	require.Same(t, inner, error(se))
	se2, ok := errors.AsType[*driverapi.StatusError](errors.Join(io.EOF, inner))
	require.True(t, ok)
	require.Equal(t, driverapi.Aborted, se2.Code)
}

// decodeCases is the strictness table; FuzzDecode seeds its corpus with it.
var decodeCases = []struct {
	name     string
	text     string
	ok       bool
	wantCode driverapi.Code
	wantMsg  string
}{
	{"exact format", "machine codes error: code = [NotFound] message = [no such vm]",
		true, driverapi.NotFound, "no such vm"},
	{"prefixed by fmt.Errorf %v", "create m1: machine codes error: code = [Unavailable] message = [throttled]",
		true, driverapi.Unavailable, "throttled"},
	{"message with brackets inside", "machine codes error: code = [Internal] message = [vm [i-1] in state [stopping]]",
		true, driverapi.Internal, "vm [i-1] in state [stopping]"},
	{"message with unbalanced brackets", "machine codes error: code = [Internal] message = [a]b[c]",
		true, driverapi.Internal, "a]b[c"},
	{"empty message", "machine codes error: code = [Uninitialized] message = []",
		true, driverapi.Uninitialized, ""},
	{"code OK is decodable text", "machine codes error: code = [OK] message = [odd]",
		true, driverapi.OK, "odd"},
	{"last code", "machine codes error: code = [Uninitialized] message = [init again]",
		true, driverapi.Uninitialized, "init again"},
	{"marker twice: status text nested in a message",
		"machine codes error: code = [Internal] message = [inner: machine codes error: code = [NotFound] message = [x]]",
		true, driverapi.Internal, "inner: machine codes error: code = [NotFound] message = [x]"},
	{"marker twice: first occurrence decides, unknown name there",
		"machine codes error: code = [Bogus] message = [machine codes error: code = [NotFound] message = [x]]",
		false, 0, ""},
	{"unknown code name", "machine codes error: code = [Bogus] message = [x]", false, 0, ""},
	{"lowercase code name", "machine codes error: code = [notfound] message = [x]", false, 0, ""},
	{"numeric code", "machine codes error: code = [5] message = [x]", false, 0, ""},
	{"out-of-range code rendering", "machine codes error: code = [Code(42)] message = [x]", false, 0, ""},
	{"missing final bracket", "machine codes error: code = [NotFound] message = [x", false, 0, ""},
	{"ends right after message opener", "machine codes error: code = [NotFound] message = [", false, 0, ""},
	{"trailing garbage", "machine codes error: code = [NotFound] message = [x] (retrying)", false, 0, ""},
	{"trailing newline", "machine codes error: code = [NotFound] message = [x]\n", false, 0, ""},
	{"foreign text with two bracket groups", "error [x] happened [y]", false, 0, ""},
	{"foreign text with a code name in brackets", "failed [NotFound] because [quota]", false, 0, ""},
	{"separator with different spacing", "machine codes error: code = [NotFound] message=[x]", false, 0, ""},
	{"marker without code", "machine codes error: code = [", false, 0, ""},
	{"code without closing bracket", "machine codes error: code = [NotFound", false, 0, ""},
	{"empty", "", false, 0, ""},
	{"plain text", "connection refused", false, 0, ""},
}

func TestDecodeIsStrict(t *testing.T) {
	for _, tc := range decodeCases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := driverapi.Decode(tc.text)
			require.Equal(t, tc.ok, ok)
			if !ok {
				require.Equal(t, driverapi.StatusError{}, got)
				return
			}
			require.Equal(t, driverapi.StatusError{Code: tc.wantCode, Message: tc.wantMsg}, got)
		})
	}
}

func TestDecodeRoundTripsEveryCode(t *testing.T) {
	for _, c := range driverapi.Codes() {
		for _, msg := range []string{"", "x", "[a] [b]", "]", "[", "message = [y]"} {
			text := (&driverapi.StatusError{Code: c, Message: msg}).Error()
			got, ok := driverapi.Decode(text)
			require.True(t, ok, text)
			require.Equal(t, driverapi.StatusError{Code: c, Message: msg}, got)
		}
	}
}

func TestFromErrorClassifiesAnyError(t *testing.T) {
	status := driverapi.Error(driverapi.NotFound, "no vm [i-1]")
	for _, tc := range []struct {
		name     string
		err      error
		wantCode driverapi.Code
		wantMsg  string
		wantOK   bool
	}{
		{"nil", nil, driverapi.OK, "", true},
		{"status error", status, driverapi.NotFound, "no vm [i-1]", true},
		{"wrapped with %w", fmt.Errorf("get: %w", status), driverapi.NotFound, "no vm [i-1]", true},
		{"wrapped twice with %w", fmt.Errorf("a: %w", fmt.Errorf("b: %w", status)), driverapi.NotFound, "no vm [i-1]", true},
		{"flattened with %v", fmt.Errorf("get: %v", status), driverapi.NotFound, "no vm [i-1]", true},
		{"joined", errors.Join(io.EOF, status), driverapi.NotFound, "no vm [i-1]", true},
		{"plain text of a status error", errors.New(status.Error()), driverapi.NotFound, "no vm [i-1]", true},
		{"flattened with a suffix", fmt.Errorf("%v (will retry)", status), driverapi.Unknown,
			"machine codes error: code = [NotFound] message = [no vm [i-1]] (will retry)", false},
		{"foreign error", io.EOF, driverapi.Unknown, "EOF", false},
		{"foreign bracket text", errors.New("error [x] happened [y]"), driverapi.Unknown, "error [x] happened [y]", false},
		{"status error with invalid code", &driverapi.StatusError{Code: 42, Message: "x"}, driverapi.Unknown,
			"machine codes error: code = [Code(42)] message = [x]", false},
		{"outer %w wins over inner text", fmt.Errorf("%w", driverapi.Error(driverapi.Aborted, driverapi.Error(driverapi.Internal, "i").Error())),
			driverapi.Aborted, "machine codes error: code = [Internal] message = [i]", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, msg, ok := driverapi.FromError(tc.err)
			require.Equal(t, tc.wantCode, code)
			require.Equal(t, tc.wantMsg, msg)
			require.Equal(t, tc.wantOK, ok)
			require.Equal(t, tc.wantCode, driverapi.CodeOf(tc.err))
		})
	}
}

func TestHotPathsDoNotAllocate(t *testing.T) {
	text := "reconcile m1: machine codes error: code = [Unavailable] message = [rate limited [429]]"
	var se error = &driverapi.StatusError{Code: driverapi.ResourceExhausted, Message: "quota"}
	wrapped := fmt.Errorf("create: %w", se)
	codes := driverapi.Codes()
	var sink int
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"Decode", func() { d, _ := driverapi.Decode(text); sink += len(d.Message) }},
		{"Decode refused", func() {
			if _, ok := driverapi.Decode("error [x] happened [y]"); !ok {
				sink++
			}
		}},
		{"FromError on *StatusError", func() { c, m, _ := driverapi.FromError(se); sink += int(c) + len(m) }},
		{"FromError on %w-wrapped *StatusError", func() { c, _, _ := driverapi.FromError(wrapped); sink += int(c) }},
		{"Code.String", func() {
			for _, c := range codes {
				sink += len(c.String())
			}
		}},
	} {
		require.Zero(t, testing.AllocsPerRun(100, tc.f), tc.name)
	}
	_ = sink
}

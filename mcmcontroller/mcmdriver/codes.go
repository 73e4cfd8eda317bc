package mcmdriver

import (
	"errors"

	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/codes"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/status"

	"github.com/purelifecycle/machine/driverapi"
)

// codeTable pairs every code of MCM's machinecodes with the driverapi code
// of the same meaning, one row per code, OK to Uninitialized. The two lists
// happen to share numbers and names; the table pairs them by name, so a
// renumbering on either side cannot map one code onto another silently.
// TestEveryCodeIsMapped checks that every code of each list is in exactly
// one row and that the names of a row agree.
var codeTable = [...]struct {
	mcm codes.Code
	api driverapi.Code
}{
	{codes.OK, driverapi.OK},
	{codes.Canceled, driverapi.Canceled},
	{codes.Unknown, driverapi.Unknown},
	{codes.InvalidArgument, driverapi.InvalidArgument},
	{codes.DeadlineExceeded, driverapi.DeadlineExceeded},
	{codes.NotFound, driverapi.NotFound},
	{codes.AlreadyExists, driverapi.AlreadyExists},
	{codes.PermissionDenied, driverapi.PermissionDenied},
	{codes.ResourceExhausted, driverapi.ResourceExhausted},
	{codes.FailedPrecondition, driverapi.FailedPrecondition},
	{codes.Aborted, driverapi.Aborted},
	{codes.OutOfRange, driverapi.OutOfRange},
	{codes.Unimplemented, driverapi.Unimplemented},
	{codes.Internal, driverapi.Internal},
	{codes.Unavailable, driverapi.Unavailable},
	{codes.DataLoss, driverapi.DataLoss},
	{codes.Unauthenticated, driverapi.Unauthenticated},
	{codes.Uninitialized, driverapi.Uninitialized},
}

// CodeFromMCM returns the driverapi code of an MCM code from the code
// table, and false for a number that is none of MCM's codes. There is no
// default: an unknown number is reported, never read as Unknown.
func CodeFromMCM(c codes.Code) (driverapi.Code, bool) {
	for _, row := range codeTable {
		if row.mcm == c {
			return row.api, true
		}
	}
	return driverapi.Unknown, false
}

// CodeToMCM returns the MCM code of a driverapi code from the code table,
// and false for a code that is not valid.
func CodeToMCM(c driverapi.Code) (codes.Code, bool) {
	for _, row := range codeTable {
		if row.api == c {
			return row.mcm, true
		}
	}
	return codes.Unknown, false
}

// fromMCM converts an MCM provider's error into the lifecycle's:
//
//   - an MCM status error (a *status.Status anywhere in the chain) becomes a
//     driverapi status error of its code and message, wrapping the
//     original;
//   - an error whose text is a status error's (flattened by %v or sent as
//     text) is decoded with driverapi.Decode, strictly, and converted the
//     same way;
//   - any other error is returned as it is, which driverapi reads as
//     undecodable: code Unknown with the whole text as its message.
//
// MCM's own controller decodes provider errors from their text, leniently:
// any text with two bracketed groups passes as a status error, so "failed
// [a] because [b]" becomes code Unknown with message "b". That is not
// followed here (driverapi's decoding is strict on purpose); such an error
// stays undecodable. A status error whose code is OK or no code of MCM's
// breaks the provider's contract and is returned as it is, undecodable too.
func fromMCM(err error) error {
	if err == nil {
		return nil
	}
	var code codes.Code
	var msg string
	if st, ok := errors.AsType[*status.Status](err); ok && st != nil {
		code, msg = st.Code(), st.Message()
	} else if d, ok := driverapi.Decode(err.Error()); ok {
		c, _ := CodeToMCM(d.Code)
		code, msg = c, d.Message
	} else {
		return err
	}
	c, known := CodeFromMCM(code)
	if !known || c == driverapi.OK {
		return err
	}
	return driverapi.Wrap(c, msg, err)
}

// errToMCM converts the lifecycle's driver error into MCM's: an error
// driverapi classifies as a status error (a *driverapi.StatusError in the
// chain, or its text) becomes an MCM status error of its code and message,
// wrapping the original; any other error stays as it is, which MCM reads as
// an error it cannot decode, as it reads the same error from any provider.
// A status error claiming OK is returned as it is.
func errToMCM(err error) error {
	if err == nil {
		return nil
	}
	c, msg, ok := driverapi.FromError(err)
	if !ok || c == driverapi.OK {
		return err
	}
	mc, known := CodeToMCM(c)
	if !known {
		return err
	}
	return status.WrapError(mc, msg, err)
}

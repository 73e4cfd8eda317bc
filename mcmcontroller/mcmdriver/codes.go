package mcmdriver

import (
	"errors"

	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/codes"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/status"

	"github.com/purelifecycle/machine/driverapi"
)

// The codes of MCM's machinecodes and of driverapi are one list: the same
// numbers with the same names, 0 (OK) to 17 (Uninitialized)
// (TestCodesAreMCMs checks every one).

// CodeFromMCM returns the driverapi code of an MCM code, and false for a
// number neither knows.
func CodeFromMCM(c codes.Code) (driverapi.Code, bool) {
	d := driverapi.Code(c)
	return d, c <= codes.Uninitialized && d.Valid()
}

// CodeToMCM returns the MCM code of a driverapi code, and false for one
// that is not valid.
func CodeToMCM(c driverapi.Code) (codes.Code, bool) {
	return codes.Code(c), c.Valid()
}

// fromMCM converts an MCM provider's error into the lifecycle's. An error
// MCM decodes as a status error (one of MCM's status package, or text in
// its format, as MCM's own controller reads provider errors) becomes a
// driverapi status error of its code and message, wrapping the original;
// an error MCM cannot decode is returned as it is, which the lifecycle
// reads as undecodable, as MCM does. A status error with code OK breaks
// the provider's contract: it is returned as it is, undecodable too.
func fromMCM(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	c, known := CodeFromMCM(st.Code())
	if !known || c == driverapi.OK {
		return err
	}
	return driverapi.Wrap(c, st.Message(), err)
}

// errToMCM converts the lifecycle's driver error into MCM's: a driverapi
// status error becomes an MCM status error of its code and message; any
// other error stays as it is (MCM reads it as Unknown).
func errToMCM(err error) error {
	if err == nil {
		return nil
	}
	var se *driverapi.StatusError
	if !errors.As(err, &se) || se == nil {
		return err
	}
	c, ok := CodeToMCM(se.Code)
	if !ok || c == codes.OK {
		return err
	}
	return status.WrapError(c, se.Message, err)
}

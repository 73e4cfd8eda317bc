package driverapi_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/purelifecycle/machine/driverapi"
)

func ExampleDecode() {
	for _, text := range []string{
		"create m1: machine codes error: code = [ResourceExhausted] message = [quota [vCPU] exceeded]",
		"machine codes error: code = [Bogus] message = [x]", // unknown name: MCM reads Unknown
		"failed [a] because [b]", // foreign text: MCM reads Unknown "b"
	} {
		se, ok := driverapi.Decode(text)
		fmt.Printf("%v %v %q\n", ok, se.Code, se.Message)
	}
	// Output:
	// true ResourceExhausted "quota [vCPU] exceeded"
	// false OK ""
	// false OK ""
}

func ExampleFromError() {
	status := driverapi.Errorf(driverapi.NotFound, "instance %s not found", "i-0abc")
	fmt.Println(status)
	for _, err := range []error{
		nil,
		fmt.Errorf("reconcile: %w", status), // kept as an error chain
		fmt.Errorf("reconcile: %v", status), // flattened to text
		errors.New("connection refused"),
	} {
		code, msg, ok := driverapi.FromError(err)
		fmt.Printf("%v %q %v\n", code, msg, ok)
	}
	// Output:
	// machine codes error: code = [NotFound] message = [instance i-0abc not found]
	// OK "" true
	// NotFound "instance i-0abc not found" true
	// NotFound "instance i-0abc not found" true
	// Unknown "connection refused" false
}

// tinyDriver supports GetMachineStatus only; everything else is Unimplemented.
type tinyDriver struct {
	driverapi.UnimplementedDriver
	instances map[string]string // machine UID -> provider ID
}

func (d tinyDriver) GetMachineStatus(_ context.Context, req *driverapi.GetMachineStatusRequest) (*driverapi.GetMachineStatusResponse, error) {
	id, ok := d.instances[req.Machine.UID]
	if !ok {
		return nil, driverapi.Errorf(driverapi.NotFound, "no instance for machine %s", req.Machine.Name)
	}
	return &driverapi.GetMachineStatusResponse{ProviderID: id, NodeName: req.Machine.Name, OwnerUID: req.Machine.UID}, nil
}

func ExampleInvoke() {
	d := tinyDriver{instances: map[string]string{"uid-1": "tiny:///i-1"}}
	class := driverapi.Class{Name: "tiny-small"} // supplied by the shell, never by the core
	ctx := context.Background()

	// Calls as the lifecycle core would emit them.
	for _, call := range []driverapi.Call{
		{Method: driverapi.MethodGetStatus, Machine: driverapi.MachineRef{Name: "m1", UID: "uid-1"}},
		{Method: driverapi.MethodGetStatus, Machine: driverapi.MachineRef{Name: "m2", UID: "uid-2"}},
		{Method: driverapi.MethodInitialize, Machine: driverapi.MachineRef{Name: "m1", UID: "uid-1", ProviderID: "tiny:///i-1"}},
	} {
		r := driverapi.Invoke(ctx, d, call, class)
		fmt.Printf("%v: ok=%v code=%v providerID=%q owner=%q\n", r.Method, r.OK(), r.Code, r.ProviderID, r.OwnerUID)
	}
	// Output:
	// GetMachineStatus: ok=true code=OK providerID="tiny:///i-1" owner="uid-1"
	// GetMachineStatus: ok=false code=NotFound providerID="" owner=""
	// InitializeMachine: ok=false code=Unimplemented providerID="" owner=""
}

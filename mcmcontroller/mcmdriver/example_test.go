package mcmdriver_test

import (
	"context"
	"fmt"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/driver"
	"github.com/gardener/machine-controller-manager/pkg/util/provider/machinecodes/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle/lifecycletest"
	"github.com/purelifecycle/machine/mcmcontroller/mcmdriver"
	"github.com/purelifecycle/machine/mcmcontroller/mcmfake"
)

// An MCM provider called by the lifecycle's shell: the controller hands
// For the objects it read for the pass, and Invoke carries out the
// lifecycle's calls with them.
func ExampleFor() {
	var provider driver.Driver = mcmfake.New() // an MCM provider: AWS, Azure, GCP, ...
	objs := mcmdriver.Objects{
		Machine: &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "shoot--p", Name: "worker-1", UID: "uid-1"}},
		Class:   &v1alpha1.MachineClass{ObjectMeta: metav1.ObjectMeta{Namespace: "shoot--p", Name: "small"}},
	}
	d := mcmdriver.For(provider, objs)
	ctx := context.Background()
	class := driverapi.Class{Name: "small", Secret: map[string][]byte{"userData": []byte("#!/bin/sh")}}
	m := driverapi.MachineRef{Name: "worker-1", UID: "uid-1"}

	res := driverapi.Invoke(ctx, d, driverapi.Call{Method: driverapi.MethodGetStatus, Machine: m}, class)
	fmt.Println(res.Code, res.Message)
	res = driverapi.Invoke(ctx, d, driverapi.Call{Method: driverapi.MethodCreate, Machine: m, Attempt: 1}, class)
	fmt.Println(res.Code, res.ProviderID, res.NodeName)
	res = driverapi.Invoke(ctx, d, driverapi.Call{Method: driverapi.MethodUpdate, Machine: m}, class)
	fmt.Println(res.Code)
	// Output:
	// NotFound mcmfake: no instance of machine "worker-1"
	// OK fake:///zone-a/i-1 node-1
	// Unimplemented
}

// The project's in-memory provider as an MCM provider: a cloud of many
// machines whose answers a test scripts, for MCM's own controller or for
// code written against MCM's driver interface.
func ExampleToMCM() {
	cloud := lifecycletest.NewProvider()
	var provider driver.Driver = mcmdriver.ToMCM(cloud)
	ctx := context.Background()
	machine := func(name string) *v1alpha1.Machine {
		return &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
	}

	for _, name := range []string{"worker-1", "worker-2"} {
		resp, err := provider.CreateMachine(ctx, &driver.CreateMachineRequest{Machine: machine(name)})
		fmt.Println(name, resp.ProviderID, resp.NodeName, err)
	}
	// The next CreateMachine fails as the test scripts it.
	cloud.FailNext(driverapi.MethodCreate, lifecycletest.Fault{Code: driverapi.ResourceExhausted, Message: "no capacity"}, 1)
	_, err := provider.CreateMachine(ctx, &driver.CreateMachineRequest{Machine: machine("worker-3")})
	st, _ := status.FromError(err)
	fmt.Println("worker-3", st.Code(), st.Message())

	list, _ := provider.ListMachines(ctx, &driver.ListMachinesRequest{})
	fmt.Println(len(list.MachineList), "instances")
	// Output:
	// worker-1 test:///vm-1 node-1 <nil>
	// worker-2 test:///vm-2 node-2 <nil>
	// worker-3 ResourceExhausted no capacity
	// 2 instances
}

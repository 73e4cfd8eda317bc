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
)

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

// Command provider shows how an MCM provider's main runs the drop-in
// machine controller instead of MCM's: where it called MCM's app.Run with
// MCM's options and its driver.Driver, it calls this module's app.Run with
// options read by the same flags. The provider's driver is unchanged; here
// it is MCM's own FakeDriver, which holds a single VM.
//
//	go run ./examples/provider --control-kubeconfig=$KUBECONFIG \
//	    --target-kubeconfig=$KUBECONFIG --namespace=shoot--example
//
// The provider's go.mod gains github.com/purelifecycle/machine/mcmcontroller,
// which requires MCM v0.62.1, Kubernetes 0.34 and controller-runtime 0.22,
// the versions the provider already builds MCM's controller with.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/gardener/machine-controller-manager/pkg/util/provider/driver"
	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/purelifecycle/machine/mcmcontroller/app"
	"github.com/purelifecycle/machine/mcmcontroller/options"
)

func main() {
	ctrl.SetLogger(zap.New())
	provider := driver.NewFakeDriver(false, "fake:///zone-a/vm-1", "node-vm-1", "", nil, nil, nil)
	err := run(ctrl.SetupSignalHandler(), os.Args[1:], provider)
	if errors.Is(err, pflag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run reads MCM's flags from args and runs the machine controller with
// provider until ctx ends.
func run(ctx context.Context, args []string, provider driver.Driver) error {
	fs := pflag.NewFlagSet("provider", pflag.ContinueOnError)
	o := options.New()
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	return app.Run(ctx, o, provider)
}

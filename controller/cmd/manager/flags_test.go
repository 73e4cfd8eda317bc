package main

import (
	"flag"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/lifecycle"
)

// parseFlags reads args with the manager's flag definitions over the
// defaults.
func parseFlags(t *testing.T, args ...string) options {
	t.Helper()
	o := defaultOptions()
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.bind(fs)
	require.NoError(t, fs.Parse(args))
	return o
}

// Without the fleet flags the lifecycle runs with its defaults: no zone
// protection, no auto-preservation.
func TestFleetFlagsDefaultToTheLifecyclesDefaults(t *testing.T) {
	o := parseFlags(t)
	require.Equal(t, lifecycle.DefaultConfig(), *o.lifecycleConfig())
}

// The zone protection's and auto-preservation's flags reach the
// lifecycle's Config, which checks them: a protection without a hold is
// refused when the controller starts.
func TestFleetFlagsSetTheConfig(t *testing.T) {
	o := parseFlags(t, "--zone-outage-machines=3", "--zone-outage-percent=60", "--zone-outage-hold=90m",
		"--auto-preserve-max=2")
	want := lifecycle.DefaultConfig()
	want.ZoneOutage = lifecycle.ZoneOutage{Count: 3, Percent: 60, Hold: 90 * time.Minute}
	want.AutoPreserve = 2
	cfg := o.lifecycleConfig()
	require.Equal(t, want, *cfg)
	require.NoError(t, cfg.Validate())

	bad := parseFlags(t, "--zone-outage-machines=3").lifecycleConfig()
	require.ErrorContains(t, bad.Validate(), "ZoneOutage")
	require.ErrorContains(t, parseFlags(t, "--auto-preserve-max=-1").lifecycleConfig().Validate(), "AutoPreserve")
}

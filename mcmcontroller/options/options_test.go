package options

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/retry"
)

// parse reads args with MCM's flags into new options.
func parse(t *testing.T, args ...string) *Options {
	t.Helper()
	o := New()
	fs := pflag.NewFlagSet("machine-controller", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return o
}

// Every flag MCM registers is in the table, once, and the table names no
// flag MCM does not register: a flag a newer MCM adds fails here until the
// table says what becomes of it.
func TestFlagsNameEveryFlagMCMRegisters(t *testing.T) {
	fs := pflag.NewFlagSet("machine-controller", pflag.ContinueOnError)
	New().MCM.AddFlags(fs)
	registered := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) { registered[f.Name] = true })

	listed := map[string]bool{}
	for _, f := range Flags() {
		if listed[f.Name] {
			t.Errorf("flag %q is listed twice", f.Name)
		}
		listed[f.Name] = true
		if !registered[f.Name] {
			t.Errorf("flag %q is listed but MCM does not register it", f.Name)
		}
		switch f.Use {
		case UseConfig, UseController:
			if f.Field == "" {
				t.Errorf("flag %q sets a field the table does not name", f.Name)
			}
		case UseNotYet:
			if f.Note == "" {
				t.Errorf("flag %q is not carried out and the table does not say what happens instead", f.Name)
			}
		case UseLogging, UseIgnored:
		default:
			t.Errorf("flag %q: use %v", f.Name, f.Use)
		}
	}
	for name := range registered {
		if !listed[name] {
			t.Errorf("MCM registers flag %q, which the table does not name", name)
		}
	}
}

// AddFlags registers MCM's flags and the controller's own, and no other;
// none of the own is MCM's.
func TestOwnFlagsAreRegisteredBesidesMCMs(t *testing.T) {
	fs := pflag.NewFlagSet("machine-controller", pflag.ContinueOnError)
	New().AddFlags(fs)
	registered := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) { registered[f.Name] = true })
	mcm := pflag.NewFlagSet("mcm", pflag.ContinueOnError)
	New().MCM.AddFlags(mcm)
	for _, f := range OwnFlags() {
		if mcm.Lookup(f.Name) != nil {
			t.Errorf("own flag %q is MCM's", f.Name)
		}
		if !registered[f.Name] {
			t.Errorf("own flag %q is not registered", f.Name)
		}
		if f.Use != UseConfig || f.Field == "" || f.Note == "" {
			t.Errorf("own flag %q: %+v", f.Name, f)
		}
		delete(registered, f.Name)
	}
	mcm.VisitAll(func(f *pflag.Flag) { delete(registered, f.Name) })
	for name := range registered {
		t.Errorf("flag %q is neither MCM's nor listed by OwnFlags", name)
	}
}

// The zone protection's flags reach lifecycle.Config.ZoneOutage, and the
// lifecycle's check refuses a protection without a hold.
func TestZoneOutageFlags(t *testing.T) {
	o := parse(t, "--zone-outage-machines=3", "--zone-outage-percent=60", "--zone-outage-hold=90m")
	want := lifecycle.ZoneOutage{Count: 3, Percent: 60, Hold: 90 * time.Minute}
	if got := o.Config().ZoneOutage; got != want {
		t.Fatalf("ZoneOutage %+v, want %+v", got, want)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	err := parse(t, "--zone-outage-machines=3").Validate()
	if err == nil || !strings.Contains(err.Error(), "ZoneOutage") {
		t.Fatalf("a protection without a hold validates: %v", err)
	}
}

// The table's fields exist: a field of lifecycle.Config or of Controller,
// by its path.
func TestFlagsNameFieldsThatExist(t *testing.T) {
	for _, f := range append(Flags(), OwnFlags()...) {
		var root reflect.Type
		switch f.Use {
		case UseConfig:
			root = reflect.TypeFor[lifecycle.Config]()
		case UseController:
			root = reflect.TypeFor[Controller]()
		default:
			if f.Field != "" {
				t.Errorf("flag %q names field %q but sets none", f.Name, f.Field)
			}
			continue
		}
		typ := root
		for _, part := range strings.Split(f.Field, ".") {
			sf, ok := typ.FieldByName(part)
			if !ok {
				t.Errorf("flag %q: %s has no field %q", f.Name, root, f.Field)
				break
			}
			typ = sf.Type
		}
	}
}

// MCM's defaults are the lifecycle's: options without flags make
// lifecycle.DefaultConfig, but for the owner check MCM's providers cannot
// serve.
func TestMCMDefaultsAreTheLifecycleDefaults(t *testing.T) {
	got := parse(t).Config()
	want := lifecycle.DefaultConfig()
	want.VerifyOwner = false
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Config from MCM's defaults:\n%+v\nwant lifecycle.DefaultConfig:\n%+v", got, want)
	}
	if err := parse(t).Validate(); err != nil {
		t.Fatalf("MCM's defaults do not validate: %v", err)
	}
}

// Each flag of the lifecycle's reaches its field.
func TestFlagsSetTheConfig(t *testing.T) {
	o := parse(t,
		"--machine-creation-timeout=7m", "--machine-health-timeout=3m", "--machine-drain-timeout=45m",
		"--machine-max-evict-retries=12", "--node-conditions=KernelDeadlock,,Custom Cond",
		"--target-kubeconfig=none", "--control-kubeconfig=/etc/control", "--resource-exhausted-retry=90s",
		"--machine-inplace-update-timeout=45m", "--machine-preserve-timeout=30h")
	got := o.Config()
	want := lifecycle.DefaultConfig()
	want.VerifyOwner = false
	want.CreationTimeout, want.HealthTimeout, want.DrainTimeout = 7*time.Minute, 3*time.Minute, 45*time.Minute
	want.MaxEvictRetries = 12
	want.NodeConditions = []string{"KernelDeadlock", "Custom Cond"}
	want.NoTargetCluster = true
	want.Retry.ResourceExhausted = 90 * time.Second
	want.InPlaceUpdateTimeout, want.PreserveTimeout = 45*time.Minute, 30*time.Hour
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Config:\n%+v\nwant\n%+v", got, want)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
}

// A ResourceExhausted period of 0 is MCM's long retry, and so is the
// lifecycle's.
func TestResourceExhaustedRetryZeroIsLong(t *testing.T) {
	if got := parse(t, "--resource-exhausted-retry=0").Config().Retry.ResourceExhausted; got != retry.Long {
		t.Fatalf("ResourceExhausted %v, want %v", got, retry.Long)
	}
}

// An empty --node-conditions watches no condition type but Ready, as in
// MCM, and the Config validates.
func TestEmptyNodeConditions(t *testing.T) {
	o := parse(t, "--node-conditions=")
	if got := o.Config().NodeConditions; got == nil || len(got) != 0 {
		t.Fatalf("NodeConditions %#v, want an empty list", got)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
}

// Each flag of the controller's reaches its field.
func TestFlagsSetTheController(t *testing.T) {
	o := parse(t,
		"--namespace=shoot--a--b", "--control-kubeconfig=inClusterConfig", "--target-kubeconfig=/etc/target",
		"--concurrent-syncs=7", "--min-resync-period=1h", "--machine-safety-orphan-vms-period=5m",
		"--machine-safety-apiserver-statuscheck-period=2m", "--machine-safety-apiserver-statuscheck-timeout=40s",
		"--bootstrap-token-auth-extra-groups=system:bootstrappers:a,system:bootstrappers:b",
		"--leader-elect=false", "--leader-elect-lease-duration=20s", "--leader-elect-renew-deadline=12s",
		"--leader-elect-retry-period=3s", "--leader-elect-resource-lock=leases",
		"--kube-api-qps=55", "--kube-api-burst=80", "--kube-api-content-type=application/json",
		"--address=127.0.0.1", "--port=10300", "--profiling", "--contention-profiling")
	want := Controller{
		Namespace: "shoot--a--b", ControlKubeconfig: "inClusterConfig", TargetKubeconfig: "/etc/target",
		Workers: 7, Resync: time.Hour, OrphanCollection: 5 * time.Minute,
		APIServerCheck: 2 * time.Minute, APIServerDownFor: 40 * time.Second,
		TokenAuthExtraGroups: []string{"system:bootstrappers:a", "system:bootstrappers:b"},
		LeaderElection: LeaderElection{Enabled: false, LeaseDuration: 20 * time.Second,
			RenewDeadline: 12 * time.Second, RetryPeriod: 3 * time.Second, ResourceLock: "leases"},
		QPS: 55, Burst: 80,
		Serve: "127.0.0.1:10300", Profiling: true, ContentionProfiling: true,
	}
	if got := o.Controller(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Controller:\n%+v\nwant\n%+v", got, want)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg := o.Config(); cfg.NoTargetCluster {
		t.Fatal("a target kubeconfig file is a target cluster")
	}
}

// MCM's own checks and the lifecycle's both run, and every problem is
// reported.
func TestValidateReportsMCMsAndTheLifecyclesProblems(t *testing.T) {
	o := parse(t, "--concurrent-syncs=0", "--machine-health-timeout=9000h")
	err := o.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	if !strings.Contains(err.Error(), "concurrent syncs") {
		t.Errorf("MCM's check of --concurrent-syncs is missing: %v", err)
	}
	if !errors.Is(err, lifecycle.ErrInvalidConfig) {
		t.Errorf("the lifecycle's check of a health timeout over a year is missing: %v", err)
	}
}

// The serving address is IPv6-safe.
func TestServeJoinsAnIPv6Address(t *testing.T) {
	if got := parse(t, "--address=::1", "--port=9000").Controller().Serve; got != "[::1]:9000" {
		t.Fatalf("Serve %q", got)
	}
}

// Every use has a name.
func TestUseNames(t *testing.T) {
	for u := UseConfig; u <= UseIgnored; u++ {
		if s := u.String(); s == "" || strings.HasPrefix(s, "Use(") {
			t.Errorf("use %d has no name", u)
		}
	}
	if s := Use(0).String(); s != "Use(?)" {
		t.Errorf("the zero use is %q", s)
	}
}

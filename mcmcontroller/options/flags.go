package options

// Use says what becomes of a flag's value.
type Use uint8

const (
	// UseConfig: the value sets a field of lifecycle.Config.
	UseConfig Use = iota + 1
	// UseController: the value sets a field of Controller.
	UseController
	// UseLogging: MCM's logging code applies the value (klog), as it does
	// in MCM's controller.
	UseLogging
	// UseNotYet: the value is read and validated, and the feature it tunes
	// is not carried out by this controller; Note says what happens
	// instead.
	UseNotYet
	// UseIgnored: the value is read and validated, and ignored, as MCM's
	// machine controller ignores it.
	UseIgnored
)

// String names the use.
func (u Use) String() string {
	switch u {
	case UseConfig:
		return "lifecycle.Config"
	case UseController:
		return "Controller"
	case UseLogging:
		return "logging"
	case UseNotYet:
		return "not carried out yet"
	case UseIgnored:
		return "ignored, as by MCM"
	}
	return "Use(?)"
}

// Flag is one flag of MCM's machine controller and what becomes of it.
type Flag struct {
	// Name is the flag's name, without dashes.
	Name string
	// Use says where its value goes.
	Use Use
	// Field names the field it sets (for UseConfig and UseController).
	Field string
	// Note says what differs from MCM, if anything.
	Note string
}

// Flags lists every flag MCM's machine controller registers, in MCM's
// order, with what becomes of its value here.
func Flags() []Flag {
	return []Flag{
		{Name: "port", Use: UseController, Field: "Serve",
			Note: "with --address: the metrics and probe endpoints (MCM serves its metrics there too)"},
		{Name: "address", Use: UseController, Field: "Serve"},
		{Name: "cloud-provider", Use: UseIgnored},
		{Name: "concurrent-syncs", Use: UseController, Field: "Workers",
			Note: "machines reconciled at once; MCM names it for nodes, and uses it for its machine workers"},
		{Name: "min-resync-period", Use: UseController, Field: "Resync"},
		{Name: "profiling", Use: UseController, Field: "Profiling"},
		{Name: "contention-profiling", Use: UseController, Field: "ContentionProfiling"},
		{Name: "target-kubeconfig", Use: UseConfig, Field: "NoTargetCluster",
			Note: `"none" sets NoTargetCluster; the file itself goes to Controller.TargetKubeconfig`},
		{Name: "control-kubeconfig", Use: UseController, Field: "ControlKubeconfig"},
		{Name: "namespace", Use: UseController, Field: "Namespace"},
		{Name: "kube-api-content-type", Use: UseIgnored,
			Note: "MCM parses it and never applies it: its default, protobuf, cannot encode MCM's custom resources"},
		{Name: "kube-api-qps", Use: UseController, Field: "QPS"},
		{Name: "kube-api-burst", Use: UseController, Field: "Burst"},
		{Name: "controller-start-interval", Use: UseIgnored},
		{Name: "machine-creation-timeout", Use: UseConfig, Field: "CreationTimeout",
			Note: "bounds every phase before Running; MCM checks it only for a Pending machine or when a create or initialize call fails"},
		{Name: "machine-health-timeout", Use: UseConfig, Field: "HealthTimeout"},
		{Name: "machine-drain-timeout", Use: UseConfig, Field: "DrainTimeout",
			Note: "counted from the deletion time, as in MCM; the drain is a round of evictions per pass, not one blocking call"},
		{Name: "machine-inplace-update-timeout", Use: UseConfig, Field: "InPlaceUpdateTimeout",
			Note: "counted from when the machine became InPlaceUpdating, as MCM counts from the phase's lastUpdateTime"},
		{Name: "machine-max-evict-retries", Use: UseConfig, Field: "MaxEvictRetries",
			Note: "eviction rounds of one unforced drain, EvictRetryInterval apart; MCM retries each refused eviction that many times, 20 seconds apart"},
		{Name: "machine-pv-detach-timeout", Use: UseNotYet,
			Note: "MCM waits, per evicted pod, for its volumes to detach; here the deletion waits for the node's volume attachments to go once the drain is over"},
		{Name: "machine-pv-reattach-timeout", Use: UseNotYet,
			Note: "MCM waits, per evicted pod, for its volumes to attach elsewhere; nothing here waits for that"},
		{Name: "machine-safety-apiserver-statuscheck-timeout", Use: UseController, Field: "APIServerDownFor"},
		{Name: "machine-preserve-timeout", Use: UseConfig, Field: "PreserveTimeout"},
		{Name: "machine-safety-orphan-vms-period", Use: UseController, Field: "OrphanCollection"},
		{Name: "machine-safety-apiserver-statuscheck-period", Use: UseController, Field: "APIServerCheck"},
		{Name: "node-conditions", Use: UseConfig, Field: "NodeConditions",
			Note: "empty entries of the list are left out (MCM compares them with no condition type)"},
		{Name: "bootstrap-token-auth-extra-groups", Use: UseController, Field: "TokenAuthExtraGroups"},
		{Name: "resource-exhausted-retry", Use: UseConfig, Field: "Retry.ResourceExhausted",
			Note: "0 means the long period, 10 minutes, as in MCM"},
		{Name: "log-flush-frequency", Use: UseLogging},
		{Name: "v", Use: UseLogging},
		{Name: "vmodule", Use: UseLogging},
		{Name: "leader-elect", Use: UseController, Field: "LeaderElection.Enabled"},
		{Name: "leader-elect-lease-duration", Use: UseController, Field: "LeaderElection.LeaseDuration"},
		{Name: "leader-elect-renew-deadline", Use: UseController, Field: "LeaderElection.RenewDeadline"},
		{Name: "leader-elect-retry-period", Use: UseController, Field: "LeaderElection.RetryPeriod"},
		{Name: "leader-elect-resource-lock", Use: UseController, Field: "LeaderElection.ResourceLock"},
	}
}

// OwnFlags lists the flags this controller registers besides MCM's, with
// what becomes of their values: the limiter's protection of a zone that
// looks down as a whole, which MCM does not have.
func OwnFlags() []Flag {
	const note = "not MCM's: the limiter's protection of a zone that looks down as a whole, off by default"
	return []Flag{
		{Name: "zone-outage-machines", Use: UseConfig, Field: "ZoneOutage.Count", Note: note},
		{Name: "zone-outage-percent", Use: UseConfig, Field: "ZoneOutage.Percent", Note: note},
		{Name: "zone-outage-hold", Use: UseConfig, Field: "ZoneOutage.Hold", Note: note},
	}
}

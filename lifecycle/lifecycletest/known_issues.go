package lifecycletest

// KnownIssueExplorations returns explorations that [Explorations] leaves
// out because the lifecycle breaks a promise or liveness in them, so that
// the model check guards the rest meanwhile. Each name says what it
// switches on; once the lifecycle is fixed it passes, and its events and
// starts belong in [Explorations]. There is none at present.
func KnownIssueExplorations() []Exploration {
	return nil
}

package retry_test

import (
	"fmt"

	"github.com/purelifecycle/machine/retry"
)

// A failing driver call is first retried after MCM's own period; only from
// the second consecutive failure on does the delay double (plus jitter),
// until it reaches the cap.
func ExamplePolicy_Backoff() {
	p := retry.DefaultPolicy()
	base := p.Period(retry.ClassTransient)
	for failures := uint32(1); failures <= 9; failures++ {
		fmt.Printf("failure %d: retry after %v\n", failures, p.Backoff(base, 0, failures, "machine-uid-1"))
	}
	// Output:
	// failure 1: retry after 5s
	// failure 2: retry after 10.516593308s
	// failure 3: retry after 21.928897511s
	// failure 4: retry after 41.440620867s
	// failure 5: retry after 1m20.61719133s
	// failure 6: retry after 2m49.240732262s
	// failure 7: retry after 5m28.137802336s
	// failure 8: retry after 10m18.719911638s
	// failure 9: retry after 10m47.13670244s
}

// Period maps an outcome class to MCM's retry period.
func ExamplePolicy_Period() {
	p := retry.DefaultPolicy()
	for c := retry.ClassNone; c <= retry.ClassUndecodable; c++ {
		fmt.Printf("%-11s %v\n", c, p.Period(c))
	}
	p.ResourceExhausted = retry.Medium // --resource-exhausted-retry=3m
	fmt.Printf("%-11s %v (configured)\n", retry.ClassExhausted, p.Period(retry.ClassExhausted))
	// Output:
	// none        0s
	// conflict    200ms
	// transient   5s
	// exhausted   10m0s
	// permanent   3m0s
	// undecodable 3m0s
	// exhausted   3m0s (configured)
}

// Jitter is a pure function of (key, attempt): the same machine always gets
// the same offset, different machines spread over the window.
func ExampleJitter() {
	for _, uid := range []string{"machine-uid-1", "machine-uid-2", "machine-uid-3"} {
		fmt.Printf("%s: +%v\n", uid, retry.Jitter(uid, 0, retry.Long, 10))
	}
	// Output:
	// machine-uid-1: +6.436243144s
	// machine-uid-2: +9.978618672s
	// machine-uid-3: +18.071538709s
}

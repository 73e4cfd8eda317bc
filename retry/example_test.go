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
	// failure 2: retry after 10.320016267s
	// failure 3: retry after 21.74454992s
	// failure 4: retry after 42.853824239s
	// failure 5: retry after 1m27.474530265s
	// failure 6: retry after 2m48.303624135s
	// failure 7: retry after 5m43.964450644s
	// failure 8: retry after 10m18.799382953s
	// failure 9: retry after 10m6.029617395s
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
	// machine-uid-1: +16.131662325s
	// machine-uid-2: +525.907624ms
	// machine-uid-3: +53.555312831s
}

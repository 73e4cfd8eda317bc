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
	// failure 2: retry after 10.896571236s
	// failure 3: retry after 21.664688588s
	// failure 4: retry after 42.764694736s
	// failure 5: retry after 1m27.01901042s
	// failure 6: retry after 2m53.965669919s
	// failure 7: retry after 5m28.428305005s
	// failure 8: retry after 10m30.946160503s
	// failure 9: retry after 10m18.826249875s
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
	// machine-uid-1: +23.562657234s
	// machine-uid-2: +15.808935368s
	// machine-uid-3: +29.201310379s
}

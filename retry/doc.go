// Package retry computes how long a machine lifecycle controller waits before
// it reconciles a machine again: the base retry periods of
// machine-controller-manager (MCM), exponential backoff for repeated failures,
// and deterministic jitter.
//
// # Periods
//
// MCM answers every reconcile step with one of four fixed periods
// (machineutils.RetryPeriod). This package keeps their values and gives them
// shorter names:
//
//	Conflict  200ms  MCM ConflictRetry  an API write lost an optimistic-concurrency race
//	Short     5s     MCM ShortRetry     a transient failure, or progress is expected soon
//	Medium    3m     MCM MediumRetry    a failure that is unlikely to clear quickly
//	Long      10m    MCM LongRetry      steady state: periodic resync
//
// A fifth period is configured: the wait after the driver reports
// ResourceExhausted on creation (MCM flag --resource-exhausted-retry), which
// defaults to Long and where 0 also means Long.
//
// # Classes
//
// A Class names the kind of outcome a step had, and Policy.Period maps it to
// its base period exactly as MCM does:
//
//	ClassNone         nothing failed                        0
//	ClassConflict     API write conflict                    Conflict
//	ClassTransient    Unknown, DeadlineExceeded, Aborted,   Short
//	                  Unavailable
//	ClassExhausted    ResourceExhausted                     Policy.ResourceExhausted (0: Long)
//	ClassPermanent    any other driver code                 Medium
//	ClassUndecodable  error text not in the driver's        Medium
//	                  "code = [..] message = [..]" format
//
// # Backoff and jitter
//
// A single failure gets MCM's exact period: Policy.Backoff returns the base
// period unchanged when failures is 0 or 1, so a controller built on this
// package behaves like MCM until a sub-flow fails twice in a row. From the
// second consecutive failure on, the period doubles per failure, saturating
// (it never overflows, whatever the count), is capped at a limit, and then
// grows by a deterministic jitter of at most Policy.JitterPercent percent.
//
// Long resync requeues use Policy.Spread, which adds the same kind of jitter
// with attempt 0, so that a restarted controller does not reconcile a whole
// fleet at the same instant.
//
// Jitter is not random. It is derived from a key (the machine's UID) and the
// attempt number with a word-at-a-time multiplicative hash, so a given
// machine's requeue is reproducible on every run and every platform, while
// different machines spread over the jitter window. The exact function is
// part of the contract; see Jitter.
//
// Everything here is pure: no clock, no randomness, no allocation on the hot
// path (Policy.Period, Policy.Backoff, Policy.Spread, Jitter), and no panics
// on any input.
package retry

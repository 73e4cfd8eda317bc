package retry

import (
	"fmt"
	"strconv"
	"time"
)

// The base retry periods of MCM (machineutils.RetryPeriod).
const (
	// Conflict is the period after an API write conflict (MCM ConflictRetry).
	Conflict = 200 * time.Millisecond
	// Short is the period after a transient failure, or when progress is
	// expected soon (MCM ShortRetry).
	Short = 5 * time.Second
	// Medium is the period after a failure that is unlikely to clear quickly
	// (MCM MediumRetry).
	Medium = 3 * time.Minute
	// Long is the steady-state resync period (MCM LongRetry).
	Long = 10 * time.Minute
)

// Class is the outcome class that selects a base period.
type Class uint8

// The outcome classes. The zero value is ClassNone.
const (
	// ClassNone means nothing failed; its period is 0.
	ClassNone Class = iota
	// ClassConflict is an API write conflict; its period is Conflict.
	ClassConflict
	// ClassTransient is a driver error with code Unknown, DeadlineExceeded,
	// Aborted or Unavailable; its period is Short.
	ClassTransient
	// ClassExhausted is a driver error with code ResourceExhausted; its
	// period is Policy.ResourceExhausted.
	ClassExhausted
	// ClassPermanent is a driver error with any other code; its period is
	// Medium.
	ClassPermanent
	// ClassUndecodable is an error whose text is not in the driver status
	// format; its period is Medium.
	ClassUndecodable
)

// String returns the lower-case name of c, or "Class(N)" for an unknown value.
func (c Class) String() string {
	switch c {
	case ClassNone:
		return "none"
	case ClassConflict:
		return "conflict"
	case ClassTransient:
		return "transient"
	case ClassExhausted:
		return "exhausted"
	case ClassPermanent:
		return "permanent"
	case ClassUndecodable:
		return "undecodable"
	}
	return "Class(" + strconv.Itoa(int(c)) + ")"
}

// Policy holds the configurable parts of retry timing. The zero Policy is
// usable: it behaves like MCM's defaults without jitter.
type Policy struct {
	// ResourceExhausted is the period after the driver reports
	// ResourceExhausted (MCM --resource-exhausted-retry). 0 means Long, as in
	// MCM; a negative value, which Validate rejects, also means Long.
	ResourceExhausted time.Duration
	// MaxBackoff caps the exponential backoff when Backoff is called with a
	// limit of 0. 0 means Long; a negative value, which Validate rejects,
	// also means Long.
	MaxBackoff time.Duration
	// JitterPercent is the width of the deterministic jitter as a percentage
	// (0..100) of the period it is added to. 0 disables jitter. Values above
	// 100 act as 100 and negative values as 0; Validate rejects both.
	JitterPercent int
}

// DefaultPolicy returns the policy that matches MCM's defaults, with 10%
// jitter: ResourceExhausted Long, MaxBackoff Long, JitterPercent 10.
func DefaultPolicy() Policy {
	return Policy{ResourceExhausted: Long, MaxBackoff: Long, JitterPercent: 10}
}

// MaxPeriod bounds the periods of a Policy: a year. A period near the
// limit of a time.Duration overflows once doubled or added to a time.
const MaxPeriod = 365 * 24 * time.Hour

// Validate reports the first invalid field of p: a negative duration or one
// above MaxPeriod, or a JitterPercent outside 0..100.
func (p Policy) Validate() error {
	if err := periodInRange("ResourceExhausted", p.ResourceExhausted); err != nil {
		return err
	}
	if err := periodInRange("MaxBackoff", p.MaxBackoff); err != nil {
		return err
	}
	if p.JitterPercent < 0 || p.JitterPercent > 100 {
		return fmt.Errorf("retry: JitterPercent must be within 0..100, got %d", p.JitterPercent)
	}
	return nil
}

// periodInRange reports a duration of a Policy that is negative or above
// MaxPeriod; cheap enough to inline, as Step validates its Config at every
// step.
func periodInRange(name string, d time.Duration) error {
	if uint64(d) <= uint64(MaxPeriod) { // a negative d is a huge uint64
		return nil
	}
	return periodError(name, d)
}

// periodError is the error of periodInRange for a d out of range.
func periodError(name string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("retry: %s must not be negative, got %v", name, d)
	}
	return fmt.Errorf("retry: %s must be at most %v, got %v", name, MaxPeriod, d)
}

// Period returns the base period of class c exactly as MCM chooses it:
// ClassNone 0, ClassConflict Conflict, ClassTransient Short, ClassExhausted
// p.ResourceExhausted (Long when not positive), ClassPermanent and
// ClassUndecodable Medium. An unknown class gets Medium.
func (p Policy) Period(c Class) time.Duration {
	switch c {
	case ClassNone:
		return 0
	case ClassConflict:
		return Conflict
	case ClassTransient:
		return Short
	case ClassExhausted:
		if p.ResourceExhausted <= 0 {
			return Long
		}
		return p.ResourceExhausted
	}
	return Medium
}

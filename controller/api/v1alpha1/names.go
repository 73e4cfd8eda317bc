package v1alpha1

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/purelifecycle/machine/lifecycle"
)

// FlagList is the names of the flags of a status (FlagNames). It also
// reads the number an earlier version of the controller wrote, the flags'
// bits, so a machine it saved is read by this one; its next save writes
// the names.
type FlagList []string

// UnmarshalJSON reads a list of names, or a number of flag bits.
func (l *FlagList) UnmarshalJSON(b []byte) error {
	var bits uint16
	if err := json.Unmarshal(b, &bits); err == nil {
		*l = FlagNames(lifecycle.Flags(bits))
		return nil
	}
	var names []string
	if err := json.Unmarshal(b, &names); err != nil {
		return fmt.Errorf("status.lifecycle.flags: neither flag names nor flag bits: %w", err)
	}
	*l = names
	return nil
}

// FlagNames returns the names of the flags set in f, lowest bit first, as
// lifecycle.Flags.String names them ("bit-N" for a bit no flag declares),
// so every Flags value has names that ParseFlags reads back.
func FlagNames(f lifecycle.Flags) []string {
	if f == 0 {
		return nil
	}
	return strings.Split(f.String(), ",")
}

// ParseFlags returns the flags FlagNames named (lifecycle.ParseFlags of
// each); an unknown name is an error.
func ParseFlags(names []string) (lifecycle.Flags, error) {
	var f lifecycle.Flags
	for _, name := range names {
		bit, err := lifecycle.ParseFlags(name)
		if name == "" || strings.Contains(name, ",") || err != nil {
			return 0, fmt.Errorf("status.lifecycle.flags: unknown flag %q", name)
		}
		f |= bit
	}
	return f, nil
}

// ReasonOf returns the rule's identifier in CamelCase, as a condition's
// reason must be written: "health.waiting-for-node" gives
// HealthWaitingForNode, "delete.vm" DeleteVM.
func ReasonOf(r lifecycle.Rule) string { return camel(r.String()) }

// WaitCondition returns the type of the condition that is True while a
// machine waits for w: "WaitingFor" and the wait's name in CamelCase
// (WaitingForNodeJoin); "" for lifecycle.WaitNone.
func WaitCondition(w lifecycle.WaitFor) string {
	if w == lifecycle.WaitNone {
		return ""
	}
	return "WaitingFor" + camel(w.String())
}

// camel writes an identifier made of lower-case words, separated by any
// other character, in CamelCase; the words vm, id and uid in capitals.
func camel(id string) string {
	var b strings.Builder
	for _, w := range strings.FieldsFunc(id, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}) {
		switch w {
		case "vm", "id", "uid":
			b.WriteString(strings.ToUpper(w))
		default:
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

// RoundDuration writes d rounded to the second, without the zero units
// Go's duration syntax ends with: 20m, 1h30m, 2h, 45s, 1h0m5s.
func RoundDuration(d time.Duration) string {
	d = d.Round(time.Second)
	if d == 0 {
		return "0s"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Package bootstrap prepares what an MCM machine needs to join its cluster:
// the user data its provider boots the instance with, with the machine's
// bootstrap token and name filled in as MCM's machine controller fills
// them, and the bootstrap token secret in the target cluster's kube-system
// namespace, as MCM writes it.
//
// The token secret also carries the UID of the machine it was made for
// ([MachineUIDLabel]): MCM derives a token's ID from three bytes of the
// machine's name, so machines whose names end alike (worker-1 to worker-9)
// share an ID, and the label tells whose token a secret is before it is
// reused or deleted.
package bootstrap

import (
	"net/url"
	"strings"
)

// The placeholders MCM's user data may hold, each replaced as a whole.
const (
	// TokenPlaceholder stands for the bootstrap token,
	// "<token-id>.<token-secret>".
	TokenPlaceholder = "<<BOOTSTRAP_TOKEN>>"
	// MachineNamePlaceholder stands for the machine's name.
	MachineNamePlaceholder = "<<MACHINE_NAME>>"
)

// UserDataKey is the key of the user data in a MachineClass's Secret.
const UserDataKey = "userData"

// Filled says which placeholders a user data held and how each was filled.
type Filled struct {
	// Token and MachineName say how the token and the machine's name were
	// written.
	Token, MachineName Form
}

// Form is how a placeholder was found and filled.
type Form uint8

const (
	// Absent: the user data holds neither form of the placeholder; nothing
	// is written for it. A user data without the token's placeholder
	// boots an instance whose node cannot join.
	Absent Form = iota
	// Plain: the placeholder was found as it is and replaced by the value.
	Plain
	// URLEncoded: the placeholder was found URL-encoded (as in an Ignition
	// config's data URL) and replaced by the URL-encoded value.
	URLEncoded
)

// String names the form.
func (f Form) String() string {
	switch f {
	case Absent:
		return "absent"
	case Plain:
		return "plain"
	case URLEncoded:
		return "URL-encoded"
	}
	return "Form(?)"
}

// Fill returns the user data with the bootstrap token and the machine's
// name written where their placeholders stand, and says how each was
// found. As in MCM, each placeholder is looked for as it is first and
// replaced everywhere it stands; only when it is not there is its
// URL-encoded form looked for, and replaced by the URL-encoded value. An
// empty token leaves the token's placeholder alone (a machine without a
// target cluster has no token). userData is not changed.
func Fill(userData []byte, token, machineName string) ([]byte, Filled) {
	s := string(userData)
	var f Filled
	if token != "" {
		s, f.Token = fill(s, TokenPlaceholder, token)
	}
	s, f.MachineName = fill(s, MachineNamePlaceholder, machineName)
	return []byte(s), f
}

// fill replaces placeholder in s by value, or its URL-encoded form by the
// URL-encoded value when the placeholder itself is not there.
func fill(s, placeholder, value string) (string, Form) {
	if strings.Contains(s, placeholder) {
		return strings.ReplaceAll(s, placeholder, value), Plain
	}
	if encoded := url.QueryEscape(placeholder); strings.Contains(s, encoded) {
		return strings.ReplaceAll(s, encoded, url.QueryEscape(value)), URLEncoded
	}
	return s, Absent
}

package bootstrap

import (
	"errors"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/purelifecycle/machine/lifecycle"
)

// MachineUIDLabel labels a bootstrap token secret with the UID of the
// machine it was made for.
const MachineUIDLabel = "machine.purelifecycle.io/machine-uid"

// The keys of a bootstrap token secret's data that the API server's token
// authenticator and the bootstrap signer read.
const (
	keyTokenID     = "token-id"
	keyTokenSecret = "token-secret"
	keyExpiration  = "expiration"
	keyDescription = "description"
	keyExtraGroups = "auth-extra-groups"
	keyUsageAuthn  = "usage-bootstrap-authentication"
	keyUsageSign   = "usage-bootstrap-signing"
)

// tokenChars are the characters of a token's ID and secret.
const tokenChars = "0123456789abcdefghijklmnopqrstuvwxyz"

// SecretName returns the name of the secret of the bootstrap token with
// ID id, in kube-system.
func SecretName(id string) string { return "bootstrap-token-" + id }

// TokenID returns the ID of a machine's bootstrap token as MCM derives it
// from the machine's name (lifecycle.BootstrapTokenID: names shorter than
// MCM needs are handled there).
func TokenID(machineName string) string { return lifecycle.BootstrapTokenID(machineName) }

// Token is a bootstrap token secret to create.
type Token struct {
	// ID is the token's ID, six characters of [0-9a-z].
	ID string
	// MachineName and MachineUID name the machine it is made for.
	MachineName, MachineUID string
	// Expires is when the token expires: MCM sets the time it is made
	// plus the machine's creation timeout.
	Expires time.Time
	// ExtraGroups are the groups the token authenticates as besides the
	// bootstrappers' (MCM --bootstrap-token-auth-extra-groups, as given).
	ExtraGroups string
}

// ErrTokenID is returned for an ID that is not six characters of [0-9a-z].
var ErrTokenID = errors.New("bootstrap: a token ID is six characters of 0-9 and a-z")

// Secret returns the secret of the token with a new random token secret
// of sixteen characters drawn from random (crypto/rand.Reader in a
// controller), with the fields MCM writes: the description naming the
// machine, the expiry in RFC 3339, both usages, the extra groups, and the
// machine's UID as a label.
func (t *Token) Secret(random io.Reader) (*corev1.Secret, error) {
	if !validID(t.ID) {
		return nil, fmt.Errorf("%w: %q", ErrTokenID, t.ID)
	}
	secret, err := randomString(random, 16)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: a token secret for machine %q: %w", t.MachineName, err)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: metav1.NamespaceSystem,
			Name:      SecretName(t.ID),
			Labels:    map[string]string{MachineUIDLabel: t.MachineUID},
		},
		Type: corev1.SecretTypeBootstrapToken,
		Data: map[string][]byte{
			keyDescription: fmt.Appendf(nil, "A bootstrap token for machine %q.", t.MachineName),
			keyTokenID:     []byte(t.ID),
			keyTokenSecret: []byte(secret),
			keyExpiration:  []byte(t.Expires.UTC().Format(time.RFC3339)),
			keyUsageAuthn:  []byte("true"),
			keyUsageSign:   []byte("true"),
			keyExtraGroups: []byte(t.ExtraGroups),
		},
	}, nil
}

// Value returns the token a secret holds, "<id>.<secret>", as the user
// data's placeholder takes it, or "" when the secret is not a complete
// bootstrap token.
func Value(s *corev1.Secret) string {
	id, secret := string(s.Data[keyTokenID]), string(s.Data[keyTokenSecret])
	if !validID(id) || len(secret) != 16 || !ofTokenChars(secret) {
		return ""
	}
	return id + "." + secret
}

// Owner reports the UID of the machine a token secret was made for, ""
// when it carries none (made by MCM, or by hand).
func Owner(s *corev1.Secret) string { return s.Labels[MachineUIDLabel] }

func validID(id string) bool { return len(id) == 6 && ofTokenChars(id) }

func ofTokenChars(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'z') {
			return false
		}
	}
	return true
}

// randomString draws n characters of tokenChars from random, each from a
// byte below the largest multiple of len(tokenChars) so every character is
// equally likely.
func randomString(random io.Reader, n int) (string, error) {
	const limit = 256 - 256%len(tokenChars)
	out := make([]byte, 0, n)
	var buf [32]byte
	for len(out) < n {
		if _, err := io.ReadFull(random, buf[:]); err != nil {
			return "", err
		}
		for _, b := range buf {
			if int(b) < limit && len(out) < n {
				out = append(out, tokenChars[int(b)%len(tokenChars)])
			}
		}
	}
	return string(out), nil
}

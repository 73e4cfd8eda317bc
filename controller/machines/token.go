package machines

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/kubeshell"
	"github.com/purelifecycle/machine/lifecycle"
)

// Bootstrap tokens. A machine's token lives in the secret
// kube-system/bootstrap-token-<ID>, whose label TokenMachineUIDLabel
// records the UID of the machine it was made for. The ID is derived once
// (Options.TokenID), checked against the secret of that name, and recorded
// in the machine's status (status.bootstrapTokenID) before the secret is
// made; later passes use the recorded ID. A secret of that ID that records
// another machine's UID, or none (one MCM made, or one made by hand), is a
// clash: the machine takes another ID, derived from its UID, and records
// that. A token is deleted only when its secret records the machine's UID,
// so one machine's join never deletes another's token; a token this
// controller did not make is left to expire, and the token cleaner of
// kube-controller-manager deletes it then.

// TokenMachineUIDLabel is the label of a bootstrap token secret that
// records the UID of the machine the token was made for.
const TokenMachineUIDLabel = "machine.purelifecycle.dev/machine-uid"

// BootstrapTokenPlaceholder is replaced in the user data with the machine's
// bootstrap token ("<id>.<secret>") for CreateMachine.
const BootstrapTokenPlaceholder = "{{BOOTSTRAP_TOKEN}}"

// TokenIDFunc derives the ID of a machine's bootstrap token: 6 characters
// of [a-z0-9], as bootstrap token IDs are. It is asked once per machine,
// when no ID is recorded in the machine's status.
type TokenIDFunc func(m *v1alpha1.Machine) string

// TokenIDFromUID derives the token ID from the machine's UID: 6 base-36
// digits of its SHA-256 hash. Two machines share an ID with a chance of
// about one in 2 billion, and a clash is detected (see Options.TokenID).
// It is the default, for machines this controller creates.
func TokenIDFromUID(m *v1alpha1.Machine) string { return tokenIDOf(string(m.UID), 0) }

// TokenIDFromName derives the token ID as MCM does (lifecycle.BootstrapTokenID
// of the machine's name: the hexadecimal of its fifth- to third-last bytes;
// a name shorter than 5 bytes, on which MCM panics, is taken whole and
// padded to 6 digits). Names that agree in those bytes (worker-1 to
// worker-9) derive one ID; all but the first of them clash and take an ID
// derived from their UID. It is meant for machines taken over from MCM,
// whose tooling may look tokens up by this ID.
func TokenIDFromName(m *v1alpha1.Machine) string { return lifecycle.BootstrapTokenID(m.Name) }

// maxTokenIDs is how many IDs a machine tries before its token effect
// fails: its derived or recorded ID, then IDs derived from its UID.
const maxTokenIDs = 8

// tokenIDOf returns the n-th ID derived from uid (kubeshell.TokenIDOf).
func tokenIDOf(uid string, n int) string { return kubeshell.TokenIDOf(uid, n) }

// validTokenID reports whether id has the form of a bootstrap token ID.
func validTokenID(id string) bool {
	if len(id) != 6 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// tokenKey names the bootstrap token secret of a token ID.
func tokenKey(id string) client.ObjectKey {
	return client.ObjectKey{Namespace: lifecycle.BootstrapTokenNamespace, Name: "bootstrap-token-" + id}
}

// tokenIDOfMachine returns the ID of the machine's token: the one its
// status records, else the derived one.
func (r *Reconciler) tokenIDOfMachine(m *v1alpha1.Machine) string {
	if id := m.Status.BootstrapTokenID; id != "" {
		return id
	}
	return r.tokenID(m)
}

// tokenExists reports whether the machine's token secret exists and
// records the machine's UID, as the cache shows it, leaving out a secret
// this controller deleted that the cache still shows, and counting one it
// made that the cache does not show yet.
func (r *Reconciler) tokenExists(ctx context.Context, m *v1alpha1.Machine, now time.Time) bool {
	var s corev1.Secret
	key := tokenKey(r.tokenIDOfMachine(m))
	err := r.client.Get(ctx, key, &s)
	if err == nil && s.Labels[TokenMachineUIDLabel] == string(m.UID) && !r.writes.tokenDeleted(s.UID, now) {
		r.writes.tokenSeen(key.Name, s.UID)
		return true
	}
	return (err == nil || apierrors.IsNotFound(err)) && r.writes.tokenMade(key.Name, m.UID, now)
}

// errTokenIDs is the error of a machine all of whose token IDs clash.
var errTokenIDs = errors.New("every bootstrap token ID tried is taken by another machine's token")

// ensureToken makes sure the machine's bootstrap token secret exists,
// records its UID and expires at expiry, and keeps the token for the
// CreateMachine that follows (pass.token). The ID is recorded in the
// machine's status before the secret is made, so a token made is always
// found again.
func (r *Reconciler) ensureToken(ctx context.Context, p *pass, machine string, expiry time.Time) (lifecycle.Write, error) {
	if p.gone {
		return lifecycle.WriteNotFound, errGone
	}
	if machine != p.m.Name {
		return lifecycle.WriteFailed, fmt.Errorf("bootstrap token of machine %q asked in the pass of %q", machine, p.m.Name)
	}
	uid := string(p.m.UID)
	exp := expiry.UTC().Format(time.RFC3339)
	id := r.tokenIDOfMachine(p.m)
	for n := 1; ; n++ {
		if !validTokenID(id) {
			return lifecycle.WriteFailed, fmt.Errorf("bootstrap token ID %q is not 6 characters of [a-z0-9]", id)
		}
		s := &corev1.Secret{}
		err := r.reader.Get(ctx, tokenKey(id), s)
		switch {
		case err == nil && s.Labels[TokenMachineUIDLabel] == uid:
			if w, err := r.recordTokenID(ctx, p, id); w != lifecycle.WriteOK {
				return w, err
			}
			r.writes.recordTokenMade(s.Name, p.m.UID, s.UID, r.now())
			if string(s.Data["expiration"]) != exp {
				s.Data["expiration"] = []byte(exp)
				if err := r.client.Update(ctx, s); err != nil {
					return kubeshell.WriteOf(err), err
				}
			}
			p.token = string(s.Data["token-id"]) + "." + string(s.Data["token-secret"])
			return lifecycle.WriteOK, nil
		case err == nil:
			p.log.Info("bootstrap token ID taken by another machine's token; trying another",
				"id", id, "ownerUID", s.Labels[TokenMachineUIDLabel])
		case apierrors.IsNotFound(err):
			if w, err := r.recordTokenID(ctx, p, id); w != lifecycle.WriteOK {
				return w, err
			}
			s = newTokenSecret(id, p.m, exp)
			if err := r.client.Create(ctx, s); err != nil {
				// AlreadyExists: made meanwhile; the next attempt looks
				// whose it is.
				return kubeshell.WriteOf(err), err
			}
			r.writes.recordTokenMade(s.Name, p.m.UID, s.UID, r.now())
			p.token = id + "." + string(s.Data["token-secret"])
			return lifecycle.WriteOK, nil
		default:
			return kubeshell.WriteOf(err), err
		}
		if n == maxTokenIDs {
			return lifecycle.WriteFailed, errTokenIDs
		}
		id = tokenIDOf(uid, n)
	}
}

// recordTokenID records id as the machine's token ID in its status, unless
// it is recorded already.
func (r *Reconciler) recordTokenID(ctx context.Context, p *pass, id string) (lifecycle.Write, error) {
	if p.m.Status.BootstrapTokenID == id {
		return lifecycle.WriteOK, nil
	}
	mm := p.m.DeepCopy()
	mm.Status.BootstrapTokenID = id
	return r.writeMachine(ctx, p, mm, true)
}

// newTokenSecret returns the bootstrap token secret of ID id for machine
// m, expiring at exp, with a new random secret.
func newTokenSecret(id string, m *v1alpha1.Machine, exp string) *corev1.Secret {
	key := tokenKey(id)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels: map[string]string{TokenMachineUIDLabel: string(m.UID)}},
		Type: corev1.SecretTypeBootstrapToken,
		Data: map[string][]byte{
			"token-id":                       []byte(id),
			"token-secret":                   []byte(tokenSecret()),
			"expiration":                     []byte(exp),
			"description":                    []byte("bootstrap token of machine " + m.Namespace + "/" + m.Name),
			"usage-bootstrap-authentication": []byte("true"),
			"usage-bootstrap-signing":        []byte("true"),
		},
	}
}

// deleteToken deletes the machine's bootstrap token secret if it records
// the machine's UID; a secret that does not, or none, counts as done. The
// delete is conditional on the secret read, so a secret made again
// meanwhile is not deleted.
func (r *Reconciler) deleteToken(ctx context.Context, p *pass, machine string) (lifecycle.Write, error) {
	if p.m == nil || machine != p.m.Name {
		return lifecycle.WriteFailed, fmt.Errorf("bootstrap token of machine %q asked in the pass of another", machine)
	}
	s := &corev1.Secret{}
	key := tokenKey(r.tokenIDOfMachine(p.m))
	err := r.reader.Get(ctx, key, s)
	if apierrors.IsNotFound(err) {
		r.writes.forgetToken(key.Name)
		return lifecycle.WriteOK, nil
	}
	if err != nil {
		return kubeshell.WriteOf(err), err
	}
	if s.Labels[TokenMachineUIDLabel] != string(p.m.UID) {
		p.log.V(1).Info("bootstrap token secret is another machine's; left alone", "secret", s.Name,
			"ownerUID", s.Labels[TokenMachineUIDLabel])
		return lifecycle.WriteOK, nil
	}
	err = r.client.Delete(ctx, s, client.Preconditions{UID: &s.UID, ResourceVersion: &s.ResourceVersion})
	if err != nil && !apierrors.IsNotFound(err) {
		return kubeshell.WriteOf(err), err
	}
	r.writes.recordTokenDeleted(s.UID, r.now())
	r.writes.forgetToken(key.Name)
	return lifecycle.WriteOK, nil
}

// tokenSecret returns a random bootstrap token secret: 16 characters of
// [a-z0-9].
func tokenSecret() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

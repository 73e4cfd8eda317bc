package machines

import (
	"context"
	"fmt"
	"time"

	"github.com/gardener/machine-controller-manager/pkg/apis/machine/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/purelifecycle/machine/kubeshell"
	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/mcmcontroller/bootstrap"
)

// Bootstrap tokens. A machine's token lives in the secret
// kube-system/bootstrap-token-<ID> of the target cluster, as MCM keeps it,
// labelled with the machine's UID (bootstrap.MachineUIDLabel); the
// machine's tokens are found by that label. Its ID is the first of the IDs
// derived from the machine's UID (kubeshell.TokenIDOf) whose secret does
// not exist. MCM derives the ID from three bytes of the machine's name, so
// that machines whose names end alike share a token and the first to join
// deletes it under the others; a token MCM made for a machine is not
// used, and expires.

// maxTokenIDs is how many IDs a machine tries before its token effect
// fails.
const maxTokenIDs = 8

// tokensOf returns the bootstrap token secrets made for machine m, read
// from the target cluster's API server.
func (r *Reconciler) tokensOf(ctx context.Context, m *v1alpha1.Machine) ([]corev1.Secret, error) {
	var list corev1.SecretList
	err := r.c.TargetReader.List(ctx, &list, client.InNamespace(metav1.NamespaceSystem),
		client.MatchingLabels{bootstrap.MachineUIDLabel: string(m.UID)})
	return list.Items, err
}

// ensureToken makes sure the machine has a bootstrap token (the
// lifecycle's KindEnsureBootstrapToken) expiring at expires, and keeps
// its value for the CreateMachine that follows.
func (p *pass) ensureToken(ctx context.Context, expires time.Time) (lifecycle.Write, error) {
	tokens, err := p.r.tokensOf(ctx, p.m)
	if err != nil {
		return lifecycle.WriteFailed, err
	}
	for i := range tokens {
		if v := bootstrap.Value(&tokens[i]); v != "" && tokens[i].DeletionTimestamp == nil {
			p.token = v
			return lifecycle.WriteOK, nil
		}
	}
	for n := range maxTokenIDs {
		t := bootstrap.Token{ID: kubeshell.TokenIDOf(string(p.m.UID), n), MachineName: p.m.Name, MachineUID: string(p.m.UID),
			Expires: expires, ExtraGroups: p.r.opts.TokenExtraGroups}
		s, err := t.Secret(p.r.opts.Random)
		if err != nil {
			return lifecycle.WriteFailed, err
		}
		err = p.r.c.Target.Create(ctx, s)
		if apierrors.IsAlreadyExists(err) {
			continue // another machine's token holds the ID
		}
		if err != nil {
			return kubeshell.WriteOf(err), err
		}
		p.token = bootstrap.Value(s)
		return lifecycle.WriteOK, nil
	}
	return lifecycle.WriteFailed, fmt.Errorf("the %d bootstrap token IDs of machine %s are all taken", maxTokenIDs, p.m.Name)
}

// deleteTokens deletes the machine's bootstrap tokens (the lifecycle's
// KindDeleteBootstrapToken); a token already gone counts as deleted.
func (p *pass) deleteTokens(ctx context.Context) (lifecycle.Write, error) {
	tokens, err := p.r.tokensOf(ctx, p.m)
	if err != nil {
		return lifecycle.WriteFailed, err
	}
	for i := range tokens {
		if err := p.r.c.Target.Delete(ctx, &tokens[i]); err != nil && !apierrors.IsNotFound(err) {
			return kubeshell.WriteOf(err), err
		}
	}
	return lifecycle.WriteOK, nil
}

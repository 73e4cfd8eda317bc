package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/controller/fakecloud"
	"github.com/purelifecycle/machine/controller/machines"
	"github.com/purelifecycle/machine/driverapi"
	"github.com/purelifecycle/machine/lifecycle"
)

// lagCache is a manager's cache that does not show a bootstrap token secret
// until it is 3 s old, as a cache whose watch lags does.
type lagCache struct{ cache.Cache }

// Get implements client.Reader.
func (c lagCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := c.Cache.Get(ctx, key, obj, opts...)
	if s, ok := obj.(*corev1.Secret); ok && err == nil && time.Since(s.CreationTimestamp.Time) < 3*time.Second {
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	return err
}

// A machine deleted while its CreateMachine is in flight deletes the bootstrap
// token its pass just made, though the cache does not show the token yet:
// the deletion deletes the token once, when it begins.
func TestTokenMadeJustBeforeTheDeletionIsDeleted(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	p := newProvider("zone-tlag")
	gate := newGatedDriver(p, "m-lag")
	startManager(t, "tlag", p, func(o *options) {
		o.driver = func(*fakecloud.Provider) driverapi.Driver { return gate }
		o.tweak = func(mo *ctrl.Options) {
			mo.NewCache = func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
				c, err := cache.New(cfg, opts)
				return lagCache{c}, err
			}
		}
	})
	m := newGroupMachine(t, "tlag", ns, "m-lag", time.Minute)
	waitClosed(t, gate.entered, 30*time.Second, "CreateMachine called")
	require.NoError(t, k8s.Delete(ctx, m))
	close(gate.release)
	eventually(t, 30*time.Second, "machine gone", func() (bool, string) {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(m), &v1alpha1.Machine{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	var secrets corev1.SecretList
	require.NoError(t, k8s.List(ctx, &secrets, client.InNamespace(lifecycle.BootstrapTokenNamespace),
		client.MatchingLabels{machines.TokenMachineUIDLabel: string(m.UID)}))
	require.Empty(t, secrets.Items, "the token is left")
}

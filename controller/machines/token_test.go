package machines

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
	"github.com/purelifecycle/machine/lifecycle"
)

func TestTokenIDsAreValidAndDistinctPerUID(t *testing.T) {
	seen := map[string]string{}
	for i := range 2000 {
		uid := fmt.Sprintf("9b2c4e1a-0000-4000-8000-%012d", i)
		for n := range 3 {
			id := tokenIDOf(uid, n)
			require.True(t, validTokenID(id), id)
			key := fmt.Sprint(uid, "/", n)
			require.Empty(t, seen[id], "%s and %s give %s", key, seen[id], id)
			seen[id] = key
		}
	}
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{UID: "9b2c4e1a-0000-4000-8000-000000000001"}}
	require.Equal(t, tokenIDOf(string(m.UID), 0), TokenIDFromUID(m), "the UID's first ID")
	require.Equal(t, TokenIDFromUID(m), TokenIDFromUID(m.DeepCopy()), "deterministic")
}

func TestTokenIDFromNameIsMCMsAndHandlesShortNames(t *testing.T) {
	name := func(n string) *v1alpha1.Machine { return &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: n}} }
	require.Equal(t, "6b6572", TokenIDFromName(name("worker-1")))
	require.Equal(t, "6b6572", TokenIDFromName(name("worker-9")), "MCM's derivation collides")
	for _, short := range []string{"", "a", "ab", "abc", "abcd"} {
		id := TokenIDFromName(name(short))
		require.True(t, validTokenID(id), "%q gives %q", short, id)
	}
}

func TestValidTokenID(t *testing.T) {
	for _, id := range []string{"abc123", "000000", "zzzzzz"} {
		require.True(t, validTokenID(id), id)
	}
	for _, id := range []string{"", "abc12", "abc1234", "ABC123", "abc-12", "abc 12"} {
		require.False(t, validTokenID(id), id)
	}
}

// laggingClient is a manager's client whose cache shows nothing yet: its
// reads go to an empty cache, its writes to the API server.
type laggingClient struct {
	client.Client
	cache client.Reader
}

// Get implements client.Client.
func (c laggingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.cache.Get(ctx, key, obj, opts...)
}

// A token the controller just made is one the cache may not show yet: it
// must be taken as existing all the same, or a machine whose deletion
// begins right after its token was made (deletion deletes the token once,
// when it begins) leaves the token behind. Once the controller deleted
// it, it is gone.
func TestTokenJustMadeExistsBeforeTheCacheShowsIt(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1alpha1.AddToScheme(s))
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m", UID: "9b2c4e1a-0000-4000-8000-000000000001"}}
	api := fake.NewClientBuilder().WithScheme(s).WithObjects(m).WithStatusSubresource(m).Build()
	cache := fake.NewClientBuilder().WithScheme(s).Build()
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	r := &Reconciler{client: laggingClient{Client: api, cache: cache}, reader: api, writes: newOwnWrites(),
		tokenID: TokenIDFromUID, now: func() time.Time { return now }}
	require.NoError(t, api.Get(ctx, client.ObjectKeyFromObject(m), m))
	p := &pass{r: r, key: client.ObjectKeyFromObject(m), m: m, log: logr.Discard()}

	w, err := r.ensureToken(ctx, p, "m", now.Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, lifecycle.WriteOK, w)
	require.NoError(t, api.Get(ctx, tokenKey(p.m.Status.BootstrapTokenID), &corev1.Secret{}), "the token was made")
	require.True(t, r.tokenExists(ctx, p.m, now), "a token made and not in the cache yet")
	other := p.m.DeepCopy()
	other.UID = "9b2c4e1a-0000-4000-8000-000000000002"
	require.False(t, r.tokenExists(ctx, other, now), "another incarnation's")

	w, err = r.deleteToken(ctx, p, "m")
	require.NoError(t, err)
	require.Equal(t, lifecycle.WriteOK, w)
	require.False(t, r.tokenExists(ctx, p.m, now), "deleted")
}

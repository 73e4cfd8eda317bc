package machines

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/purelifecycle/machine/controller/api/v1alpha1"
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

package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The probes and the metrics endpoint, as the command serves them: the
// probes to anyone, the metrics over HTTPS to a bearer token the API
// server authenticates and authorizes for the non-resource URL /metrics.
func TestProbesAndAuthenticatedMetrics(t *testing.T) {
	needEnv(t)
	t.Parallel()
	probes, metricsAddr := freeAddr(t), freeAddr(t)
	startManager(t, "serving", newProvider("zone-serving"), func(o *options) {
		o.probeAddr, o.metricsAddr = probes, metricsAddr
	})
	plain := &http.Client{Timeout: 10 * time.Second}

	t.Run("probes", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz", "/readyz/informers"} {
			eventually(t, 20*time.Second, path+" answers 200", func() (bool, string) {
				code, body := get(t, plain, "http://"+probes+path, "")
				return code == http.StatusOK, fmt.Sprint(code, " ", body)
			})
		}
	})

	t.Run("metrics", func(t *testing.T) {
		ctx := context.Background()
		secure := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			// The manager serves a certificate of its own making.
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a test against a self-signed server
		}}
		url := "https://" + metricsAddr + "/metrics"
		eventually(t, 20*time.Second, "metrics served", func() (bool, string) {
			code, body := get(t, secure, url, "")
			return code != 0, body
		})

		code, _ := get(t, secure, url, "")
		require.Equal(t, http.StatusUnauthorized, code, "no token")
		// A token the TokenReview rejects: controller-runtime's filter
		// answers 500 to it, as to any error of the authenticator.
		code, body := get(t, secure, url, "not-a-token")
		require.NotEqual(t, http.StatusOK, code, "a token the API server does not know")
		require.NotContains(t, body, "purelifecycle_")

		// Two service accounts: the filter caches a refusal per user for
		// half a minute, so the allowed one is bound before its first request.
		denied, reader := serviceAccountToken(t, "metrics-denied"), serviceAccountToken(t, "metrics-reader")
		code, _ = get(t, secure, url, denied)
		require.Equal(t, http.StatusForbidden, code, "a token without the right to get /metrics")

		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "test-metrics-reader"},
			Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
		require.NoError(t, k8s.Create(ctx, role))
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "test-metrics-reader"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "metrics-reader"}}}
		require.NoError(t, k8s.Create(ctx, binding))
		eventually(t, 20*time.Second, "the authorized token reads the metrics", func() (bool, string) {
			code, body := get(t, secure, url, reader)
			return code == http.StatusOK && strings.Contains(body, "purelifecycle_anomalies_total"), fmt.Sprint(code)
		})
		code, _ = get(t, secure, url, denied)
		require.Equal(t, http.StatusForbidden, code, "the unauthorized token still refused")
	})
}

// serviceAccountToken creates a service account in default and returns a
// token of it.
func serviceAccountToken(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	require.NoError(t, k8s.Create(ctx, sa))
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(600))}}
	require.NoError(t, k8s.SubResource("token").Create(ctx, sa, tr))
	require.NotEmpty(t, tr.Status.Token)
	return tr.Status.Token
}

// get GETs url with the bearer token (none when ""), and returns the status
// code (0 when the request failed) and the body.
func get(t *testing.T, c *http.Client, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func ptrTo[T any](v T) *T { return &v }

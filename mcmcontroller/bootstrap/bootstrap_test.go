package bootstrap

import (
	"bytes"
	"crypto/rand"
	"errors"
	"net/url"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	corev1 "k8s.io/api/core/v1"
)

const token = "abc123.0123456789abcdef"

func TestFillReplacesEveryPlainPlaceholder(t *testing.T) {
	in := []byte("#!/bin/sh\nTOKEN=<<BOOTSTRAP_TOKEN>>\nNAME=<<MACHINE_NAME>>\necho <<BOOTSTRAP_TOKEN>> <<MACHINE_NAME>>\n")
	orig := bytes.Clone(in)
	out, f := Fill(in, token, "shoot--a--worker-x")
	want := "#!/bin/sh\nTOKEN=" + token + "\nNAME=shoot--a--worker-x\necho " + token + " shoot--a--worker-x\n"
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	if f != (Filled{Token: Plain, MachineName: Plain}) {
		t.Fatalf("filled %+v", f)
	}
	if !bytes.Equal(in, orig) {
		t.Fatal("the input changed")
	}
}

// An Ignition config carries its files as data URLs: the placeholders are
// URL-encoded there, and so are the values written for them.
func TestFillReplacesURLEncodedPlaceholders(t *testing.T) {
	name := "worker+1 ä" // a name no Kubernetes object has, to see the encoding
	in := `{"contents":{"source":"data:,TOKEN%3D` + url.QueryEscape(TokenPlaceholder) +
		`%0ANAME%3D` + url.QueryEscape(MachineNamePlaceholder) + `"}}`
	out, f := Fill([]byte(in), token, name)
	want := `{"contents":{"source":"data:,TOKEN%3D` + url.QueryEscape(token) + `%0ANAME%3D` + url.QueryEscape(name) + `"}}`
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	if f != (Filled{Token: URLEncoded, MachineName: URLEncoded}) {
		t.Fatalf("filled %+v", f)
	}
	if strings.Contains(string(out), "BOOTSTRAP") || strings.Contains(string(out), "MACHINE_NAME") {
		t.Fatal("a placeholder is left")
	}
}

// As in MCM, the URL-encoded form is looked for only when the plain one is
// not there: a user data holding both has only its plain placeholder
// filled.
func TestFillPrefersThePlainForm(t *testing.T) {
	in := TokenPlaceholder + " " + url.QueryEscape(TokenPlaceholder)
	out, f := Fill([]byte(in), token, "m")
	if want := token + " " + url.QueryEscape(TokenPlaceholder); string(out) != want || f.Token != Plain {
		t.Fatalf("got %q (%v), want %q", out, f.Token, want)
	}
}

func TestFillWithoutPlaceholders(t *testing.T) {
	in := []byte("#cloud-config\n")
	out, f := Fill(in, token, "m")
	if string(out) != string(in) || f != (Filled{}) {
		t.Fatalf("got %q %+v", out, f)
	}
	if f.Token.String() != "absent" {
		t.Fatalf("Absent is %q", f.Token)
	}
}

// Without a target cluster there is no token: its placeholder stays, the
// machine's name is filled.
func TestFillWithoutToken(t *testing.T) {
	out, f := Fill([]byte(TokenPlaceholder+MachineNamePlaceholder), "", "m")
	if string(out) != TokenPlaceholder+"m" || f.Token != Absent || f.MachineName != Plain {
		t.Fatalf("got %q %+v", out, f)
	}
}

func TestFormNames(t *testing.T) {
	for f, want := range map[Form]string{Absent: "absent", Plain: "plain", URLEncoded: "URL-encoded", 9: "Form(?)"} {
		if got := f.String(); got != want {
			t.Errorf("%d: %q, want %q", f, got, want)
		}
	}
}

func TestTokenSecret(t *testing.T) {
	exp := time.Date(2026, 11, 29, 1, 20, 0, 0, time.FixedZone("CET", 3600))
	tok := Token{ID: TokenID("shoot--p--worker-1"), MachineName: "shoot--p--worker-1", MachineUID: "uid-1",
		Expires: exp, ExtraGroups: "system:bootstrappers:machine-controller-manager"}
	s, err := tok.Secret(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if s.Namespace != "kube-system" || s.Name != "bootstrap-token-"+tok.ID || s.Type != corev1.SecretTypeBootstrapToken {
		t.Fatalf("secret %s/%s of type %s", s.Namespace, s.Name, s.Type)
	}
	for k, want := range map[string]string{
		"token-id": tok.ID, "expiration": "2026-11-29T00:20:00Z",
		"usage-bootstrap-authentication": "true", "usage-bootstrap-signing": "true",
		"auth-extra-groups": "system:bootstrappers:machine-controller-manager",
	} {
		if got := string(s.Data[k]); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	if !strings.Contains(string(s.Data["description"]), `"shoot--p--worker-1"`) {
		t.Errorf("the description does not name the machine: %q", s.Data["description"])
	}
	if Owner(s) != "uid-1" {
		t.Errorf("owner %q", Owner(s))
	}
	v := Value(s)
	if len(v) != 23 || !strings.HasPrefix(v, tok.ID+".") {
		t.Fatalf("token %q", v)
	}
	other, err := tok.Secret(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if Value(other) == v {
		t.Fatal("two secrets drew the same token")
	}
}

// worker-1 to worker-9 share MCM's token ID: the label tells whose secret
// is whose.
func TestNamesEndingAlikeShareAnIDTheLabelTellsApart(t *testing.T) {
	if TokenID("worker-1") != TokenID("worker-9") {
		t.Fatal("MCM's derivation gives worker-1 and worker-9 different IDs")
	}
	a, _ := (&Token{ID: TokenID("worker-1"), MachineName: "worker-1", MachineUID: "u1"}).Secret(rand.Reader)
	b, _ := (&Token{ID: TokenID("worker-9"), MachineName: "worker-9", MachineUID: "u9"}).Secret(rand.Reader)
	if a.Name != b.Name || Owner(a) == Owner(b) {
		t.Fatalf("%s %s / %s %s", a.Name, Owner(a), b.Name, Owner(b))
	}
}

// Short names (MCM panics below five bytes) still give a valid ID.
func TestShortNamesGiveValidIDs(t *testing.T) {
	for _, name := range []string{"", "a", "ab", "abc", "abcd", "abcde"} {
		id := TokenID(name)
		if !validID(id) {
			t.Errorf("%q: ID %q", name, id)
		}
		if _, err := (&Token{ID: id, MachineName: name}).Secret(rand.Reader); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
}

func TestTokenSecretRefusesABadID(t *testing.T) {
	for _, id := range []string{"", "abc", "ABCDEF", "abc-12", "abcdefg"} {
		if _, err := (&Token{ID: id}).Secret(rand.Reader); !errors.Is(err, ErrTokenID) {
			t.Errorf("ID %q: %v", id, err)
		}
	}
}

func TestTokenSecretReportsAFailingRandomSource(t *testing.T) {
	want := errors.New("no entropy")
	if _, err := (&Token{ID: "abcdef"}).Secret(iotest.ErrReader(want)); !errors.Is(err, want) {
		t.Fatalf("error %v", err)
	}
}

// Every character of tokenChars is drawn, and none other, from a source
// that gives every byte value.
func TestRandomStringDrawsEveryCharacter(t *testing.T) {
	all := make([]byte, 0, 256*8)
	for range 8 {
		for b := range 256 {
			all = append(all, byte(b))
		}
	}
	s, err := randomString(bytes.NewReader(all), 36*8)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range tokenChars {
		if n := strings.Count(s, string(c)); n != 8 {
			t.Errorf("%c drawn %d times, want 8", c, n)
		}
	}
}

// A secret that is not a complete token has no value.
func TestValueOfIncompleteSecrets(t *testing.T) {
	for _, data := range []map[string][]byte{
		nil,
		{"token-id": []byte("abcdef")},
		{"token-id": []byte("abcdef"), "token-secret": []byte("short")},
		{"token-id": []byte("ABCDEF"), "token-secret": []byte("0123456789abcdef")},
		{"token-id": []byte("abcdef"), "token-secret": []byte("0123456789ABCDEF")},
	} {
		if v := Value(&corev1.Secret{Data: data}); v != "" {
			t.Errorf("%v: %q", data, v)
		}
	}
}

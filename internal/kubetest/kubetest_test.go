package kubetest

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

// TestServer: the server answers the admin token, kubectl works with
// Kubeconfig and sees the version the binary was stamped with, and a
// ServiceAccount token authenticates as that ServiceAccount.
func TestServer(t *testing.T) {
	s := Start(t)
	if s2 := Start(t); s2 != s {
		t.Fatal("a second Start started another server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := exec.LookPath("kubectl"); err == nil {
		out, err := exec.CommandContext(ctx, "kubectl", "--kubeconfig", s.Kubeconfig, "version", "-o", "json").Output()
		if err != nil {
			t.Fatalf("kubectl version: %v: %s", err, out)
		}
		var v struct {
			Server struct{ GitVersion string } `json:"serverVersion"`
		}
		if err := json.Unmarshal(out, &v); err != nil || v.Server.GitVersion != KubernetesVersion {
			t.Fatalf("kubectl version: server %q (%v), want %s: %s", v.Server.GitVersion, err, KubernetesVersion, out)
		}
	}
	ns := s.Namespace(t, "kubetest")
	token := s.ServiceAccountToken(t, ns, "sa")
	code, body, err := s.Request(ctx, token, http.MethodPost, "/apis/authentication.k8s.io/v1/selfsubjectreviews",
		map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
	if err != nil || code != http.StatusCreated {
		t.Fatalf("SelfSubjectReview: %d %v: %s", code, err, body)
	}
	if want := `"username":"system:serviceaccount:` + ns + `:sa"`; !strings.Contains(string(body), want) {
		t.Fatalf("SelfSubjectReview with the ServiceAccount's token: %s; want %s", body, want)
	}
	// An unknown token is refused.
	if code, _, _ := s.Request(ctx, "not-a-token", http.MethodGet, "/api/v1/namespaces", nil); code != http.StatusUnauthorized {
		t.Fatalf("an unknown token: status %d, want 401", code)
	}
}

// TestVersionsMatchScript: Start looks for the versions the script builds.
func TestVersionsMatchScript(t *testing.T) {
	b, err := os.ReadFile("../../scripts/kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"k8s_version": KubernetesVersion, "etcd_version": EtcdVersion} {
		m := regexp.MustCompile(`(?m)^` + name + `=(\S+)$`).FindSubmatch(b)
		if m == nil || string(m[1]) != want {
			t.Errorf("scripts/kube-apiserver sets %s to %q, kubetest looks for %s", name, m, want)
		}
	}
}

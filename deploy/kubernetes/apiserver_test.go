package kubernetes

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/weirhq/weir/internal/kubetest"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

// kubectl runs kubectl against srv as its admin and returns its output.
func kubectl(t *testing.T, srv *kubetest.Server, args ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err != nil {
		if kubetest.InCI() {
			t.Fatal("kubectl is not on PATH (CI needs it for the manifests' checks against the API server)")
		}
		t.Skip("kubectl is not on PATH")
	}
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", srv.Kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}

// TestManifestsAgainstAPIServer: a real kube-apiserver (internal/kubetest)
// accepts every manifest of deploy/kubernetes with strict validation
// (kubectl apply --dry-run=server --validate=strict), and the RBAC they
// grant, applied for real, lets the JobManagers' ServiceAccount manage
// Leases and ConfigMaps of its namespace and nothing else.
func TestManifestsAgainstAPIServer(t *testing.T) {
	srv := kubetest.Start(t)
	ns := srv.Namespace(t, "deploy")
	if out, err := kubectl(t, srv, "apply", "--dry-run=server", "--validate=strict", "-n", ns, "-k", "."); err != nil {
		t.Fatalf("kubectl apply --dry-run=server --validate=strict -k deploy/kubernetes: %v\n%s", err, out)
	} else if n := strings.Count(out, "(server dry run)"); n < 8 {
		t.Errorf("the dry run named %d objects, want every manifest's:\n%s", n, out)
	}
	if out, err := kubectl(t, srv, "apply", "-n", ns, "-f", "rbac.yaml"); err != nil {
		t.Fatalf("kubectl apply -f rbac.yaml: %v\n%s", err, out)
	}
	as := "system:serviceaccount:" + ns + ":weir"
	for _, c := range []struct {
		verb, resource, namespace string
		want                      bool
	}{
		{"create", "leases.coordination.k8s.io", ns, true},
		{"update", "leases.coordination.k8s.io", ns, true},
		{"get", "configmaps", ns, true},
		{"update", "configmaps", ns, true},
		{"get", "secrets", ns, false},
		{"list", "pods", ns, false},
		{"create", "deployments.apps", ns, false},
		{"get", "configmaps", "default", false},
		{"update", "leases.coordination.k8s.io", "kube-system", false},
	} {
		out, err := kubectl(t, srv, "auth", "can-i", c.verb, c.resource, "-n", c.namespace, "--as", as)
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("kubectl auth can-i: %v: %s", err, out)
		}
		if got := strings.TrimSpace(out) == "yes"; got != c.want {
			t.Errorf("kubectl auth can-i %s %s -n %s --as %s: %q, want allowed %v", c.verb, c.resource, c.namespace, as, strings.TrimSpace(out), c.want)
		}
	}
}

package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/kubetest"
	"github.com/weirhq/weir/internal/testseed"
)

// TestHAKubernetesLeaderKilled: JobManager processes elect their leader
// on a real kube-apiserver (internal/kubetest) with the ServiceAccount and
// RBAC of deploy/kubernetes (only Leases and ConfigMaps), and its token:
// SIGKILL of the leader mid-job, the standby leads within twice the lease
// and the job commits exactly once.
func TestHAKubernetesLeaderKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("processes and a kube-apiserver: the full pass runs it")
	}
	srv := kubetest.Start(t)
	ns := srv.Namespace(t, "ha")
	out, err := exec.Command("kubectl", "--kubeconfig", srv.Kubeconfig, "apply", "-n", ns, "-f", filepath.Join("..", "..", "deploy", "kubernetes", "rbac.yaml")).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply deploy/kubernetes/rbac.yaml: %v\n%s", err, out)
	}
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte(srv.ServiceAccountToken(t, ns, "weir")), 0o600); err != nil {
		t.Fatal(err)
	}
	r := testseed.Rand(t, 40)
	flags := append(haTimings(fmt.Sprintf("t%d", r.Uint32())), "-D", "high-availability.type=kubernetes", "-D", "kubernetes.namespace="+ns,
		"-D", "high-availability.kubernetes.api-server="+srv.URL, "-D", "high-availability.kubernetes.token-file="+token,
		"-D", "high-availability.kubernetes.ca-file="+srv.CAFile)
	c := (&haCluster{}).start(t, r, flags)
	if err := c.a.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	took := waitStderr(t, c.b.p, "JobManager leads", 4*haLease+5*time.Second)
	t.Logf("the standby leads %v after SIGKILL of the leader (lease %v)", took, haLease)
	// The Lease is in whole seconds and the API server's clock is its own:
	// a second of slack beyond twice the lease.
	if took > 2*haLease+time.Second {
		t.Errorf("the standby took %v to lead, more than twice the lease (%v)", took, haLease)
	}
	c.exactlyOnce(t)
}

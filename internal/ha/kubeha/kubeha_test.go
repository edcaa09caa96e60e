package kubeha

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/internal/ha"
	"github.com/weirhq/weir/internal/ha/hatest"
	"github.com/weirhq/weir/internal/kubetest"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

// Short terms, as the conformance suite's.
var testSettings = ha.Settings{Type: "kubernetes", LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 250 * time.Millisecond}

// slack is what a measured time may exceed its bound by on a busy machine.
const slack = 750 * time.Millisecond

var testLogger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))

// writeToken writes token to a file of t's and returns its path.
func writeToken(t testing.TB, token string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// factory connects contenders to srv (or to apiServer, a proxy of it,
// when not empty) in namespace with the token in tokenFile.
func factory(srv *kubetest.Server, apiServer, namespace, tokenFile string) hatest.Factory {
	if apiServer == "" {
		apiServer = srv.URL
	}
	return func(t *testing.T, s ha.Settings) ha.Service {
		t.Helper()
		s.Type, s.Namespace, s.APIServer, s.TokenFile, s.CAFile = "kubernetes", namespace, apiServer, tokenFile, srv.CAFile
		svc, err := New(context.Background(), s, testLogger)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { svc.Close() })
		return svc
	}
}

// The verbs the driver is documented to need (client.go's hint for a 403),
// and those deploy/kubernetes grants (leases and configmaps, all verbs).
var (
	driverLeaseVerbs     = []string{"get", "create", "update"}
	driverConfigMapVerbs = []string{"get", "list", "create", "update"}
	deployVerbs          = []string{"get", "list", "watch", "create", "update", "patch", "delete"}
)

// restrictedAccount creates in namespace a ServiceAccount "weir" with a
// Role that grants only what the driver is documented to need, and
// returns a file holding its token.
func restrictedAccount(t *testing.T, srv *kubetest.Server, namespace string) string {
	return account(t, srv, namespace, driverLeaseVerbs, driverConfigMapVerbs)
}

// account creates in namespace a ServiceAccount "weir" with a Role that
// grants leaseVerbs on leases and cmVerbs on configmaps, and returns a file
// holding its token.
func account(t *testing.T, srv *kubetest.Server, namespace string, leaseVerbs, cmVerbs []string) string {
	t.Helper()
	token := srv.ServiceAccountToken(t, namespace, "weir")
	srv.Create(t, "/apis/rbac.authorization.k8s.io/v1/namespaces/"+namespace+"/roles", map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": map[string]any{"name": "weir-ha"},
		"rules": []map[string]any{
			{"apiGroups": []string{"coordination.k8s.io"}, "resources": []string{"leases"}, "verbs": leaseVerbs},
			{"apiGroups": []string{""}, "resources": []string{"configmaps"}, "verbs": cmVerbs},
		},
	})
	srv.Create(t, "/apis/rbac.authorization.k8s.io/v1/namespaces/"+namespace+"/rolebindings", map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": map[string]any{"name": "weir-ha"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "weir-ha"},
		"subjects": []map[string]any{{"kind": "ServiceAccount", "name": "weir", "namespace": namespace}},
	})
	return writeToken(t, token)
}

// TestConformance runs internal/ha/hatest on the driver, whose contenders
// authenticate as a ServiceAccount that may only get, create and update
// leases and get, list, create and update configmaps of its namespace: the
// driver needs no more.
func TestConformance(t *testing.T) {
	srv := kubetest.Start(t)
	ns := srv.Namespace(t, "conformance")
	hatest.Run(t, factory(srv, "", ns, restrictedAccount(t, srv, ns)))
}

// TestServiceAccountMayUseOnlyLeasesAndConfigMaps checks a Role of
// deploy/kubernetes' verbs with kubectl auth can-i, as the admin
// impersonating the ServiceAccount: it reaches leases and configmaps of
// its namespace, and nothing else.
func TestServiceAccountMayUseOnlyLeasesAndConfigMaps(t *testing.T) {
	srv := kubetest.Start(t)
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not on PATH")
	}
	ns := srv.Namespace(t, "rbac")
	account(t, srv, ns, deployVerbs, deployVerbs)
	as := "system:serviceaccount:" + ns + ":weir"
	for _, c := range []struct {
		verb, resource, namespace string
		want                      bool
	}{
		{"get", "leases.coordination.k8s.io", ns, true},
		{"update", "leases.coordination.k8s.io", ns, true},
		{"create", "configmaps", ns, true},
		{"list", "configmaps", ns, true},
		{"get", "secrets", ns, false},
		{"list", "secrets", ns, false},
		{"create", "pods", ns, false},
		{"get", "configmaps", "default", false},
		{"update", "leases.coordination.k8s.io", "kube-system", false},
	} {
		cmd := exec.Command("kubectl", "--kubeconfig", srv.Kubeconfig, "auth", "can-i", c.verb, c.resource, "-n", c.namespace, "--as", as)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("kubectl auth can-i: %v: %s", err, out)
		}
		got := strings.TrimSpace(string(out)) == "yes"
		if got != c.want || (err == nil) != c.want {
			t.Errorf("kubectl auth can-i %s %s -n %s --as %s: %q (%v), want allowed %v", c.verb, c.resource, c.namespace, as, out, err, c.want)
		}
	}
}

// TestForbiddenNamesWhatIsMissing: a token without the Role fails New with
// an error naming the API server, the object, the status and the verbs.
func TestForbiddenNamesWhatIsMissing(t *testing.T) {
	srv := kubetest.Start(t)
	ns := srv.Namespace(t, "forbidden")
	tok := writeToken(t, srv.ServiceAccountToken(t, ns, "nobody"))
	s := testSettings
	s.ClusterID, s.Namespace, s.APIServer, s.TokenFile, s.CAFile = "c", ns, srv.URL, tok, srv.CAFile
	_, err := New(context.Background(), s, testLogger)
	for _, want := range []string{srv.URL, "Lease " + ns + "/c-leader", "status 403", "leases (coordination.k8s.io)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("New with a token of no rights: %v; want an error containing %q", err, want)
		}
	}
}

// contender connects one contender of clusterID with the admin token.
func contender(t *testing.T, srv *kubetest.Server, apiServer, ns, clusterID string) *service {
	t.Helper()
	s := testSettings
	s.ClusterID = clusterID
	return factory(srv, apiServer, ns, writeToken(t, srv.AdminToken))(t, s).(*service)
}

// TestZombieWithStoppedClockIsFenced: a leader that believes its term
// still holds (its process was paused past its lease, so its clock check
// passes) is refused by the store's epoch once another leads: the fencing
// does not depend on the zombie's clock.
func TestZombieWithStoppedClockIsFenced(t *testing.T) {
	srv := kubetest.Start(t)
	ns := srv.Namespace(t, "zombie")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b := contender(t, srv, "", ns, "z"), contender(t, srv, "", ns, "z")
	ldA, err := a.Campaign(ctx, ha.LeaderInfo{RPCAddress: "a"})
	if err != nil {
		t.Fatal(err)
	}
	zombie := ldA.(*leadership)
	if err := zombie.Store().Put(ctx, "jobs/x", []byte("a1")); err != nil {
		t.Fatal(err)
	}
	// A stops renewing, but its clock says its term holds for an hour.
	a.PauseRenewals()
	zombie.lastRenew.Store(mono(time.Now().Add(time.Hour)))
	start := time.Now()
	ldB, err := b.Campaign(ctx, ha.LeaderInfo{RPCAddress: "b"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("B won epoch %d %v after A (epoch %d) stopped renewing", ldB.Epoch(), time.Since(start).Round(time.Millisecond), zombie.Epoch())
	if zombie.holds() != nil {
		t.Fatal("the zombie's clock check refuses: the test does not reach the store's fencing")
	}
	for name, write := range map[string]func() error{
		"Put":       func() error { return zombie.Store().Put(ctx, "jobs/x", []byte("a2")) },
		"Delete":    func() error { return zombie.Store().Delete(ctx, "jobs/x") },
		"Increment": func() error { _, err := zombie.Store().Increment(ctx, "jobs/n"); return err },
	} {
		err := write()
		if !errors.Is(err, ha.ErrNotLeader) || !strings.Contains(err.Error(), fmt.Sprintf("carries leader epoch %d, this term's is %d", ldB.Epoch(), zombie.Epoch())) {
			t.Fatalf("the zombie's %s: %v; want ErrNotLeader naming both epochs", name, err)
		}
	}
	if v, err := ldB.Store().Get(ctx, "jobs/x"); err != nil || string(v) != "a1" {
		t.Fatalf("jobs/x after the zombie's refused writes: %q, %v; want a1", v, err)
	}
}

// TestEpochsGrowAfterLeaseDeleted: with the Lease deleted (by hand, or a
// namespace cleanup that kept the ConfigMaps), the next term's epoch is
// still above the store's, so its leader can stamp and write.
func TestEpochsGrowAfterLeaseDeleted(t *testing.T) {
	srv := kubetest.Start(t)
	ns := srv.Namespace(t, "deleted")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := contender(t, srv, "", ns, "d")
	var last uint64
	for term := range 3 {
		ld, err := a.Campaign(ctx, ha.LeaderInfo{})
		if err != nil {
			t.Fatal(err)
		}
		if ld.Epoch() <= last {
			t.Fatalf("term %d: epoch %d, not above %d", term, ld.Epoch(), last)
		}
		last = ld.Epoch()
		if _, err := ld.Store().Increment(ctx, "n"); err != nil {
			t.Fatalf("term %d: %v", term, err)
		}
		if err := ld.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		code, body, err := srv.Request(ctx, "", http.MethodDelete, "/apis/coordination.k8s.io/v1/namespaces/"+ns+"/leases/d-leader", nil)
		if err != nil || code != http.StatusOK {
			t.Fatalf("deleting the Lease: %d %v %s", code, err, body)
		}
	}
	if v, err := a.Reader().Get(ctx, "n"); err != nil || string(v) != "3" {
		t.Fatalf("counter after 3 terms: %q, %v", v, err)
	}
}

// TestStoreSizeBound: writes that would make one ConfigMap hold more than
// maxStoreBytes fail permanently, naming the ConfigMap and the bound; the
// others' keys still fit.
func TestStoreSizeBound(t *testing.T) {
	srv := kubetest.Start(t)
	ns := srv.Namespace(t, "size")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := contender(t, srv, "", ns, "s")
	ld, err := a.Campaign(ctx, ha.LeaderInfo{})
	if err != nil {
		t.Fatal(err)
	}
	value := make([]byte, ha.MaxValueSize)
	var put int
	for i := 0; ; i++ {
		key := fmt.Sprintf("jobs/%d", i)
		enc, _ := encodeKey(key)
		if shardOf(enc) != 0 {
			continue
		}
		err := ld.Store().Put(ctx, key, value)
		if err == nil {
			put++
			if put > maxStoreBytes/ha.MaxValueSize {
				t.Fatalf("%d values of %d bytes fit in one ConfigMap, above the bound %d", put, len(value), maxStoreBytes)
			}
			continue
		}
		if !failure.IsPermanent(err) || !strings.Contains(err.Error(), "ConfigMap "+ns+"/s-store-0") || !strings.Contains(err.Error(), fmt.Sprint(maxStoreBytes)) {
			t.Fatalf("put #%d: %v; want a permanent error naming the ConfigMap and the bound", put, err)
		}
		break
	}
	if put != maxStoreBytes/(ha.MaxValueSize+8) {
		t.Fatalf("%d values fit, want %d", put, maxStoreBytes/(ha.MaxValueSize+8))
	}
	for i := 0; ; i++ { // a key of another shard still fits
		key := fmt.Sprintf("jobs/other-%d", i)
		if enc, _ := encodeKey(key); shardOf(enc) != 0 {
			if err := ld.Store().Put(ctx, key, value); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
}

// TestDoneWhenUnreachable: the API server goes silent (a proxy drops every
// byte, no FIN, no RST); the leader's Done closes within the renew
// deadline and its writes are refused; when the server answers again (to
// new connections only: the silent one stays silent), the contender drops
// its dead connection, campaigns and leads in a newer epoch.
func TestDoneWhenUnreachable(t *testing.T) {
	srv := kubetest.Start(t)
	ns := srv.Namespace(t, "unreachable")
	p := startProxy(t, strings.TrimPrefix(srv.URL, "https://"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := contender(t, srv, "https://"+p.addr(), ns, "u")
	ld, err := a.Campaign(ctx, ha.LeaderInfo{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * testSettings.RetryPeriod)
	p.silence(true)
	cut := time.Now()
	select {
	case <-ld.Done():
		t.Logf("Done closed %v after the API server went silent (renew deadline %v)", time.Since(cut).Round(time.Millisecond), testSettings.RenewDeadline)
	case <-time.After(testSettings.RenewDeadline + slack):
		t.Fatalf("Done not closed %v after the API server went silent (renew deadline %v)", time.Since(cut), testSettings.RenewDeadline)
	}
	wctx, wcancel := context.WithTimeout(ctx, time.Second)
	err = ld.Store().Put(wctx, "jobs/x", []byte("x"))
	wcancel()
	if !errors.Is(err, ha.ErrNotLeader) {
		t.Fatalf("Put after Done: %v, want ErrNotLeader", err)
	}
	p.silence(false)
	back := time.Now()
	ld2, err := a.Campaign(ctx, ha.LeaderInfo{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("led again %v after the API server answered again", time.Since(back).Round(time.Millisecond))
	if ld2.Epoch() <= ld.Epoch() {
		t.Fatalf("epoch %d after the outage, not above %d", ld2.Epoch(), ld.Epoch())
	}
	if err := ld2.Store().Put(ctx, "jobs/x", []byte("x")); err != nil {
		t.Fatal(err)
	}
}

// TestTokenReadAgainAfter401: the token file's token stops being valid
// (its ServiceAccount is deleted) and a new one is written; the next
// request's 401 makes the client read the file again, and it succeeds.
func TestTokenReadAgainAfter401(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the API server keeps accepting a deleted ServiceAccount's token for up to 10 s (its authentication cache)")
	}
	srv := kubetest.Start(t)
	ns := srv.Namespace(t, "token")
	tokenFile := restrictedAccount(t, srv, ns)
	s := testSettings
	s.ClusterID = "t"
	a := factory(srv, "", ns, tokenFile)(t, s).(*service)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := a.Reader().List(ctx, ""); err != nil {
		t.Fatal(err)
	}
	code, body, err := srv.Request(ctx, "", http.MethodDelete, "/api/v1/namespaces/"+ns+"/serviceaccounts/weir", nil)
	if err != nil || code != http.StatusOK {
		t.Fatalf("deleting the ServiceAccount: %d %v %s", code, err, body)
	}
	// The old token is refused once the ServiceAccount is gone and the
	// API server's cache of authenticated tokens (10 s) forgot it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if code, _, _ := srv.Request(ctx, readToken(t, tokenFile), http.MethodGet, "/api/v1/namespaces/"+ns+"/configmaps", nil); code == http.StatusUnauthorized {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the deleted ServiceAccount's token is still accepted")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := os.WriteFile(tokenFile, []byte(srv.ServiceAccountToken(t, ns, "weir")), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Reader().List(ctx, ""); err != nil {
		t.Fatalf("List after the token file was rewritten: %v", err)
	}
}

func readToken(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// proxy forwards TCP connections to target; silenced, it drops every byte
// both ways (the connections stay open: no FIN, no RST). A connection
// that was silenced, or accepted while silent, stays so for good, as one
// through a partition whose far end went away: only new connections work
// when the proxy speaks again.
type proxy struct {
	l      net.Listener
	target string
	silent atomic.Bool
	mu     sync.Mutex
	conns  map[net.Conn]*atomic.Bool // each connection's dead flag
}

func startProxy(t *testing.T, target string) *proxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{l: l, target: target, conns: map[net.Conn]*atomic.Bool{}}
	t.Cleanup(func() {
		l.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for c := range p.conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *proxy) addr() string { return p.l.Addr().String() }

func (p *proxy) serve(c net.Conn) {
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	dead := &atomic.Bool{}
	p.mu.Lock()
	dead.Store(p.silent.Load())
	p.conns[c], p.conns[u] = dead, dead
	p.mu.Unlock()
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 && !dead.Load() {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		if !dead.Load() {
			dst.Close()
		}
	}
	go pipe(u, c)
	pipe(c, u)
}

func (p *proxy) silence(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.silent.Store(on)
	if on {
		for _, dead := range p.conns {
			dead.Store(true)
		}
	}
}

// TestCloseReleasesTheLease: Close resigns the term it holds, so a standby
// leads within a retry period or so, not after the lease expires.
func TestCloseReleasesTheLease(t *testing.T) {
	srv := kubetest.Start(t)
	ns := srv.Namespace(t, "close")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b := contender(t, srv, "", ns, "c"), contender(t, srv, "", ns, "c")
	ldA, err := a.Campaign(ctx, ha.LeaderInfo{})
	if err != nil {
		t.Fatal(err)
	}
	wins := make(chan ha.Leadership, 1)
	go func() {
		ld, err := b.Campaign(ctx, ha.LeaderInfo{})
		if err != nil {
			t.Error(err)
		}
		wins <- ld
	}()
	time.Sleep(2 * testSettings.RetryPeriod)
	closed := time.Now()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if !isClosed(ldA.Done()) {
		t.Fatal("A's Done is open after Close")
	}
	ldB := <-wins
	// Without the release B would wait out the lease from its last
	// observation of a renewal: 1.45 s at least (2 s less two retry periods).
	if d := time.Since(closed); d > testSettings.LeaseDuration*6/10 {
		t.Fatalf("B led %v after A closed, want well within the lease duration %v (Close releases the lease)", d, testSettings.LeaseDuration)
	}
	if ldB != nil && ldB.Epoch() <= ldA.Epoch() {
		t.Fatalf("B's epoch %d, not above A's %d", ldB.Epoch(), ldA.Epoch())
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestInPodNamespace: in a pod (the service host and port in the
// environment, the ServiceAccount's token, ca.crt and namespace in its
// folder) with kubernetes.namespace unset, the driver uses the pod's
// namespace, the only one its ServiceAccount may use, and leads there.
func TestInPodNamespace(t *testing.T) {
	srv := kubetest.Start(t)
	ns := srv.Namespace(t, "pod")
	token, err := os.ReadFile(restrictedAccount(t, srv, ns))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(srv.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, b := range map[string][]byte{"token": token, "ca.crt": ca, "namespace": []byte(ns)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	saved := serviceAccountDir
	serviceAccountDir = dir
	t.Cleanup(func() { serviceAccountDir = saved })
	host, port, err := net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(envServiceHost, host)
	t.Setenv(envServicePort, port)
	s, err := ha.ParseSettings(map[string]string{"high-availability.type": "kubernetes", "high-availability.cluster-id": "pod"})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := New(context.Background(), s, testLogger)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if got := svc.(*service).ns; got != ns {
		t.Fatalf("namespace %q, want the pod's %q", got, ns)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ld, err := svc.Campaign(ctx, ha.LeaderInfo{RPCAddress: "a"})
	if err != nil {
		t.Fatalf("campaigning in the pod's namespace: %v", err)
	}
	ld.Resign(ctx)
}

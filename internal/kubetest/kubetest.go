package kubetest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/flinktest"
	"github.com/weirhq/weir/internal/testport"
)

// Versions scripts/kube-apiserver builds; Start checks its stamps.
const (
	KubernetesVersion = "v1.37.2"
	EtcdVersion       = "v3.7.3"
)

// BuildCommand builds the binaries Start runs.
const BuildCommand = "scripts/kube-apiserver build"

// StartLimit bounds the start of etcd and kube-apiserver until /readyz
// answers ok (1-4 s on an idle machine; a loaded 2-core CI machine is
// slower).
const StartLimit = 90 * time.Second

// Server is a running kube-apiserver.
type Server struct {
	// URL is the API server's base URL (https://127.0.0.1:port).
	URL string
	// CAFile is the PEM file of the certificate that signs the server's
	// serving certificate (it is self-signed: the same certificate).
	CAFile string
	// AdminToken authenticates as user "admin" of group system:masters.
	AdminToken string
	// Kubeconfig is a kubeconfig file with the admin token, for kubectl.
	Kubeconfig string

	dir            string
	etcd, apiserve *proc
	client         *http.Client
}

var (
	mu      sync.Mutex
	started *Server
	failed  error // why the start failed; later tests fail the same way at once
)

// InCI reports whether the tests run under CI, where missing binaries fail
// a test rather than skip it.
func InCI() bool { return flinktest.InCI() }

// Main runs the tests, then stops the server they started (if any) and
// exits. Use it as TestMain's body:
//
//	func TestMain(m *testing.M) { kubetest.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop stops the server this test binary started (if any) and removes its
// folder. It is safe to call more than once.
func Stop() {
	mu.Lock()
	defer mu.Unlock()
	if started != nil {
		started.stop()
		started = nil
	}
}

// Start returns this test binary's API server, starting it on the first
// call. Without the binaries it fails the test under CI and skips it
// elsewhere, naming the command that builds them.
func Start(t testing.TB) *Server {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if started != nil {
		return started
	}
	if failed != nil {
		t.Fatalf("kubetest: the API server did not start for an earlier test: %v", failed)
	}
	bin, err := binDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct{ name, version string }{{"etcd", EtcdVersion}, {"kube-apiserver", KubernetesVersion}} {
		v, _ := os.ReadFile(filepath.Join(bin, "."+b.name+".version"))
		if _, err := os.Stat(filepath.Join(bin, b.name)); err != nil || strings.TrimSpace(string(v)) != b.version {
			flinktest.MissingTool(t, "no %s %s in %s: build it with `%s` (about 6 minutes cold)", b.name, b.version, bin, BuildCommand)
		}
	}
	begin := time.Now()
	var s *Server
	for try := 0; ; try++ {
		s, err = start(bin)
		if err == nil || try == 2 || !errors.Is(err, errPortTaken) {
			break
		}
	}
	if err != nil {
		failed = err
		t.Fatalf("kubetest: %v", err)
	}
	t.Logf("kubetest: started kube-apiserver %s at %s in %v (folder %s)", KubernetesVersion, s.URL, time.Since(begin).Round(time.Millisecond), s.dir)
	started = s
	return s
}

var errPortTaken = errors.New("a port was taken")

func start(bin string) (s *Server, err error) {
	dir, err := os.MkdirTemp("", "weir-kubetest-")
	if err != nil {
		return nil, err
	}
	s = &Server{dir: dir, AdminToken: randomHex(16)}
	defer func() {
		if err != nil {
			s.stop()
		}
	}()
	if err := s.writeFiles(); err != nil {
		return nil, fmt.Errorf("kubetest: writing the server's files in %s: %w", dir, err)
	}
	ports, err := testport.Free(3)
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	s.URL = "https://127.0.0.1:" + strconv.Itoa(ports[2])
	if err := s.writeKubeconfig(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartLimit)
	defer cancel()

	s.etcd, err = spawn(dir, "etcd.log", filepath.Join(bin, "etcd"),
		"--name=kubetest", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=kubetest="+peerURL,
		// A test server: losing its data in a machine crash is fine, and
		// fsyncs would slow every write on a shared CI disk.
		"--unsafe-no-fsync", "--log-level=warn")
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, http.DefaultClient, etcdURL+"/health", "", s.etcd, filepath.Join(dir, "etcd.log")); err != nil {
		return nil, fmt.Errorf("kubetest: etcd at %s: %w", etcdURL, err)
	}

	f := func(name string) string { return filepath.Join(dir, name) }
	s.apiserve, err = spawn(dir, "kube-apiserver.log", filepath.Join(bin, "kube-apiserver"),
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+strconv.Itoa(ports[2]),
		"--cert-dir="+f("certs"), "--tls-cert-file="+f("ca.crt"), "--tls-private-key-file="+f("serving.key"),
		"--token-auth-file="+f("tokens.csv"),
		"--authorization-mode=RBAC,Node",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+f("sa.key"), "--service-account-signing-key-file="+f("sa.key"),
		"--api-audiences=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.96.0.0/16",
		// Without a kubelet the default reconciler would publish 127.0.0.1
		// as the kubernetes Service's endpoint, which it refuses.
		"--endpoint-reconciler-type=none",
		"--profiling=false", "--v=0")
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(s.CAFile)
	if err != nil || !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("kubetest: reading %s: %v", s.CAFile, err)
	}
	s.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if err := waitHTTP(ctx, s.client, s.URL+"/readyz", s.AdminToken, s.apiserve, f("kube-apiserver.log")); err != nil {
		return nil, fmt.Errorf("kubetest: kube-apiserver at %s: %w", s.URL, err)
	}
	return s, nil
}

// writeFiles writes the serving certificate and key, the ServiceAccount
// signing key, the static token file and the admin kubeconfig.
func (s *Server) writeFiles() error {
	f := func(name string) string { return filepath.Join(s.dir, name) }
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kubetest-apiserver"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:              []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	s.CAFile = f("ca.crt")
	if err := writePEM(s.CAFile, "CERTIFICATE", der); err != nil {
		return err
	}
	if err := writeECKey(f("serving.key"), key); err != nil {
		return err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	if err := writeECKey(f("sa.key"), saKey); err != nil {
		return err
	}
	if err := os.WriteFile(f("tokens.csv"), []byte(s.AdminToken+`,admin,admin-uid,"system:masters"`+"\n"), 0o600); err != nil {
		return err
	}
	return nil
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

func writeECKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der)
}

// writeKubeconfig writes the admin kubeconfig once the URL is known.
func (s *Server) writeKubeconfig() error {
	s.Kubeconfig = filepath.Join(s.dir, "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kubetest
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: kubetest
  context:
    cluster: kubetest
    user: admin
    namespace: default
current-context: kubetest
`, s.URL, s.CAFile, s.AdminToken)
	return os.WriteFile(s.Kubeconfig, []byte(cfg), 0o600)
}

// proc is a server process and a channel closed when it has exited.
type proc struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// spawn starts a server process whose output goes to dir/logName; the
// kernel kills it when the test binary dies.
func spawn(dir, logName, bin string, args ...string) (*proc, error) {
	log, err := os.Create(filepath.Join(dir, logName))
	if err != nil {
		return nil, err
	}
	defer log.Close() // the child holds its own descriptor
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("kubetest: starting %s: %w", bin, err)
	}
	p := &proc{cmd: cmd, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// waitHTTP polls url until it answers 200, the process exits, or ctx ends;
// errors carry the end of the process's log.
func waitHTTP(ctx context.Context, c *http.Client, url, token string, p *proc, logPath string) error {
	tail := func() string {
		b, _ := os.ReadFile(logPath)
		if len(b) > 3000 {
			b = b[len(b)-3000:]
		}
		return fmt.Sprintf("\nthe end of %s:\n%s", logPath, b)
	}
	var last string
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, b)
		} else {
			last = err.Error()
		}
		select {
		case <-p.exited:
			t := tail()
			err := fmt.Errorf("the process exited before it was ready (%v)%s", p.cmd.ProcessState, t)
			if strings.Contains(t, "address already in use") {
				err = fmt.Errorf("%w: %w", errPortTaken, err)
			}
			return err
		case <-ctx.Done():
			return fmt.Errorf("not ready within %v (last answer: %s)%s", StartLimit, last, tail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *Server) stop() {
	for _, p := range []*proc{s.apiserve, s.etcd} {
		if p == nil {
			continue
		}
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-p.exited
		}
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

// HTTPClient returns a client that trusts the server's certificate.
func (s *Server) HTTPClient() *http.Client { return s.client }

// Request sends one request to the API server with token (the admin's
// when empty) and a JSON body (none when nil), and returns the status and
// the answer's body.
func (s *Server) Request(ctx context.Context, token, method, path string, body any) (int, []byte, error) {
	if token == "" {
		token = s.AdminToken
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// Create creates an object as the admin by a POST to path (the
// collection's, such as /api/v1/namespaces/ns/serviceaccounts); an object
// that exists already is fine.
func (s *Server) Create(t testing.TB, path string, obj any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code, body, err := s.Request(ctx, "", http.MethodPost, path, obj)
	if err != nil {
		t.Fatalf("kubetest: POST %s%s: %v", s.URL, path, err)
	}
	if code != http.StatusCreated && code != http.StatusOK && code != http.StatusConflict {
		t.Fatalf("kubetest: POST %s%s: status %d: %s", s.URL, path, code, body)
	}
}

// Namespace creates a namespace of a fresh name starting with prefix and
// returns its name, so tests sharing the server do not see each other's
// objects.
func (s *Server) Namespace(t testing.TB, prefix string) string {
	t.Helper()
	name := prefix + "-" + randomHex(4)
	s.Create(t, "/api/v1/namespaces", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}})
	return name
}

// ServiceAccountToken returns a token of the ServiceAccount namespace/name
// (valid for an hour), issued by the TokenRequest API; it creates the
// namespace and the ServiceAccount when they do not exist.
func (s *Server) ServiceAccountToken(t testing.TB, namespace, name string) string {
	t.Helper()
	s.Create(t, "/api/v1/namespaces", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": namespace}})
	s.Create(t, "/api/v1/namespaces/"+namespace+"/serviceaccounts",
		map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": name}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := "/api/v1/namespaces/" + namespace + "/serviceaccounts/" + name + "/token"
	code, body, err := s.Request(ctx, "", http.MethodPost, path, map[string]any{
		"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
		"spec": map[string]any{"expirationSeconds": 3600},
	})
	if err != nil || code != http.StatusCreated {
		t.Fatalf("kubetest: TokenRequest POST %s%s: status %d, %v: %s", s.URL, path, code, err, body)
	}
	var tr struct {
		Status struct {
			Token string `json:"token"`
		} `json:"status"`
	}
	if err := json.Unmarshal(body, &tr); err != nil || tr.Status.Token == "" {
		t.Fatalf("kubetest: TokenRequest %s: no token in %s (%v)", path, body, err)
	}
	return tr.Status.Token
}

// binDir is where scripts/kube-apiserver puts the binaries.
func binDir() (string, error) {
	if c := os.Getenv("WEIR_KUBE_CACHE"); c != "" {
		return filepath.Join(c, "bin"), nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, ".cache", "kube-apiserver", "bin"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("kubetest: no go.mod above the test's directory")
		}
		dir = parent
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

package kubeha

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/weirhq/weir/internal/ha"
	"github.com/weirhq/weir/internal/tcpopt"
)

// In-cluster configuration: where a pod finds its API server and its
// ServiceAccount's credentials (a variable for tests only).
var serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

const (
	envServiceHost = "KUBERNETES_SERVICE_HOST"
	envServicePort = "KUBERNETES_SERVICE_PORT"
)

// tokenRefresh is how long a token read from its file is used before the
// file is read again: the kubelet rotates projected ServiceAccount tokens
// (at 80% of their lifetime, an hour at least), and client-go re-reads
// them every minute too.
const tokenRefresh = time.Minute

// requestLimit bounds one request to the API server that has no earlier
// deadline of its own (the store's reads and writes).
const requestLimit = 30 * time.Second

// client is a minimal Kubernetes API client: JSON over HTTPS with a bearer
// token read from a file.
type client struct {
	base      string // https://host:port
	http      *http.Client
	tokenFile string

	mu        sync.Mutex
	token     string
	tokenRead time.Time
}

// config is where the API server is and how to authenticate to it.
type config struct {
	base, tokenFile, caFile, namespace string
}

// resolveConfig takes s's API server, token file and CA file when set
// (a process outside a pod), else the in-cluster values.
func resolveConfig(s ha.Settings) (config, error) {
	if s.APIServer != "" {
		if s.TokenFile == "" {
			return config{}, fmt.Errorf("high-availability.kubernetes.api-server %s needs high-availability.kubernetes.token-file (a file holding a bearer token)", s.APIServer)
		}
		base := strings.TrimRight(s.APIServer, "/")
		if !strings.HasPrefix(base, "https://") && !strings.HasPrefix(base, "http://") {
			return config{}, fmt.Errorf("high-availability.kubernetes.api-server %q: want a URL such as https://10.0.0.1:6443", s.APIServer)
		}
		return config{base: base, tokenFile: s.TokenFile, caFile: s.CAFile, namespace: s.Namespace}, nil
	}
	host, port := os.Getenv(envServiceHost), os.Getenv(envServicePort)
	if host == "" || port == "" {
		return config{}, fmt.Errorf("high-availability.type kubernetes: not in a pod (%s and %s are not set), so set high-availability.kubernetes.api-server and high-availability.kubernetes.token-file",
			envServiceHost, envServicePort)
	}
	c := config{
		base:      "https://" + net.JoinHostPort(host, port),
		tokenFile: serviceAccountDir + "/token",
		caFile:    serviceAccountDir + "/ca.crt",
		namespace: s.Namespace,
	}
	if s.CAFile != "" {
		c.caFile = s.CAFile
	}
	return c, nil
}

// newClient makes the client of c. A connection that goes silent (a
// partition, an API server gone without a FIN) is closed once the
// failure of its requests could matter, so the next request dials again:
// sent data unacknowledged for the lease duration aborts it
// (TCP_USER_TIMEOUT), and an HTTP/2 connection that received nothing for
// the renew deadline is pinged and closed when the ping goes unanswered
// for a retry period (at least a second).
func newClient(c config, s ha.Settings) (*client, error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.caFile != "" {
		pem, err := os.ReadFile(c.caFile)
		if err != nil {
			return nil, fmt.Errorf("reading the Kubernetes API server's CA certificate (high-availability.kubernetes.ca-file): %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("high-availability.kubernetes.ca-file %s holds no PEM certificate", c.caFile)
		}
		tlsConfig.RootCAs = pool
	}
	tr := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 15 * time.Second,
			Control: tcpopt.UserTimeoutControl(s.LeaseDuration)}).DialContext,
		TLSClientConfig:       tlsConfig,
		TLSHandshakeTimeout:   5 * time.Second,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		HTTP2: &http.HTTP2Config{
			SendPingTimeout: s.RenewDeadline,
			PingTimeout:     max(s.RetryPeriod, time.Second),
		},
	}
	cl := &client{base: c.base, http: &http.Client{Transport: tr}, tokenFile: c.tokenFile}
	if _, err := cl.bearer(false); err != nil {
		return nil, err
	}
	return cl, nil
}

// bearer returns the token, read again from its file when it is older than
// tokenRefresh or fresh is set (after a 401).
func (c *client) bearer(fresh bool) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !fresh && c.token != "" && time.Since(c.tokenRead) < tokenRefresh {
		return c.token, nil
	}
	b, err := os.ReadFile(c.tokenFile)
	if err != nil {
		if c.token != "" {
			return c.token, nil // keep the last one; the file may be being replaced
		}
		return "", fmt.Errorf("reading the Kubernetes token (high-availability.kubernetes.token-file): %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("the Kubernetes token file %s is empty (high-availability.kubernetes.token-file)", c.tokenFile)
	}
	c.token, c.tokenRead = tok, time.Now()
	return tok, nil
}

// apiError is an answer of the API server other than success: it names the
// server, the request, the object and the status with its message.
type apiError struct {
	server, method, object string
	code                   int
	reason, message        string
}

func (e *apiError) Error() string {
	msg := e.message
	if msg == "" {
		msg = http.StatusText(e.code)
	}
	hint := ""
	switch e.code {
	case http.StatusUnauthorized:
		hint = " (the token was refused: check high-availability.kubernetes.token-file or the pod's ServiceAccount)"
	case http.StatusForbidden:
		hint = " (the ServiceAccount needs get, create and update on leases (coordination.k8s.io), and get, list, create and update on configmaps, in the namespace kubernetes.namespace)"
	}
	return fmt.Sprintf("Kubernetes API server %s: %s %s: status %d %s: %s%s", e.server, e.method, e.object, e.code, e.reason, msg, hint)
}

func statusOf(err error) int {
	var e *apiError
	if errors.As(err, &e) {
		return e.code
	}
	return 0
}

// do sends one request about object (its kind, namespace and name, for
// errors) to path, with in as the JSON body when not nil, and decodes a
// successful answer into out when not nil.
func (c *client) do(ctx context.Context, method, path, object string, in, out any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, requestLimit)
		defer cancel()
	}
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	for attempt := 0; ; attempt++ {
		tok, err := c.bearer(attempt > 0)
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Accept", "application/json")
		if in != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return fmt.Errorf("Kubernetes API server %s: %s %s: %w", c.base, method, object, err)
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("Kubernetes API server %s: %s %s: reading the answer: %w", c.base, method, object, err)
		}
		if resp.StatusCode == http.StatusUnauthorized && attempt == 0 {
			continue // the token may have rotated: read it again, once
		}
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			var st struct {
				Message string `json:"message"`
				Reason  string `json:"reason"`
			}
			if json.Unmarshal(b, &st) != nil || st.Message == "" {
				st.Message = strings.TrimSpace(string(b))
				if len(st.Message) > 300 {
					st.Message = st.Message[:300] + "..."
				}
			}
			return &apiError{server: c.base, method: method, object: object, code: resp.StatusCode, reason: st.Reason, message: st.Message}
		}
		if out != nil {
			if err := json.Unmarshal(b, out); err != nil {
				return fmt.Errorf("Kubernetes API server %s: %s %s: decoding the answer: %w", c.base, method, object, err)
			}
		}
		return nil
	}
}

package kafkatest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirhq/weir/internal/flinktest"
	"github.com/weirhq/weir/internal/testport"
)

// EnvBrokers names the environment variable with the bootstrap address of
// an already running broker; when set, Broker returns it and starts none.
const EnvBrokers = "WEIR_KAFKA_BROKERS"

// StartLimit bounds one run of scripts/kafka-broker start: a fetch of the
// jars (up to 30 s cold) plus the script's own 60 s bound on the broker's
// startup.
const StartLimit = 3 * time.Minute

var (
	mu      sync.Mutex
	started *running // the broker this test binary started, if any
	failed  error    // why starting it failed; later tests fail the same way at once
)

type running struct {
	addr, dir, script string
}

// InCI reports whether the tests run under CI, where a missing Java or
// Maven fails a test instead of skipping it.
func InCI() bool { return flinktest.InCI() }

// Main runs the tests and then stops the broker they started, if any, and
// removes its folder; then it runs cleanups (the test binary's own, such as
// removing a binary it built) and exits. Use it as TestMain's body:
//
//	func TestMain(m *testing.M) { kafkatest.Main(m) }
//
// SIGTERM stops the broker and runs cleanups too before the process exits.
// SIGINT is left to the test binary: some tests (internal/cli's Ctrl-C
// tests) send it to their own process and must see it alone. After a Ctrl-C
// the broker's watchdog (scripts/kafka-broker start --owner-pid) stops the
// broker within a second of the test binary's exit; only its folder under
// the temporary directory stays behind.
func Main(m *testing.M, cleanups ...func()) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	cleanup := func() {
		Stop()
		for _, c := range cleanups {
			c()
		}
	}
	go func() {
		s := <-sig
		cleanup()
		fmt.Fprintf(os.Stderr, "kafkatest: %v: stopped the test broker\n", s)
		os.Exit(130)
	}()
	code := m.Run()
	signal.Stop(sig)
	cleanup()
	os.Exit(code)
}

// Stop stops the broker this test binary started (if any) and removes its
// folder. Main calls it; it is safe to call more than once.
func Stop() {
	mu.Lock()
	defer mu.Unlock()
	if started == nil {
		return
	}
	b := started
	started = nil
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.script, "stop", "--dir", b.dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "kafkatest: stopping the broker in %s: %v\n%s", b.dir, err, out)
		return // keep the folder and its log for a look
	}
	os.RemoveAll(b.dir)
}

// Broker returns the bootstrap address of a running broker: WEIR_KAFKA_BROKERS
// if set, else the one this test binary started on its first call. When Java,
// or the jars and Maven to fetch them, are missing, it fails the test under
// CI and skips it elsewhere; when the broker does not start, it fails.
func Broker(t testing.TB) string {
	t.Helper()
	if v := os.Getenv(EnvBrokers); v != "" {
		return v
	}
	mu.Lock()
	defer mu.Unlock()
	if started != nil {
		return started.addr
	}
	if failed != nil {
		t.Fatalf("kafkatest: the test broker did not start for an earlier test: %v", failed)
	}
	missing := func(format string, args ...any) {
		t.Helper()
		flinktest.MissingTool(t, "no Kafka broker ("+EnvBrokers+" is not set) and scripts/kafka-broker cannot start one: "+format, args...)
	}
	if _, err := exec.LookPath("java"); err != nil {
		missing("java (17+) is not on PATH")
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cache := os.Getenv("WEIR_KAFKA_CACHE")
	if cache == "" {
		cache = filepath.Join(root, ".cache", "kafka")
	}
	if _, err := os.Stat(filepath.Join(cache, "lib", ".complete-"+Version)); err != nil {
		if _, lerr := exec.LookPath("mvn"); lerr != nil {
			missing("Kafka %s's jars are not fetched (no %s) and mvn, which fetches them, is not on PATH", Version, filepath.Join(cache, "lib"))
		}
	}
	script := filepath.Join(root, "scripts", "kafka-broker")
	start := time.Now()
	b, err := startBroker(script)
	if err != nil {
		failed = err
		t.Fatalf("kafkatest: %v", err)
	}
	if err := warmUp(b.addr); err != nil {
		failed = err
		exec.Command(script, "stop", "--dir", b.dir).Run()
		t.Fatalf("kafkatest: %v", err)
	}
	t.Logf("kafkatest: started a Kafka broker at %s in %v (dir %s)", b.addr, time.Since(start).Round(time.Millisecond), b.dir)
	started = b
	return b.addr
}

// Version is the Kafka release scripts/kafka-broker runs.
const Version = "4.4.0"

func startBroker(script string) (*running, error) {
	sweep()
	dir, err := os.MkdirTemp("", "weir-kafka-")
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		if attempt > 0 {
			// The controller's port is recorded in the folder when it is
			// formatted: a new attempt needs a new folder.
			os.RemoveAll(dir)
			if dir, err = os.MkdirTemp("", "weir-kafka-"); err != nil {
				return nil, err
			}
		}
		ports, err := testport.Free(1)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), StartLimit)
		cmd := exec.CommandContext(ctx, script, "start", "--port", strconv.Itoa(ports[0]), "--dir", dir,
			"--owner-pid", strconv.Itoa(os.Getpid()))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.WaitDelay = 5 * time.Second
		err = cmd.Run()
		timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded) // read before cancel sets it
		cancel()
		if err == nil {
			addr := strings.TrimSpace(stdout.String())
			if addr == "" {
				return nil, fmt.Errorf("%s start printed no address; its stderr:\n%s", script, stderr.String())
			}
			return &running{addr: addr, dir: dir, script: script}, nil
		}
		if timedOut {
			exec.Command(script, "stop", "--dir", dir).Run()
			os.RemoveAll(dir)
			return nil, fmt.Errorf("%s start did not finish within %v; its stderr:\n%s", script, StartLimit, stderr.String())
		}
		lastErr = fmt.Errorf("%s start --port %d --dir %s: %v; its stderr:\n%s", script, ports[0], dir, err, stderr.String())
		if !portTaken(stderr.String()) {
			break
		}
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

// portTaken reports whether scripts/kafka-broker failed because a port was
// taken: busy before the start, or taken by another process between the
// choice and the broker's bind (the broker then dies with a BindException).
func portTaken(stderr string) bool {
	return strings.Contains(stderr, "is busy") || strings.Contains(stderr, "Address already in use")
}

// sweep removes the folders of test brokers that are gone (their test
// binary was killed before Main could clean up; the watchdog stopped the
// broker itself) and untouched for an hour.
func sweep() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "weir-kafka-*"))
	for _, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil || !fi.IsDir() || time.Since(fi.ModTime()) < time.Hour {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(d, "broker.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && syscall.Kill(pid, 0) == nil {
				continue
			}
		}
		os.RemoveAll(d)
	}
}

// warmUp waits until a new broker's group coordinator answers. A fresh
// broker creates its offsets topic on the first group request and answers
// COORDINATOR_NOT_AVAILABLE until then (a second or so), which every test
// would otherwise meet in its first group request.
func warmUp(addr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(Seeds(addr)...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), OpLimit)
	defer cancel()
	for {
		_, err := adm.FetchOffsets(ctx, "kafkatest-warm-up")
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the new broker at %s: its group coordinator did not answer within %v: %v", addr, OpLimit, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// repoRoot is the nearest directory upwards that holds go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("kafkatest: no go.mod above the test's directory")
		}
		dir = parent
	}
}

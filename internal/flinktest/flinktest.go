package flinktest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Version is the flink-clients release Weir's REST API is checked against;
// scripts/flink-client fetches it.
const Version = "2.3.0"

// CommandLimit bounds one run of Flink's client. A run takes 1-3 s (mostly
// JVM start); when it cannot parse an answer, the client retries until its
// own one-minute timeout, so without a limit a shape mismatch would hang.
const CommandLimit = 90 * time.Second

// InCI reports whether the tests run under CI, where a missing
// prerequisite must fail rather than skip (.ci/run sets CI=true).
func InCI() bool {
	v := os.Getenv("CI")
	return v != "" && v != "false" && v != "0"
}

// MissingTool fails the test under CI and skips it elsewhere, saying why.
func MissingTool(t testing.TB, format string, args ...any) {
	t.Helper()
	if InCI() {
		t.Fatalf("CI: "+format, args...)
	}
	t.Skipf("skipping: "+format, args...)
}

// Client is Flink's fetched command-line client.
type Client struct {
	Script string // scripts/flink-client
	Lib    string // the folder of its jars
}

// Find returns the client once it is known that Java is there and the
// jars have been fetched; otherwise it calls MissingTool. It looks for the
// repository root upwards from the test's directory.
func Find(t testing.TB) Client {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		MissingTool(t, "Flink's client cannot run: "+format, args...)
	}
	if _, err := exec.LookPath("java"); err != nil {
		missing("java (17+) is not on PATH")
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cache := os.Getenv("WEIR_FLINK_CLIENT_DIR")
	if cache == "" {
		cache = filepath.Join(root, ".cache", "flink-client")
	}
	lib := filepath.Join(cache, "lib-"+Version)
	marker := filepath.Join(lib, ".complete")
	if _, err := os.Stat(marker); err != nil {
		if _, lerr := exec.LookPath("mvn"); lerr != nil {
			missing("flink-clients %s is not fetched (%s is missing) and mvn, which fetches it, is not on PATH", Version, marker)
		}
		missing("flink-clients %s is not fetched (%s is missing); scripts/test fetches it, or run scripts/flink-client fetch", Version, marker)
	}
	return Client{Script: filepath.Join(root, "scripts", "flink-client"), Lib: lib}
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
			return "", errors.New("flinktest: no go.mod above the test's directory")
		}
		dir = parent
	}
}

// Run runs `flink args...` and returns its exit code and combined output.
// It fails the test if the client does not finish within CommandLimit.
func (c Client) Run(t testing.TB, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), CommandLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Script, args...)
	cmd.Env = append(os.Environ(), "FLINK_VERSION="+Version)
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("flink %s: %v", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	if ctx.Err() != nil {
		t.Fatalf("flink %s did not finish within %v (a REST answer Flink's client cannot parse makes it retry until it times out); output:\n%s",
			strings.Join(args, " "), CommandLimit, out)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("flink %s: %v", strings.Join(args, " "), err)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// SavepointCompleted matches what Flink's client prints when a savepoint
// (also the one of stop) is complete; the submatch is its location.
var SavepointCompleted = regexp.MustCompile(`Savepoint completed\. Path: (\S+)`)

// SavepointWritten returns the savepoint location the client printed in
// out, as a local path, after checking that it is inside dir and holds
// something; otherwise it fails the test.
func SavepointWritten(t testing.TB, out, dir string) string {
	t.Helper()
	m := SavepointCompleted.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no %q line in Flink's output:\n%s", "Savepoint completed. Path: ...", out)
	}
	loc := strings.TrimPrefix(strings.TrimPrefix(m[1], "file://"), "file:")
	if !strings.HasPrefix(filepath.Clean(loc), filepath.Clean(dir)) {
		t.Fatalf("savepoint written to %s, not under the requested %s", m[1], dir)
	}
	if entries, err := os.ReadDir(loc); err != nil || len(entries) == 0 {
		t.Fatalf("savepoint location %s: %d entries, %v", loc, len(entries), err)
	}
	return loc
}

package cli

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func runCLI(args ...string) (code int, out, errOut string) {
	var o, e bytes.Buffer
	code = Main(args, &o, &e)
	return code, o.String(), e.String()
}

func TestVersionAndUsage(t *testing.T) {
	if code, out, _ := runCLI("version"); code != 0 || !strings.HasPrefix(out, "weir ") {
		t.Fatalf("version: %d %q", code, out)
	}
	if code, _, errOut := runCLI(); code != 2 || !strings.Contains(errOut, "Usage:") {
		t.Fatalf("no args: %d %q", code, errOut)
	}
	if code, _, errOut := runCLI("frobnicate"); code != 2 || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Fatalf("unknown command: %d %q", code, errOut)
	}
	if code, _, errOut := runCLI("run", "nosuchjob", "--rest-address", ""); code != 2 || !strings.Contains(errOut, `unknown job "nosuchjob"`) {
		t.Fatalf("unknown job: %d %q", code, errOut)
	}
	if code, _, errOut := runCLI("run", "wordcount", "--parallelism", "x"); code != 2 || !strings.Contains(errOut, "parallelism") {
		t.Fatalf("bad flag: %d %q", code, errOut)
	}
	if code, _, errOut := runCLI("cancel", "not-an-id"); code != 2 || !strings.Contains(errOut, "32 lowercase hex") {
		t.Fatalf("bad id: %d %q", code, errOut)
	}
}

func TestRunWordcountFiles(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	os.WriteFile(in, []byte("b a b\nC c, c!\n"), 0o644)
	code, _, errOut := runCLI("run", "wordcount", "--input", in, "--output", out, "--parallelism", "2", "--rest-address", "")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errOut)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	got := map[string]bool{}
	for _, l := range lines {
		got[l] = true
	}
	if len(lines) != 3 || !got["a\t1"] || !got["b\t2"] || !got["c\t3"] {
		t.Fatalf("output %q", data)
	}
}

// --batch-state-memory bounds wordcount's counts (a batch Reduce): 20,000
// distinct words do not fit in 1mb and the run fails naming the flag; in
// 16mb they are all counted.
func TestRunWordcountBatchStateMemory(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	var sb strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&sb, "w%dx\n", i)
	}
	os.WriteFile(in, []byte(sb.String()), 0o644)
	code, _, errOut := runCLI("run", "wordcount", "--input", in, "--output", filepath.Join(dir, "small"), "--batch-state-memory", "1mb", "--rest-address", "")
	if code != 1 || !strings.Contains(errOut, "--batch-state-memory") || !strings.Contains(errOut, "Config.BatchStateMemory (1048576 bytes") {
		t.Fatalf("code %d under 1mb, want 1 and an error naming the flag: %s", code, errOut)
	}
	out := filepath.Join(dir, "big")
	if code, _, errOut := runCLI("run", "wordcount", "--input", in, "--output", out, "--batch-state-memory", "16mb", "--rest-address", ""); code != 0 {
		t.Fatalf("code %d under 16mb: %s", code, errOut)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\t1\n"); n != 20000 {
		t.Fatalf("%d words counted once, want 20000", n)
	}
}

func TestRunReportsMissingInput(t *testing.T) {
	code, _, errOut := runCLI("run", "wordcount", "--input", "/nonexistent/in.txt", "--output", filepath.Join(t.TempDir(), "o"), "--rest-address", "")
	if code != 1 || !strings.Contains(errOut, "/nonexistent/in.txt") {
		t.Fatalf("code %d: %q", code, errOut)
	}
}

func TestRESTAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, _, errOut := runCLI("run", "wordcount", "--rest-address", ln.Addr().String())
	if code != 1 || !strings.Contains(errOut, ln.Addr().String()) {
		t.Fatalf("code %d: %q", code, errOut)
	}
}

func TestListWithoutCluster(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	if code, _, errOut := runCLI("list", "--address", addr); code != 1 || !strings.Contains(errOut, "no Weir cluster answered") {
		t.Fatalf("code %d: %q", code, errOut)
	}
}

func TestBench(t *testing.T) {
	for _, args := range [][]string{{"bench", "chained", "--events", "100000"}, {"bench", "shuffle", "--events", "100000"}} {
		code, out, errOut := runCLI(args...)
		if code != 0 || !strings.Contains(out, "million events/s per core") {
			t.Fatalf("%v: code %d, out %q, err %q", args, code, out, errOut)
		}
	}
	if code, _, errOut := runCLI("bench", "nope"); code != 2 || !strings.Contains(errOut, "unknown benchmark") {
		t.Fatalf("code %d: %q", code, errOut)
	}
}

// Every flag is validated with a usage error (exit 2) that
// names it; --help prints usage and exits 0; no panic reaches the user.
func TestFlagValidation(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "wordcount", "--parallelism", "0"}, "--parallelism must be between 1 and 32768"},
		{[]string{"run", "wordcount", "--parallelism", "-1"}, "--parallelism must be between 1 and 32768"},
		{[]string{"run", "wordcount", "--parallelism", "32769"}, "--parallelism must be between 1 and 32768"},
		{[]string{"run", "wordcount", "--parallelism", "x"}, `--parallelism "x"`},
		{[]string{"run", "clicks", "--rate", "Inf"}, "--rate must be"},
		{[]string{"run", "clicks", "--rate", "1e300"}, "--rate must be"},
		{[]string{"run", "clicks", "--rate", "NaN"}, "--rate must be"},
		{[]string{"run", "clicks", "--rate", "0"}, "--rate must be"},
		{[]string{"run", "clicks", "--count", "-3"}, "--count must be"},
		{[]string{"run", "wordcount", "--buffer-timeout", "-1s"}, "--buffer-timeout must not be negative"},
		{[]string{"run", "fraud-detection", "--input", "a", "--output", "b", "--max-out-of-orderness", "-5s"}, "--max-out-of-orderness must not be negative"},
		{[]string{"run", "wordcount", "--network-memory", "lots"}, `--network-memory "lots"`},
		{[]string{"run", "wordcount", "--network-memory", "10kb"}, "--network-memory must be at least 1mb"},
		{[]string{"run", "wordcount", "--buffer-size", "100"}, "--buffer-size must be between"},
		{[]string{"run", "wordcount", "--state-backend", "rocksdb"}, `--state-backend "rocksdb"`},
		{[]string{"run", "wordcount", "--log-level", "loud"}, `--log-level "loud"`},
		{[]string{"run", "wordcount", "--rest-address", "8081"}, `--rest-address "8081": want HOST:PORT`},
		{[]string{"run", "wordcount", "--rest-address", "localhost:99999"}, "port must be a number from 0 to 65535"},
		{[]string{"run", "wordcount", "--rate", "3"}, "--rate does not apply to wordcount"},
		{[]string{"run", "clicks", "--input", "x"}, "--input does not apply to clicks"},
		{[]string{"run", "fraud-detection", "--input", "x"}, "fraud-detection needs --input and --output"},
		{[]string{"run", "keyed-count", "--input", "a", "--output", "b", "--checkpoint-dir", "c", "--allow-non-restored-state"}, "--allow-non-restored-state needs --from"},
		{[]string{"run", "keyed-count", "--input", "a", "--output", "b", "--checkpoint-dir", "c", "--incremental"}, "--incremental needs --state-backend pebble"},
		{[]string{"run", "keyed-count", "--input", "a", "--output", "b", "--checkpoint-dir", "c", "--channel-state-memory", "1kb"}, "--channel-state-memory must be at least 64kb"},
		{[]string{"run", "window-agg", "--input", "a", "--output", "b", "--window", "tumbling:1s", "--channel-state-memory", "1mb"}, "--channel-state-memory needs --checkpoint-dir"},
		{[]string{"run", "window-agg", "--input", "a", "--output", "b", "--window", "tumbling:1s", "--state-backend", "pebble", "--incremental"}, "--incremental needs --checkpoint-dir"},
		{[]string{"run", "wordcount", "--allow-non-restored-state"}, "--allow-non-restored-state does not apply to wordcount"},
		{[]string{"run", "keyed-count", "--input", "a", "--output", "b", "--checkpoint-dir", "c", "--checkpoint-write-memory", "1mb"}, "--checkpoint-write-memory must be at least 5mb"},
		{[]string{"run", "keyed-count", "--input", "a", "--output", "b", "--checkpoint-dir", "c", "--checkpoint-write-memory", "many"}, `--checkpoint-write-memory "many"`},
		{[]string{"run", "window-agg", "--input", "a", "--output", "b", "--window", "tumbling:1s", "--checkpoint-write-memory", "8mb"}, "--checkpoint-write-memory needs --checkpoint-dir"},
		{[]string{"run", "wordcount", "--checkpoint-write-memory", "8mb"}, "--checkpoint-write-memory does not apply to wordcount"},
		{[]string{"run", "wordcount", "--batch-state-memory", "100kb"}, "--batch-state-memory must be at least 1mb"},
		{[]string{"run", "wordcount", "--batch-state-memory", "lots"}, `--batch-state-memory "lots"`},
		{[]string{"run", "keyed-count", "--input", "a", "--output", "b", "--checkpoint-dir", "c", "--heap-state-memory", "100kb"}, "--heap-state-memory must be at least 1mb"},
		{[]string{"run", "keyed-count", "--input", "a", "--output", "b", "--checkpoint-dir", "c", "--heap-state-memory", "lots"}, `--heap-state-memory "lots"`},
		{[]string{"run", "keyed-count", "--input", "a", "--output", "b", "--batch-state-memory", "8mb"}, "--batch-state-memory does not apply to keyed-count"},
		{[]string{"run", "wordcount", "--process-memory", "16mb"}, "--process-memory must be at least 32mb"},
		{[]string{"run", "wordcount", "--process-memory", "lots"}, `--process-memory "lots"`},
		{[]string{"run"}, "run needs exactly one job name"},
		{[]string{"run", "wordcount", "extra"}, "run needs exactly one job name"},
		{[]string{"run", "wordcount", "--nope"}, "unknown flag --nope"},
		{[]string{"run", "wordcount", "--input"}, "flag --input needs a value"},
		{[]string{"bench", "chained", "--events", "-5"}, "--events must be at least 1"},
		{[]string{"bench", "wordcount", "--size-mb", "-1"}, "--size-mb must be between 1 and 100000"},
		{[]string{"bench", "shuffle", "--parallelism", "0"}, "--parallelism of a benchmark must be between 1 and 1024"},
		{[]string{"bench", "chained", "--parallelism", "2"}, "--parallelism does not apply to bench chained"},
		{[]string{"list", "--address", "nohost"}, `--address "nohost"`},
		{[]string{"list", "extra"}, "list takes no arguments"},
		{[]string{"version", "extra"}, "version takes no arguments"},
	} {
		code, out, errOut := runCLI(tc.args...)
		if code != ExitUsage || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, errOut, tc.want)
		}
		if strings.Contains(errOut, "goroutine ") || strings.Contains(errOut, "panic") {
			t.Errorf("%v: a panic reached the user: %s", tc.args, errOut)
		}
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"run", "--help"}, {"run", "wordcount", "--help"}, {"bench", "-h"}, {"list", "--help"}} {
		code, out, errOut := runCLI(args...)
		if code != ExitOK || !strings.Contains(out, "Usage:") || errOut != "" {
			t.Errorf("%v: exit %d, stderr %q; want usage on stdout and exit 0", args, code, errOut)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"32768": 32768, "32kb": 32 << 10, "64m": 64 << 20, "4GB": 4 << 30, "1.5gib": 3 << 29, "2 mb": 2 << 20, "0": 0} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "mb", "-1", "1xb", "NaN", "1e30gb", "1.2.3"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
}

// --incremental reaches the Pebble backend: the checkpoint's state files go
// under shared/ (Pebble's native files, shared by later checkpoints), and a
// run resumes from it.
func TestRunIncrementalCheckpoints(t *testing.T) {
	dir := t.TempDir()
	in, ck := filepath.Join(dir, "in.tsv"), filepath.Join(dir, "ck")
	var b strings.Builder
	for i := range 60 {
		fmt.Fprintf(&b, "k%d\t%d\n", i%5, i)
	}
	os.WriteFile(in, []byte(b.String()), 0o644)
	args := []string{"run", "keyed-count", "--input", in, "--checkpoint-dir", ck, "--state-backend", "pebble", "--incremental",
		"--parallelism", "2", "--rest-address", ""}
	out := filepath.Join(dir, "out")
	args = append(args, "--output", out)
	if code, _, errOut := runCLI(args...); code != 0 {
		t.Fatalf("code %d: %s", code, errOut)
	}
	shared, _ := filepath.Glob(filepath.Join(ck, "*", "shared", "*"))
	if len(shared) == 0 {
		t.Fatalf("no files under %s/<job>/shared: the checkpoint was not incremental", ck)
	}
	// Resumed from the final (incremental) checkpoint, the job restores and
	// has nothing left to read: the output keeps each count once.
	if code, _, errOut := runCLI(append(args, "--from", "latest")...); code != 0 {
		t.Fatalf("resumed: code %d: %s", code, errOut)
	}
	parts, _ := filepath.Glob(filepath.Join(out, "part-*"))
	var all strings.Builder
	for _, p := range parts {
		data, _ := os.ReadFile(p)
		all.Write(data)
	}
	if n := strings.Count(all.String(), "\n"); n != 60 || !strings.Contains(all.String(), "k0\t12\t330\n") {
		t.Fatalf("after the resumed run the output has %d lines (want 60, ending with k0's 12th count, sum 330):\n%.400s", n, all.String())
	}
}

// --process-memory reaches the job: with --heap-state-memory above it the
// run fails at once, exit 1, naming the three settings; under it the job
// runs and the log says the process memory and where it came from.
func TestProcessMemoryFlag(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	os.WriteFile(in, []byte("a b\n"), 0o644)
	code, _, stderr := runWeir(t, 30*time.Second, "run", "wordcount", "--input", in, "--output", filepath.Join(dir, "out1"),
		"--process-memory", "64mb", "--heap-state-memory", "100mb", "--rest-address", "")
	for _, want := range []string{"--process-memory", "--heap-state-memory", "--network-memory", "more than the process memory of 67108864 bytes"} {
		if code != ExitFailed || !strings.Contains(stderr, want) {
			t.Fatalf("exit %d, want 1 with a message naming %s: %s", code, want, stderr)
		}
	}
	code, _, stderr = runWeir(t, 30*time.Second, "run", "wordcount", "--input", in, "--output", filepath.Join(dir, "out2"),
		"--process-memory", "64mb", "--log-level", "info", "--rest-address", "")
	if code != ExitOK || !strings.Contains(stderr, `msg="process memory"`) || !strings.Contains(stderr, "bytes=67108864") || !strings.Contains(stderr, "go_soft_limit=60397920") {
		t.Fatalf("exit %d, want 0 and a log of the process memory: %s", code, stderr)
	}
}

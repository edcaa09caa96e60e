package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each benchmark of bench_jobs.go runs at a tiny size and reports its
// figure; intervaljoin counts the records of both sides.
func TestBenchJobs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "keyed", "--events", "20000", "--keys", "100"}, "keyed: 20000 events"},
		{[]string{"bench", "keyed", "--events", "20000", "--backend", "pebble", "--parallelism", "1"}, "keyed: 20000 events"},
		{[]string{"bench", "window", "--events", "20000", "--keys", "1000"}, "window: 20000 events"},
		{[]string{"bench", "intervaljoin", "--events", "5000", "--keys", "1000"}, "intervaljoin: 10000 events"},
	} {
		code, out, errOut := runCLI(tc.args...)
		if code != 0 || !strings.Contains(out, tc.want) || !strings.Contains(out, "million events/s per core") {
			t.Errorf("%v: code %d, out %q, err %q", tc.args, code, out, errOut)
		}
	}
}

func TestBenchJobsFlagValidation(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "keyed", "--keys", "-1"}, "--keys must be between 1 and 1000000000, got -1"},
		{[]string{"bench", "window", "--keys", "0"}, "--keys must be between 1 and 1000000000, got 0"},
		{[]string{"bench", "window", "--keys", "1000000001"}, "--keys must be between 1 and 1000000000"},
		{[]string{"bench", "keyed", "--backend", "rocksdb"}, `--backend "rocksdb": want hashmap or pebble`},
		{[]string{"bench", "intervaljoin", "--events", "0"}, "--events must be at least 1"},
		{[]string{"bench", "keyed", "--parallelism", "0"}, "--parallelism of a benchmark must be between 1 and 1024"},
		{[]string{"bench", "window", "--size-mb", "5"}, "--size-mb does not apply to bench window"},
		{[]string{"bench", "chained", "--keys", "5"}, "--keys does not apply to bench chained"},
		{[]string{"bench", "shuffle", "--backend", "pebble"}, "--backend does not apply to bench shuffle"},
	} {
		code, out, errOut := runCLI(tc.args...)
		if code != ExitUsage || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

// --cpuprofile writes a CPU profile of the benchmark's run (a gzipped
// protocol buffer, as runtime/pprof writes it); a file that cannot be made
// fails the command with a message naming the flag, before the run.
func TestBenchCPUProfile(t *testing.T) {
	for _, name := range []string{"keyed", "shuffle"} {
		prof := filepath.Join(t.TempDir(), "cpu.prof")
		if code, _, errOut := runCLI("bench", name, "--events", "2000000", "--cpuprofile", prof); code != 0 {
			t.Fatalf("%s: code %d, %s", name, code, errOut)
		}
		data, err := os.ReadFile(prof)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) < 100 || data[0] != 0x1f || data[1] != 0x8b {
			t.Fatalf("%s: the profile: %d bytes, not gzip", name, len(data))
		}
	}
	code, out, errOut := runCLI("bench", "window", "--events", "10", "--cpuprofile", filepath.Join(t.TempDir(), "no", "such", "dir"))
	if code != 1 || !strings.Contains(errOut, "bench window: --cpuprofile") || out != "" {
		t.Fatalf("an unwritable profile: code %d, out %q, err %q", code, out, errOut)
	}
}

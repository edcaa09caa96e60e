package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirhq/weir/nexmark"
)

// TestNexmarkGenerate writes events to a file and to standard output and
// checks them against the generator, line by line.
func TestNexmarkGenerate(t *testing.T) {
	out := filepath.Join(t.TempDir(), "events.jsonl")
	code, stdout, errOut := runCLI("nexmark", "generate", "--events", "1234", "--tps", "1000", "--seed", "5", "--output", out)
	if code != 0 || !strings.Contains(stdout, "wrote 1234 events") {
		t.Fatalf("code %d: %q %q", code, stdout, errOut)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	cfg := nexmark.DefaultConfig()
	cfg.EventsPerSecond, cfg.Seed = 1000, 5
	g, err := nexmark.NewGenerator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	var e nexmark.Event
	for n := range int64(1234) {
		g.Event(n, &e)
		want = nexmark.AppendJSON(want, &e)
	}
	if string(data) != string(want) {
		t.Fatalf("the file differs from the generator's events (%d vs %d bytes)", len(data), len(want))
	}
	code, stdout, errOut = runCLI("nexmark", "generate", "--events", "1234", "--tps", "1000", "--seed", "5", "--output", "-")
	if code != 0 || stdout != string(want) {
		t.Fatalf("--output -: code %d, %d bytes, %q", code, len(stdout), errOut)
	}
	// The decoder reads what generate writes.
	d := nexmark.NewDecoder(strings.NewReader(stdout))
	for n := 0; ; n++ {
		if err := d.Next(&e); err != nil {
			if n != 1234 || err.Error() != "EOF" {
				t.Fatalf("read %d events, then %v", n, err)
			}
			break
		}
	}
}

func TestNexmarkGenerateErrors(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "e.jsonl")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"nexmark"}, 2, "nexmark needs a command: generate"},
		{[]string{"nexmark", "frob"}, 2, `unknown nexmark command "frob"`},
		{[]string{"nexmark", "generate", "--output", out}, 2, "--events must be a positive number of events, got 0"},
		{[]string{"nexmark", "generate", "--events", "-3", "--output", out}, 2, "--events must be a positive number"},
		{[]string{"nexmark", "generate", "--events", "x", "--output", out}, 2, `--events "x": not a valid value`},
		{[]string{"nexmark", "generate", "--events", "10", "--tps", "0", "--output", out}, 2, "--tps must be a positive number of events per second"},
		{[]string{"nexmark", "generate", "--events", "10", "--seed", "-1", "--output", out}, 2, `--seed "-1": want a number from 0 to`},
		{[]string{"nexmark", "generate", "--events", "10"}, 2, "needs --output FILE"},
		{[]string{"nexmark", "generate", "--events", "10", "--output", out, "extra"}, 2, `takes no arguments, got ["extra"]`},
		{[]string{"nexmark", "generate", "--events", "10", "--rate", "5", "--output", out}, 2, "unknown flag --rate"},
		{[]string{"nexmark", "generate", "--events", "10", "--output", filepath.Join(dir, "no", "such", "dir", "f")}, 1, "no such file or directory"},
	} {
		code, _, errOut := runCLI(c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: code %d, %q; want code %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
}

// TestNexmarkRun runs q0 through the command, over generated events and
// over a file from generate, and checks its summary and its rows.
func TestNexmarkRun(t *testing.T) {
	dir := t.TempDir()
	events := filepath.Join(dir, "events.jsonl")
	if code, _, errOut := runCLI("nexmark", "generate", "--events", "5000", "--tps", "1000", "--output", events); code != 0 {
		t.Fatal(errOut)
	}
	bids := 0
	data, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, `{"type":"bid"`) {
			bids++
		}
	}
	for _, args := range [][]string{
		{"--events", "5000", "--tps", "1000", "--parallelism", "2"},
		{"--input", events, "--state-backend", "pebble", "--state-dir", filepath.Join(dir, "state"), "--network-memory", "64mb", "--buffer-size", "16kb"},
	} {
		out := filepath.Join(dir, "q0.jsonl")
		code, stdout, errOut := runCLI(append([]string{"nexmark", "run", "--query", "q0", "--output", out}, args...)...)
		if code != 0 {
			t.Fatalf("%q: code %d, %s", args, code, errOut)
		}
		var s struct {
			Query                  string
			Events                 int64
			Rows                   int64   `json:"result_rows"`
			EventsPerSecondPerCore float64 `json:"events_per_cpu_s"`
		}
		if err := json.Unmarshal([]byte(stdout), &s); err != nil {
			t.Fatalf("%q: the summary %q: %v", args, stdout, err)
		}
		if s.Query != "q0" || s.Events != 5000 || s.Rows != int64(bids) || s.EventsPerSecondPerCore <= 0 {
			t.Fatalf("%q: summary %+v, want 5000 events and %d rows", args, s, bids)
		}
		rows, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(rows), "\n"); n != bids {
			t.Fatalf("%q: %d rows in the output, want %d", args, n, bids)
		}
	}
	// all: a summary line per query, then a table.
	code, stdout, errOut := runCLI("nexmark", "run", "--query", "all", "--events", "2000", "--output", filepath.Join(dir, "all"))
	if code != 0 || !strings.Contains(stdout, "events/s/core") {
		t.Fatalf("all: code %d, %q %q", code, stdout, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "all", "q0.jsonl")); err != nil {
		t.Fatal(err)
	}
}

// TestNexmarkRunCPUProfile: --cpuprofile writes a CPU profile (a
// gzipped protocol buffer, as runtime/pprof writes it).
func TestNexmarkRunCPUProfile(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	if code, _, errOut := runCLI("nexmark", "run", "--query", "q18", "--events", "20000", "--parallelism", "2", "--cpuprofile", prof); code != 0 {
		t.Fatalf("code %d, %s", code, errOut)
	}
	data, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 100 || data[0] != 0x1f || data[1] != 0x8b {
		t.Fatalf("the profile: %d bytes, not gzip", len(data))
	}
	if code, _, errOut := runCLI("nexmark", "run", "--query", "q0", "--events", "10", "--cpuprofile", filepath.Join(t.TempDir(), "no", "such", "dir")); code != 1 || !strings.Contains(errOut, "--cpuprofile") {
		t.Fatalf("an unwritable profile: code %d, %q", code, errOut)
	}
}

func TestNexmarkRunErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"type\":\"bid\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"nexmark", "run", "--events", "10"}, 2, "needs --query qN or --query all"},
		{[]string{"nexmark", "run", "--query", "q99", "--events", "10"}, 2, `no Nexmark query "q99" (there are: q0`},
		{[]string{"nexmark", "run", "--query", "q0"}, 2, "--events must be a positive number"},
		{[]string{"nexmark", "run", "--query", "q0", "--events", "10", "--state-backend", "rocksdb"}, 2, `--state-backend "rocksdb": want hashmap or pebble`},
		{[]string{"nexmark", "run", "--query", "q0", "--events", "10", "--parallelism", "0"}, 2, "--parallelism must be from 1 to"},
		{[]string{"nexmark", "run", "--query", "q0", "--events", "10", "--checkpoint-interval", "1ms"}, 2, "below 10ms"},
		{[]string{"nexmark", "run", "--query", "q0", "--input", filepath.Join(dir, "none")}, 1, "no such file"}, // as weir run's
		{[]string{"nexmark", "run", "--query", "q0", "--input", bad}, 1, "bad.jsonl, line 1:"},
		{[]string{"nexmark", "run", "--query", "q0", "--events", "10", "--network-memory", "1000"}, 2, "--network-memory must be at least 1mb, got 1000 bytes"},
		{[]string{"nexmark", "run", "--query", "q0", "--events", "10", "--heap-state-memory", "1000"}, 2, "--heap-state-memory must be at least 1mb, got 1000 bytes"},
		{[]string{"nexmark", "run", "--query", "q18", "--events", "400000", "--parallelism", "2", "--heap-state-memory", "2mb"}, 1, "the bound of weir.Config.HeapStateMemory (--heap-state-memory"},
		// The hint of a parallelism too large for the network memory names the flag nexmark run has.
		{[]string{"nexmark", "run", "--query", "q0", "--events", "10", "--buffer-size", "100"}, 2, "--buffer-size must be between 1kb and 64mb, got 100 bytes"},
		{[]string{"nexmark", "run", "--query", "q3", "--events", "10", "--parallelism", "64", "--network-memory", "1mb"}, 1, "not enough network memory: the job needs 256 MiB"},
		{[]string{"nexmark", "run", "--query", "q3", "--events", "10", "--parallelism", "64", "--network-memory", "1mb", "--buffer-size", "1kb"}, 1, "the job needs 8 MiB"},
	} {
		code, _, errOut := runCLI(c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: code %d, %q; want code %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
}

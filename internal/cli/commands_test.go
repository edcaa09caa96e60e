package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/rest"
	"github.com/weirhq/weir/internal/testseed"
)

// Tests of the command line: one exit code per kind of mistake in
// every command, each command's own help, empty flag values, outputs that
// are inputs, the address forms, relative savepoint directories and the
// flags' aliases.

const someJobID = "0123456789abcdef0123456789abcdef"

// fakeCluster is a REST API that answers the CLI's requests as Weir's
// does: jobs it knows get a savepoint at once, others are not found. It
// records the bodies of savepoint and stop requests.
type fakeCluster struct {
	srv *httptest.Server
	mu  sync.Mutex // guards bodies
	// bodies are the JSON bodies of POST .../savepoints and .../stop.
	bodies []map[string]any
}

func newFakeCluster(t *testing.T, jobs ...string) *fakeCluster {
	f := &fakeCluster{}
	known := func(id string) bool {
		for _, j := range jobs {
			if j == id {
				return true
			}
		}
		return false
	}
	answer := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jobs/overview", func(w http.ResponseWriter, r *http.Request) {
		answer(w, 200, rest.JobOverviewList{})
	})
	trigger := func(w http.ResponseWriter, r *http.Request) {
		if !known(r.PathValue("id")) {
			answer(w, 404, rest.ErrorBody{Errors: []string{"Job " + r.PathValue("id") + " not found"}})
			return
		}
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		f.bodies = append(f.bodies, body)
		f.mu.Unlock()
		answer(w, 202, rest.TriggerResponse{RequestID: "r1"})
	}
	mux.HandleFunc("POST /jobs/{id}/savepoints", trigger)
	mux.HandleFunc("POST /jobs/{id}/stop", trigger)
	mux.HandleFunc("GET /jobs/{id}/savepoints/{rid}", func(w http.ResponseWriter, r *http.Request) {
		answer(w, 200, rest.AsyncOperationResult{Status: rest.QueueStatus{ID: rest.StatusCompleted},
			Operation: &rest.SavepointInfo{Location: "file:///sp/savepoint-1"}})
	})
	mux.HandleFunc("PATCH /jobs/{id}", func(w http.ResponseWriter, r *http.Request) {
		if !known(r.PathValue("id")) {
			answer(w, 404, rest.ErrorBody{Errors: []string{"Job " + r.PathValue("id") + " not found"}})
			return
		}
		w.WriteHeader(202)
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// addr is the cluster's address as HOST:PORT.
func (f *fakeCluster) addr() string { return strings.TrimPrefix(f.srv.URL, "http://") }

func (f *fakeCluster) lastBody(t *testing.T) map[string]any {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bodies) == 0 {
		t.Fatal("no savepoint request reached the cluster")
	}
	return f.bodies[len(f.bodies)-1]
}

// A closed port: no cluster answers there.
func deadAddress(t *testing.T) string {
	srv := httptest.NewServer(http.NotFoundHandler())
	a := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	return a
}

// Every command: usage mistakes exit 2 with a message naming what is
// wrong, failures exit 1, whatever the command: an unknown job ID and an
// unknown job name alike, a missing nexmark input and a missing weir run
// input alike, and `weir help frob` is a mistake, not the help.
func TestExitCodePerMistake(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	os.WriteFile(in, []byte("a\t1\n"), 0o644)
	fc := newFakeCluster(t)
	dead := deadAddress(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		// run
		{[]string{"run", "nosuchjob"}, 2, `unknown job "nosuchjob"`},
		{[]string{"run", "wordcount", "--nope"}, 2, "unknown flag --nope"},
		{[]string{"run", "wordcount", "--output"}, 2, "flag --output needs a value"},
		{[]string{"run", "keyed-count", "--input", in, "--output", filepath.Join(dir, "o")}, 2, "needs --input, --output and --checkpoint-dir"},
		{[]string{"run", "keyed-count", "--input", in, "--output", filepath.Join(dir, "o"), "--checkpoint-dir", filepath.Join(dir, "c"), "--from", ""}, 2, "--from is empty"},
		{[]string{"run", "wordcount", "--input", filepath.Join(dir, "missing.txt"), "--output", filepath.Join(dir, "o"), "--address", ""}, 1, "missing.txt"},
		// bench
		{[]string{"bench", "nope"}, 2, "unknown benchmark"},
		{[]string{"bench", "keyed", "--state-backend", "rocksdb"}, 2, `--state-backend "rocksdb"`},
		{[]string{"bench", "savepoint", "--state", "1mb", "--dir", ""}, 2, "--dir is empty"},
		{[]string{"bench", "latency", "--keys", "0"}, 2, "--keys must be"},
		// list
		{[]string{"list", "extra"}, 2, "list takes no arguments"},
		{[]string{"list", "--address", ""}, 2, "--address is empty"},
		{[]string{"list", "--address", "ftp://" + fc.addr()}, 2, "not ftp://"},
		{[]string{"list", "--address", "http://" + fc.addr() + "/api"}, 2, "without a path"},
		{[]string{"list", "--address", dead}, 1, "no Weir cluster answered"},
		// cancel
		{[]string{"cancel"}, 2, "cancel needs one job ID"},
		{[]string{"cancel", "not-an-id"}, 2, "32 lowercase hex"},
		{[]string{"cancel", someJobID, "--address", fc.addr()}, 2, "no job " + someJobID},
		{[]string{"cancel", someJobID, "--address", dead}, 1, "no Weir cluster answered"},
		// savepoint, stop
		{[]string{"savepoint", someJobID, "--address", fc.addr()}, 2, "no job " + someJobID},
		{[]string{"savepoint", someJobID, "--address", fc.addr(), "--dir", ""}, 2, "--dir is empty"},
		{[]string{"savepoint", someJobID, "--address", fc.addr(), "--format", "x"}, 2, "--format must be"},
		{[]string{"savepoint", someJobID, "--address", dead}, 1, "no Weir cluster answered"},
		{[]string{"stop", someJobID, "--address", fc.addr()}, 2, "no job " + someJobID},
		{[]string{"stop", "--address", fc.addr()}, 2, "stop needs one job ID"},
		{[]string{"stop", someJobID, "--address", fc.addr(), "--dir", " "}, 2, "--dir is empty"},
		// savepoint inspect
		{[]string{"savepoint", "inspect"}, 2, "needs exactly one PATH"},
		{[]string{"savepoint", "inspect", filepath.Join(dir, "missing")}, 1, "missing"},
		// nexmark
		{[]string{"nexmark"}, 2, "nexmark needs a command"},
		{[]string{"nexmark", "generate", "--events", "10", "--output", ""}, 2, "--output is empty"},
		{[]string{"nexmark", "run", "--query", "q0", "--events", "10", "--checkpoint-dir", ""}, 2, "--checkpoint-dir is empty"},
		{[]string{"nexmark", "run", "--query", "q0", "--input", ""}, 2, "--input is empty"},
		{[]string{"nexmark", "run", "--query", "q0", "--input", filepath.Join(dir, "none.jsonl")}, 1, "no such file"},
		// version, help
		{[]string{"version", "extra"}, 2, "version takes no arguments"},
		{[]string{"help", "frob"}, 2, `help: unknown command "frob"`},
		{[]string{"frob"}, 2, `unknown command "frob"`},
	} {
		code, _, errOut := runCLI(tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
		if code == ExitUsage && tc.args[0] != "savepoint" && !strings.Contains(errOut, "Run 'weir help") {
			t.Errorf("%q: a usage error does not say where the help is: %q", tc.args, errOut)
		}
	}
}

// weir help <command>, weir <command> --help and -h print that command's
// help (its lines of the usage and its sections), not the whole text, and
// exit 0; every line of the whole text is in some command's help.
func TestCommandHelp(t *testing.T) {
	entry := map[string]string{"version": "  weir version", "run": "  weir run <job>", "bench": "  weir bench <name>", "list": "  weir list",
		"cancel": "  weir cancel", "savepoint": "  weir savepoint <job-id>", "stop": "  weir stop", "nexmark": "  weir nexmark generate",
		"help": "  weir help"}
	covered := map[string]bool{}
	for _, cmd := range commands {
		var forms [][]string
		for _, h := range []string{"--help", "-h"} {
			forms = append(forms, []string{cmd, h})
		}
		forms = append(forms, []string{"help", cmd})
		for _, args := range forms {
			code, out, errOut := runCLI(args...)
			if code != ExitOK || errOut != "" || !strings.HasPrefix(out, "Usage:\n") || !strings.Contains(out, entry[cmd]) {
				t.Errorf("%q: exit %d, stderr %q, stdout:\n%s\nwant exit 0 and the help of %s", args, code, errOut, out, cmd)
				continue
			}
			for other, e := range entry {
				if other != cmd && strings.Contains(out, e+" ") {
					t.Errorf("%q: the help of %s has %s's line %q", args, cmd, other, e)
				}
			}
			for _, l := range strings.Split(out, "\n") {
				covered[l] = true
			}
		}
	}
	for _, l := range strings.Split(usage, "\n")[2:] {
		if !covered[l] {
			t.Errorf("the line %q of weir help is in no command's help", l)
		}
	}
	// Subcommands and jobs: their command's help.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "wordcount", "--help"}, "Built-in jobs:"},
		{[]string{"run", "keyed-count", "-h"}, "Checkpoints (keyed-count"},
		{[]string{"bench", "savepoint", "--help"}, "--restore-parallelism"},
		{[]string{"nexmark", "run", "-h"}, "weir nexmark run --query"},
		{[]string{"help", "savepoint", "inspect"}, "Usage: weir savepoint inspect PATH"},
		{[]string{"savepoint", "inspect", "--help"}, "Usage: weir savepoint inspect PATH"},
		{[]string{"help"}, "Built-in jobs:"},
		{[]string{"--help"}, "weir nexmark generate"},
	} {
		code, out, errOut := runCLI(tc.args...)
		if code != ExitOK || errOut != "" || !strings.Contains(out, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 0 and %q in:\n%s", tc.args, code, errOut, tc.want, out)
		}
	}
	if _, out, _ := runCLI("list", "--help"); strings.Contains(out, "Built-in jobs:") {
		t.Errorf("weir list --help prints the whole text:\n%s", out)
	}
}

// A flag given an empty value is a usage error naming it, never the
// default: --from "" taken as "from the beginning" would make every
// resumed run start over and write the output again. run's --address ""
// (no REST API) keeps its meaning.
func TestEmptyFlagValues(t *testing.T) {
	dir := t.TempDir()
	in, out, ck := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out"), filepath.Join(dir, "ck")
	os.WriteFile(in, []byte("k\t1\nk\t2\n"), 0o644)
	keyed := []string{"run", "keyed-count", "--input", in, "--output", out, "--checkpoint-dir", ck, "--address", ""}
	window := []string{"run", "window-agg", "--input", in, "--output", out, "--window", "tumbling:1s", "--address", ""}
	for _, tc := range []struct {
		base []string
		flag string
	}{
		{keyed, "from"}, {keyed, "input"}, {keyed, "output"}, {keyed, "checkpoint-dir"}, {keyed, "savepoint-dir"},
		{window, "late-output"}, {window, "checkpoint-dir"}, {window, "watermarks"},
		{[]string{"run", "wordcount", "--address", ""}, "input"}, {[]string{"run", "wordcount", "--address", ""}, "output"},
		{[]string{"run", "kafka-keyed-count", "--input-topic", "a", "--output-topic", "b", "--guarantee", "none"}, "group"},
		{[]string{"list"}, "address"}, {[]string{"list"}, "rest-address"},
		{[]string{"savepoint", someJobID}, "dir"}, {[]string{"stop", someJobID}, "dir"}, {[]string{"savepoint", someJobID}, "rest-address"},
		{[]string{"bench", "savepoint", "--state", "1mb"}, "dir"}, {[]string{"bench", "keyed", "--events", "1000", "--keys", "10"}, "cpuprofile"},
		{[]string{"nexmark", "run", "--query", "q0", "--events", "10"}, "output"},
		{[]string{"nexmark", "run", "--query", "q0", "--events", "10"}, "state-dir"},
	} {
		args := append(append([]string{}, tc.base...), "--"+tc.flag, "")
		code, stdout, errOut := runCLI(args...)
		if code != ExitUsage || !strings.Contains(errOut, "--"+tc.flag+" is empty") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and --%s is empty", args, code, errOut, tc.flag)
		}
		if stdout != "" {
			t.Errorf("%q: printed %q", args, stdout)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused command wrote %s", out)
	}
	// --address "" of weir run: no REST API, as before.
	if code, _, errOut := runCLI(keyed...); code != ExitOK || strings.Contains(errOut, "REST API at") {
		t.Errorf("run with --address \"\": exit %d: %s", code, errOut)
	}
}

// Outputs that would overwrite or feed the input are refused before the job
// starts, and the input is left as it was; keyed-count (and window-agg with
// checkpoints) refuse --output -, which wrote a directory named "-".
func TestOutputIsInput(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	in := filepath.Join(dir, "in.txt")
	const content = "k\t1\nk\t2\n"
	os.WriteFile(in, []byte(content), 0o644)
	inDir := filepath.Join(dir, "indir")
	os.Mkdir(inDir, 0o755)
	os.WriteFile(filepath.Join(inDir, "a.txt"), []byte(content), 0o644)
	link := filepath.Join(dir, "link.txt")
	os.Symlink(in, link)
	hard := filepath.Join(dir, "hard.txt")
	os.Link(in, hard)
	events := filepath.Join(dir, "events.jsonl")
	os.WriteFile(events, []byte(`{"ts": 1, "key": "a", "value": 1}`+"\n"), 0o644)
	ck := filepath.Join(dir, "ck")
	rel, _ := filepath.Rel(mustGetwd(t), in)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "wordcount", "--input", in, "--output", in}, "--output " + in + " is the input"},
		{[]string{"run", "wordcount", "--input", in, "--output", link}, "is the input"},
		{[]string{"run", "wordcount", "--input", link, "--output", hard}, "is the input"},
		{[]string{"run", "wordcount", "--input", rel, "--output", in}, "is the input"},
		{[]string{"run", "wordcount", "--input", inDir, "--output", filepath.Join(inDir, "counts.txt")}, "inside the input directory"},
		{[]string{"run", "fraud-detection", "--input", in, "--output", in + "/../in.txt"}, "is the input"},
		{[]string{"run", "keyed-count", "--input", inDir, "--output", inDir, "--checkpoint-dir", ck}, "is the input"},
		{[]string{"run", "keyed-count", "--input", filepath.Join(inDir, "a.txt"), "--output", inDir, "--checkpoint-dir", ck}, "inside the output"},
		{[]string{"run", "keyed-count", "--input", in, "--output", "-", "--checkpoint-dir", ck}, "--output -: keyed-count writes a directory"},
		{[]string{"run", "keyed-count", "--input", in, "--output", filepath.Join(dir, "o"), "--checkpoint-dir", ck, "--bad-records", "dead-letter", "--dead-letter", "-"}, "--dead-letter -: keyed-count writes a directory"},
		{[]string{"run", "keyed-count", "--input", in, "--output", filepath.Join(dir, "o"), "--checkpoint-dir", ck, "--bad-records", "dead-letter", "--dead-letter", rel}, "is the input"},
		{[]string{"run", "keyed-count", "--input", inDir, "--output", filepath.Join(dir, "o"), "--checkpoint-dir", ck, "--bad-records", "dead-letter", "--dead-letter", filepath.Join(inDir, "dl")}, "inside the input directory"},
		{[]string{"run", "window-agg", "--input", events, "--output", events, "--window", "tumbling:1s"}, "is the input"},
		{[]string{"run", "window-agg", "--input", events, "--output", filepath.Join(dir, "w"), "--late-output", events, "--window", "tumbling:1s"}, "--late-output " + events + " is the input"},
		{[]string{"run", "window-agg", "--input", events, "--output", filepath.Join(dir, "w"), "--late-output", filepath.Join(dir, ".", "w"), "--window", "tumbling:1s"}, "are the same path"},
		{[]string{"run", "window-agg", "--input", events, "--output", "-", "--window", "tumbling:1s", "--checkpoint-dir", ck}, "--output -: with --checkpoint-dir"},
		{[]string{"run", "window-agg", "--input", events, "--output", filepath.Join(dir, "w"), "--late-output", "-", "--window", "tumbling:1s", "--checkpoint-dir", ck}, "--late-output -"},
		{[]string{"nexmark", "run", "--query", "q0", "--input", events, "--output", events}, "is the input"},
	} {
		args := append(tc.args, "--rest-address", "")
		if tc.args[0] == "nexmark" {
			args = tc.args
		}
		code, _, errOut := runCLI(args...)
		if code != ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", args, code, errOut, tc.want)
		}
	}
	if data, _ := os.ReadFile(in); string(data) != content {
		t.Errorf("the input was changed: %q", data)
	}
	if _, err := os.Stat("-"); err == nil {
		t.Error(`a directory named "-" was written`)
	}
	// Outputs next to the input are fine.
	if code, _, errOut := runCLI("run", "wordcount", "--input", in, "--output", filepath.Join(dir, "counts.txt"), "--address", ""); code != ExitOK {
		t.Errorf("an output beside the input: exit %d: %s", code, errOut)
	}
}

func mustGetwd(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// list, cancel, savepoint and stop take the address as weir run prints it
// (http://HOST:PORT), with or without a trailing slash, as HOST:PORT, and
// by --rest-address (weir run's name) as well.
func TestClientAddressForms(t *testing.T) {
	fc := newFakeCluster(t, someJobID)
	for _, a := range []string{fc.srv.URL, fc.srv.URL + "/", fc.addr(), fc.addr() + "/", strings.Replace(fc.srv.URL, "http", "HTTP", 1)} {
		for _, name := range []string{"--address", "--rest-address"} {
			if code, out, errOut := runCLI("list", name, a); code != ExitOK || !strings.Contains(out, "no jobs") {
				t.Errorf("list %s %s: exit %d, %q %q", name, a, code, out, errOut)
			}
		}
		if code, _, errOut := runCLI("cancel", someJobID, "--address", a); code != ExitOK {
			t.Errorf("cancel --address %s: exit %d, %q", a, code, errOut)
		}
		if code, out, errOut := runCLI("savepoint", someJobID, "--address", a); code != ExitOK || !strings.Contains(out, "savepoint-1") {
			t.Errorf("savepoint --address %s: exit %d, %q %q", a, code, out, errOut)
		}
		if code, out, errOut := runCLI("stop", someJobID, "--rest-address", a); code != ExitOK || !strings.Contains(out, "savepoint-1") {
			t.Errorf("stop --rest-address %s: exit %d, %q %q", a, code, out, errOut)
		}
	}
	// https:// is taken (a REST API behind a TLS proxy): a plain HTTP
	// server then fails the request (exit 1), not the command line.
	if code, _, errOut := runCLI("list", "--address", "https://"+fc.addr()); code != ExitFailed {
		t.Errorf("list --address https://...: exit %d, %q; want 1", code, errOut)
	}
	if code, _, errOut := runCLI("list", "--address", fc.addr(), "--rest-address", fc.addr()); code != ExitUsage || !strings.Contains(errOut, "not both") {
		t.Errorf("both names: exit %d, %q", code, errOut)
	}
}

// A relative weir savepoint --dir or weir stop --dir is the caller's: the
// CLI sends it absolute (the job resolved it in its own directory). URLs go
// unchanged.
func TestSavepointDirRelativeToCaller(t *testing.T) {
	fc := newFakeCluster(t, someJobID)
	wd := t.TempDir()
	t.Chdir(wd)
	for _, tc := range []struct {
		cmd, dir, want, field string
	}{
		{"savepoint", "sp", filepath.Join(wd, "sp"), "target-directory"},
		{"savepoint", "../x/./sp", filepath.Join(filepath.Dir(wd), "x", "sp"), "target-directory"},
		{"stop", "sp", filepath.Join(wd, "sp"), "targetDirectory"},
		{"savepoint", "s3://bucket/sp", "s3://bucket/sp", "target-directory"},
		{"stop", "file:///tmp/sp", "file:///tmp/sp", "targetDirectory"},
		{"savepoint", "mem://sp", "mem://sp", "target-directory"},
		{"stop", wd, wd, "targetDirectory"},
	} {
		code, _, errOut := runCLI(tc.cmd, someJobID, "--dir", tc.dir, "--address", fc.srv.URL)
		if code != ExitOK {
			t.Fatalf("%s --dir %s: exit %d: %s", tc.cmd, tc.dir, code, errOut)
		}
		if got := fc.lastBody(t)[tc.field]; got != tc.want {
			t.Errorf("%s --dir %s sent %s %v, want %s", tc.cmd, tc.dir, tc.field, got, tc.want)
		}
	}
}

// One name per concept, old names kept as aliases that set the same flag:
// --address (--rest-address), --max-out-of-orderness (window-agg's
// --out-of-orderness), --state-backend (bench's --backend). Messages name
// the flag as it was typed.
func TestFlagAliases(t *testing.T) {
	dir := t.TempDir()
	// Out of order by 900ms: with 1s of out-of-orderness the element at
	// 1600 is on time; without, late and dropped.
	events := filepath.Join(dir, "events.jsonl")
	os.WriteFile(events, []byte(`{"ts": 1500, "key": "a", "value": 1}
{"ts": 2500, "key": "a", "value": 2}
{"ts": 1600, "key": "a", "value": 4}
{"ts": 9000, "key": "a", "value": 8}
`), 0o644)
	windows := func(name, ooo string) string {
		out := filepath.Join(dir, "w-"+name)
		args := []string{"run", "window-agg", "--input", events, "--output", out, "--window", "tumbling:1s", "--rest-address", ""}
		if name != "" {
			args = append(args, "--"+name, ooo)
		}
		if code, _, errOut := runCLI(args...); code != ExitOK {
			t.Fatalf("%q: exit %d: %s", args, code, errOut)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	canonical, old, none := windows("max-out-of-orderness", "1s"), windows("out-of-orderness", "1s"), windows("", "")
	if canonical != old || canonical == none {
		t.Errorf("--out-of-orderness 1s gave:\n%s\n--max-out-of-orderness 1s:\n%s\nneither:\n%s", old, canonical, none)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "window-agg", "--input", events, "--output", filepath.Join(dir, "x"), "--window", "tumbling:1s", "--out-of-orderness", "-1s"}, 2, "--out-of-orderness must not be negative"},
		{[]string{"run", "window-agg", "--input", events, "--output", filepath.Join(dir, "x"), "--window", "tumbling:1s", "--max-out-of-orderness", "-1s"}, 2, "--max-out-of-orderness must not be negative"},
		{[]string{"run", "fraud-detection", "--input", events, "--output", filepath.Join(dir, "x"), "--out-of-orderness", "-1s"}, 2, "--out-of-orderness must not be negative"},
		{[]string{"run", "window-agg", "--input", events, "--output", filepath.Join(dir, "x"), "--window", "tumbling:1s", "--out-of-orderness", "1s", "--max-out-of-orderness", "1s"}, 2, "not both"},
		{[]string{"run", "wordcount", "--address", "8081"}, 2, `--address "8081": want HOST:PORT`},
		{[]string{"run", "wordcount", "--rest-address", "8081"}, 2, `--rest-address "8081": want HOST:PORT`},
		{[]string{"run", "clicks", "--rest-address", "", "--address", ""}, 2, "not both"},
		{[]string{"run", "clicks", "--address", "https://127.0.0.1:0"}, 2, "serves plain HTTP"},
		{[]string{"bench", "keyed", "--backend", "rocksdb"}, 2, `--backend "rocksdb"`},
		{[]string{"bench", "keyed", "--state-backend", "rocksdb"}, 2, `--state-backend "rocksdb"`},
		{[]string{"bench", "savepoint", "--backend", "rocksdb"}, 2, `--backend must be hashmap or pebble`},
		{[]string{"bench", "savepoint", "--state-backend", "rocksdb"}, 2, `--state-backend must be hashmap or pebble`},
		{[]string{"bench", "shuffle", "--backend", "pebble"}, 2, "--backend does not apply to bench shuffle"},
		{[]string{"bench", "keyed", "--events", "2000", "--keys", "10", "--parallelism", "1", "--backend", "pebble"}, 0, ""},
		{[]string{"bench", "keyed", "--events", "2000", "--keys", "10", "--parallelism", "1", "--state-backend", "pebble"}, 0, ""},
	} {
		code, _, errOut := runCLI(tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
	// weir run's REST API address by either name, in either form.
	for i, name := range []string{"--address", "--rest-address"} {
		pr := startWeir(t, "", "run", "clicks", name, []string{"127.0.0.1:0", "http://127.0.0.1:0/"}[i], "--rate", "100")
		_, addr := waitStarted(t, pr)
		if code, out, errOut := runCLI("list", name, "http://"+addr+"/"); code != ExitOK || !strings.Contains(out, "clicks") {
			t.Errorf("weir run %s, then list %s http://%s/: exit %d, %q %q", name, name, addr, code, out, errOut)
		}
		pr.cmd.Process.Signal(os.Interrupt)
		if code, _, _ := pr.wait(t, 10*time.Second); code != ExitCanceled {
			t.Errorf("exit %d", code)
		}
	}
}

// startWeirIn starts the weir command (this test binary) with dir as its
// working directory.
func startWeirIn(t *testing.T, dir string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(os.Args[0], args...)}
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), "WEIR_CLI_PROCESS=1", "TMPDIR="+t.TempDir())
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	return p
}

// The same with a running job in another directory: weir savepoint --dir sp
// puts the savepoint under the caller's sp, not the job's.
func TestProcessSavepointDirRelativeToCaller(t *testing.T) {
	dir := t.TempDir()
	jobDir, callerDir := filepath.Join(dir, "job"), filepath.Join(dir, "caller")
	os.Mkdir(jobDir, 0o755)
	os.Mkdir(callerDir, 0o755)
	writeKeyedInput(t, filepath.Join(jobDir, "in.txt"), testseed.Rand(t, 0), 20000, 10)
	pr := startWeirIn(t, jobDir, "run", "keyed-count", "--input", "in.txt", "--output", "out", "--checkpoint-dir", "ck",
		"--checkpoint-interval", "200ms", "--rate", "2000", "--rest-address", "127.0.0.1:0")
	id, addr := waitStarted(t, pr)
	t.Chdir(callerDir)
	code, stdout, stderr := runCLI("savepoint", id, "--dir", "sp", "--address", addr)
	m := savepointLine.FindStringSubmatch(stdout)
	if code != ExitOK || m == nil {
		t.Fatalf("weir savepoint: exit %d, %q %q", code, stdout, stderr)
	}
	if !strings.Contains(m[1], filepath.Join(callerDir, "sp")+"/savepoint-") {
		t.Errorf("the savepoint is at %s, want it under the caller's %s", m[1], filepath.Join(callerDir, "sp"))
	}
	if found, _ := filepath.Glob(filepath.Join(callerDir, "sp", "savepoint-*")); len(found) != 1 {
		t.Errorf("%d savepoints under the caller's sp, want 1", len(found))
	}
	if _, err := os.Stat(filepath.Join(jobDir, "sp")); err == nil {
		t.Errorf("the savepoint went to the job's directory")
	}
	pr.cmd.Process.Signal(syscall.SIGTERM)
	pr.wait(t, 10*time.Second)
}

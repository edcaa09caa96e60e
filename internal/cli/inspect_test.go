package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/checkpoint/inspect"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/jobs/keyedcount"
)

// keyedCountCheckpoint runs keyed-count over a small input and returns its
// final checkpoint's directory.
func keyedCountCheckpoint(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	in, out, ck := filepath.Join(dir, "in.tsv"), filepath.Join(dir, "out"), filepath.Join(dir, "ck")
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "k%d\t%d\n", i%7, i)
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := weir.Config{Parallelism: 2, Checkpointing: &weir.CheckpointConfig{Dir: ck, Interval: time.Hour}}
	if err := keyedcount.Run(ctx, keyedcount.Options{Input: in, Output: out, Config: cfg}); err != nil {
		t.Fatal(err)
	}
	jobs, _ := os.ReadDir(ck)
	jobs = slices.DeleteFunc(jobs, func(e os.DirEntry) bool { return strings.HasPrefix(e.Name(), "_") }) // the leases
	if len(jobs) != 1 {
		t.Fatalf("%d job directories", len(jobs))
	}
	chks, _ := filepath.Glob(filepath.Join(ck, jobs[0].Name(), "chk-*"))
	if len(chks) != 1 {
		t.Fatalf("checkpoints %v, want one", chks)
	}
	return chks[0]
}

func inspectCLI(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := runSavepointInspect(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestSavepointInspect(t *testing.T) {
	path := keyedCountCheckpoint(t)

	code, out, errOut := inspectCLI(path)
	if code != ExitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, w := range []string{`checkpoint 1 of job "keyed-count"`, `operator "Count" uid "count"`, "parallelism 2, max parallelism 128",
		`keyed "count-sum"`, "value, codec tuple.T2[int64,int64]: 7 keys, 7 entries", "key groups 0-63", "key groups 64-127",
		"pending commit: subtask", "enumerator (coordinator) state"} {
		if !strings.Contains(out, w) {
			t.Errorf("text output lacks %q:\n%s", w, out)
		}
	}

	code, out, errOut = inspectCLI("--json", path)
	if code != ExitOK || errOut != "" {
		t.Fatalf("--json: exit %d, stderr %q", code, errOut)
	}
	var r inspect.Report
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("--json output does not decode: %v\n%s", err, out)
	}
	var keys int64 = -1
	for _, op := range r.Operators {
		for _, ks := range op.KeyedStates {
			if op.UID == "count" && ks.Name == "count-sum" {
				keys = ks.Keys
			}
		}
	}
	if keys != 7 || r.JobName != "keyed-count" {
		t.Errorf("--json: job %q, count-sum keys %d, want 7", r.JobName, keys)
	}

	// Usage errors.
	for _, args := range [][]string{nil, {path, path}, {"--nope", path}} {
		if code, _, errOut := inspectCLI(args...); code != ExitUsage || !strings.Contains(errOut, "Usage: weir savepoint inspect") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and usage", args, code, errOut)
		}
	}
	if code, out, _ := inspectCLI("--help"); code != ExitOK || !strings.Contains(out, "Usage") {
		t.Errorf("--help: exit %d", code)
	}

	// Unreadable input: exit 1, naming the path.
	missing := filepath.Join(t.TempDir(), "job", "chk-9")
	noMeta := filepath.Join(t.TempDir(), "0123456789abcdef0123456789abcdef", "chk-3")
	if err := os.MkdirAll(noMeta, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{missing, "chk-9"},
		{noMeta, "has no _metadata"},
		{t.TempDir(), "not a checkpoint directory"},
	} {
		if code, out, errOut := inspectCLI(tc.path); code != ExitFailed || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 1 and %q", tc.path, code, out, errOut, tc.want)
		}
	}
	meta := filepath.Join(path, storage.MetadataName)
	b, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0x55
	if err := os.WriteFile(meta, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := inspectCLI(path); code != ExitFailed || !strings.Contains(errOut, "corrupt") || !strings.Contains(errOut, "_metadata") {
		t.Errorf("corrupt metadata: exit %d, stderr %q; want 1 naming the file", code, errOut)
	}
}

// `weir run --from` a checkpoint of another job (window-agg's, whose
// window and sink keyed-count does not have) fails naming an operator by
// UID and the flag; with --allow-non-restored-state it runs, and the log
// names what was skipped.
func TestRunAllowNonRestoredState(t *testing.T) {
	dir := t.TempDir()
	events := filepath.Join(dir, "events.jsonl")
	var b strings.Builder
	for i := range 50 {
		fmt.Fprintf(&b, "{\"ts\": %d, \"key\": \"k%d\", \"value\": %d}\n", i*100, i%3, i)
	}
	if err := os.WriteFile(events, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "ck")
	if code, _, errOut := runCLI("run", "window-agg", "--input", events, "--output", filepath.Join(dir, "w"), "--window", "tumbling:1s",
		"--checkpoint-dir", ck, "--rest-address", ""); code != ExitOK {
		t.Fatalf("window-agg: exit %d: %s", code, errOut)
	}
	chks, _ := filepath.Glob(filepath.Join(ck, "*", "chk-*"))
	if len(chks) != 1 {
		t.Fatalf("checkpoints %v", chks)
	}
	// The same input: a restored source goes on with its recorded splits
	// (another --input is refused), here all read already.
	args := []string{"run", "keyed-count", "--input", events, "--output", filepath.Join(dir, "out"), "--checkpoint-dir", filepath.Join(dir, "ck2"),
		"--from", chks[0], "--rest-address", ""}
	code, _, errOut := runCLI(args...)
	if code != ExitFailed || !strings.Contains(errOut, "which this job does not have") || !strings.Contains(errOut, "--allow-non-restored-state") ||
		!strings.Contains(errOut, `(uid "`) {
		t.Fatalf("without the flag: exit %d, stderr %q; want 1 naming an operator by uid and the flag", code, errOut)
	}
	code, _, errOut = runCLI(append(args, "--allow-non-restored-state")...)
	if code != ExitOK || !strings.Contains(errOut, "skipping state of an operator") || !strings.Contains(errOut, `uid \"window\"`) {
		t.Fatalf("with the flag: exit %d, stderr %q; want 0 and a log line naming the window operator", code, errOut)
	}
}

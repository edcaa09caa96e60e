package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/jobs/clicks"
)

// clicksLine is one line clicks prints: an optional subtask prefix, the
// page and its running count.
var clicksLine = regexp.MustCompile(`^(?:\d+> )?(\S+)\s+(\d+) clicks$`)

// clicksReference computes, from the generator alone, how many clicks each
// page gets among the first n.
func clicksReference(n int64) map[string]int64 {
	want := map[string]int64{}
	for i := range n {
		want[clicks.Generate(i).Page]++
	}
	return want
}

// clicksMismatches checks that the lines the runs printed together hold,
// for each page, its running counts 1, 2, ..., want[page] exactly once
// each: no click counted twice (a count printed twice) or lost (one
// missing). It returns what differs.
func clicksMismatches(outputs []string, want map[string]int64) []string {
	got := map[string][]int64{}
	var bad []string
	for _, out := range outputs {
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if l == "" {
				continue
			}
			m := clicksLine.FindStringSubmatch(l)
			if m == nil {
				bad = append(bad, fmt.Sprintf("unexpected output line %q", l))
				continue
			}
			n, _ := strconv.ParseInt(m[2], 10, 64)
			got[m[1]] = append(got[m[1]], n)
		}
	}
	for page, n := range want {
		c := got[page]
		slices.Sort(c)
		exact := int64(len(c)) == n
		for i := 0; exact && i < len(c); i++ {
			exact = c[i] == int64(i+1)
		}
		if !exact {
			bad = append(bad, fmt.Sprintf("page %s: %d counts printed, want 1..%d once each", page, len(c), n))
		}
		delete(got, page)
	}
	for page := range got {
		bad = append(bad, fmt.Sprintf("page %s printed but never generated", page))
	}
	return bad
}

// A job without periodic checkpoints (clicks takes none) takes a
// savepoint into its --savepoint-dir, is stopped with another at a random
// moment (the process exits 0), and a run resumed from the stop's
// savepoint at another parallelism counts the remaining clicks: every page's
// running counts across both runs are exactly those the generator's clicks
// give (none twice, none lost). A job that takes no periodic checkpoints
// still accepts --savepoint-dir and savepoint requests.
func TestProcessClicksSavepointStopResume(t *testing.T) {
	r := testseed.Rand(t, 0)
	const count = 3000
	dir := t.TempDir()
	sps := filepath.Join(dir, "sps")
	pr := startWeir(t, "", "run", "clicks", "--count", fmt.Sprint(count), "--rate", "1000", "--parallelism", "2",
		"--rest-address", "127.0.0.1:0", "--savepoint-dir", sps)
	id, addr := waitStarted(t, pr)
	time.Sleep(time.Duration(100+r.IntN(500)) * time.Millisecond)
	code, stdout, stderr := runWeir(t, 60*time.Second, "savepoint", id, "--address", addr)
	if m := savepointLine.FindStringSubmatch(stdout); code != ExitOK || m == nil || !strings.Contains(m[1], filepath.ToSlash(sps)+"/savepoint-") {
		t.Fatalf("weir savepoint of clicks: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	time.Sleep(time.Duration(100+r.IntN(500)) * time.Millisecond)
	code, stdout, stderr = runWeir(t, 60*time.Second, "stop", id, "--address", addr, "--dir", sps)
	m := stoppedLine.FindStringSubmatch(stdout)
	if code != ExitOK || m == nil {
		t.Fatalf("weir stop of clicks: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, _ := pr.wait(t, 30*time.Second); code != ExitOK {
		t.Fatalf("the stopped clicks exited %d, want 0; stderr:\n%s", code, pr.stderr.String())
	}
	stopped := strings.Count(pr.stdout.String(), "\n")
	if stopped == 0 || stopped >= count {
		t.Fatalf("the stop came after %d of %d clicks; the test needs it in between", stopped, count)
	}
	// The staging directory of the savepoints' files is gone with the job.
	if left, _ := filepath.Glob(filepath.Join(procTempDir(pr), "weir-savepoint-staging-*")); len(left) > 0 {
		t.Errorf("staging directories left behind: %v", left)
	}
	resumed := startWeir(t, "", "run", "clicks", "--count", fmt.Sprint(count), "--rate", "5000", "--parallelism", "3",
		"--rest-address", "", "--from", m[1])
	if code, _, _ := resumed.wait(t, 60*time.Second); code != ExitOK {
		t.Fatalf("resumed clicks: exit %d; stderr:\n%s", code, resumed.stderr.String())
	}
	if bad := clicksMismatches([]string{pr.stdout.String(), resumed.stdout.String()}, clicksReference(count)); len(bad) > 0 {
		t.Errorf("the stopped and the resumed run together: %s", strings.Join(bad, "; "))
	}
	t.Logf("stopped after %d of %d clicks at %s", stopped, count, m[1])
}

// procTempDir is the TMPDIR a process was started with.
func procTempDir(p *proc) string {
	dir := ""
	for _, e := range p.cmd.Env {
		if v, ok := strings.CutPrefix(e, "TMPDIR="); ok {
			dir = v
		}
	}
	return dir
}

// The check above fails on clicks counted twice or lost.
func TestClicksMismatches(t *testing.T) {
	want := clicksReference(20)
	var b strings.Builder
	counts := map[string]int64{}
	for i := range int64(20) {
		p := clicks.Generate(i).Page
		counts[p]++
		fmt.Fprintf(&b, "%d> %s\n", i%2+1, clicks.Click{Page: p, Clicks: counts[p]})
	}
	all := b.String()
	if bad := clicksMismatches([]string{all}, want); len(bad) > 0 {
		t.Fatalf("the exact output was refused: %v", bad)
	}
	if bad := clicksMismatches([]string{all, all}, want); len(bad) == 0 {
		t.Error("every click counted twice was accepted")
	}
	lines := strings.SplitAfter(all, "\n")
	if bad := clicksMismatches([]string{strings.Join(lines[:10], ""), strings.Join(lines[11:], "")}, want); len(bad) == 0 {
		t.Error("a lost click was accepted")
	}
}

// Keyed-count with --checkpoint-interval 0 (no periodic checkpoints) and
// --max-parallelism 256 is
// stopped with a savepoint at a random moment at parallelism 2, and
// resumes at parallelism 200, above the default max parallelism 128; the
// committed output equals the reference. A resume above the savepoint's max
// parallelism, or with another max parallelism, fails at once (exit 1)
// naming --max-parallelism.
func TestProcessMaxParallelismResume(t *testing.T) {
	r := testseed.Rand(t, 0)
	dir := t.TempDir()
	in, out, cps, sps := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out"), filepath.Join(dir, "cps"), filepath.Join(dir, "sps")
	want := writeKeyedInput(t, in, r, 6000, 500)
	pr := startWeir(t, "", "run", "keyed-count", "--input", in, "--output", out, "--checkpoint-dir", cps,
		"--checkpoint-interval", "0", "--max-parallelism", "256", "--rate", "3000", "--parallelism", "2",
		"--rest-address", "127.0.0.1:0", "--savepoint-dir", sps)
	id, addr := waitStarted(t, pr)
	time.Sleep(time.Duration(200+r.IntN(800)) * time.Millisecond)
	code, stdout, stderr := runWeir(t, 60*time.Second, "stop", id, "--address", addr)
	m := stoppedLine.FindStringSubmatch(stdout)
	if code != ExitOK || m == nil {
		t.Fatalf("weir stop: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, _ := pr.wait(t, 30*time.Second); code != ExitOK {
		t.Fatalf("the stopped job exited %d, want 0; stderr:\n%s", code, pr.stderr.String())
	}
	if strings.Contains(pr.stderr.String(), "checkpoint 1 complete") {
		t.Errorf("a checkpoint completed with --checkpoint-interval 0:\n%s", pr.stderr.String())
	}
	stopped := len(committedLines(t, out))
	if stopped == 0 || stopped >= len(want) {
		t.Fatalf("the stop committed %d of %d lines; the test needs it in between", stopped, len(want))
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--parallelism", "300"}, "above the max parallelism 256"},
		{[]string{"--parallelism", "200", "--max-parallelism", "512"}, "set it back to 256"},
	} {
		args := append([]string{"run", "keyed-count", "--input", in, "--output", out, "--checkpoint-dir", cps, "--from", m[1], "--rest-address", ""}, c.args...)
		code, _, stderr := runWeir(t, 60*time.Second, args...)
		if code != ExitFailed || !strings.Contains(stderr, c.says) || !strings.Contains(stderr, "--max-parallelism") {
			t.Errorf("resume with %v: exit %d, want 1 and a message naming --max-parallelism (%q); stderr:\n%s", c.args, code, c.says, stderr)
		}
	}
	code, _, stderr = runWeir(t, 120*time.Second, "run", "keyed-count", "--input", in, "--output", out, "--checkpoint-dir", cps,
		"--from", m[1], "--parallelism", "200", "--rest-address", "")
	if code != ExitOK {
		t.Fatalf("resumed at parallelism 200: exit %d, %s", code, stderr)
	}
	if got := committedLines(t, out); !slices.Equal(got, want) {
		t.Fatalf("%d committed lines after the resume at parallelism 200, want %d", len(got), len(want))
	}
	t.Logf("stopped with %d of %d lines committed", stopped, len(want))
}

// The run flags about savepoints are validated with usage errors (exit 2)
// naming them.
func TestSavepointRunFlagValidation(t *testing.T) {
	kc := []string{"run", "keyed-count", "--input", "a", "--output", "b", "--checkpoint-dir", "c"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append(kc, "--checkpoint-interval", "5ms"), "--checkpoint-interval must be at least 10ms, or 0 for no periodic checkpoints"},
		{append(kc, "--checkpoint-interval", "-1s"), "--checkpoint-interval must be at least 10ms, or 0 for no periodic checkpoints"},
		{append(kc, "--max-parallelism", "0"), "--max-parallelism must be between 1 and 32768"},
		{append(kc, "--max-parallelism", "32769"), "--max-parallelism must be between 1 and 32768"},
		{append(kc, "--parallelism", "8", "--max-parallelism", "4"), "--parallelism 8 is above --max-parallelism 4"},
		{[]string{"run", "clicks", "--from", "latest"}, "give the path of a savepoint"},
		{[]string{"run", "clicks", "--allow-non-restored-state"}, "--allow-non-restored-state needs --from"},
		{[]string{"run", "clicks", "--checkpoint-dir", "c"}, "--checkpoint-dir does not apply to clicks"},
	} {
		code, _, errOut := runCLI(tc.args...)
		if code != ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

// A relative weir savepoint --dir (and weir stop's) is resolved in the
// command's working directory, not the job's: the command sends it
// absolute.
func TestSavepointRelativeDir(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	id := strings.Repeat("a", 32)
	for _, c := range []struct{ dir, want string }{
		{"sps/here", filepath.Join(wd, "sps", "here")},
		{"/abs/sps", "/abs/sps"},
		{"s3://bucket/sps", "s3://bucket/sps"},
		{"file:///x/sps", "file:///x/sps"},
	} {
		for _, stop := range []bool{false, true} {
			_, _, f, err := savepointClient("savepoint", []string{id, "--dir", c.dir}, stop)
			if err != nil || f.dir != c.want {
				t.Errorf("--dir %q (stop %v): %q, %v; want %q", c.dir, stop, f.dir, err, c.want)
			}
		}
	}
}

package cli

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/testseed"
)

// The acceptance test: weir run keyed-count killed with SIGKILL at
// random moments (random parallelism 1-4, both backends, checkpoints every
// few hundred ms), restarted with --from latest several times, and run to
// the end: the committed output holds, for every key, exactly n = 1..N once
// each with the right sums. Aligned and unaligned.
func TestProcessKillAndResume(t *testing.T) {
	base := testseed.New(t)
	cases := 4
	if testing.Short() {
		cases = 2
	}
	for i := range cases {
		seed := base + uint64(i)
		unaligned := i%2 == 1
		t.Run(fmt.Sprintf("unaligned=%t/seed=%d", unaligned, seed), func(t *testing.T) {
			killAndResume(t, rand.New(rand.NewPCG(seed, 11)), unaligned)
		})
	}
}

func killAndResume(t *testing.T, r *rand.Rand, unaligned bool) {
	killAndResumeProgram(t, r, unaligned, os.Args[0], []string{"run", "keyed-count", "--rest-address", "", "--from", "latest"},
		"in.txt", "final: all output committed")
}

// killAndResumeProgram runs program (with args, plus the input, output,
// checkpoint and tuning flags) killed and resumed at random, then to the
// end, and checks its committed output; input names the input (a file, or
// a directory holding one file when it ends in "/"), done what the final
// run prints.
func killAndResumeProgram(t *testing.T, r *rand.Rand, unaligned bool, program string, args []string, input, done string) {
	dir := t.TempDir()
	in, out, ck := filepath.Join(dir, input), filepath.Join(dir, "out"), filepath.Join(dir, "checkpoints")
	file := in
	if strings.HasSuffix(input, "/") {
		os.MkdirAll(in, 0o755)
		file = filepath.Join(in, "input.txt")
	}
	lines := 2000 + r.IntN(2000)
	want := writeKeyedInput(t, file, r, lines, 1+r.IntN(40))
	p := 1 + r.IntN(4)
	backend := []string{"hashmap", "pebble"}[r.IntN(2)]
	interval := time.Duration(100+r.IntN(300)) * time.Millisecond
	rate := float64(lines) / 2 // two seconds of input per full run
	args = append(slices.Clone(args), "--input", strings.TrimSuffix(in, "/"), "--output", out, "--checkpoint-dir", ck,
		"--checkpoint-interval", interval.String(), "--rate", fmt.Sprint(rate), "--parallelism", fmt.Sprint(p),
		"--state-backend", backend)
	if unaligned {
		args = append(args, "--unaligned")
	}
	t.Logf("%d lines, parallelism %d, %s, interval %v, unaligned %t", lines, p, backend, interval, unaligned)
	kills := 2 + r.IntN(3)
	for k := range kills {
		pr := startProgram(t, program, "", args...)
		delay := time.Duration(300+r.IntN(1500)) * time.Millisecond
		time.Sleep(delay)
		pr.cmd.Process.Signal(syscall.SIGKILL)
		code, _, _ := pr.wait(t, 30*time.Second)
		ws, _ := pr.cmd.ProcessState.Sys().(syscall.WaitStatus)
		resumed := strings.Contains(pr.stderr.String(), "resuming from")
		t.Logf("run %d: killed after %v (exit %d, signaled %t); resumed: %t; %d lines committed so far",
			k, delay, code, ws.Signaled(), resumed, len(committedLines(t, out)))
		if code == ExitOK {
			break // it finished before the kill
		}
		if !ws.Signaled() {
			t.Fatalf("run %d ended by itself with exit %d: %s", k, code, pr.stderr.String())
		}
	}
	pr := startProgram(t, program, "", args...)
	code, took, _ := pr.wait(t, 120*time.Second)
	if code != ExitOK {
		t.Fatalf("final run: exit %d after %v: %s", code, took, pr.stderr.String())
	}
	if !strings.Contains(pr.stderr.String(), done) {
		t.Errorf("the final run did not report its final checkpoint: %s", pr.stderr.String())
	}
	got := committedLines(t, out)
	if !slices.Equal(got, want) {
		extra, missing := 0, 0
		seen := map[string]int{}
		for _, l := range got {
			seen[l]++
		}
		for _, l := range want {
			seen[l]--
		}
		for l, n := range seen {
			if n > 0 {
				extra += n
				t.Logf("extra: %q x%d", l, n)
			} else if n < 0 {
				missing -= n
			}
		}
		t.Fatalf("committed %d lines, want %d: %d extra, %d missing", len(got), len(want), extra, missing)
	}
	if program != os.Args[0] {
		return // a simple connector may leave a killed run's hidden files
	}
	// Weir's file sink deletes the in-progress files of killed runs (its
	// commit markers stay: they tie the output to the job's lineage).
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") && !strings.HasPrefix(e.Name(), ".weir-commit-") {
			t.Errorf("a finished job left %s in its output", e.Name())
		}
	}
}

// writeKeyedInput writes key<TAB>value lines and returns the expected
// output lines (key<TAB>n<TAB>sum), sorted.
func writeKeyedInput(t *testing.T, path string, r *rand.Rand, n, keys int) []string {
	t.Helper()
	var b strings.Builder
	count, sum := map[string]int64{}, map[string]int64{}
	var want []string
	for range n {
		key := fmt.Sprintf("key-%d", r.IntN(keys))
		v := r.Int64N(1_000_000) - 500_000
		fmt.Fprintf(&b, "%s\t%d\n", key, v)
		count[key]++
		sum[key] += v
		want = append(want, fmt.Sprintf("%s\t%d\t%d", key, count[key], sum[key]))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	return want
}

// committedLines reads the lines of the visible files of dir, sorted.
func committedLines(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var lines []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || strings.HasPrefix(e.Name(), "_") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			if l != "" {
				lines = append(lines, l)
			}
		}
	}
	slices.Sort(lines)
	return lines
}

// A newest checkpoint whose metadata is corrupt is skipped with a clear log
// line, and the job resumes from the one before it. (That checkpoint had
// completed, so the sink had committed its output: going back to an older
// one writes what came between again. Nothing is lost, but only a
// checkpoint that never completed, as one cut short by a crash, can be
// skipped without duplicates.)
func TestProcessResumeSkipsCorruptCheckpoint(t *testing.T) {
	r := testseed.Rand(t, 0)
	dir := t.TempDir()
	in, out, ck := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out"), filepath.Join(dir, "ck")
	want := writeKeyedInput(t, in, r, 3000, 10)
	args := []string{"run", "keyed-count", "--input", in, "--output", out, "--checkpoint-dir", ck, "--checkpoint-interval", "100ms",
		"--retained", "3", "--rate", "2000", "--parallelism", "2", "--rest-address", "", "--from", "latest"}
	pr := startWeir(t, "", args...)
	// Killed once two checkpoints completed, however long the start takes
	// (no fixed sleep: a busy machine starts slowly).
	var metas []string
	for deadline := time.Now().Add(30 * time.Second); len(metas) < 2 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		metas, _ = filepath.Glob(filepath.Join(ck, "*", "chk-*", "_metadata"))
	}
	pr.cmd.Process.Signal(syscall.SIGKILL)
	pr.wait(t, 30*time.Second)
	metas, _ = filepath.Glob(filepath.Join(ck, "*", "chk-*", "_metadata"))
	if len(metas) < 2 {
		t.Fatalf("want at least 2 retained checkpoints, found %v", metas)
	}
	slices.SortFunc(metas, func(a, b string) int { return checkpointNumber(a) - checkpointNumber(b) })
	newest := metas[len(metas)-1]
	if err := os.WriteFile(newest, []byte("not metadata"), 0o644); err != nil {
		t.Fatal(err)
	}
	pr = startWeir(t, "", args...)
	code, _, _ := pr.wait(t, 60*time.Second)
	errOut := pr.stderr.String()
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	prev := fmt.Sprintf("resuming from checkpoint %d ", checkpointNumber(metas[len(metas)-2]))
	if !strings.Contains(errOut, "skipping checkpoint") || !strings.Contains(errOut, prev) {
		t.Fatalf("want a log line about the corrupt checkpoint and %q; stderr:\n%s", prev, errOut)
	}
	got := map[string]bool{}
	for _, l := range committedLines(t, out) {
		got[l] = true
	}
	for _, l := range want {
		if !got[l] {
			t.Fatalf("line %q is missing from the output", l)
		}
	}
}

func checkpointNumber(metadata string) int {
	var n int
	fmt.Sscanf(filepath.Base(filepath.Dir(metadata)), "chk-%d", &n)
	return n
}

// window-agg with checkpoints, killed with SIGKILL at random moments and
// resumed with --from latest, commits the same results and late elements
// as an uninterrupted run (punctuated watermarks make both deterministic).
func TestProcessWindowAggKillAndResume(t *testing.T) {
	base := testseed.New(t)
	cases := 3
	if testing.Short() {
		cases = 1
	}
	for i := range cases {
		seed := base + uint64(i)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 13))
			dir := t.TempDir()
			in := filepath.Join(dir, "events.jsonl")
			lines := 3000 + r.IntN(2000)
			var b strings.Builder
			ts := int64(0)
			for range lines {
				ts += r.Int64N(20)
				e := ts - r.Int64N(80)
				if r.IntN(4) == 0 {
					e = ts - r.Int64N(2000) // far behind: late
				}
				fmt.Fprintf(&b, "{\"ts\": %d, \"key\": \"k%d\", \"value\": %d}\n", e, r.IntN(12), r.Int64N(1000)-500)
			}
			os.WriteFile(in, []byte(b.String()), 0o644)
			window := []string{"tumbling:200ms", "sliding:300ms,70ms", "session:40ms"}[r.IntN(3)]
			p := 1 + r.IntN(4)
			backend := []string{"hashmap", "pebble"}[r.IntN(2)]
			interval := time.Duration(100+r.IntN(300)) * time.Millisecond
			unaligned := r.IntN(2) == 0
			args := func(out string) []string {
				return []string{"run", "window-agg", fmt.Sprintf("--unaligned=%t", unaligned), "--rest-address", "", "--input", in, "--window", window,
					"--out-of-orderness", "30ms", "--allowed-lateness", "300ms",
					"--output", filepath.Join(out, "results"), "--late-output", filepath.Join(out, "late"),
					"--checkpoint-dir", filepath.Join(out, "checkpoints"), "--checkpoint-interval", interval.String(),
					"--rate", fmt.Sprint(lines / 2), "--parallelism", fmt.Sprint(p), "--state-backend", backend, "--from", "latest"}
			}
			t.Logf("%d lines, window %s, parallelism %d, %s, interval %v, unaligned %t", lines, window, p, backend, interval, unaligned)

			whole := filepath.Join(dir, "uninterrupted")
			pr := startWeir(t, "", args(whole)...)
			if code, took, _ := pr.wait(t, 120*time.Second); code != ExitOK {
				t.Fatalf("uninterrupted run: exit %d after %v: %s", code, took, pr.stderr.String())
			}
			killed := filepath.Join(dir, "killed")
			for k := range 2 + r.IntN(3) {
				pr := startWeir(t, "", args(killed)...)
				delay := time.Duration(300+r.IntN(1500)) * time.Millisecond
				time.Sleep(delay)
				pr.cmd.Process.Signal(syscall.SIGKILL)
				code, _, _ := pr.wait(t, 30*time.Second)
				t.Logf("run %d: killed after %v (exit %d); resumed: %t", k, delay, code, strings.Contains(pr.stderr.String(), "resuming from"))
				if code == ExitOK {
					break
				}
			}
			pr = startWeir(t, "", args(killed)...)
			if code, took, _ := pr.wait(t, 120*time.Second); code != ExitOK {
				t.Fatalf("final run: exit %d after %v: %s", code, took, pr.stderr.String())
			}
			for _, out := range []string{"results", "late"} {
				want, got := committedLines(t, filepath.Join(whole, out)), committedLines(t, filepath.Join(killed, out))
				if len(want) == 0 && out == "results" {
					t.Fatal("the uninterrupted run committed no results")
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s: %d lines after kills, %d uninterrupted", out, len(got), len(want))
					seen := map[string]int{}
					for _, l := range got {
						seen[l]++
					}
					for _, l := range want {
						seen[l]--
					}
					shown := 0
					for l, n := range seen {
						if n != 0 && shown < 5 {
							t.Logf("%s: %+d x %s", out, n, l)
							shown++
						}
					}
				}
			}
		})
	}
}

package cli

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/testseed"
)

// The storage acceptance test: keyed-count killed with SIGKILL at
// random moments, hundreds of times, each time resumed with --from latest,
// on both backends (Pebble incremental). After every kill the checkpoint
// storage holds at most --retained complete checkpoints plus the one that
// had just completed, and, besides the killed run's own checkpoints in
// flight, nothing of the earlier runs that their retained checkpoints do
// not need but what one deletion in flight leaves (storageUse.check): it
// stays bounded however many runs were killed. At the end the output is
// exactly once and the storage holds only the retained checkpoints and what
// they reference.
func TestProcessKillLoopStorageBounded(t *testing.T) {
	base := testseed.New(t)
	kills := 120 // per backend
	if testing.Short() {
		kills = 18
	}
	for i, backend := range []string{"pebble", "hashmap"} {
		seed := base + uint64(i)
		t.Run(fmt.Sprintf("%s/seed=%d", backend, seed), func(t *testing.T) {
			killLoop(t, rand.New(rand.NewPCG(seed, 17)), backend, kills)
		})
	}
}

func killLoop(t *testing.T, r *rand.Rand, backend string, kills int) {
	dir := t.TempDir()
	in, out, ck := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out"), filepath.Join(dir, "ck")
	lines := 30000 + r.IntN(10000)
	want := writeKeyedInput(t, in, r, lines, 20+r.IntN(200))
	p := 1 + r.IntN(3)
	retained := 1 + r.IntN(2)
	interval := time.Duration(10+r.IntN(40)) * time.Millisecond
	args := func(rate int) []string {
		a := []string{"run", "keyed-count", "--rest-address", "", "--from", "latest", "--log-level", "info",
			"--input", in, "--output", out, "--checkpoint-dir", ck, "--checkpoint-interval", interval.String(),
			"--retained", fmt.Sprint(retained), "--rate", fmt.Sprint(rate), "--parallelism", fmt.Sprint(p), "--state-backend", backend}
		if backend == "pebble" {
			a = append(a, "--incremental")
		}
		return a
	}
	t.Logf("%d lines, parallelism %d, %s, interval %v, retained %d, %d kills", lines, p, backend, interval, retained, kills)
	ctx := context.Background()
	store, err := storage.Open(ctx, ck)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var worst storageUse
	cleaned, finished := 0, false
	for k := 0; k < kills && !finished; k++ {
		pr := startWeir(t, "", args(500)...)
		delay := time.Duration(r.IntN(700)) * time.Millisecond
		time.Sleep(delay)
		pr.cmd.Process.Signal(syscall.SIGKILL)
		code, _, _ := pr.wait(t, 30*time.Second)
		errOut := pr.stderr.String()
		if code == ExitOK {
			finished = true // the input ran out before a kill
		} else if ws, _ := pr.cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() {
			t.Fatalf("run %d ended by itself with exit %d: %s", k, code, errOut)
		}
		own := ""
		if m := submittedJob.FindStringSubmatch(errOut); m != nil {
			own = m[1]
		}
		use := measureStorage(t, store, own)
		worst = worst.max(use)
		// Bounds that hold once the run cleaned up after the runs before
		// it (a run killed before that leaves their leftovers to the next).
		if !strings.Contains(errOut, "earlier runs of the job cleaned up") {
			continue
		}
		cleaned++
		if err := use.check(retained); err != nil {
			t.Fatalf("after kill %d (%v into the run): %v\n%s", k, delay, err, use)
		}
	}
	t.Logf("%d runs cleaned up before they were killed; the most seen after a kill: %s", cleaned, worst)
	if cleaned < kills/4 && !finished {
		t.Errorf("only %d of %d runs got as far as cleaning up: the bounds were hardly checked", cleaned, kills)
	}
	pr := startWeir(t, "", args(50000)...)
	code, took, _ := pr.wait(t, 120*time.Second)
	if code != ExitOK {
		t.Fatalf("final run: exit %d after %v: %s", code, took, pr.stderr.String())
	}
	if got := committedLines(t, out); !slices.Equal(got, want) {
		onlyGot, onlyWant := diffLines(got, want)
		t.Fatalf("committed %d lines, want %d: %d extra (%q...), %d missing (%q...)", len(got), len(want),
			len(onlyGot), first(onlyGot), len(onlyWant), first(onlyWant))
	}
	// After a clean end: only retained checkpoints, of the last run, and
	// the shared files they reference, some of which may be in an earlier
	// run's directory (the last run restored its incremental checkpoint
	// and has not compacted those files away).
	use := measureStorage(t, store, "")
	if use.incomplete != 0 || use.complete == 0 || use.complete > retained || use.jobs-use.holdingOnly != 1 || use.unrefShared != 0 {
		t.Fatalf("after the final run: %s; want 1 to %d complete checkpoints of one job and nothing unreferenced", use, retained)
	}
}

// submittedJob finds the job ID in a run's log.
var submittedJob = regexp.MustCompile(`msg="job submitted" job=([0-9a-f]+)`)

// storageUse is what a checkpoint storage holds.
type storageUse struct {
	jobs       int // job directories
	complete   int // chk-<n> with metadata
	incomplete int // chk-<n> without
	noComplete int // job directories without a complete checkpoint
	// holdingOnly is the job directories that hold nothing but shared
	// files complete checkpoints of other directories reference: an
	// earlier run's, whose files a run restored from it (incremental
	// checkpoints of Pebble) still references; they go once no retained
	// checkpoint does.
	holdingOnly int
	shared      int   // shared files
	unrefShared int   // shared files no complete checkpoint references
	unrefBytes  int64 // their bytes
	maxCkBytes  int64 // the most shared bytes one complete checkpoint references
	// Of the earlier runs (not the last one's job directory):
	earlierIncomplete int   // chk-<n> without metadata
	earlierUnref      int64 // bytes of shared files no complete checkpoint references
}

func (u storageUse) String() string {
	return fmt.Sprintf("%d job directories (%d without a complete checkpoint, %d holding only referenced shared files), %d complete and %d incomplete checkpoints "+
		"(%d of the earlier runs), %d shared files of which %d (%d bytes, %d of the earlier runs) unreferenced; "+
		"a checkpoint references at most %d shared bytes",
		u.jobs, u.noComplete, u.holdingOnly, u.complete, u.incomplete, u.earlierIncomplete, u.shared, u.unrefShared, u.unrefBytes, u.earlierUnref, u.maxCkBytes)
}

func (u storageUse) max(v storageUse) storageUse {
	return storageUse{max(u.jobs, v.jobs), max(u.complete, v.complete), max(u.incomplete, v.incomplete), max(u.noComplete, v.noComplete), max(u.holdingOnly, v.holdingOnly),
		max(u.shared, v.shared), max(u.unrefShared, v.unrefShared), max(u.unrefBytes, v.unrefBytes), max(u.maxCkBytes, v.maxCkBytes),
		max(u.earlierIncomplete, v.earlierIncomplete), max(u.earlierUnref, v.earlierUnref)}
}

// check applies the bounds after a kill of a run that had cleaned up after
// the runs before it. Complete checkpoints: --retained, plus the one that
// had just completed (the deletion of the oldest may not have run). The
// earlier runs' directories hold nothing but their retained checkpoints and
// what those reference, except what a deletion in flight had not removed
// yet (at most one run's retained checkpoints, whose metadata goes first).
// Job directories without a complete checkpoint: the killed run's, and one
// being deleted. The killed run's own in-flight checkpoints (in progress,
// aborted and not swept yet) are the next run's to clean, and the next
// check sees them as an earlier run's.
func (u storageUse) check(retained int) error {
	perCheckpoint := max(u.maxCkBytes, 16<<10)
	switch {
	case u.complete > retained+1:
		return fmt.Errorf("%d complete checkpoints, --retained is %d", u.complete, retained)
	case u.earlierIncomplete > retained:
		return fmt.Errorf("%d incomplete checkpoints in the earlier runs' directories, want at most %d (a deletion in flight)", u.earlierIncomplete, retained)
	case u.noComplete > 2:
		return fmt.Errorf("%d job directories without a complete checkpoint, want at most 2 (the killed run's, one being deleted)", u.noComplete)
	case u.earlierUnref > int64(retained)*perCheckpoint:
		return fmt.Errorf("%d bytes of shared files in the earlier runs' directories that no checkpoint references, more than %d checkpoints' worth (%d bytes)",
			u.earlierUnref, retained, perCheckpoint)
	}
	return nil
}

// measureStorage reads what the storage holds (nothing writes it now); own
// is the last run's job ID ("" for none).
func measureStorage(t *testing.T, s *storage.Store, own string) storageUse {
	t.Helper()
	ctx := context.Background()
	all, err := storage.ListAll(ctx, s, "")
	if err != nil {
		t.Fatal(err)
	}
	jobs := map[string]bool{}
	for _, k := range all {
		if job, _, ok := strings.Cut(k, "/"); ok && job != storage.LeasePrefix {
			jobs[job] = true
		}
	}
	var u storageUse
	u.jobs = len(jobs)
	referenced := map[string]bool{}
	for job := range jobs {
		ids, err := storage.CheckpointIDs(ctx, s, job)
		if err != nil {
			t.Fatal(err)
		}
		complete := 0
		for _, id := range ids {
			m, err := storage.ReadMetadata(ctx, s, job, id)
			if err != nil {
				u.incomplete++
				if job != own {
					u.earlierIncomplete++
				}
				continue
			}
			complete++
			var bytes int64
			for _, op := range m.Operators {
				for _, st := range op.Subtasks {
					for _, kh := range st.Keyed {
						for _, f := range kh.Files {
							if f.Shared {
								referenced[f.Object.Key] = true
								bytes += f.Object.Size
							}
						}
					}
				}
			}
			u.maxCkBytes = max(u.maxCkBytes, bytes)
		}
		u.complete += complete
		if complete == 0 {
			u.noComplete++
		}
	}
	// A job directory whose every object is a shared file some complete
	// checkpoint references holds only what must stay.
	other := map[string]bool{} // job directories holding anything else
	for _, k := range all {
		if job, _, ok := strings.Cut(k, "/"); ok && jobs[job] && (!strings.Contains(k, "/"+storage.SharedDir+"/") || !referenced[k]) {
			other[job] = true
		}
	}
	u.holdingOnly = len(jobs) - len(other)
	for _, k := range all {
		if !strings.Contains(k, "/"+storage.SharedDir+"/") {
			continue
		}
		u.shared++
		if !referenced[k] {
			u.unrefShared++
			if rd, err := s.Open(ctx, k); err == nil {
				u.unrefBytes += rd.Size()
				if !strings.HasPrefix(k, own+"/") || own == "" {
					u.earlierUnref += rd.Size()
				}
				rd.Close()
			}
		}
	}
	return u
}

func diffLines(a, b []string) (onlyA, onlyB []string) {
	seen := map[string]int{}
	for _, l := range a {
		seen[l]++
	}
	for _, l := range b {
		seen[l]--
	}
	for l, n := range seen {
		for ; n > 0; n-- {
			onlyA = append(onlyA, l)
		}
		for ; n < 0; n++ {
			onlyB = append(onlyB, l)
		}
	}
	slices.Sort(onlyA)
	slices.Sort(onlyB)
	return onlyA, onlyB
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

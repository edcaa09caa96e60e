package weir_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/tuple"
)

// keepValue keeps, for each key, the last string it received in a Go map
// of its own, outside Weir's state: memory no state bound counts (the
// hashmap backend's bound counts what state values point to, not what user
// functions hold), which only the process-wide guard sees.
type keepValue struct{ m map[int64]string }

func (b *keepValue) Open(weir.KeyedRuntimeContext) error {
	b.m = map[int64]string{}
	return nil
}

func (b *keepValue) ProcessElement(_ weir.KeyedContext[int64], r tuple.T2[int64, string], out weir.Collector[int64]) error {
	b.m[r.F0] = r.F1
	out.Collect(r.F0)
	return nil
}

const memoryGuardChild = "WEIR_MEMORY_GUARD_CHILD"

// The child of TestProcessMemoryGuard: a job with Config.ProcessMemory 256
// MiB keeping KEYS values of 100 KB; it prints the job's error and exits 1
// when the job fails, as weir run does.
func TestProcessMemoryGuardChild(t *testing.T) {
	keys := os.Getenv(memoryGuardChild)
	if keys == "" {
		t.Skip("run by TestProcessMemoryGuard in a process of its own")
	}
	var n int64
	fmt.Sscan(keys, &n)
	env := weir.NewEnvironment(weir.Config{ProcessMemory: 256 << 20, Parallelism: 2,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	type rec = tuple.T2[int64, string]
	gen := weir.Generate(env, n, 0, func(i int64) rec { return tuple.Of2(i, strings.Repeat(string(rune('a'+i%26)), 100<<10)) })
	ks := weir.KeyBy(gen, func(r rec) int64 { return r.F0 })
	weir.Discard(weir.ProcessKeyed[int64, rec, int64](ks, &keepValue{}))
	_, err := env.Execute(context.Background(), "large-strings")
	// The child's own peak: the rusage its parent gets would count the
	// parent's memory shared before exec (Go starts children with
	// CLONE_VM, and Linux keeps that memory's high-water mark across exec).
	if b, rerr := os.ReadFile("/proc/self/status"); rerr == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
				fmt.Fprintf(os.Stderr, "PEAK_RSS_KB %s\n", strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "JOB FAILED:", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "JOB FINISHED")
}

var peakRSSLine = regexp.MustCompile(`PEAK_RSS_KB (\d+)`)

// A job whose function holds large strings (10,000 keys of 100 KB:
// 1 GB, against a process memory of 256 MiB) fails within seconds, exit 1,
// with a message naming the setting, and its process's peak RSS stays
// under twice the setting (four times with -short, run under -race); the
// same job with 200 keys (20 MB) runs to the end. Each runs in a process of
// its own, so its RSS is its own.
func TestProcessMemoryGuard(t *testing.T) {
	if os.Getenv(memoryGuardChild) != "" {
		t.Skip("in the child")
	}
	run := func(keys int) (code int, took time.Duration, rssMiB int64, stderr string) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestProcessMemoryGuardChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", memoryGuardChild, keys))
		var errb strings.Builder
		cmd.Stderr = &errb
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		timer := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
		defer timer.Stop()
		cmd.Wait()
		took = time.Since(start)
		if m := peakRSSLine.FindStringSubmatch(errb.String()); m != nil {
			kb, _ := strconv.ParseInt(m[1], 10, 64)
			rssMiB = kb >> 10
		} else if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rssMiB = ru.Maxrss >> 10 // KiB on Linux; includes what the parent shared before exec
		}
		return cmd.ProcessState.ExitCode(), took, rssMiB, errb.String()
	}
	code, took, rss, msg := run(10000)
	t.Logf("10,000 keys of 100 KB under 256 MiB: exit %d after %v, peak RSS %d MiB", code, took.Round(time.Millisecond), rss)
	if code != 1 || took > 20*time.Second {
		t.Fatalf("exit %d after %v, want 1 within seconds:\n%s", code, took, tail(msg))
	}
	for _, want := range []string{"JOB FAILED", "Config.ProcessMemory", "--process-memory", "live after collection", "pebble"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure does not say %q:\n%s", want, tail(msg))
		}
	}
	if !strings.Contains(msg, `from="Config.ProcessMemory (--process-memory)"`) {
		t.Errorf("the log does not say where the process memory came from:\n%s", tail(msg))
	}
	limit := int64(512) // twice the process memory
	if testing.Short() {
		limit = 1024 // scripts/test runs -short under the race detector, whose shadow memory is not on the Go heap
	}
	if rss >= limit {
		t.Errorf("peak RSS %d MiB, want under %d MiB", rss, limit)
	}
	code, took, rss, msg = run(200)
	t.Logf("200 keys of 100 KB under 256 MiB: exit %d after %v, peak RSS %d MiB", code, took.Round(time.Millisecond), rss)
	if code != 0 || !strings.Contains(msg, "JOB FINISHED") {
		t.Fatalf("a job well under the bound: exit %d:\n%s", code, tail(msg))
	}
}

func tail(s string) string {
	if len(s) > 4000 {
		return "..." + s[len(s)-4000:]
	}
	return s
}

// The division of Config.ProcessMemory: network 10% and heap state 40%
// when not set; set ones that add up to more than it are refused, naming
// the three settings; a negative one is refused; while a job runs, the Go
// soft limit is 90% of it, and the limit from before is back when it ends.
func TestProcessMemoryDivision(t *testing.T) {
	const mib = 1 << 20
	cfg := weir.NewEnvironment(weir.Config{ProcessMemory: 1000 * mib}).Config()
	if cfg.NetworkMemory != 100*mib || cfg.HeapStateMemory != 400*mib {
		t.Fatalf("network %d, heap state %d; want 10%% and 40%% of 1000 MiB", cfg.NetworkMemory, cfg.HeapStateMemory)
	}
	if cfg := weir.NewEnvironment(weir.Config{ProcessMemory: 100 << 30}).Config(); cfg.NetworkMemory != 4<<30 {
		t.Fatalf("network %d under 100 GiB, want the cap of 4 GiB", cfg.NetworkMemory)
	}
	for _, c := range []weir.Config{
		{ProcessMemory: 256 * mib, HeapStateMemory: 250 * mib},
		{ProcessMemory: 256 * mib, NetworkMemory: 200 * mib, HeapStateMemory: 100 * mib},
	} {
		env := weir.NewEnvironment(c)
		_, err := weir.ExecuteAndCollect(context.Background(), env, weir.FromSlice(env, []int{1}), "too-much")
		for _, want := range []string{"Config.ProcessMemory", "Config.NetworkMemory", "Config.HeapStateMemory", "--process-memory"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("%+v: %v; want an error naming %s", c, err, want)
			}
		}
	}
	env := weir.NewEnvironment(weir.Config{ProcessMemory: -1})
	if _, err := weir.ExecuteAndCollect(context.Background(), env, weir.FromSlice(env, []int{1}), "negative"); err == nil || !strings.Contains(err.Error(), "Config.ProcessMemory") {
		t.Fatalf("a negative process memory: %v", err)
	}
	before := debug.SetMemoryLimit(-1)
	var during int64
	env = weir.NewEnvironment(weir.Config{ProcessMemory: 1000 * mib, OnSubmit: func(*weir.Job) { during = debug.SetMemoryLimit(-1) }})
	out, err := weir.ExecuteAndCollect(context.Background(), env, weir.FromSlice(env, []int{1, 2, 3}), "soft-limit")
	if err != nil || len(out) != 3 {
		t.Fatalf("%v, %v", out, err)
	}
	if want := min(before, int64(1000*mib)/100*90); during != want {
		t.Errorf("soft limit while the job ran: %d, want %d", during, want)
	}
	if after := debug.SetMemoryLimit(-1); after != before {
		t.Errorf("soft limit after the job: %d, want %d as before", after, before)
	}
}

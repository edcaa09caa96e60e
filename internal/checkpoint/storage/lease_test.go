package storage

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeProbe is a machine with the processes it lists (pid -> start time).
type fakeProbe struct {
	name, boot string
	procs      map[int]uint64
}

func (p fakeProbe) host() (string, string) { return p.name, p.boot }
func (p fakeProbe) start(pid int) (uint64, bool) {
	s, ok := p.procs[pid]
	return s, ok
}

// The liveness decision, case by case.
func TestLeaseLive(t *testing.T) {
	here := fakeProbe{name: "a", boot: "b1", procs: map[int]uint64{10: 500, 11: 0}}
	base := LeaseInfo{Host: "a", BootID: "b1", PID: 10, PIDStart: 500, Renewed: 1000, Timeout: 100}
	with := func(f func(*LeaseInfo)) LeaseInfo { i := base; f(&i); return i }
	cases := []struct {
		name   string
		holder LeaseInfo
		now    int64
		live   bool
		why    string
	}{
		{"running here", base, 1050, true, "its process runs"},
		{"released", with(func(i *LeaseInfo) { i.Released = true }), 1050, false, "released"},
		{"expired", base, 1100, false, "expired"},
		{"expired although running", base, 5000, false, "expired"},
		{"process gone", with(func(i *LeaseInfo) { i.PID = 12 }), 1050, false, "its process is gone"},
		{"pid reused", with(func(i *LeaseInfo) { i.PIDStart = 499 }), 1050, false, "its pid runs another process"},
		{"start unknown", with(func(i *LeaseInfo) { i.PID, i.PIDStart = 11, 0 }), 1050, true, "its process runs"},
		{"other host", with(func(i *LeaseInfo) { i.Host, i.PID = "z", 12 }), 1050, true, "renewed by a process elsewhere"},
		{"other boot", with(func(i *LeaseInfo) { i.BootID, i.PID = "b0", 12 }), 1050, true, "renewed by a process elsewhere"},
		{"no host", with(func(i *LeaseInfo) { i.Host = "" }), 1050, true, "renewed by a process elsewhere"},
	}
	for _, c := range cases {
		live, why := leaseLive(c.holder, c.now, here)
		if live != c.live || why != c.why {
			t.Errorf("%s: live %t (%s), want %t (%s)", c.name, live, why, c.live, c.why)
		}
	}
}

// manualClock is a settable wall clock.
type manualClock struct{ ms atomic.Int64 }

func (c *manualClock) now() time.Time      { return time.UnixMilli(c.ms.Load()) }
func (c *manualClock) add(d time.Duration) { c.ms.Add(d.Milliseconds()) }
func newManualClock() *manualClock         { c := &manualClock{}; c.ms.Store(1_700_000_000_000); return c }
func remoteInfo(owner string) LeaseInfo    { return LeaseInfo{Owner: owner, Host: "elsewhere", PID: 1} }

// memStores numbers the mem stores of these tests: a mem store lives as long
// as the process, and -count runs a test again in it.
var memStores atomic.Int64

func leaseStores(t *testing.T) map[string]*Store {
	t.Helper()
	return map[string]*Store{"file": openTestStore(t, t.TempDir()), "mem": openTestStore(t, fmt.Sprintf("mem://lease-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), memStores.Add(1)))}
}

func openTestStore(t *testing.T, url string) *Store {
	t.Helper()
	s, err := Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// A second run is refused while the first holds the lease, naming it; it
// takes the lease once the first released it or its heartbeat expired; the
// first then knows it lost it.
func TestLeaseAcquireRefuseTakeOver(t *testing.T) {
	ctx := context.Background()
	for name, s := range leaseStores(t) {
		t.Run(name, func(t *testing.T) {
			clk := newManualClock()
			a, err := AcquireLease(ctx, s, "keyed-count", remoteInfo("job-a"), time.Second, clk.now)
			if err != nil {
				t.Fatal(err)
			}
			_, err = AcquireLease(ctx, s, "keyed-count", remoteInfo("job-b"), time.Second, clk.now)
			var held *LeaseHeldError
			if !errors.As(err, &held) || held.Holder.Owner != "job-a" || !strings.Contains(err.Error(), "weir cancel job-a") {
				t.Fatalf("second acquire: %v", err)
			}
			// Another job name is another lease.
			if _, err := AcquireLease(ctx, s, "window-agg", remoteInfo("job-c"), time.Second, clk.now); err != nil {
				t.Fatal(err)
			}
			clk.add(600 * time.Millisecond)
			if err := a.Renew(ctx); err != nil {
				t.Fatal(err)
			}
			clk.add(600 * time.Millisecond) // 1.2 s after acquiring, 0.6 s after the heartbeat
			if _, err := AcquireLease(ctx, s, "keyed-count", remoteInfo("job-b"), time.Second, clk.now); err == nil {
				t.Fatal("took a lease renewed 600ms ago with a 1s timeout")
			}
			clk.add(500 * time.Millisecond)
			if err := a.Check(ctx); !errors.Is(err, ErrLeaseLost) {
				t.Fatalf("a's check after its timeout passed without a heartbeat: %v", err)
			}
			b, err := AcquireLease(ctx, s, "keyed-count", remoteInfo("job-b"), time.Second, clk.now)
			if err != nil {
				t.Fatalf("taking an expired lease: %v", err)
			}
			if err := b.Check(ctx); err != nil {
				t.Fatal(err)
			}
			if err := b.Release(ctx); err != nil {
				t.Fatal(err)
			}
			c, err := AcquireLease(ctx, s, "keyed-count", remoteInfo("job-c"), time.Second, clk.now)
			if err != nil {
				t.Fatalf("taking a released lease: %v", err)
			}
			if err := b.Check(ctx); !errors.Is(err, ErrLeaseLost) || !strings.Contains(err.Error(), "job-c") {
				t.Fatalf("b's check after c took the lease: %v", err)
			}
			if err := c.Check(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Taking a lease while the store fails retries with pauses that end with
// the context: canceled during a pause, it returns at once with the
// context's error and the store's.
func TestLeaseRetryPauseEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var lists atomic.Int64
	s := WithFaults(openTestStore(t, t.TempDir()), func(op, key string) (time.Duration, error) {
		if op != OpList {
			return 0, nil
		}
		if lists.Add(1) == maxLeaseRetries {
			// The last pause is the longest (200 ms): cancel during it.
			time.AfterFunc(10*time.Millisecond, cancel)
		}
		return 0, fmt.Errorf("listing %s: %w", key, ErrInjected)
	})
	_, err := AcquireLease(ctx, s, "keyed-count", remoteInfo("job-a"), time.Second, nil)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrInjected) {
		t.Fatalf("AcquireLease = %v, want the cancel during the pause and the store's error", err)
	}
	if n := lists.Load(); n != maxLeaseRetries {
		t.Errorf("listed %d times, want %d (no retry after the cancel)", n, maxLeaseRetries)
	}
}

// A holder that paused past its timeout and came back finds the lease taken
// at its next check (before any commit), even though its own clock says it
// renewed in time.
func TestLeasePausedHolderLoses(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, t.TempDir())
	clkA, clkB := newManualClock(), newManualClock()
	a, err := AcquireLease(ctx, s, "job", remoteInfo("a"), time.Second, clkA.now)
	if err != nil {
		t.Fatal(err)
	}
	clkB.add(2 * time.Second)
	if _, err := AcquireLease(ctx, s, "job", remoteInfo("b"), time.Second, clkB.now); err != nil {
		t.Fatal(err)
	}
	if err := a.Renew(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("the paused holder renewed: %v", err)
	}
	if err := a.Check(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("the paused holder's check: %v", err)
	}
}

// Runs racing for a free (or expired) lease: exactly one gets it, every
// other is told who has it. Many rounds, both stores.
func TestLeaseRace(t *testing.T) {
	ctx := context.Background()
	rounds := 30
	if testing.Short() {
		rounds = 10
	}
	for name, s := range leaseStores(t) {
		t.Run(name, func(t *testing.T) {
			clk := newManualClock()
			for round := range rounds {
				clk.add(2 * time.Second) // the previous round's lease expired
				var wg sync.WaitGroup
				var won atomic.Int32
				errs := make([]error, 8)
				for i := range errs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, err := AcquireLease(ctx, s, "raced", remoteInfo(fmt.Sprintf("r%d-%d", round, i)), time.Second, clk.now)
						if err == nil {
							won.Add(1)
						}
						errs[i] = err
					}()
				}
				wg.Wait()
				if won.Load() != 1 {
					t.Fatalf("round %d: %d runs took the lease: %v", round, won.Load(), errs)
				}
				for _, err := range errs {
					var held *LeaseHeldError
					if err != nil && !errors.As(err, &held) {
						t.Fatalf("round %d: %v", round, err)
					}
				}
			}
			keys, _ := s.List(ctx, LeasePrefix+"/raced/")
			if len(keys) > 2 {
				t.Errorf("older generations were not dropped: %v", keys)
			}
		})
	}
}

// A holder of this machine whose process is gone is passed over at once
// (kill -9, then --from latest); one whose process runs is not.
func TestLeaseHolderProcessGone(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, t.TempDir())
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep command:", err)
	}
	info := LocalProcess(LeaseInfo{Owner: "child"})
	info.PID = cmd.Process.Pid
	info.PIDStart, _ = processStart(cmd.Process.Pid)
	if _, err := AcquireLease(ctx, s, "job", info, time.Hour, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := AcquireLease(ctx, s, "job", LocalProcess(LeaseInfo{Owner: "me"}), time.Hour, nil); err == nil {
		t.Fatal("took the lease of a live process of this machine")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := AcquireLease(ctx, s, "job", LocalProcess(LeaseInfo{Owner: "me"}), time.Hour, nil); err != nil {
		t.Fatalf("the holder's process is gone, yet: %v", err)
	}
}

// Create: of writers racing for one key exactly one succeeds; the others
// get ErrExists and the object is the winner's.
func TestCreateExclusive(t *testing.T) {
	ctx := context.Background()
	for name, s := range leaseStores(t) {
		t.Run(name, func(t *testing.T) {
			for round := range 20 {
				key := fmt.Sprintf("x/%d", round)
				var wg sync.WaitGroup
				var won atomic.Int32
				var winner atomic.Value
				for i := range 6 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						err := s.Create(ctx, key, []byte(fmt.Sprint(i)))
						switch {
						case err == nil:
							won.Add(1)
							winner.Store(fmt.Sprint(i))
						case !errors.Is(err, ErrExists):
							t.Error(err)
						}
					}()
				}
				wg.Wait()
				got, err := s.Get(ctx, key)
				if won.Load() != 1 || err != nil || string(got) != winner.Load() {
					t.Fatalf("round %d: %d winners, object %q (%v)", round, won.Load(), got, err)
				}
			}
			keys, _ := s.list(ctx, "x/", true)
			if len(keys) != 20 {
				t.Errorf("temporary files left: %v", keys)
			}
		})
	}
}

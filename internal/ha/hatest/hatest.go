package hatest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/ha"
	"github.com/weirhq/weir/internal/testseed"
)

// Factory returns a new contender connected to the service under test,
// for the cluster id s.ClusterID and with s's lease, renew deadline and
// retry period; it fills in what reaches its service (type, endpoints,
// namespace...). It closes the contender when t ends (t.Cleanup); the
// suite never closes one itself.
type Factory func(t *testing.T, s ha.Settings) ha.Service

// Pauser is implemented by a Service whose renewals can be stopped without
// resigning or closing it, as SIGSTOP of its process would: from
// PauseRenewals on, none of its terms or campaigns is renewed any more,
// but its connection stays open, so the writes of its old Store still
// reach the service (which must refuse them) and Leader still answers.
type Pauser interface {
	PauseRenewals()
}

// The suite's leader election settings: short, so it runs in seconds.
const (
	leaseDuration = 2 * time.Second
	renewDeadline = 1500 * time.Millisecond
	retryPeriod   = 250 * time.Millisecond
	// caseTimeout bounds each case.
	caseTimeout = 60 * time.Second
	// slack is what a measured time may exceed its bound by: a busy
	// machine (two cores, the race detector) delays goroutines.
	slack = 750 * time.Millisecond
)

// Run runs the conformance cases as parallel subtests of t.
//
// What a driver must do beyond the ha package's doc: a contender may
// campaign again after its term ends; Campaign returns an error wrapping
// ctx.Err() when ctx ends first; Leader returns ok false while nobody
// leads; a value above ha.MaxValueSize and a key ha.CheckKey refuses are
// refused by every operation, the size's error naming the key and the
// limit in bytes (65536); List("") lists the whole store of the cluster id;
// an empty value is a value (Get returns it, not ErrNotFound); Increment
// of a value that is not a decimal number fails (not with ErrNotLeader).
func Run(t *testing.T, f Factory) {
	cases := []struct {
		name string
		run  func(*testing.T, *suite)
	}{
		{"election", testElection},
		{"store", testStore},
		{"fencing-resign", func(t *testing.T, s *suite) { testFencing(t, s, false) }},
		{"takeover", func(t *testing.T, s *suite) { testFencing(t, s, true) }},
		{"reader", testReader},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
			defer cancel()
			s := &suite{f: f, ctx: ctx, rng: testseed.Rand(t, 0), settings: ha.Settings{
				// Not from the seed: a service kept across runs must not
				// show a rerun the keys of the first.
				ClusterID:     fmt.Sprintf("ht-%s-%06x", c.name, rand.Uint32()&0xffffff),
				LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
			}}
			t.Logf("cluster id %s", s.settings.ClusterID)
			c.run(t, s)
		})
	}
}

// suite is one case's state.
type suite struct {
	f        Factory
	ctx      context.Context // the case's deadline
	rng      *rand.Rand
	settings ha.Settings
}

// contender returns a new contender of the case's cluster id.
func (s *suite) contender(t *testing.T) ha.Service {
	t.Helper()
	return s.f(t, s.settings)
}

// info returns the LeaderInfo of contender i.
func info(i int) ha.LeaderInfo {
	return ha.LeaderInfo{RPCAddress: fmt.Sprintf("127.0.0.1:%d", 6100+i), RESTAddress: fmt.Sprintf("127.0.0.1:%d", 8100+i)}
}

// won is the end of one campaign.
type won struct {
	who int
	ld  ha.Leadership
	err error
	at  time.Time
}

// campaign starts contender who's campaign and sends its end to out.
func campaign(ctx context.Context, svc ha.Service, who int, delay time.Duration, out chan<- won) {
	go func() {
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-ctx.Done():
			}
		}
		ld, err := svc.Campaign(ctx, info(who))
		out <- won{who: who, ld: ld, err: err, at: time.Now()}
	}()
}

// lead makes svc the leader: nobody else campaigns in the case yet.
func (s *suite) lead(t *testing.T, svc ha.Service, who int) ha.Leadership {
	t.Helper()
	ld, err := svc.Campaign(s.ctx, info(who))
	if err != nil {
		t.Fatalf("contender %d: campaign with no rival: %v", who, err)
	}
	return ld
}

// next waits for the next won campaign.
func (s *suite) next(t *testing.T, wins <-chan won, within time.Duration, what string) won {
	t.Helper()
	select {
	case w := <-wins:
		if w.err != nil {
			t.Fatalf("%s: contender %d's campaign: %v", what, w.who, w.err)
		}
		return w
	case <-time.After(within):
		t.Fatalf("%s: no contender won within %v", what, within)
	case <-s.ctx.Done():
		t.Fatalf("%s: the case's deadline passed", what)
	}
	panic("unreachable")
}

// closedWithin tells whether ch closes within d.
func closedWithin(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// checkLeader checks that each of svcs sees who leading in epoch.
func (s *suite) checkLeader(t *testing.T, svcs []ha.Service, who int, epoch uint64) {
	t.Helper()
	for i, svc := range svcs {
		got, e, ok, err := svc.Leader(s.ctx)
		if err != nil || !ok || got != info(who) || e != epoch {
			t.Fatalf("service %d: Leader() = %+v, epoch %d, ok %v, %v; want %+v, epoch %d (contender %d leads)",
				i, got, e, ok, err, info(who), epoch, who)
		}
	}
}

// testElection: one leader at a time among three contenders campaigning
// at once, Leader telling who, and epochs growing over many terms, each
// ended by Resign.
func testElection(t *testing.T, s *suite) {
	obs := s.contender(t)
	if got, e, ok, err := obs.Leader(s.ctx); err != nil || ok {
		t.Fatalf("before any campaign: Leader() = %+v, epoch %d, ok %v, %v; want ok false", got, e, ok, err)
	}
	const n = 3
	svcs := make([]ha.Service, n)
	for i := range svcs {
		svcs[i] = s.contender(t)
	}
	all := append([]ha.Service{obs}, svcs...)
	terms := 10
	if testing.Short() {
		terms = 3
	}
	wins := make(chan won, n)
	for i := range n {
		campaign(s.ctx, svcs[i], i, 0, wins)
	}
	var last uint64
	for term := range terms {
		w := s.next(t, wins, 2*leaseDuration, fmt.Sprintf("term %d", term))
		epoch := w.ld.Epoch()
		if epoch <= last {
			t.Fatalf("term %d: contender %d won with epoch %d, not above the previous term's %d", term, w.who, epoch, last)
		}
		last = epoch
		s.checkLeader(t, all, w.who, epoch)
		// The others stay candidates while the winner holds its term
		// (longer than a retry period: they retry meanwhile).
		hold := retryPeriod + time.Duration(s.rng.Int64N(int64(retryPeriod)))
		select {
		case w2 := <-wins:
			t.Fatalf("term %d: contender %d won (epoch %v, %v) while contender %d led in epoch %d", term, w2.who, epochOf(w2), w2.err, w.who, epoch)
		case <-w.ld.Done():
			t.Fatalf("term %d: contender %d's Done closed while it renewed and held its term", term, w.who)
		case <-time.After(hold):
		}
		if err := w.ld.Resign(s.ctx); err != nil {
			t.Fatalf("term %d: contender %d: Resign: %v", term, w.who, err)
		}
		if !closedWithin(w.ld.Done(), slack) {
			t.Fatalf("term %d: contender %d resigned, and its Done is not closed", term, w.who)
		}
		campaign(s.ctx, svcs[w.who], w.who, time.Duration(s.rng.Int64N(int64(retryPeriod))), wins)
	}
	w := s.next(t, wins, 2*leaseDuration, "the last term")
	if w.ld.Epoch() <= last {
		t.Fatalf("last term: epoch %d, not above %d", w.ld.Epoch(), last)
	}
	s.checkLeader(t, all, w.who, w.ld.Epoch())
	// A campaign whose context ends while another leads fails with the
	// context's error, soon.
	cctx, cancel := context.WithTimeout(s.ctx, retryPeriod)
	defer cancel()
	start := time.Now()
	if ld, err := obs.Campaign(cctx, info(n)); err == nil {
		t.Fatalf("observer won epoch %d while contender %d leads in epoch %d", ld.Epoch(), w.who, w.ld.Epoch())
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("campaign whose context ended: %v, want an error wrapping context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > retryPeriod+slack {
		t.Fatalf("campaign returned %v after its context's deadline of %v", d, retryPeriod)
	}
	s.checkLeader(t, all, w.who, w.ld.Epoch())
}

func epochOf(w won) any {
	if w.ld == nil {
		return nil
	}
	return w.ld.Epoch()
}

// keyAlphabet holds the characters of a store key's segments.
const keyAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_."

// storePrefixes are the prefixes of the keys testStore writes (the shapes
// of docs/high-availability.md, decision 4).
var storePrefixes = []string{"jobs/", "checkpoints/j1/", "checkpoints/j2/", "finished/"}

func randomKey(r *rand.Rand) string {
	seg := make([]byte, 1+r.IntN(12))
	for i := range seg {
		seg[i] = keyAlphabet[r.IntN(len(keyAlphabet))]
	}
	return storePrefixes[r.IntN(len(storePrefixes))] + string(seg)
}

func randomValue(r *rand.Rand) []byte {
	var n int
	switch r.IntN(8) {
	case 0:
		n = 0
	case 1:
		n = ha.MaxValueSize
	default:
		n = r.IntN(300)
	}
	v := make([]byte, n)
	for i := range v {
		v[i] = byte(r.IntN(256))
	}
	return v
}

// checkList compares List(prefix) of r with the reference.
func (s *suite) checkList(t *testing.T, r ha.Reader, prefix string, ref map[string][]byte, who string) {
	t.Helper()
	got, err := r.List(s.ctx, prefix)
	if err != nil {
		t.Fatalf("%s: List(%q): %v", who, prefix, err)
	}
	want := map[string][]byte{}
	for k, v := range ref {
		if strings.HasPrefix(k, prefix) {
			want[k] = v
		}
	}
	if !maps.EqualFunc(got, want, bytes.Equal) {
		gk, wk := slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want))
		t.Fatalf("%s: List(%q) has keys %q, want %q (or a value differs)", who, prefix, gk, wk)
	}
}

// testStore: the leader's store against a map, the counter under
// concurrent increments, and the refusals of bad keys and large values.
func testStore(t *testing.T, s *suite) {
	svc := s.contender(t)
	ld := s.lead(t, svc, 0)
	st := ld.Store()
	ctx := s.ctx
	ref := map[string][]byte{}
	ops := 200
	if testing.Short() {
		ops = 60
	}
	for i := range ops {
		k := randomKey(s.rng)
		if len(ref) > 0 && s.rng.IntN(3) == 0 {
			k = slices.Sorted(maps.Keys(ref))[s.rng.IntN(len(ref))]
		}
		switch s.rng.IntN(4) {
		case 0, 1:
			v := randomValue(s.rng)
			if err := st.Put(ctx, k, v); err != nil {
				t.Fatalf("op %d: Put(%q, %d bytes): %v", i, k, len(v), err)
			}
			ref[k] = v
		case 2:
			if err := st.Delete(ctx, k); err != nil {
				t.Fatalf("op %d: Delete(%q): %v", i, k, err)
			}
			delete(ref, k)
		case 3:
			got, err := st.Get(ctx, k)
			want, ok := ref[k]
			switch {
			case !ok && !errors.Is(err, ha.ErrNotFound):
				t.Fatalf("op %d: Get(%q) of a missing key = %d bytes, %v; want ErrNotFound", i, k, len(got), err)
			case ok && err != nil:
				t.Fatalf("op %d: Get(%q): %v", i, k, err)
			case ok && !bytes.Equal(got, want):
				t.Fatalf("op %d: Get(%q) = %d bytes %.16x..., want %d bytes %.16x...", i, k, len(got), got, len(want), want)
			}
		}
	}
	for _, p := range append([]string{""}, storePrefixes...) {
		s.checkList(t, st, p, ref, "the leader's store")
		s.checkList(t, svc.Reader(), p, ref, "the leader's Reader")
	}
	if _, err := st.Get(ctx, "jobs/never-written"); !errors.Is(err, ha.ErrNotFound) {
		t.Fatalf("Get of a key never written: %v, want ErrNotFound", err)
	}
	if err := st.Delete(ctx, "jobs/never-written"); err != nil {
		t.Fatalf("Delete of a key never written: %v", err)
	}

	// The counter: from absent, one by one, then under concurrent callers.
	const counter = "checkpoints/j1/counter"
	for want := int64(1); want <= 3; want++ {
		if got, err := st.Increment(ctx, counter); err != nil || got != want {
			t.Fatalf("Increment #%d = %d, %v; want %d", want, got, err, want)
		}
	}
	workers, each := 4, 10
	if testing.Short() {
		each = 4
	}
	var mu sync.Mutex // guards seen and errs
	seen := map[int64]int{}
	var errs []error
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				n, err := st.Increment(ctx, counter)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				}
				seen[n]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("concurrent Increment: %d errors, first: %v", len(errs), errs[0])
	}
	total := int64(3 + workers*each)
	for n := int64(4); n <= total; n++ {
		if seen[n] != 1 {
			t.Fatalf("concurrent Increment: value %d returned %d times, want once (values %v)", n, seen[n], seen)
		}
	}
	if v, err := st.Get(ctx, counter); err != nil || string(v) != strconv.FormatInt(total, 10) {
		t.Fatalf("counter after %d increments: %q, %v", total, v, err)
	}
	ref[counter] = []byte(strconv.FormatInt(total, 10))
	if err := st.Put(ctx, "checkpoints/j2/counter", []byte("x")); err != nil {
		t.Fatal(err)
	}
	ref["checkpoints/j2/counter"] = []byte("x")
	if n, err := st.Increment(ctx, "checkpoints/j2/counter"); err == nil || errors.Is(err, ha.ErrNotLeader) {
		t.Fatalf("Increment of %q = %d, %v; want an error that is not ErrNotLeader", "x", n, err)
	}

	// Bad keys and values are refused and change nothing.
	for _, k := range []string{"", "/jobs/a", "jobs/", "jobs//a", "jobs/a b", "jobs/é", strings.Repeat("a", 201)} {
		if ha.CheckKey(k) == nil {
			t.Fatalf("ha.CheckKey accepts %q", k)
		}
		if err := st.Put(ctx, k, []byte("v")); err == nil {
			t.Fatalf("Put(%q) succeeded", k)
		}
		if _, err := st.Get(ctx, k); err == nil || errors.Is(err, ha.ErrNotFound) {
			t.Fatalf("Get(%q): %v, want an error about the key", k, err)
		}
		if err := st.Delete(ctx, k); err == nil {
			t.Fatalf("Delete(%q) succeeded", k)
		}
		if _, err := st.Increment(ctx, k); err == nil {
			t.Fatalf("Increment(%q) succeeded", k)
		}
	}
	const big = "jobs/big"
	err := st.Put(ctx, big, make([]byte, ha.MaxValueSize+1))
	if err == nil || !strings.Contains(err.Error(), big) || !strings.Contains(err.Error(), strconv.Itoa(ha.MaxValueSize)) {
		t.Fatalf("Put of %d bytes: %v; want an error naming the key %q and the limit %d", ha.MaxValueSize+1, err, big, ha.MaxValueSize)
	}
	s.checkList(t, st, "", ref, "the leader's store after refusals")
}

// testFencing: once leader A's term ends and B wins, every write of A's
// old Store fails with ErrNotLeader and changes nothing, and A's Done is
// closed. A's term ends by Resign, or (pause, "takeover") because A stops
// renewing after its term outlived its renew deadline: then A's Done
// closes within the renew deadline, before B wins, and B wins within
// twice the lease duration.
func testFencing(t *testing.T, s *suite, pause bool) {
	a, b := s.contender(t), s.contender(t)
	var p Pauser
	if pause {
		var ok bool
		if p, ok = a.(Pauser); !ok {
			t.Skipf("the driver's Service (%T) is no hatest.Pauser", a)
		}
	}
	ldA := s.lead(t, a, 0)
	stA := ldA.Store()
	ctx := s.ctx
	if err := stA.Put(ctx, "fence/x", []byte("a1")); err != nil {
		t.Fatal(err)
	}
	if n, err := stA.Increment(ctx, "fence/n"); err != nil || n != 1 {
		t.Fatalf("Increment = %d, %v", n, err)
	}
	wins := make(chan won, 1)
	aDoneAtWin := make(chan bool, 1) // whether A's Done was closed when B's campaign returned
	go func() {
		ld, err := b.Campaign(ctx, info(1))
		at := time.Now()
		aDoneAtWin <- isClosed(ldA.Done())
		wins <- won{who: 1, ld: ld, err: err, at: at}
	}()
	// B waits while A holds its term; paused later, A's term outlives its
	// renew deadline first, to show its renewals work.
	hold := 2 * retryPeriod
	if pause {
		hold = renewDeadline + time.Duration(s.rng.Int64N(int64(2*retryPeriod)))
	}
	select {
	case w := <-wins:
		t.Fatalf("B's campaign ended (epoch %v, %v) while A led", epochOf(w), w.err)
	case <-ldA.Done():
		t.Fatal("A's Done closed while it renewed")
	case <-time.After(hold):
	}
	ended := time.Now()
	done := make(chan time.Time, 1)
	go func() {
		select {
		case <-ldA.Done():
			done <- time.Now()
		case <-ctx.Done():
		}
	}()
	if pause {
		p.PauseRenewals()
	} else if err := ldA.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	w := s.next(t, wins, 2*leaseDuration+slack, "B's campaign after A's term ended")
	if !<-aDoneAtWin {
		t.Fatalf("B won epoch %d %v after A's term ended, and A's Done (epoch %d) was not closed", w.ld.Epoch(), w.at.Sub(ended), ldA.Epoch())
	}
	doneAt := <-done // when a goroutine saw it closed: at or after
	if pause {
		t.Logf("A's Done closed %v after its renewals stopped (renew deadline %v); B won %v after (lease %v)",
			doneAt.Sub(ended), renewDeadline, w.at.Sub(ended), leaseDuration)
		if d := doneAt.Sub(ended); d > renewDeadline+slack {
			t.Fatalf("A's Done closed %v after its renewals stopped, want within the renew deadline %v", d, renewDeadline)
		}
		if d := w.at.Sub(ended); d > 2*leaseDuration {
			t.Fatalf("B won %v after A stopped renewing, want within twice the lease duration %v", d, leaseDuration)
		}
	}
	if w.ld.Epoch() <= ldA.Epoch() {
		t.Fatalf("B's epoch %d is not above A's %d", w.ld.Epoch(), ldA.Epoch())
	}
	stB := w.ld.Store()
	if err := stB.Put(ctx, "fence/x", []byte("b1")); err != nil {
		t.Fatalf("B's Put: %v", err)
	}
	for name, write := range map[string]func() error{
		"Put":           func() error { return stA.Put(ctx, "fence/x", []byte("a2")) },
		"Put (new key)": func() error { return stA.Put(ctx, "fence/y", []byte("a2")) },
		"Delete":        func() error { return stA.Delete(ctx, "fence/x") },
		"Increment":     func() error { _, err := stA.Increment(ctx, "fence/n"); return err },
	} {
		if err := write(); !errors.Is(err, ha.ErrNotLeader) {
			t.Fatalf("A's %s after B won: %v, want ErrNotLeader", name, err)
		}
	}
	for k, want := range map[string]string{"fence/x": "b1", "fence/n": "1"} {
		if v, err := stB.Get(ctx, k); err != nil || string(v) != want {
			t.Fatalf("%s after A's refused writes: %q, %v; want %q", k, v, err, want)
		}
	}
	if _, err := stB.Get(ctx, "fence/y"); !errors.Is(err, ha.ErrNotFound) {
		t.Fatalf("fence/y, refused to A: %v, want ErrNotFound", err)
	}
	s.checkLeader(t, []ha.Service{a, b}, 1, w.ld.Epoch())
}

// testReader: a contender that does not lead reads the leader's writes,
// and sees nobody lead once the leader resigned.
func testReader(t *testing.T, s *suite) {
	a, b := s.contender(t), s.contender(t)
	ldA := s.lead(t, a, 0)
	st := ldA.Store()
	ref := map[string][]byte{}
	for range 5 + s.rng.IntN(10) {
		k, v := randomKey(s.rng), randomValue(s.rng)
		if err := st.Put(s.ctx, k, v); err != nil {
			t.Fatal(err)
		}
		ref[k] = v
		s.checkList(t, b.Reader(), "", ref, "a standby's Reader")
		got, err := b.Reader().Get(s.ctx, k)
		if err != nil || !bytes.Equal(got, v) {
			t.Fatalf("a standby's Reader: Get(%q) = %d bytes, %v; want the %d bytes the leader put", k, len(got), err, len(v))
		}
	}
	for _, p := range storePrefixes {
		s.checkList(t, b.Reader(), p, ref, "a standby's Reader")
	}
	for k := range ref {
		if err := st.Delete(s.ctx, k); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Reader().Get(s.ctx, k); !errors.Is(err, ha.ErrNotFound) {
			t.Fatalf("a standby's Reader: Get(%q) after the leader deleted it: %v, want ErrNotFound", k, err)
		}
	}
	s.checkLeader(t, []ha.Service{b}, 0, ldA.Epoch())
	// Resigned with no other contender: nobody leads.
	if err := ldA.Resign(s.ctx); err != nil {
		t.Fatal(err)
	}
	if got, e, ok, err := b.Leader(s.ctx); err != nil || ok {
		t.Fatalf("after the only leader resigned: Leader() = %+v, epoch %d, ok %v, %v; want ok false", got, e, ok, err)
	}
}

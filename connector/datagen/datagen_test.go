package datagen_test

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/connector/datagen"
	"github.com/weirhq/weir/connector/internal/sourcetest"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/source"
)

// openGen starts a generator without end at the given rate at parallelism
// p, on a manual clock, and returns subtask 0's reader with its split
// assigned; it counts records without keeping them.
func openGen(t *testing.T, rate float64, p int) (*sourcetest.Reader[int64, datagen.Split], *clock.Manual, error) {
	t.Helper()
	clk := clock.NewManual(1_700_000_000_000)
	src := datagen.Generator[int64]{Count: -1, Fn: func(i int64) int64 { return i }, RatePerSecond: rate}
	job, err := sourcetest.Start(src, p, clk)
	if err != nil {
		return nil, clk, err
	}
	t.Cleanup(func() { job.Close() })
	if err := job.Deliver(); err != nil {
		t.Fatal(err)
	}
	r := job.Reader(0)
	r.Discard = true
	return r, clk, nil
}

// +Inf, and rates whose per-millisecond share no int64 can count, are no
// limit: every poll emits a full batch, without waiting for the clock.
func TestUnlimitedRates(t *testing.T) {
	for _, rate := range []float64{0, math.Inf(1), 1e300, math.MaxFloat64, 1e25} {
		r, _, err := openGen(t, rate, 1)
		if err != nil {
			t.Fatalf("rate %v: %v", rate, err)
		}
		for range 3 {
			st, _, _, err := r.Poll()
			if st != source.MoreAvailable || err != nil {
				t.Fatalf("rate %v: Poll = %v, %v after %d records; want MoreAvailable", rate, st, err, r.N)
			}
		}
		if r.N != 3*1024 {
			t.Fatalf("rate %v: %d records in 3 polls, want 3 full batches", rate, r.N)
		}
	}
}

// A huge rate that is still a limit (a share below 2^62 per ms) emits a
// full batch per poll once a millisecond has passed, and never stalls.
func TestHugeRateDoesNotStall(t *testing.T) {
	r, clk, err := openGen(t, 1e18, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		clk.Advance(1)
		if st, _, _, err := r.Poll(); st != source.MoreAvailable || err != nil {
			t.Fatalf("poll %d: %v, %v", i, st, err)
		}
	}
	if r.N != 100*1024 {
		t.Fatalf("%d records in 100 polls, want 100 full batches", r.N)
	}
}

// A negative or NaN rate, or a nil function, fails CreateReader with a
// message saying what is wrong.
func TestBadRates(t *testing.T) {
	for _, rate := range []float64{math.NaN(), -1, math.Inf(-1), -1e-300} {
		_, _, err := openGen(t, rate, 1)
		if err == nil || !strings.Contains(err.Error(), "rate must be a number of records per second, 0 or more") {
			t.Errorf("rate %v: CreateReader = %v, want an error", rate, err)
		} else if strings.Contains(err.Error(), "%!") {
			t.Errorf("rate %v: %q", rate, err)
		}
	}
	if _, err := sourcetest.Start(datagen.Generator[int]{Count: 3}, 1, nil); err == nil || !strings.Contains(err.Error(), "Fn is nil") {
		t.Errorf("nil Fn: %v", err)
	}
}

// The source asks to wait exactly until the next record is due (5 per
// second: 200 ms), not to be polled every millisecond.
func TestRateWaitsUntilTheNextRecord(t *testing.T) {
	r, clk, err := openGen(t, 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	if st, _, _, _ := r.Poll(); st != source.MoreAvailable || r.N != 1 {
		t.Fatalf("first poll: %v with %d records, want the first record at once", st, r.N)
	}
	st, wait, retry, _ := r.Poll()
	if st != source.NothingAvailable || wait != nil || retry != 200*time.Millisecond {
		t.Fatalf("second poll: %v, retry after %v; want NothingAvailable for 200 ms", st, retry)
	}
	clk.Advance(199)
	if st, _, retry, _ := r.Poll(); st != source.NothingAvailable || retry != time.Millisecond || r.N != 1 {
		t.Fatalf("at 199 ms: %v, retry %v, %d records", st, retry, r.N)
	}
	clk.Advance(1)
	if r.Poll(); r.N != 2 {
		t.Fatalf("at 200 ms: %d records, want 2", r.N)
	}
}

// A rate so low that the next record is centuries away, or whose share
// underflows float64, still limits, and asks to be polled again in a minute
// rather than overflowing the wait.
func TestTinyRateWaitIsBounded(t *testing.T) {
	for _, rate := range []float64{1e-300, math.SmallestNonzeroFloat64} {
		r, clk, err := openGen(t, rate, 3)
		if err != nil {
			t.Fatal(err)
		}
		r.Poll()
		for range 3 {
			st, _, retry, _ := r.Poll()
			if st != source.NothingAvailable || retry != time.Minute || r.N != 1 {
				t.Fatalf("rate %v: %v, retry after %v, %d records; want one record, then a wait of a minute", rate, st, retry, r.N)
			}
			clk.Advance(retry.Milliseconds())
		}
	}
}

// Randomized: at any rate and parallelism, after elapsed ms a subtask has
// emitted floor(elapsed*share)+1 records once polled to NothingAvailable;
// the wait it asks for is long enough that nothing is due one ms earlier,
// and short enough that something is due then (within a ms of rounding).
func TestRateRandomized(t *testing.T) {
	rng := testseed.Rand(t, 11)
	for range 100 {
		rate := math.Exp(rng.Float64()*math.Log(1e6/0.1)) * 0.1 // 0.1 .. 1e6 per second
		p := 1 + rng.IntN(4)
		share := rate / float64(p) / 1000
		r, clk, err := openGen(t, rate, p)
		if err != nil {
			t.Fatal(err)
		}
		var elapsed int64
		for range 30 {
			var retry int64
			for {
				st, _, rt, err := r.Poll()
				if err != nil {
					t.Fatal(err)
				}
				if st == source.NothingAvailable {
					retry = rt.Milliseconds()
					break
				}
			}
			if want := int64(math.Floor(float64(elapsed)*share)) + 1; int64(r.N) < want-1 || int64(r.N) > want+1 {
				t.Fatalf("rate %v at parallelism %d: %d records after %d ms, want %d", rate, p, r.N, elapsed, want)
			}
			if retry < 1 || retry > 60_000 {
				t.Fatalf("rate %v: retry after %d ms", rate, retry)
			}
			before := r.N
			if retry > 1 {
				clk.Advance(retry - 1)
				elapsed += retry - 1
				if r.Poll(); r.N != before {
					t.Fatalf("rate %v at parallelism %d: a record came 1 ms before the wait of %d ms ended", rate, p, retry)
				}
				clk.Advance(1)
				elapsed++
			} else {
				clk.Advance(1)
				elapsed++
			}
			if r.Poll(); r.N == before {
				clk.Advance(1) // rounding may put the record a ms later
				elapsed++
				if r.Poll(); r.N == before {
					t.Fatalf("rate %v at parallelism %d: nothing due 1 ms after a wait of %d ms ended", rate, p, retry)
				}
			}
			if jump := rng.Int64N(1000); rng.IntN(4) == 0 {
				clk.Advance(jump)
				elapsed += jump
			}
		}
	}
}

// The rate is the whole source's after a restore at another parallelism
// too: each split keeps its share, whichever reader has it, and a reader
// without a split ends.
func TestRateAfterRescale(t *testing.T) {
	clk := clock.NewManual(1_700_000_000_000)
	src := datagen.Generator[int64]{Count: 1 << 40, Fn: func(i int64) int64 { return i }, RatePerSecond: 1000}
	job, err := sourcetest.Start(src, 4, clk)
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Deliver(); err != nil {
		t.Fatal(err)
	}
	cp, err := job.Checkpoint(1)
	if err != nil {
		t.Fatal(err)
	}
	job.Close()
	for _, p := range []int{1, 3, 6} {
		job, err := sourcetest.Restore(src, cp, p, clk)
		if err != nil {
			t.Fatal(err)
		}
		if err := job.Deliver(); err != nil {
			t.Fatal(err)
		}
		total := func() int {
			n := 0
			for i := range p {
				job.Reader(i).Discard = true
				for {
					st, _, _, err := job.Reader(i).Poll()
					if err != nil {
						t.Fatal(err)
					}
					if st != source.MoreAvailable {
						break
					}
				}
				n += job.Reader(i).N
			}
			return n
		}
		start := total()
		clk.Advance(10_000)
		// 1000 per second over 10 s; each split may be a record ahead.
		if got := total() - start; got < 10_000-4 || got > 10_000+4 {
			t.Fatalf("parallelism 4 restored at %d: %d records in 10 s at 1000 per second", p, got)
		}
		for i := 4; i < p; i++ {
			if !job.Reader(i).Ended {
				t.Fatalf("parallelism 4 restored at %d: subtask %d without a split did not end", p, i)
			}
		}
		job.Close()
	}
}

// runToEnd runs a fresh source at parallelism p to its end and returns all
// records in subtask order.
func runToEnd[T any](t *testing.T, src source.Source[T, datagen.Split], p int) []T {
	t.Helper()
	job, err := sourcetest.Start(src, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	if err := job.Run(rand.New(rand.NewPCG(1, 2)), 20*time.Second); err != nil {
		t.Fatal(err)
	}
	return job.All()
}

// Sequences at the edges of int64 emit exactly their numbers.
func TestSequenceEdges(t *testing.T) {
	for _, tc := range []struct {
		from, to int64
		want     []int64
	}{
		{math.MaxInt64 - 2, math.MaxInt64, []int64{math.MaxInt64 - 2, math.MaxInt64 - 1, math.MaxInt64}},
		{math.MinInt64, math.MinInt64 + 1, []int64{math.MinInt64, math.MinInt64 + 1}},
		{5, 4, nil},
		{7, 7, []int64{7}},
	} {
		for p := 1; p <= 3; p++ {
			got := runToEnd[int64](t, datagen.Sequence{From: tc.from, To: tc.to}, p)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("Sequence(%d, %d) at parallelism %d: %v, want %v", tc.from, tc.to, p, got, tc.want)
			}
		}
	}
	if _, err := sourcetest.Start[int64](datagen.Sequence{From: math.MinInt64, To: math.MaxInt64}, 1, nil); err == nil {
		t.Error("a sequence of 2^64 numbers started")
	}
	// The widest sequence int64 can count works, and its splits resume.
	big := datagen.Sequence{From: 0, To: math.MaxInt64 - 1}
	job, err := sourcetest.Start[int64](big, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	job.Deliver()
	job.Reader(1).Poll()
	if got := job.Reader(1).Out; len(got) != 1024 || got[0] != 1<<62 || got[1023] != 1<<62+1023 {
		t.Fatalf("second half of the widest sequence starts %v", got[:2])
	}
	job.Close()
}

// A slice at parallelism 1 comes in order, also across restores.
func TestSliceInOrder(t *testing.T) {
	rng := testseed.Rand(t, 3)
	items := make([]string, 5000)
	for i := range items {
		items[i] = fmt.Sprint("item ", i)
	}
	got, err := sourcetest.RunWithFailures(rng, datagen.Slice[string]{Items: items}, sourcetest.Options{Parallelism: 1, Failures: 5, Steps: 12})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, items) {
		t.Fatalf("%d items, want %d in order", len(got), len(items))
	}
}

// Bounded sources snapshotted at random points and restored into fresh
// readers, at the same or another parallelism, emit every index exactly
// once overall.
func TestBoundedRestoresEmitEveryIndexOnce(t *testing.T) {
	rng := testseed.Rand(t, 4)
	for round := range 60 {
		n := rng.Int64N(20_000)
		p := 1 + rng.IntN(5)
		o := sourcetest.Options{
			Parallelism: p,
			Failures:    rng.IntN(6),
			Steps:       1 + rng.IntN(40),
			Restore:     func(rng *rand.Rand) int { return 1 + rng.IntN(6) },
		}
		if rng.IntN(3) == 0 {
			o.Restore = nil // the same parallelism
		}
		var got []int64
		var err error
		switch round % 3 {
		case 0:
			got, err = sourcetest.RunWithFailures(rng, datagen.Generator[int64]{Count: n, Fn: func(i int64) int64 { return i * 3 }}, o)
			for i := range got {
				got[i] /= 3
			}
		case 1:
			from := rng.Int64N(1000) - 500
			got, err = sourcetest.RunWithFailures[int64](rng, datagen.Sequence{From: from, To: from + n - 1}, o)
			for i := range got {
				got[i] -= from
			}
		case 2:
			items := make([]int64, n)
			for i := range items {
				items[i] = int64(i)
			}
			got, err = sourcetest.RunWithFailures(rng, datagen.Slice[int64]{Items: items}, o)
		}
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		slices.Sort(got)
		if int64(len(got)) != n {
			t.Fatalf("round %d (%d indexes from parallelism %d, %d failures): %d records", round, n, p, o.Failures, len(got))
		}
		for i, v := range got {
			if v != int64(i) {
				t.Fatalf("round %d: index %d missing or duplicated (found %d at position %d)", round, i, v, i)
			}
		}
	}
}

// A generator without end, snapshotted at random points and restored at
// the same parallelism, emits every index once: no index twice, and each
// subtask's indexes i, i+p, ... without a gap.
func TestUnboundedRestoresEmitEveryIndexOnce(t *testing.T) {
	rng := testseed.Rand(t, 5)
	for round := range 20 {
		p := 1 + rng.IntN(4)
		limit := 1 + rng.IntN(30_000)
		got, err := sourcetest.RunWithFailures(rng, datagen.Generator[int64]{Count: -1, Fn: func(i int64) int64 { return i }}, sourcetest.Options{
			Parallelism: p,
			Failures:    1 + rng.IntN(5),
			Steps:       1 + rng.IntN(40),
			Until:       func(n int) bool { return n >= limit },
		})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		slices.Sort(got)
		next := make([]int64, p)
		for i := range next {
			next[i] = int64(i)
		}
		for k, v := range got {
			if k > 0 && got[k-1] == v {
				t.Fatalf("round %d: index %d twice", round, v)
			}
			if v != next[v%int64(p)] {
				t.Fatalf("round %d: index %d follows %d of its subtask", round, v, next[v%int64(p)]-int64(p))
			}
			next[v%int64(p)] += int64(p)
		}
	}
}

// A generator without end refuses a restore at another parallelism with an
// error that says why, whether the enumerator or the readers notice.
func TestUnboundedRefusesRescale(t *testing.T) {
	src := datagen.Generator[int64]{Count: -1, Fn: func(i int64) int64 { return i }}
	job, err := sourcetest.Start(src, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	job.Deliver()
	job.Reader(0).Poll()
	cp, err := job.Checkpoint(1)
	if err != nil {
		t.Fatal(err)
	}
	job.Close()
	_, err = sourcetest.Restore(src, cp, 2, nil)
	if err == nil || !strings.Contains(err.Error(), "checkpoint was taken at parallelism 3 and a generator without end cannot be restored at parallelism 2") {
		t.Fatalf("restore at parallelism 2: %v", err)
	}
	// A reader notices too (its split says so).
	r, err := src.CreateReader(fakeReaderCtx{p: 2})
	if err != nil {
		t.Fatal(err)
	}
	r.AddSplits([]datagen.Split{{Subtask: 1, Parallelism: 3, Next: 7, End: -1}})
	if err := r.Start(); err == nil || !strings.Contains(err.Error(), "restore it at parallelism 3") {
		t.Fatalf("reader Start: %v", err)
	}
	if _, _, _, err := r.PollNext(nil); err == nil {
		t.Fatal("PollNext after a refused split succeeded")
	}
	// The same parallelism goes on where the checkpoint was.
	job, err = sourcetest.Restore(src, cp, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	job.Deliver()
	job.Reader(0).Poll()
	if got := job.Reader(0).Out[0]; got != 1024*3 {
		t.Fatalf("subtask 0 resumed at %d, want %d", got, 1024*3)
	}
	job.Close()
}

type fakeReaderCtx struct{ i, p int }

func (c fakeReaderCtx) Subtask() int       { return c.i }
func (c fakeReaderCtx) Parallelism() int   { return c.p }
func (c fakeReaderCtx) RequestSplit()      {}
func (c fakeReaderCtx) Clock() clock.Clock { return clock.System{} }

// Splits survive their codec; corrupt or truncated encodings are errors.
func TestSplitCodec(t *testing.T) {
	c := datagen.Sequence{}.SplitCodec()
	for _, s := range []datagen.Split{
		{Subtask: 0, Parallelism: 1, Next: 0, End: 0},
		{Subtask: 3, Parallelism: 4, Next: 5, End: math.MaxInt64},
		{Subtask: 2, Parallelism: 3, Next: math.MaxInt64 - 1, End: -1},
	} {
		enc := c.AppendEncode([]byte("x"), s)
		got, n, err := c.Decode(enc[1:])
		if err != nil || n != len(enc)-1 || got != s {
			t.Fatalf("%v: decoded %v, %d, %v", s, got, n, err)
		}
		for k := range len(enc) - 1 {
			if _, _, err := c.Decode(enc[1 : 1+k]); !errors.Is(err, codec.ErrTruncated) {
				t.Fatalf("%v cut to %d bytes: %v", s, k, err)
			}
		}
	}
	for _, bad := range []datagen.Split{
		{Subtask: 1, Parallelism: 1},
		{Subtask: 0, Parallelism: 0},
		{Subtask: 0, Parallelism: 1, Next: 5, End: 4},
		{Subtask: 0, Parallelism: 1, Next: -1, End: 4},
	} {
		if _, _, err := c.Decode(c.AppendEncode(nil, bad)); !errors.Is(err, codec.ErrCorrupt) {
			t.Errorf("%+v decoded: %v", bad, err)
		}
	}
	if _, _, err := c.Decode([]byte{9, 0, 1, 0, 0}); !errors.Is(err, codec.ErrCorrupt) {
		t.Errorf("unknown version: %v", err)
	}
}

// Readers emit per split (source.Output.ForSplit), so a source with a
// watermark strategy keeps a watermark per split: restored at parallelism
// 1 from 3, the reader holds three splits, makes an output for each before
// any record, emits each split's indexes through its own output and
// releases each when it is done. The reference is Share.
func TestReadersEmitPerSplit(t *testing.T) {
	const n = 10_000
	for _, name := range []string{"sequence", "generator", "slice"} {
		var src source.Source[int64, datagen.Split]
		switch name {
		case "sequence":
			src = datagen.Sequence{From: 5, To: 5 + n - 1}
		case "generator":
			src = datagen.Generator[int64]{Count: n, Fn: func(i int64) int64 { return i }}
		default:
			items := make([]int64, n)
			src = datagen.Slice[int64]{Items: items}
		}
		job, err := sourcetest.Start(src, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := job.Deliver(); err != nil {
			t.Fatal(err)
		}
		cp, err := job.Checkpoint(1)
		if err != nil {
			t.Fatal(err)
		}
		job.Close()
		job, err = sourcetest.Restore(src, cp, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := job.Deliver(); err != nil {
			t.Fatal(err)
		}
		r := job.Reader(0)
		r.Discard = true
		for first := true; !r.Ended; first = false {
			if _, _, _, err := r.Poll(); err != nil {
				t.Fatal(err)
			}
			if first && len(r.PerSplit) != 3 {
				t.Fatalf("%s: after the first poll, outputs for splits %v; want one for each of the 3 held", name, r.PerSplit)
			}
		}
		for i := range 3 {
			from, to := datagen.Share(n, i, 3)
			if got := r.PerSplit[fmt.Sprint(i)]; got != int(to-from) {
				t.Errorf("%s: split %d: %d records through its output, want %d", name, i, got, to-from)
			}
		}
		if r.Direct != 0 || len(r.SplitErrors) > 0 {
			t.Errorf("%s: %d records collected directly, misuses %q", name, r.Direct, r.SplitErrors)
		}
		if slices.Sort(r.Released); !slices.Equal(r.Released, []string{"0", "1", "2"}) {
			t.Errorf("%s: released %q, want every split once", name, r.Released)
		}
		job.Close()
	}
}

// Watermark alignment pauses splits (source.SplitPauser): a paused split
// emits nothing while the reader reads its others; with all paused the
// reader waits on its wake channel, which a resume signals; every index is
// still emitted once in the end.
func TestReaderPausesSplits(t *testing.T) {
	const n = 9000
	src := datagen.Sequence{From: 0, To: n - 1}
	job, err := sourcetest.Start(src, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Deliver(); err != nil {
		t.Fatal(err)
	}
	cp, err := job.Checkpoint(1)
	if err != nil {
		t.Fatal(err)
	}
	job.Close()
	job, err = sourcetest.Restore(src, cp, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	if err := job.Deliver(); err != nil {
		t.Fatal(err)
	}
	r := job.Reader(0)
	p := r.R.(source.SplitPauser)
	p.PauseOrResumeSplits([]string{"0", "1"}, nil)
	if _, _, _, err := r.Poll(); err != nil {
		t.Fatal(err)
	}
	if r.PerSplit["0"] != 0 || r.PerSplit["1"] != 0 || r.PerSplit["2"] == 0 {
		t.Fatalf("splits 0 and 1 paused: records per split %v, want only split 2's", r.PerSplit)
	}
	p.PauseOrResumeSplits([]string{"2"}, nil)
	before := r.N
	st, wake, _, err := r.Poll()
	if err != nil || st != source.NothingAvailable || wake == nil || r.N != before {
		t.Fatalf("all splits paused: poll = %v, wake %v, %v, %d new records; want NothingAvailable with a wake channel and none", st, wake != nil, err, r.N-before)
	}
	select {
	case <-wake: // a signal left from the split assignment: one spurious poll
	default:
	}
	p.PauseOrResumeSplits(nil, []string{"0", "1", "2"})
	select {
	case <-wake:
	default:
		t.Fatal("a resume did not signal the wake channel")
	}
	for !r.Ended {
		if _, _, _, err := r.Poll(); err != nil {
			t.Fatal(err)
		}
	}
	got := slices.Clone(r.Out)
	slices.Sort(got)
	if int64(len(got)) != n || got[0] != 0 || got[n-1] != n-1 || len(slices.Compact(got)) != n {
		t.Fatalf("%d records after pausing and resuming, want each of 0..%d once", len(got), n-1)
	}
}

// Random pauses and resumes (as watermark alignment makes them) between
// polls of a reader holding several splits: a paused split emits nothing
// while paused, the reader never reports its end early, and once all are
// resumed every index is emitted exactly once. The reference is the set
// of indexes and the pause state the test keeps itself.
func TestReaderRandomPauses(t *testing.T) {
	rng := testseed.Rand(t, 21)
	for round := range 20 {
		n := int64(1 + rng.IntN(20_000))
		p := 1 + rng.IntN(5)
		src := datagen.Generator[int64]{Count: n, Fn: func(i int64) int64 { return i }}
		job, err := sourcetest.Start(src, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := job.Deliver(); err != nil {
			t.Fatal(err)
		}
		cp, err := job.Checkpoint(1)
		if err != nil {
			t.Fatal(err)
		}
		job.Close()
		job, err = sourcetest.Restore(src, cp, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := job.Deliver(); err != nil {
			t.Fatal(err)
		}
		r := job.Reader(0)
		pauser := r.R.(source.SplitPauser)
		paused := map[string]bool{}
		for step := 0; !r.Ended; step++ {
			if step > 10_000 {
				t.Fatalf("round %d: no end after %d polls", round, step)
			}
			var pause, resume []string
			for i := range p {
				id := fmt.Sprint(i)
				switch x := rng.IntN(10); {
				case step > 200: // then resume everything, so the reader ends
					if paused[id] {
						resume = append(resume, id)
						delete(paused, id)
					}
				case x == 0 && !paused[id]:
					pause = append(pause, id)
					paused[id] = true
				case x == 1 && paused[id]:
					resume = append(resume, id)
					delete(paused, id)
				}
			}
			pauser.PauseOrResumeSplits(pause, resume)
			before := maps.Clone(r.PerSplit)
			st, wake, retry, err := r.Poll()
			if err != nil {
				t.Fatal(err)
			}
			for id := range paused {
				if r.PerSplit[id] != before[id] {
					t.Fatalf("round %d: split %s emitted %d records while paused", round, id, r.PerSplit[id]-before[id])
				}
			}
			if st == source.NothingAvailable && wake == nil && retry == 0 {
				t.Fatalf("round %d: nothing available without a wake channel or retry", round)
			}
		}
		got := slices.Clone(r.Out)
		slices.Sort(got)
		if int64(len(got)) != n || (n > 0 && (got[0] != 0 || got[n-1] != n-1)) || int64(len(slices.Compact(got))) != n {
			t.Fatalf("round %d (n %d, p %d): %d records, want each of 0..%d once", round, n, p, len(got), n-1)
		}
		if len(r.SplitErrors) > 0 {
			t.Fatalf("round %d: %q", round, r.SplitErrors)
		}
		job.Close()
	}
}

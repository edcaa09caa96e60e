package datagen_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/connector/datagen"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/testseed"
)

type counter struct{ n int64 }

func (c *counter) ProcessElement(int64, int64) { c.n++ }
func (c *counter) ProcessWatermark(int64)      {}

// openGen opens subtask 0 of p of a generator without end at the given rate,
// on a manual clock.
func openGen(t *testing.T, rate float64, p int) (operator.SourceReader[int64], *clock.Manual, error) {
	t.Helper()
	clk := clock.NewManual(1_700_000_000_000)
	ctx := operator.NewContext(new(int), 0)
	ctx.Subtask, ctx.Parallelism, ctx.Clock = 0, p, clk
	r := datagen.Generator[int64]{Count: -1, Fn: func(i int64) int64 { return i }, RatePerSecond: rate}.NewReader()
	return r, clk, r.Open(ctx)
}

// +Inf, and rates whose per-millisecond share no int64 can count, are no
// limit: every poll emits a full batch, without waiting for the clock.
func TestUnlimitedRates(t *testing.T) {
	for _, rate := range []float64{0, math.Inf(1), 1e300, math.MaxFloat64, 1e25} {
		r, _, err := openGen(t, rate, 1)
		if err != nil {
			t.Fatalf("rate %v: %v", rate, err)
		}
		c := &counter{}
		for range 3 {
			st, _, _, err := r.Poll(c)
			if st != operator.MoreAvailable || err != nil {
				t.Fatalf("rate %v: Poll = %v, %v after %d records; want MoreAvailable", rate, st, err, c.n)
			}
		}
		if c.n != 3*1024 {
			t.Fatalf("rate %v: %d records in 3 polls, want 3 full batches", rate, c.n)
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
	c := &counter{}
	for i := range 100 {
		clk.Advance(1)
		if st, _, _, err := r.Poll(c); st != operator.MoreAvailable || err != nil {
			t.Fatalf("poll %d: %v, %v", i, st, err)
		}
	}
	if c.n != 100*1024 {
		t.Fatalf("%d records in 100 polls, want 100 full batches", c.n)
	}
}

// A negative or NaN rate fails Open with a message saying what is wrong.
func TestBadRates(t *testing.T) {
	for _, rate := range []float64{math.NaN(), -1, math.Inf(-1), -1e-300} {
		_, _, err := openGen(t, rate, 1)
		if err == nil || !strings.Contains(err.Error(), "rate must be a number of records per second, 0 or more") {
			t.Errorf("rate %v: Open = %v, want an error", rate, err)
		} else if strings.Contains(err.Error(), "%!") {
			t.Errorf("rate %v: %q", rate, err)
		}
	}
}

// The source asks to wait exactly until the next record is due (5 per
// second: 200 ms), not to be polled every millisecond.
func TestRateWaitsUntilTheNextRecord(t *testing.T) {
	r, clk, err := openGen(t, 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	c := &counter{}
	if st, _, _, _ := r.Poll(c); st != operator.MoreAvailable || c.n != 1 {
		t.Fatalf("first poll: %v with %d records, want the first record at once", st, c.n)
	}
	st, wait, retry, _ := r.Poll(c)
	if st != operator.NothingAvailable || wait != nil || retry != 200 {
		t.Fatalf("second poll: %v, retry after %d ms; want NothingAvailable for 200 ms", st, retry)
	}
	clk.Advance(199)
	if st, _, retry, _ := r.Poll(c); st != operator.NothingAvailable || retry != 1 || c.n != 1 {
		t.Fatalf("at 199 ms: %v, retry %d, %d records", st, retry, c.n)
	}
	clk.Advance(1)
	if r.Poll(c); c.n != 2 {
		t.Fatalf("at 200 ms: %d records, want 2", c.n)
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
		c := &counter{}
		r.Poll(c)
		for range 3 {
			st, _, retry, _ := r.Poll(c)
			if st != operator.NothingAvailable || retry != 60_000 || c.n != 1 {
				t.Fatalf("rate %v: %v, retry after %d ms, %d records; want one record, then a wait of 60000 ms", rate, st, retry, c.n)
			}
			clk.Advance(retry)
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
		c := &counter{}
		var elapsed int64
		for range 30 {
			var retry int64
			for {
				st, _, rt, err := r.Poll(c)
				if err != nil {
					t.Fatal(err)
				}
				if st == operator.NothingAvailable {
					retry = rt
					break
				}
			}
			if want := int64(math.Floor(float64(elapsed)*share)) + 1; c.n < want-1 || c.n > want+1 {
				t.Fatalf("rate %v at parallelism %d: %d records after %d ms, want %d", rate, p, c.n, elapsed, want)
			}
			if retry < 1 || retry > 60_000 {
				t.Fatalf("rate %v: retry after %d ms", rate, retry)
			}
			before := c.n
			if retry > 1 {
				clk.Advance(retry - 1)
				elapsed += retry - 1
				if r.Poll(c); c.n != before {
					t.Fatalf("rate %v at parallelism %d: a record came 1 ms before the wait of %d ms ended", rate, p, retry)
				}
				clk.Advance(1)
				elapsed++
			} else {
				clk.Advance(1)
				elapsed++
			}
			if r.Poll(c); c.n == before {
				clk.Advance(1) // rounding may put the record a ms later
				elapsed++
				if r.Poll(c); c.n == before {
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
			var got []int64
			for sub := range p {
				r := datagen.Sequence{From: tc.from, To: tc.to}.NewReader()
				if err := r.Open(&operator.Context{Subtask: sub, Parallelism: p}); err != nil {
					t.Fatal(err)
				}
				out := &sliceInput{}
				for {
					st, _, _, err := r.Poll(out)
					if err != nil {
						t.Fatal(err)
					}
					if st == operator.EndOfInput {
						break
					}
				}
				got = append(got, out.got...)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("Sequence(%d, %d) at parallelism %d: %v, want %v", tc.from, tc.to, p, got, tc.want)
			}
		}
	}
	r := datagen.Sequence{From: math.MinInt64, To: math.MaxInt64}.NewReader()
	if err := r.Open(&operator.Context{Parallelism: 1}); err == nil {
		t.Error("a sequence of 2^64 numbers opened")
	}
}

type sliceInput struct{ got []int64 }

func (s *sliceInput) ProcessElement(v int64, _ int64) { s.got = append(s.got, v) }
func (s *sliceInput) ProcessWatermark(int64)          {}

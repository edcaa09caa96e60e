package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/connector/kafka"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/sink"
)

// runJob runs a weir job on the embedded cluster: n numbers from a
// rate-limited generator through a map that fails the task after the
// given counts of elements (each time once a checkpoint completed since
// the last failure), into the sink; it returns how often the job failed.
func runJob(t *testing.T, snk *kafka.Sink[string], n int64, parallelism int, failAt []int64, checkpoints bool) int {
	t.Helper()
	var seen, completed, failures, lastFail atomic.Int64
	var mu sync.Mutex
	restoredAt := map[int]int64{} // attempt -> the checkpoint it restored
	writers := map[int][]int64{}  // attempt -> RestoredCheckpoint of its writers
	cfg := weir.Config{
		Parallelism: parallelism,
		Restart: map[string]string{"restart-strategy.type": "fixed-delay",
			"restart-strategy.fixed-delay.attempts": "20", "restart-strategy.fixed-delay.delay": "10ms"},
		OnCheckpoint: func(int64, bool) { completed.Add(1) },
		OnRestart: func(attempt int, cp int64, _ error) {
			mu.Lock()
			restoredAt[attempt] = cp
			mu.Unlock()
		},
	}
	if checkpoints {
		cfg.Checkpointing = &weir.CheckpointConfig{Interval: 30 * time.Millisecond, Dir: t.TempDir()}
	}
	env := weir.NewEnvironment(cfg)
	nums := weir.Generate(env, n, 20000, func(i int64) int64 { return i })
	out := weir.Map(nums, func(i int64) string {
		k := seen.Add(1)
		if f := int(failures.Load()); f < len(failAt) && k >= failAt[f] && completed.Load() > lastFail.Load() {
			if failures.CompareAndSwap(int64(f), int64(f+1)) {
				lastFail.Store(completed.Load())
				panic(errors.New("injected failure"))
			}
		}
		return fmt.Sprintf("k%d:%d", i%13, i)
	})
	rec := &recordingSink{Sink: snk, created: func(sc sink.Context) {
		mu.Lock()
		writers[sc.Attempt()] = append(writers[sc.Attempt()], sc.RestoredCheckpoint())
		mu.Unlock()
	}}
	weir.SinkToCommitting[string, kafka.Committable](out, rec, "kafka")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := env.Execute(ctx, "kafka-sink-test"); err != nil {
		t.Fatalf("job: %v", err)
	}
	// The engine tells each writer the checkpoint its attempt restored.
	mu.Lock()
	defer mu.Unlock()
	for a, rs := range writers {
		for _, r := range rs {
			if r != restoredAt[a] {
				t.Fatalf("attempt %d restored checkpoint %d, its sink writer was told %d", a, restoredAt[a], r)
			}
		}
	}
	return int(failures.Load())
}

// recordingSink notes the sink.Context of each writer.
type recordingSink struct {
	*kafka.Sink[string]
	created func(sink.Context)
}

func (r *recordingSink) CreateWriter(sc sink.Context) (sink.CommittingWriter[string, kafka.Committable], error) {
	r.created(sc)
	return r.Sink.CreateWriter(sc)
}

// A job writes to Kafka exactly once across injected task failures (each
// restart restores the latest checkpoint, commits what it pre-committed
// and aborts the transactions the failed attempt left open): a
// read_committed consumer reads every number exactly once.
func TestJobExactlyOnceAcrossFailures(t *testing.T) {
	rng := testseed.Rand(t, 11)
	for round := range 2 {
		brokers := cluster(t)
		n := 2000 + rng.Int64N(2000)
		var failAt []int64
		for range 1 + rng.IntN(3) {
			failAt = append(failAt, rng.Int64N(n))
		}
		slices.Sort(failAt)
		p := 1 + rng.IntN(3)
		failed := runJob(t, newSink(t, brokers, kafka.ExactlyOnce), n, p, failAt, true)
		got := all(readTopic(t, brokers, true))
		want := make([]string, n)
		for i := range n {
			want[i] = fmt.Sprintf("k%d:%d", i%13, i)
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			dup, miss := diff(got, want)
			t.Fatalf("round %d (parallelism %d, %d failures at %v): read_committed reads %d records, want %d (duplicates %v, missing %v)",
				round, p, failed, failAt, len(got), n, head(dup), head(miss))
		}
		t.Logf("round %d: parallelism %d, %d records, %d failures", round, p, n, failed)
	}
}

// Without checkpoints, the exactly-once sink commits at the end of input.
func TestJobExactlyOnceWithoutCheckpoints(t *testing.T) {
	brokers := cluster(t)
	runJob(t, newSink(t, brokers, kafka.ExactlyOnce), 500, 2, nil, false)
	if got := all(readTopic(t, brokers, true)); len(got) != 500 {
		t.Fatalf("read_committed reads %d records, want 500", len(got))
	}
}

// At-least-once loses nothing across failures.
func TestJobAtLeastOnceAcrossFailures(t *testing.T) {
	rng := testseed.Rand(t, 12)
	brokers := cluster(t)
	n := int64(3000)
	runJob(t, newSink(t, brokers, kafka.AtLeastOnce), n, 2, []int64{rng.Int64N(n), n + rng.Int64N(n)}, true)
	got := all(readTopic(t, brokers, false))
	have := map[string]bool{}
	for _, v := range got {
		have[v] = true
	}
	for i := range n {
		if v := fmt.Sprintf("k%d:%d", i%13, i); !have[v] {
			t.Fatalf("record %s lost (%d records read)", v, len(got))
		}
	}
}

// diff returns the values got has more often than want, and those it
// lacks (both sorted).
func diff(got, want []string) (dup, miss []string) {
	c := map[string]int{}
	for _, v := range got {
		c[v]++
	}
	for _, v := range want {
		c[v]--
	}
	for v, k := range c {
		if k > 0 {
			dup = append(dup, v)
		} else if k < 0 {
			miss = append(miss, v)
		}
	}
	slices.Sort(dup)
	slices.Sort(miss)
	return dup, miss
}

func head(s []string) []string { return s[:min(len(s), 10)] }

// The engine gives the sink the checkpoint interval: a transaction timeout
// below it fails the job at start, permanently, naming both.
func TestJobFailsWhenTheTimeoutIsBelowTheInterval(t *testing.T) {
	brokers := cluster(t)
	snk, err := kafka.NewSink(kafka.SinkConfig{Brokers: brokers, Topic: "out", Guarantee: kafka.ExactlyOnce,
		TransactionalIDPrefix: "app", TransactionTimeout: 10 * time.Second}, strSer)
	if err != nil {
		t.Fatal(err)
	}
	env := weir.NewEnvironment(weir.Config{Parallelism: 1,
		Checkpointing: &weir.CheckpointConfig{Interval: 20 * time.Second, Dir: t.TempDir()},
		Restart:       map[string]string{"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "1000", "restart-strategy.fixed-delay.delay": "10ms"}})
	weir.SinkToCommitting[string, kafka.Committable](weir.Map(weir.Sequence(env, 1, 10), func(i int64) string { return fmt.Sprint(i) }), snk, "kafka")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = env.Execute(ctx, "timeout-check")
	if err == nil || !strings.Contains(err.Error(), "TransactionTimeout 10s must exceed the checkpoint interval 20s") {
		t.Fatalf("job error %v", err)
	}
}

// A canceled subtask does not hang: with the broker gone, PrepareCommit
// returns once the subtask is canceled, and Close returns.
func TestCanceledWriterDoesNotHang(t *testing.T) {
	for _, g := range []kafka.Guarantee{kafka.AtLeastOnce, kafka.ExactlyOnce} {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "out"))
		if err != nil {
			t.Fatal(err)
		}
		s := newSink(t, c.ListenAddrs(), g)
		ctx := ctxFor(0, 1, 0)
		ctx.done = make(chan struct{})
		w, err := s.CreateWriter(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		write(t, w, "a:1")
		time.AfterFunc(300*time.Millisecond, func() { close(ctx.done) })
		start := time.Now()
		if _, err := w.PrepareCommit(); err == nil {
			t.Errorf("%v: PrepareCommit without a broker succeeded", g)
		}
		w.Close()
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%v: PrepareCommit and Close took %v after the cancellation", g, d)
		}
	}
}

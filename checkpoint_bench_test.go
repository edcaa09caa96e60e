package weir

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/checkpoint/coordinator"
	"github.com/weirhq/weir/internal/jobmanager"
	"github.com/weirhq/weir/sink"
	"github.com/weirhq/weir/source"
	"github.com/weirhq/weir/state"
)

// The checkpoint benchmarks: checkpoint duration and size for a
// large keyed state (full, and after a 1% change), recovery from it, and
// checkpoints under backpressure. The state size is WEIR_BENCH_STATE_MB
// (default 64; the documented figures use 1024). Each reports wall times as
// custom metrics; see docs/benchmarks.md.

func benchStateMB() int {
	if v, err := strconv.Atoi(os.Getenv("WEIR_BENCH_STATE_MB")); err == nil && v > 0 {
		return v
	}
	return 64
}

// phased is a source that emits keys 0..n-1 once (with a value of size
// bytes each), then, each time next is bumped, a further 1% of the keys;
// otherwise it idles.
type phased struct {
	n, size int
	next    *atomic.Int64 // rounds of 1% updates asked for
	emitted *atomic.Int64 // records emitted
}

type phasedSplit struct{ Round int64 }

type phasedCodec struct{}

func (phasedCodec) AppendEncode(dst []byte, s phasedSplit) []byte {
	return codec.Int64().AppendEncode(dst, s.Round)
}
func (phasedCodec) Decode(b []byte) (phasedSplit, int, error) {
	v, n, err := codec.Int64().Decode(b)
	return phasedSplit{v}, n, err
}

func (p phased) Boundedness() source.Boundedness      { return source.Unbounded }
func (p phased) SplitCodec() codec.Codec[phasedSplit] { return phasedCodec{} }
func (p phased) CreateEnumerator(ctx source.EnumeratorContext[phasedSplit], restored []byte) (source.Enumerator[phasedSplit], error) {
	return &phasedEnum{ctx: ctx, restored: restored != nil}, nil
}
func (p phased) CreateReader(ctx source.ReaderContext) (source.Reader[keyedBytes, phasedSplit], error) {
	return &phasedReader{p: p, ctx: ctx, round: -1}, nil
}

type phasedEnum struct {
	ctx      source.EnumeratorContext[phasedSplit]
	restored bool
}

func (e *phasedEnum) Start() error                   { return nil }
func (e *phasedEnum) HandleSplitRequest(int) error   { return nil }
func (e *phasedEnum) Snapshot(int64) ([]byte, error) { return []byte{}, nil }
func (e *phasedEnum) Close() error                   { return nil }
func (e *phasedEnum) AddReader(i int) error {
	if !e.restored {
		e.ctx.Assign(i, phasedSplit{})
	}
	return nil
}

type keyedBytes struct {
	Key   int64
	Value []byte
}

type phasedReader struct {
	p     phased
	ctx   source.ReaderContext
	round int64 // -1: no split; 0: loading; k: k rounds of updates done
	next  int   // next key of the current round
	buf   []byte
	rng   *rand.Rand
}

func (r *phasedReader) Start() error {
	r.rng = rand.New(rand.NewPCG(uint64(r.ctx.Subtask()), 1))
	return nil
}
func (r *phasedReader) AddSplits(s []phasedSplit) {
	if len(s) > 0 {
		r.round = s[0].Round
	}
}
func (r *phasedReader) NoMoreSplits()                        {}
func (r *phasedReader) NotifyCheckpointComplete(int64) error { return nil }
func (r *phasedReader) Close() error                         { return nil }
func (r *phasedReader) SnapshotState(int64) ([]phasedSplit, error) {
	if r.round < 0 {
		return nil, nil
	}
	return []phasedSplit{{Round: r.round}}, nil
}

func (r *phasedReader) PollNext(out source.Output[keyedBytes]) (source.Status, <-chan struct{}, time.Duration, error) {
	if r.round < 0 {
		return source.NothingAvailable, nil, 10 * time.Millisecond, nil
	}
	// This reader's keys are those i with i % parallelism == subtask.
	p, sub := r.ctx.Parallelism(), r.ctx.Subtask()
	limit := r.p.n / p
	if r.round > 0 {
		limit = r.p.n / p / 100
	}
	if r.next >= limit {
		if r.round >= r.p.next.Load() {
			return source.NothingAvailable, nil, 5 * time.Millisecond, nil
		}
		r.round++
		r.next = 0
	}
	for range 256 {
		if r.next >= limit {
			break
		}
		key := int64(r.next*p + sub)
		if r.round > 0 {
			key = int64(r.rng.IntN(r.p.n/p)*p + sub)
		}
		r.buf = r.buf[:0]
		for range r.p.size / 8 {
			r.buf = append(r.buf, byte(r.rng.Uint32()), 1, 2, 3, 4, 5, 6, 7)
		}
		out.Collect(keyedBytes{Key: key, Value: append([]byte(nil), r.buf...)})
		r.next++
		r.p.emitted.Add(1)
		if out.ShouldYield() {
			break
		}
	}
	return source.MoreAvailable, nil, 0, nil
}

type stateLoader struct{ v state.ValueState[[]byte] }

func (s *stateLoader) Open(ctx KeyedRuntimeContext) error {
	s.v = state.GetValueState(ctx.State(), state.ValueDescriptor[[]byte]{Name: "blob", Codec: codec.Bytes()})
	return nil
}

func (s *stateLoader) ProcessElement(_ KeyedContext[int64], r keyedBytes, _ Collector[int64]) error {
	s.v.Update(r.Value)
	return nil
}

// waitCheckpoint waits for a checkpoint triggered after since to complete
// and returns its end-to-end duration and sizes.
func waitCheckpoint(b *testing.B, j *Job, since int64) (id int64, took time.Duration, size, persisted int64) {
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		st, ok := j.l.Cluster().JM.Checkpoints(j.ID())
		if ok {
			for _, h := range st.History {
				if h.Status == coordinator.Completed && h.TriggerTime > since {
					for _, m := range st.Acks[h.ID] {
						size += m.Bytes
						persisted += m.PersistedBytes
					}
					return h.ID, time.Duration(h.EndTime-h.TriggerTime) * time.Millisecond, size, persisted
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Fatal("no checkpoint completed in 10 minutes")
	return 0, 0, 0, 0
}

// BenchmarkCheckpointLargeState: a keyed state of WEIR_BENCH_STATE_MB (100
// byte values), checkpointed in full, then after a 1% change; then the job
// is canceled and a new one restored from the last checkpoint.
func BenchmarkCheckpointLargeState(b *testing.B) {
	mb := benchStateMB()
	const size = 100
	n := mb << 20 / (size + 24) // key, value and per-entry overhead in the snapshot
	for _, tc := range []struct {
		backend     string
		incremental bool
	}{{"hashmap", false}, {"pebble", false}, {"pebble", true}} {
		b.Run(fmt.Sprintf("%s/incremental=%t/state=%dMB", tc.backend, tc.incremental, mb), func(b *testing.B) {
			dir := b.TempDir()
			for range b.N {
				runLargeState(b, dir, n, size, tc.backend, tc.incremental)
			}
		})
	}
}

func runLargeState(b *testing.B, dir string, n, size int, backend string, incremental bool) {
	var next, emitted atomic.Int64
	build := func(resume string) (*Job, context.CancelFunc) {
		env := NewEnvironment(Config{Parallelism: 2, StateBackend: backend, StateDir: filepath.Join(dir, "state"), ResumeFrom: resume,
			Checkpointing: &CheckpointConfig{Interval: 500 * time.Millisecond, Dir: filepath.Join(dir, "ck"), Incremental: incremental, Retained: 1}})
		src := FromSource[keyedBytes, phasedSplit](env, phased{n: n, size: size, next: &next, emitted: &emitted}, "phased").UID("src")
		Discard(ProcessKeyed[int64, keyedBytes, int64](KeyBy(src, func(r keyedBytes) int64 { return r.Key }), &stateLoader{}).UID("load"))
		ctx, cancel := context.WithCancel(context.Background())
		j, err := env.ExecuteAsync(ctx, "large-state")
		if err != nil {
			b.Fatal(err)
		}
		return j, cancel
	}
	j, cancel := build("")
	t0 := time.Now()
	for emitted.Load() < int64(n/2*2) {
		time.Sleep(20 * time.Millisecond)
	}
	b.ReportMetric(time.Since(t0).Seconds(), "load-s")
	// The first checkpoint triggered after the load holds all of it.
	loaded := clock.System{}.NowMillis()
	_, full, fullSize, _ := waitCheckpoint(b, j, loaded)
	b.ReportMetric(full.Seconds(), "full-s")
	b.ReportMetric(float64(fullSize)/(1<<20), "full-MB")
	// 1% of the keys change; the next checkpoint after that.
	next.Add(1)
	for emitted.Load() < int64(n/2*2+n/2/100*2) {
		time.Sleep(5 * time.Millisecond)
	}
	changed := clock.System{}.NowMillis()
	_, inc, incSize, incPersisted := waitCheckpoint(b, j, changed)
	b.ReportMetric(inc.Seconds(), "after-1%-s")
	b.ReportMetric(float64(incSize)/(1<<20), "after-1%-MB")
	b.ReportMetric(float64(incPersisted)/(1<<20), "after-1%-written-MB")
	cancel()
	<-j.Done()
	// Recovery: a new job restores the latest checkpoint; it has recovered
	// when its keyed tasks run (restore happens before they open).
	t1 := time.Now()
	j2, cancel2 := build("latest")
	defer func() { cancel2(); <-j2.Done() }()
	if j2.RestoredFrom() == "" {
		b.Fatal("the second job did not restore")
	}
	for {
		info, _ := j2.l.Cluster().JM.Job(j2.ID())
		running := 0
		for _, v := range info.Vertices {
			for _, s := range v.Tasks {
				if s == "RUNNING" {
					running++
				}
			}
		}
		if running == 4 {
			// Running means open: every task restored its state first.
			break
		}
		if info.Status.Terminal() {
			b.Fatal(errors.New("the restored job ended: " + string(info.Status)))
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.ReportMetric(time.Since(t1).Seconds(), "recovery-s")
}

// slowWriter takes a millisecond every 4 records: a sink that backpressures.
type slowWriter struct{ n int }

func (w *slowWriter) Write(int64, int64) error {
	if w.n++; w.n%4 == 0 {
		time.Sleep(time.Millisecond)
	}
	return nil
}
func (w *slowWriter) Flush(bool) error { return nil }
func (w *slowWriter) Close() error     { return nil }

type slowSink struct{}

func (slowSink) CreateWriter(sink.Context) (sink.Writer[int64], error) { return &slowWriter{}, nil }

// BenchmarkCheckpointUnderBackpressure: a fast generator, a keyBy and a slow
// sink, with checkpoints every second, aligned, unaligned, and unaligned
// after an aligned timeout of 100 ms: how long a checkpoint takes once the
// buffers between them are full.
func BenchmarkCheckpointUnderBackpressure(b *testing.B) {
	for _, mode := range []struct {
		name      string
		unaligned bool
		timeout   time.Duration
	}{{"aligned", false, 0}, {"unaligned", true, 0}, {"aligned-timeout=100ms", true, 100 * time.Millisecond}} {
		unaligned := mode.unaligned
		b.Run(mode.name, func(b *testing.B) {
			for range b.N {
				env := NewEnvironment(Config{Parallelism: 2, Checkpointing: &CheckpointConfig{Interval: time.Second,
					Dir: filepath.Join(b.TempDir(), "ck"), Unaligned: unaligned, AlignedTimeout: mode.timeout}})
				src := Generate(env, -1, 0, func(i int64) int64 { return i })
				keyed := Map(KeyBy(src, func(v int64) int64 { return v % 1000 }).DataStream, func(v int64) int64 { return v + 1 })
				SinkTo[int64](keyed, slowSink{}, "slow")
				ctx, cancel := context.WithCancel(context.Background())
				j, err := env.ExecuteAsync(ctx, "backpressure")
				if err != nil {
					b.Fatal(err)
				}
				// Aligned checkpoints wait for the backlog: give them time,
				// and stop once five have completed after the warm-up.
				var st jobmanager.CheckpointStats
				var took []float64
				for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); {
					time.Sleep(500 * time.Millisecond)
					st, _ = j.l.Cluster().JM.Checkpoints(j.ID())
					took = took[:0]
					for _, h := range st.History {
						// The first checkpoints may come before the buffers are full.
						if h.Status == coordinator.Completed && h.ID > 2 {
							took = append(took, float64(h.EndTime-h.TriggerTime)/1000)
						}
					}
					if len(took) >= 5 {
						break
					}
				}
				cancel()
				<-j.Done()
				for _, h := range st.History {
					b.Logf("checkpoint %d %s: %d ms", h.ID, h.Status, h.EndTime-h.TriggerTime)
					for ti, a := range st.Acks[h.ID] {
						b.Logf("  task %d: ack +%d ms, sync %d, async %d, alignment %d, %d bytes", ti, a.AckMillis-h.TriggerTime, a.SyncMillis, a.AsyncMillis, a.AlignmentMillis, a.PersistedBytes)
					}
				}
				if len(took) == 0 {
					b.Fatalf("no checkpoint completed after the first two: %+v", st.History)
				}
				for _, h := range st.History {
					if h.ID == 1 && h.Status == coordinator.Completed {
						// Taken while the buffers hold what the source
						// wrote before backpressure set in.
						b.ReportMetric(float64(h.EndTime-h.TriggerTime)/1000, "first-s")
					}
				}
				slices.Sort(took)
				b.ReportMetric(took[len(took)/2], "median-s")
				b.ReportMetric(took[len(took)-1], "max-s")
				b.ReportMetric(float64(len(took)), "checkpoints")
			}
		})
	}
}

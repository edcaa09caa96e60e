package benchjobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/sink"
	"github.com/weirhq/weir/source"
	"github.com/weirhq/weir/tuple"
)

// The latency benchmark (`weir bench latency`): the keyed job
// of KeyedCountKeys with a paced source whose records carry the instant
// they were due, and a sink that puts now minus that instant into a
// histogram per subtask.
//
// On a multi-process cluster (LatencyOptions.StatsDir) the subtasks run
// in TaskManager processes, so nothing they measure can reach the caller
// through memory: stamps are wall-clock nanoseconds (CLOCK_REALTIME, which
// every process of one host reads alike; the monotonic clock of a Go
// process counts from that process's start), each source and sink subtask
// writes what it measured to a file of its own in StatsDir when it closes,
// and ReadLatencyStats merges the files. A sink tells the records of a
// source subtask in its own process (a local channel) from those that
// crossed processes (the TCP data plane) by the key: source subtask i
// emits keys i, i+p, i+2p, ... mod Keys, so with Keys a multiple of p the
// key mod p names it, and each source subtask marks itself in its
// process's latencyShared.local when it starts.

// LatencyOptions configure one run of KeyedLatency.
type LatencyOptions struct {
	Keys        int64
	Parallelism int
	// Rate is the source's total rate in records per second; 0: no limit
	// (the maximum throughput run).
	Rate float64
	// Warmup is discarded; Duration is measured after it.
	Warmup, Duration time.Duration
	// BufferTimeout is weir.Config's (0: the default 100ms).
	BufferTimeout time.Duration
	// StatsDir, if set, runs the job for a multi-process cluster (see
	// above): the results go to files in this directory, which must be on
	// the host of every process, and KeyedLatency returns only Wall.
	// Keys must then be a multiple of Parallelism.
	StatsDir string
	// Checkpointing is the job's (a cluster runs a streaming job only with
	// a checkpoint directory every process shares); nil: none.
	Checkpointing *weir.CheckpointConfig
}

// LatencyResult is what a run measured after the warm-up.
type LatencyResult struct {
	// Latency is event-to-sink latency in nanoseconds: from the instant
	// the schedule said a record was due (paced), or from when it was
	// emitted (unpaced), to its arrival at the sink.
	Latency *Histogram
	// Local and Remote split Latency on a multi-process cluster
	// (ReadLatencyStats): the records whose source subtask ran in the
	// sink's process, and those that crossed processes. Nil otherwise.
	Local, Remote *Histogram
	// Events reached the sink in the measured window (of Window wall time).
	Events int64
	Window time.Duration
	// TotalEvents reached the sink, warm-up included.
	TotalEvents int64
	// CPU and Wall are the whole job's, warm-up included.
	CPU, Wall time.Duration
	// SourceLag is the largest delay of a paced source behind its
	// schedule at a poll (ns): how much of the latency is the source's.
	SourceLag int64
	// Oversleep is, for each poll after the source asked to wait, how much
	// later than asked it was polled again (timer resolution, scheduling);
	// BusyGap, for each poll after one that emitted, the time since that
	// poll ended (the task flushing, backpressured, or not running). After
	// the warm-up, in ns.
	Oversleep, BusyGap *Histogram
}

// KeyedLatency runs generator -> keyBy(i mod keys) -> count in keyed
// ValueState (a keyed Reduce) -> latency sink for o.Warmup+o.Duration.
// Records are (key, count, stamp): the stamp is nanoseconds since a start
// instant of the run, by the monotonic clock; the reduce carries the
// newest record's stamp with the count.
func KeyedLatency(ctx context.Context, o LatencyOptions, cpuNow func() (cpu time.Duration)) (LatencyResult, error) {
	sh := &latencyShared{base: time.Now(), keys: o.Keys, rate: o.Rate, warmup: int64(o.Warmup), total: int64(o.Warmup + o.Duration)}
	cfg := weir.Config{Parallelism: o.Parallelism, BufferTimeout: o.BufferTimeout, Checkpointing: o.Checkpointing}
	if o.StatsDir != "" {
		if o.Parallelism < 1 || o.Keys%int64(o.Parallelism) != 0 {
			return LatencyResult{}, fmt.Errorf("bench latency on a cluster: keys (%d) must be a multiple of the parallelism (%d), so a sink can tell which source subtask a record came from", o.Keys, o.Parallelism)
		}
		sh.wall, sh.statsDir, sh.p, sh.local = true, o.StatsDir, int64(o.Parallelism), make([]atomic.Bool, o.Parallelism)
	}
	env := weir.NewEnvironment(cfg)
	src := weir.FromSource[stamped, int](env, pacedSource{sh}, "PacedGenerator")
	counts := weir.Reduce(weir.KeyBy(src, func(p stamped) int64 { return p.F0 }),
		func(a, b stamped) stamped { a.F1 += b.F1; a.F2 = b.F2; return a })
	weir.SinkTo[stamped](counts, latencySink{sh}, "LatencySink")
	if o.StatsDir != "" {
		wall0 := time.Now()
		_, err := env.Execute(ctx, "bench-keyed-latency")
		return LatencyResult{Wall: time.Since(wall0)}, err
	}
	cpu0, wall0 := cpuNow(), time.Now()
	_, err := env.Execute(ctx, "bench-keyed-latency")
	res := LatencyResult{CPU: cpuNow() - cpu0, Wall: time.Since(wall0), Latency: &sh.hist, Events: sh.events, TotalEvents: sh.all,
		SourceLag: sh.lag.Load(), Oversleep: &sh.oversleep, BusyGap: &sh.busyGap}
	if last, first := sh.last.Load(), sh.started.Load(); last > first+sh.warmup {
		res.Window = time.Duration(last - first - sh.warmup)
	}
	return res, err
}

type stamped = tuple.T3[int64, int64, int64]

// latencyShared is what the subtasks of one run share: the start instant,
// the schedule, and the merged results (each sink subtask merges its own
// histogram once, at the end).
type latencyShared struct {
	base                     time.Time
	wall                     bool // stamps are wall-clock ns (a multi-process cluster), not ns since base
	statsDir                 string
	p                        int64
	local                    []atomic.Bool // by source subtask: it runs in this process (cluster only)
	keys                     int64
	rate                     float64
	warmup, total            int64        // ns
	started                  atomic.Int64 // ns since base: the first reader's start (0: none yet)
	last                     atomic.Int64 // the latest arrival at a sink
	lag                      atomic.Int64
	mu                       sync.Mutex
	hist, oversleep, busyGap Histogram
	events, all              int64
}

func (sh *latencyShared) now() int64 {
	if sh.wall {
		return time.Now().UnixNano()
	}
	return int64(time.Since(sh.base))
}

// pacedSource has one split per subtask (the split is the subtask index).
type pacedSource struct{ sh *latencyShared }

func (pacedSource) Boundedness() source.Boundedness { return source.Bounded }
func (pacedSource) SplitCodec() codec.Codec[int]    { return codec.Int() }

func (pacedSource) CreateEnumerator(ctx source.EnumeratorContext[int], _ []byte) (source.Enumerator[int], error) {
	return pacedEnum{ctx}, nil
}

func (s pacedSource) CreateReader(ctx source.ReaderContext) (source.Reader[stamped, int], error) {
	r := &pacedReader{sh: s.sh, p: int64(ctx.Parallelism()), subtask: ctx.Subtask(), wake: make(chan struct{}, 1), buf: make([]stamped, 64)}
	if s.sh.local != nil {
		s.sh.local[ctx.Subtask()].Store(true)
	}
	if s.sh.rate > 0 {
		r.perNs = s.sh.rate / float64(ctx.Parallelism()) / 1e9
	}
	return r, nil
}

type pacedEnum struct{ ctx source.EnumeratorContext[int] }

func (pacedEnum) Start() error                   { return nil }
func (pacedEnum) HandleSplitRequest(int) error   { return nil }
func (pacedEnum) Snapshot(int64) ([]byte, error) { return nil, nil }
func (pacedEnum) Close() error                   { return nil }
func (e pacedEnum) AddReader(i int) error {
	e.ctx.Assign(i, i)
	e.ctx.NoMoreSplits(i)
	return nil
}

// pacedReader emits its share of the rate against a schedule: record k of
// the subtask is due at start + k/share. Each poll emits the records due
// by now (at most pollBatch), stamped with the instants they were due, so
// a stall of the source or of the job shows in the latency (no coordinated
// omission); with none due it asks to be polled when the next one is.
// Unpaced, it emits pollBatch records per poll, stamped with the poll's time.
type pacedReader struct {
	sh            *latencyShared
	p             int64
	subtask       int
	perNs         float64 // records per ns of this subtask; 0: unpaced
	split         int64
	has, noMore   bool
	start, end    int64 // ns since base
	emitted, next int64 // records so far, next generator index
	wake          chan struct{}
	buf           []stamped
	// The previous poll: when it ended, and when it asked to be polled
	// again (0: it emitted).
	lastEnd, wakeAt    int64
	oversleep, busyGap Histogram
}

const pollBatch = 1024

func (r *pacedReader) Start() error { return nil }
func (r *pacedReader) AddSplits(s []int) {
	if len(s) > 0 {
		r.has, r.split, r.next = true, int64(s[0]), int64(s[0])
		r.start = r.sh.now()
		r.end = r.start + r.sh.total
		r.sh.started.CompareAndSwap(0, r.start)
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}
func (r *pacedReader) NoMoreSplits() {
	r.noMore = true
	select {
	case r.wake <- struct{}{}:
	default:
	}
}
func (r *pacedReader) SnapshotState(int64) ([]int, error)   { return nil, nil }
func (r *pacedReader) NotifyCheckpointComplete(int64) error { return nil }
func (r *pacedReader) Close() error {
	if r.sh.statsDir != "" {
		return writeStats(r.sh.statsDir, fmt.Sprintf("source-%d.json", r.subtask),
			latencyFile{Start: r.start, Lag: r.sh.lag.Load(), Oversleep: &r.oversleep, BusyGap: &r.busyGap})
	}
	r.sh.mu.Lock()
	defer r.sh.mu.Unlock()
	r.sh.oversleep.Merge(&r.oversleep)
	r.sh.busyGap.Merge(&r.busyGap)
	return nil
}

func (r *pacedReader) PollNext(out source.Output[stamped]) (source.Status, <-chan struct{}, time.Duration, error) {
	if !r.has {
		if r.noMore {
			return source.EndOfInput, nil, 0, nil
		}
		return source.NothingAvailable, r.wake, 0, nil
	}
	now := r.sh.now()
	if r.lastEnd > 0 && now-r.start > r.sh.warmup {
		if r.wakeAt > 0 {
			r.oversleep.Record(now - r.wakeAt)
		} else {
			r.busyGap.Record(now - r.lastEnd)
		}
	}
	n := int64(pollBatch)
	if r.perNs > 0 {
		total := int64(float64(r.sh.total) * r.perNs)
		if r.emitted >= total {
			return source.EndOfInput, nil, 0, nil
		}
		due := min(int64(float64(now-r.start)*r.perNs)+1, total)
		if due <= r.emitted {
			next := r.start + int64(math.Ceil(float64(r.emitted)/r.perNs))
			// The engine rounds the wait up to whole milliseconds.
			wait := (max(next-now, 1) + 999_999) / 1_000_000 * 1_000_000
			r.lastEnd, r.wakeAt = now, now+wait
			return source.NothingAvailable, nil, time.Duration(wait), nil
		}
		if lag := now - r.due(r.emitted); lag > r.sh.lag.Load() && now-r.start > r.sh.warmup {
			r.sh.lag.Store(lag) // racy max across subtasks: a diagnostic
		}
		n = min(n, due-r.emitted)
	} else if now >= r.end {
		return source.EndOfInput, nil, 0, nil
	}
	keys, stride := r.sh.keys, r.p
	for done := int64(0); done < n; {
		k := min(n-done, int64(len(r.buf)))
		buf := r.buf[:k]
		for i := range buf {
			ts := now
			if r.perNs > 0 {
				ts = r.due(r.emitted + done + int64(i))
			}
			buf[i] = stamped{F0: r.next % keys, F1: 1, F2: ts}
			r.next += stride
		}
		out.CollectBatch(buf)
		done += k
		if out.ShouldYield() {
			n = done
		}
	}
	r.emitted += n
	r.lastEnd, r.wakeAt = r.sh.now(), 0
	return source.MoreAvailable, nil, 0, nil
}

// due is when record k of the subtask is due, in ns since base.
func (r *pacedReader) due(k int64) int64 { return r.start + int64(float64(k)/r.perNs) }

type latencySink struct{ sh *latencyShared }

func (s latencySink) CreateWriter(ctx sink.Context) (sink.Writer[stamped], error) {
	return &latencyWriter{sh: s.sh, from: -1, subtask: ctx.Subtask()}, nil
}

// latencyWriter records the latency of each record after the warm-up in
// its own histogram; Close merges it into the run's.
type latencyWriter struct {
	sh      *latencyShared
	subtask int
	from    int64 // the end of the warm-up, ns since base (-1: not known yet)
	last    int64
	n, all  int64
	hist    Histogram // on a cluster: the records of source subtasks in this process
	remote  Histogram // on a cluster: the records that crossed processes
	merged  bool
}

func (w *latencyWriter) Write(v stamped, _ int64) error {
	now := w.sh.now()
	w.all++
	if w.from < 0 {
		if w.sh.wall {
			// A source subtask of another process sets no started here:
			// the warm-up counts from the first record's due instant.
			w.from = v.F2 + w.sh.warmup
		} else {
			w.from = w.sh.started.Load() + w.sh.warmup
		}
	}
	if v.F2 >= w.from {
		if w.sh.local == nil || w.sh.local[v.F0%w.sh.p].Load() {
			w.hist.Record(now - v.F2)
		} else {
			w.remote.Record(now - v.F2)
		}
		w.n++
		w.last = now
	}
	return nil
}

func (w *latencyWriter) Flush(bool) error { return nil }

func (w *latencyWriter) Close() error {
	if w.merged {
		return nil
	}
	w.merged = true
	if w.sh.statsDir != "" {
		return writeStats(w.sh.statsDir, fmt.Sprintf("sink-%d.json", w.subtask),
			latencyFile{From: w.from, Last: w.last, Events: w.n, All: w.all, Local: &w.hist, Remote: &w.remote})
	}
	w.sh.mu.Lock()
	defer w.sh.mu.Unlock()
	w.sh.hist.Merge(&w.hist)
	w.sh.events += w.n
	w.sh.all += w.all
	if w.last > w.sh.last.Load() {
		w.sh.last.Store(w.last)
	}
	return nil
}

// Histogram counts non-negative int64 values (nanoseconds) in log-linear
// buckets: exact below 2^histSubBits, then 2^histSubBits buckets per power
// of two, so a value's bucket is within 1/2^histSubBits (1.6%) of it. A
// zero Histogram is empty; Record does not allocate.
type Histogram struct {
	counts [histBuckets]int64
	n      int64
	max    int64
}

const (
	histSubBits = 6
	histSub     = 1 << histSubBits
	histBuckets = (64 - histSubBits + 1) * histSub
)

func histIndex(v int64) int {
	if v < histSub {
		return int(max(v, 0))
	}
	e := bits.Len64(uint64(v)) - histSubBits - 1 // v>>e is in [histSub, 2*histSub)
	return (e+1)*histSub + int(v>>e) - histSub
}

// histUpper is the largest value of bucket i.
func histUpper(i int) int64 {
	if i < histSub {
		return int64(i)
	}
	e := i/histSub - 1
	m := int64(i%histSub + histSub)
	return (m+1)<<e - 1
}

// Record adds v (negative counts as 0).
func (h *Histogram) Record(v int64) {
	h.counts[histIndex(v)]++
	h.n++
	h.max = max(h.max, v)
}

// Merge adds o's counts.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// Count is the number of values recorded; Max the largest.
func (h *Histogram) Count() int64 { return h.n }
func (h *Histogram) Max() int64   { return h.max }

// Quantile returns the upper end of the bucket holding the value of rank
// ceil(q*n) (at most Max): at least the true quantile, within 1.6%.
func (h *Histogram) Quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := max(int64(math.Ceil(q*float64(h.n))), 1)
	var cum int64
	for i, c := range h.counts {
		if cum += c; cum >= rank {
			return min(histUpper(i), h.max)
		}
	}
	return h.max
}

// latencyFile is what one subtask of a run on a multi-process cluster
// measured (LatencyOptions.StatsDir): a source subtask's start (wall-clock
// ns), its process's largest lag behind schedule and its poll histograms;
// a sink subtask's end of warm-up, latest arrival, event counts and
// latency histograms.
type latencyFile struct {
	Start, Lag, From, Last int64
	Events, All            int64
	Local, Remote          *Histogram `json:",omitempty"`
	Oversleep, BusyGap     *Histogram `json:",omitempty"`
}

// writeStats writes f to dir/name, whole or not at all (a rename).
func writeStats(dir, name string, f latencyFile) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("bench latency: writing this subtask's results into %s (the client's --stats-dir; it must be on this host): %w", dir, err)
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}

// ReadLatencyStats merges what the subtasks of a run of o on a
// multi-process cluster wrote into o.StatsDir (one file per source and
// sink subtask) into the run's result; CPU stays 0 (the processes are
// not the caller's).
func ReadLatencyStats(o LatencyOptions) (LatencyResult, error) {
	res := LatencyResult{Latency: &Histogram{}, Local: &Histogram{}, Remote: &Histogram{}, Oversleep: &Histogram{}, BusyGap: &Histogram{}}
	var started, last int64
	for _, role := range []string{"source", "sink"} {
		for i := range o.Parallelism {
			path := filepath.Join(o.StatsDir, fmt.Sprintf("%s-%d.json", role, i))
			b, err := os.ReadFile(path)
			if errors.Is(err, os.ErrNotExist) {
				return res, fmt.Errorf("bench latency: %s subtask %d wrote no results to %s: did it run on this host, and did the job finish?", role, i, path)
			}
			if err != nil {
				return res, err
			}
			var f latencyFile
			if err := json.Unmarshal(b, &f); err != nil {
				return res, fmt.Errorf("bench latency: %s: %w", path, err)
			}
			if role == "source" {
				if started == 0 || f.Start < started {
					started = f.Start
				}
				res.SourceLag = max(res.SourceLag, f.Lag)
				merge(res.Oversleep, f.Oversleep)
				merge(res.BusyGap, f.BusyGap)
				continue
			}
			merge(res.Local, f.Local)
			merge(res.Remote, f.Remote)
			res.Events += f.Events
			res.TotalEvents += f.All
			last = max(last, f.Last)
		}
	}
	res.Latency.Merge(res.Local)
	res.Latency.Merge(res.Remote)
	if w := time.Duration(last - started - int64(o.Warmup)); started > 0 && w > 0 {
		res.Window = w
	}
	return res, nil
}

func merge(h, o *Histogram) {
	if o != nil {
		h.Merge(o)
	}
}

// histogramJSON is a Histogram's file form: its non-empty buckets.
type histogramJSON struct {
	N, Max int64
	Counts map[int]int64
}

// MarshalJSON encodes the non-empty buckets.
func (h *Histogram) MarshalJSON() ([]byte, error) {
	j := histogramJSON{N: h.n, Max: h.max, Counts: map[int]int64{}}
	for i, c := range h.counts {
		if c != 0 {
			j.Counts[i] = c
		}
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes MarshalJSON's form.
func (h *Histogram) UnmarshalJSON(b []byte) error {
	var j histogramJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*h = Histogram{n: j.N, max: j.Max}
	for i, c := range j.Counts {
		if i < 0 || i >= histBuckets {
			return fmt.Errorf("histogram bucket %d out of range [0, %d)", i, histBuckets)
		}
		h.counts[i] = c
	}
	return nil
}

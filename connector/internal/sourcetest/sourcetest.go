package sourcetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/source"
)

// Job is one attempt of a source: an enumerator and p readers.
type Job[T, S any] struct {
	src     source.Source[T, S]
	codec   codec.Codec[S]
	clock   clock.Clock
	p       int
	enum    source.Enumerator[S]
	readers []*Reader[T, S]
	// requests are the events from readers not handled yet: subtasks that
	// registered or asked for a split.
	requests []request
	regs     []int
	closed   bool
	// metrics are the readers' metrics (source.ReaderMetrics), by
	// subtask and name; see Metric.
	metrics map[string]*metric
	// asyncs are the enumerator's periodic calls (source.AsyncCaller),
	// run synchronously by Step when due, or by RunAsync.
	asyncs []*asyncCall
}

type metric struct{ n int64 }

func (m *metric) Inc()        { m.n++ }
func (m *metric) Add(d int64) { m.n += d }
func (m *metric) Set(v int64) { m.n = v }

// Metric returns the value of reader subtask i's metric named name in this
// attempt (counters and gauges alike), and whether it was registered.
func (j *Job[T, S]) Metric(i int, name string) (int64, bool) {
	m, ok := j.metrics[fmt.Sprint(i, ".", name)]
	if !ok {
		return 0, false
	}
	return m.n, true
}

func (j *Job[T, S]) metric(i int, name string) *metric {
	if j.metrics == nil {
		j.metrics = map[string]*metric{}
	}
	k := fmt.Sprint(i, ".", name)
	m, ok := j.metrics[k]
	if !ok {
		m = &metric{}
		j.metrics[k] = m
	}
	return m
}

type asyncCall struct {
	fn      func() (any, error)
	handler func(any, error) error
	due     time.Time
	period  time.Duration
	done    bool
}

// RunAsync runs the enumerator's periodic calls (source.AsyncCaller): all
// of them when all is set, else those that are due; fn and then handler,
// on the caller's goroutine.
func (j *Job[T, S]) RunAsync(all bool) error {
	now := time.Now()
	for _, a := range j.asyncs {
		if a.done || (!all && now.Before(a.due)) {
			continue
		}
		v, err := a.fn()
		if err := a.handler(v, err); err != nil {
			return err
		}
		if a.period <= 0 {
			a.done = true
		}
		a.due = now.Add(a.period)
	}
	return nil
}

// Reader is one subtask's reader with what it emitted in this attempt.
type Reader[T, S any] struct {
	job     *Job[T, S]
	subtask int
	R       source.Reader[T, S]
	// Out holds the records the reader emitted, in order, unless Discard
	// is set; N counts them either way.
	Out     []T
	N       int
	Discard bool
	// YieldEvery, when positive, makes ShouldYield report true after every
	// YieldEvery records, as a backpressured task would.
	YieldEvery int
	// Ended is set once PollNext returned EndOfInput.
	Ended bool
	// PerSplit counts the records emitted through each split's output
	// (ForSplit), by split id; Direct counts those collected directly.
	// Released lists the splits released, in order. SplitErrors lists
	// misuses: records through a released split's output, a split
	// released twice or without an output.
	PerSplit    map[string]int
	Direct      int
	Released    []string
	SplitErrors []string
	live        map[string]bool
	events      []event
	// What the last poll said, when it had nothing.
	wake  <-chan struct{}
	retry time.Duration
	idle  bool
}

type request struct {
	subtask  int
	register bool
}

type event struct {
	splits [][]byte // encoded
	noMore bool
}

// Checkpoint is what a checkpoint holds of a source: the enumerator's state
// and each reader's encoded splits, with how many records each reader had
// emitted when it was taken.
type Checkpoint struct {
	ID         int64
	Enumerator []byte
	Splits     [][][]byte // per subtask
	Emitted    []int      // per subtask, records emitted in the attempt before it
}

// Start starts the source afresh at parallelism p: the enumerator starts,
// every reader is created and started, in subtask order; their
// registrations are pending events (see Deliver).
func Start[T, S any](src source.Source[T, S], p int, clk clock.Clock) (*Job[T, S], error) {
	return start(src, p, clk, nil)
}

// Restore starts the source from checkpoint cp at parallelism p.
func Restore[T, S any](src source.Source[T, S], cp *Checkpoint, p int, clk clock.Clock) (*Job[T, S], error) {
	return start(src, p, clk, cp)
}

func start[T, S any](src source.Source[T, S], p int, clk clock.Clock, cp *Checkpoint) (*Job[T, S], error) {
	if clk == nil {
		clk = clock.System{}
	}
	j := &Job[T, S]{src: src, codec: src.SplitCodec(), clock: clk, p: p}
	var restored []byte
	var splits [][][]byte
	if cp != nil {
		restored = cp.Enumerator
		if restored == nil {
			restored = []byte{} // restored, even if empty
		}
		splits = Redistribute(cp.Splits, p)
	}
	e, err := src.CreateEnumerator(enumCtx[T, S]{j}, restored)
	if err != nil {
		return nil, err
	}
	j.enum = e
	if err := e.Start(); err != nil {
		e.Close()
		return nil, err
	}
	for i := range p {
		r, err := src.CreateReader(readerCtx[T, S]{j, i})
		if err != nil {
			j.Close()
			return nil, err
		}
		j.readers = append(j.readers, &Reader[T, S]{job: j, subtask: i, R: r})
	}
	for i, r := range j.readers {
		if splits != nil && len(splits[i]) > 0 {
			dec, err := j.decode(splits[i])
			if err != nil {
				j.Close()
				return nil, fmt.Errorf("restoring the splits of subtask %d: %w", i, err)
			}
			r.R.AddSplits(dec)
		}
		if err := r.R.Start(); err != nil {
			j.Close()
			return nil, err
		}
		j.requests = append(j.requests, request{subtask: i, register: true})
	}
	return j, nil
}

// Redistribute cuts the splits of all old subtasks, in order, into p
// contiguous runs whose lengths differ by at most one, as operator list
// state is redistributed.
func Redistribute(old [][][]byte, p int) [][][]byte {
	var all [][]byte
	for _, o := range old {
		all = append(all, o...)
	}
	out := make([][][]byte, p)
	start := 0
	for i := range out {
		n := len(all) / p
		if i < len(all)%p {
			n++
		}
		out[i] = all[start : start+n]
		start += n
	}
	return out
}

func (j *Job[T, S]) decode(enc [][]byte) ([]S, error) {
	out := make([]S, 0, len(enc))
	for _, e := range enc {
		s, n, err := j.codec.Decode(e)
		if err != nil {
			return nil, err
		}
		if n != len(e) {
			return nil, fmt.Errorf("split codec used %d of %d bytes", n, len(e))
		}
		out = append(out, s)
	}
	return out, nil
}

// Parallelism is the job's number of readers.
func (j *Job[T, S]) Parallelism() int { return j.p }

// Reader returns subtask i's reader.
func (j *Job[T, S]) Reader(i int) *Reader[T, S] { return j.readers[i] }

// Enumerator is the job's enumerator.
func (j *Job[T, S]) Enumerator() source.Enumerator[S] { return j.enum }

// Pending reports whether events wait to be delivered.
func (j *Job[T, S]) Pending() bool {
	if len(j.requests) > 0 {
		return true
	}
	for _, r := range j.readers {
		if len(r.events) > 0 {
			return true
		}
	}
	return false
}

// Deliver delivers every pending event, also those that delivering causes.
func (j *Job[T, S]) Deliver() error {
	for j.Pending() {
		if err := j.deliverRequests(); err != nil {
			return err
		}
		for _, r := range j.readers {
			if err := r.deliver(len(r.events)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (j *Job[T, S]) deliverRequests() error { return j.deliverRequestsN(len(j.requests)) }

// deliverRequestsN hands the first n pending reader events to the enumerator.
func (j *Job[T, S]) deliverRequestsN(n int) error {
	for range n {
		rq := j.requests[0]
		j.requests = j.requests[1:]
		if rq.register {
			j.regs = append(j.regs, rq.subtask)
			if err := j.enum.AddReader(rq.subtask); err != nil {
				return err
			}
			continue
		}
		if err := j.enum.HandleSplitRequest(rq.subtask); err != nil {
			return err
		}
	}
	return nil
}

// deliver delivers the first n events to the reader.
func (r *Reader[T, S]) deliver(n int) error {
	for range n {
		ev := r.events[0]
		r.events = r.events[1:]
		if ev.noMore {
			r.R.NoMoreSplits()
			continue
		}
		splits, err := r.job.decode(ev.splits)
		if err != nil {
			return fmt.Errorf("decoding an assignment to subtask %d: %w", r.subtask, err)
		}
		r.R.AddSplits(splits)
	}
	return nil
}

// Poll polls the reader once, collecting what it emits.
func (r *Reader[T, S]) Poll() (source.Status, <-chan struct{}, time.Duration, error) {
	st, wake, retry, err := r.R.PollNext(r)
	if err != nil {
		return st, wake, retry, err
	}
	r.idle = st == source.NothingAvailable
	r.wake, r.retry = wake, retry
	if st == source.EndOfInput {
		r.Ended = true
	}
	return st, wake, retry, nil
}

// Collect implements source.Output.
func (r *Reader[T, S]) Collect(v T) {
	r.N++
	r.Direct++
	if !r.Discard {
		r.Out = append(r.Out, v)
	}
}

// CollectWithTimestamp implements source.Output.
func (r *Reader[T, S]) CollectWithTimestamp(v T, _ int64) { r.Collect(v) }

// CollectBatch implements source.Output.
func (r *Reader[T, S]) CollectBatch(vs []T) {
	for _, v := range vs {
		r.Collect(v)
	}
}

// ForSplit implements source.Output: records of every split land in Out,
// and are counted in PerSplit.
func (r *Reader[T, S]) ForSplit(id string) source.SplitOutput[T] {
	if r.live == nil {
		r.live, r.PerSplit = map[string]bool{}, map[string]int{}
	}
	if _, ok := r.PerSplit[id]; !ok {
		r.PerSplit[id] = 0
	}
	r.live[id] = true
	return splitOut[T, S]{r, id}
}

// ReleaseSplit implements source.Output.
func (r *Reader[T, S]) ReleaseSplit(id string) {
	if !r.live[id] {
		r.SplitErrors = append(r.SplitErrors, fmt.Sprintf("split %q released without a live output", id))
	}
	delete(r.live, id)
	r.Released = append(r.Released, id)
}

type splitOut[T, S any] struct {
	r  *Reader[T, S]
	id string
}

func (o splitOut[T, S]) count(n int) {
	if !o.r.live[o.id] {
		o.r.SplitErrors = append(o.r.SplitErrors, fmt.Sprintf("%d records through the output of split %q after it was released", n, o.id))
	}
	o.r.PerSplit[o.id] += n
	o.r.Direct -= n // Collect counts them as direct
}

func (o splitOut[T, S]) Collect(v T) { o.count(1); o.r.Collect(v) }
func (o splitOut[T, S]) CollectWithTimestamp(v T, ts int64) {
	o.count(1)
	o.r.CollectWithTimestamp(v, ts)
}
func (o splitOut[T, S]) CollectBatch(vs []T) { o.count(len(vs)); o.r.CollectBatch(vs) }
func (o splitOut[T, S]) EmitWatermark(int64) {}
func (o splitOut[T, S]) MarkIdle()           {}

// ShouldYield implements source.Output.
func (r *Reader[T, S]) ShouldYield() bool { return r.YieldEvery > 0 && r.N%r.YieldEvery == 0 }

// Step does one random thing: deliver an event, or poll a reader that has
// not ended. It reports whether anything could be done.
func (j *Job[T, S]) Step(rng *rand.Rand) (bool, error) {
	if err := j.RunAsync(false); err != nil {
		return false, err
	}
	var live []*Reader[T, S]
	for _, r := range j.readers {
		if !r.Ended || len(r.events) > 0 {
			live = append(live, r)
		}
	}
	if len(j.requests) > 0 && (len(live) == 0 || rng.IntN(3) == 0) {
		return true, j.deliverRequestsN(1)
	}
	if len(live) == 0 {
		return false, nil
	}
	r := live[rng.IntN(len(live))]
	if len(r.events) > 0 && (r.Ended || rng.IntN(2) == 0) {
		return true, r.deliver(1)
	}
	if r.Ended {
		return true, nil
	}
	// Sometimes the task asks for its thread back mid-batch, as under
	// backpressure: the reader must go on where it stopped.
	r.YieldEvery = []int{0, 0, 1, 7}[rng.IntN(4)]
	_, _, _, err := r.Poll()
	return true, err
}

// Done reports whether every reader ended.
func (j *Job[T, S]) Done() bool {
	for _, r := range j.readers {
		if !r.Ended {
			return false
		}
	}
	return true
}

// Wait waits up to d for a reader that had nothing to be woken (its wake
// channel, or its retry time on the system clock), when every reader that
// has not ended had nothing and no event is pending; otherwise it returns
// at once.
func (j *Job[T, S]) Wait(d time.Duration) {
	if j.Pending() {
		return
	}
	cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(time.After(d))}}
	for _, r := range j.readers {
		if r.Ended {
			continue
		}
		if !r.idle {
			return
		}
		if r.wake != nil {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(r.wake)})
		} else {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(time.After(max(r.retry, time.Millisecond)))})
		}
	}
	reflect.Select(cases)
	for _, r := range j.readers {
		r.idle = false
	}
}

// Checkpoint takes checkpoint id: pending assignments reach the readers,
// then the enumerator and every reader snapshot.
func (j *Job[T, S]) Checkpoint(id int64) (*Checkpoint, error) {
	for _, r := range j.readers {
		if err := r.deliver(len(r.events)); err != nil {
			return nil, err
		}
	}
	cp := &Checkpoint{ID: id}
	var err error
	if cp.Enumerator, err = j.enum.Snapshot(id); err != nil {
		return nil, err
	}
	for _, r := range j.readers {
		splits, err := r.R.SnapshotState(id)
		if err != nil {
			return nil, err
		}
		enc := make([][]byte, len(splits))
		for k, s := range splits {
			enc[k] = j.codec.AppendEncode(nil, s)
		}
		cp.Splits = append(cp.Splits, enc)
		cp.Emitted = append(cp.Emitted, len(r.Out))
	}
	return cp, nil
}

// Complete notifies every reader that checkpoint id completed.
func (j *Job[T, S]) Complete(id int64) error {
	for _, r := range j.readers {
		if err := r.R.NotifyCheckpointComplete(id); err != nil {
			return err
		}
	}
	return nil
}

// Close closes every reader and the enumerator, as at the end of an attempt.
func (j *Job[T, S]) Close() error {
	if j.closed {
		return nil
	}
	j.closed = true
	var errs []error
	for _, r := range j.readers {
		errs = append(errs, r.R.Close())
	}
	if j.enum != nil {
		errs = append(errs, j.enum.Close())
	}
	return errors.Join(errs...)
}

// All returns what every reader emitted, in subtask order.
func (j *Job[T, S]) All() []T {
	var out []T
	for _, r := range j.readers {
		out = append(out, r.Out...)
	}
	return out
}

// Run steps through the job in a random order until every reader ended,
// waiting as a task would when none has anything; it fails after timeout.
func (j *Job[T, S]) Run(rng *rand.Rand, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for !j.Done() {
		if time.Now().After(deadline) {
			return fmt.Errorf("no end of input after %v (%d records)%s", timeout, len(j.All()), j.describe())
		}
		for range 16 {
			if _, err := j.Step(rng); err != nil {
				return err
			}
		}
		j.Wait(2 * time.Millisecond)
	}
	return j.Deliver()
}

// Options shapes RunWithFailures.
type Options struct {
	// Parallelism is the first attempt's.
	Parallelism int
	// Restore picks the parallelism of each restore (nil: the same).
	Restore func(rng *rand.Rand) int
	// Failures is how many times the job fails and restores.
	Failures int
	// Steps bounds the random steps between failures (a failure comes after
	// up to Steps steps; checkpoints at random in between).
	Steps int
	// Until ends an unbounded job once it returns true for the records
	// accepted so far plus the current attempt's (nil: run to the end).
	Until func(n int) bool
	// Timeout bounds the whole run (0: 30s).
	Timeout time.Duration
	Clock   clock.Clock
}

// RunWithFailures runs the source through random steps, checkpoints at
// random points and fails at random points, each time restoring the latest
// checkpoint (or starting afresh when there is none) at the parallelism
// Options.Restore picks, until the input ends. It returns the records an
// exactly-once consumer sees: those emitted before the checkpoint each
// restore came from, and then everything of the last attempt.
func RunWithFailures[T, S any](rng *rand.Rand, src source.Source[T, S], o Options) ([]T, error) {
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	deadline := time.Now().Add(o.Timeout)
	var accepted []T // up to the restored checkpoint
	type done struct {
		cp      *Checkpoint
		records []T
	}
	var latest *done
	var id int64
	p := o.Parallelism
	job, err := Start(src, p, o.Clock)
	if err != nil {
		return nil, err
	}
	current := func() []T { return append(slices.Clone(accepted), job.All()...) }
	failures := 0
	for {
		steps := o.Steps
		if failures < o.Failures {
			steps = 1 + rng.IntN(max(o.Steps, 1))
		}
		for s := 0; (failures >= o.Failures || s < steps) && !job.Done(); s++ {
			if time.Now().After(deadline) {
				err := fmt.Errorf("no end of input after %v (%d records)%s", o.Timeout, len(current()), job.describe())
				job.Close()
				return nil, err
			}
			if o.Until != nil && o.Until(len(accepted)+len(job.All())) {
				break
			}
			if rng.IntN(8) == 0 {
				id++
				cp, err := job.Checkpoint(id)
				if err != nil {
					job.Close()
					return nil, err
				}
				latest = &done{cp, current()}
				if rng.IntN(2) == 0 {
					if err := job.Complete(id); err != nil {
						job.Close()
						return nil, err
					}
				}
				continue
			}
			progressed, err := job.Step(rng)
			if err != nil {
				job.Close()
				return nil, err
			}
			if !progressed || rng.IntN(16) == 0 {
				job.Wait(time.Millisecond)
			}
		}
		if failures >= o.Failures || job.Done() || (o.Until != nil && o.Until(len(accepted)+len(job.All()))) {
			if err := job.Deliver(); err != nil {
				job.Close()
				return nil, err
			}
			if !job.Done() && o.Until == nil {
				if err := job.Run(rng, time.Until(deadline)); err != nil {
					job.Close()
					return nil, err
				}
			}
			out := current()
			return out, job.Close()
		}
		// Fail: drop the attempt, restore the latest checkpoint.
		failures++
		if err := job.Close(); err != nil {
			return nil, err
		}
		if o.Restore != nil {
			p = o.Restore(rng)
		}
		if latest == nil {
			accepted = nil
			job, err = Start(src, p, o.Clock)
		} else {
			accepted = slices.Clone(latest.records)
			job, err = Restore(src, latest.cp, p, o.Clock)
		}
		if err != nil {
			return nil, err
		}
	}
}

type enumCtx[T, S any] struct{ j *Job[T, S] }

func (c enumCtx[T, S]) Parallelism() int { return c.j.p }
func (c enumCtx[T, S]) Registered() []int {
	return slices.Clone(c.j.regs)
}
func (c enumCtx[T, S]) CallAsync(fn func() (any, error), handler func(any, error) error, initialDelay, period time.Duration) {
	c.j.asyncs = append(c.j.asyncs, &asyncCall{fn: fn, handler: handler, due: time.Now().Add(initialDelay), period: period})
}

func (c enumCtx[T, S]) NoMoreSplits(subtask int) {
	r := c.j.readers[subtask]
	r.events = append(r.events, event{noMore: true})
}
func (c enumCtx[T, S]) Assign(subtask int, splits ...S) {
	enc := make([][]byte, len(splits))
	for i, s := range splits {
		enc[i] = c.j.codec.AppendEncode(nil, s)
	}
	r := c.j.readers[subtask]
	r.events = append(r.events, event{splits: enc})
}

type readerCtx[T, S any] struct {
	j *Job[T, S]
	i int
}

func (c readerCtx[T, S]) Subtask() int       { return c.i }
func (c readerCtx[T, S]) Parallelism() int   { return c.j.p }
func (c readerCtx[T, S]) Clock() clock.Clock { return c.j.clock }

// Metrics gives the reader metrics that Job.Metric reads.
func (c readerCtx[T, S]) Metrics() source.Metrics { return c }

func (c readerCtx[T, S]) Counter(name string) source.Counter { return c.j.metric(c.i, name) }
func (c readerCtx[T, S]) Gauge(name string) source.Gauge     { return c.j.metric(c.i, name) }

func (c readerCtx[T, S]) RequestSplit() {
	c.j.requests = append(c.j.requests, request{subtask: c.i})
}

// describe tells, for a timeout's message, where each reader that has not
// ended is: whether it was told no more splits are coming, the events it
// has not received, and what its reader says of itself when it has a
// DebugState() string method (positions against stop offsets, buffers).
func (j *Job[T, S]) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "; parallelism %d, %d requests pending", j.p, len(j.requests))
	for i, r := range j.readers {
		if r.Ended {
			continue
		}
		fmt.Fprintf(&b, "\n  subtask %d: not ended, %d events pending, %d records", i, len(r.events), r.N)
		if d, ok := r.R.(interface{ DebugState() string }); ok {
			fmt.Fprintf(&b, ": %s", d.DebugState())
		}
	}
	return b.String()
}

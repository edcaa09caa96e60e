package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/source"
)

// maxPendingCommits bounds the checkpoints whose offsets wait for their
// completion.
const maxPendingCommits = 64

// maxPollBatch bounds the records one PollNext emits.
const maxPollBatch = 2000

// Metric names (see docs/kafka.md).
const (
	MetricBadRecordsSkipped      = "numBadRecordsSkipped"
	MetricBadRecordsDeadLettered = "numBadRecordsDeadLettered"
	MetricPendingRecords         = "pendingRecords"
	MetricCommitsSucceeded       = "KafkaSourceReader.commitsSucceeded"
	MetricCommitsFailed          = "KafkaSourceReader.commitsFailed"
)

// partitionMetric is the name of a per-partition metric, as Flink's
// KafkaSourceReaderMetrics names them.
func partitionMetric(topic string, partition int32, name string) string {
	return "KafkaSourceReader.topic." + topic + ".partition." + strconv.Itoa(int(partition)) + "." + name
}

type splitState[T any] struct {
	sp     Split
	id     string
	tp     topicPartition
	out    source.SplitOutput[T]
	queue  []*kgo.Record
	paused bool
	// gauges
	current, committed, lag source.Gauge
}

type reader[T any] struct {
	cfg     *SourceConfig
	deser   Deserializer[T]
	rctx    source.ReaderContext
	metrics source.Metrics
	log     *slog.Logger

	cl      *kgo.Client
	started bool
	splits  map[string]*splitState[T]
	order   []string // split ids, for round-robin emission
	rr      int
	noMore  bool
	added   []Split // before Start

	// The fetching goroutine's hand-over, under mu.
	mu       sync.Mutex
	fetched  []*kgo.Record
	hwm      map[topicPartition]int64 // high watermark (read_committed: last stable offset)
	lastRec  map[topicPartition]int64 // offset of the last record fetched, for DebugState
	fetchErr error
	buffered int // fetched and not yet emitted or dropped
	wake     chan struct{}
	space    chan struct{}
	cancel   context.CancelFunc
	ctx      context.Context
	done     chan struct{}
	// fetchReqs counts the client's fetch requests, for DebugState.
	fetchReqs fetchCounter

	// Offsets of checkpoints not complete yet, by checkpoint id.
	pendingCommits map[int64]map[topicPartition]int64
	// finished holds the stop offsets of the bounded splits that ended,
	// committed with every later checkpoint (as Flink does).
	finished map[topicPartition]int64
	// The offset committing goroutine: the latest offsets to commit.
	commitMu       sync.Mutex
	toCommit       map[topicPartition]int64
	committedOffs  map[topicPartition]int64
	commitOK       int64
	commitFailed   int64
	commitWake     chan struct{}
	commitDone     chan struct{}
	shownOK        int64
	shownFailed    int64
	badSkipped     source.Counter
	badDead        source.Counter
	pendingRecords source.Gauge
	commitsOK      source.Counter
	commitsFailed  source.Counter
}

func newReader[T any](cfg *SourceConfig, d Deserializer[T], ctx source.ReaderContext) (*reader[T], error) {
	m := source.ReaderMetrics(ctx)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &reader[T]{
		cfg: cfg, deser: d, rctx: ctx, metrics: m, log: log,
		splits:         map[string]*splitState[T]{},
		hwm:            map[topicPartition]int64{},
		lastRec:        map[topicPartition]int64{},
		wake:           make(chan struct{}, 1),
		space:          make(chan struct{}, 1),
		pendingCommits: map[int64]map[topicPartition]int64{},
		finished:       map[topicPartition]int64{},
		committedOffs:  map[topicPartition]int64{},
		commitWake:     make(chan struct{}, 1),
		badSkipped:     m.Counter(MetricBadRecordsSkipped),
		badDead:        m.Counter(MetricBadRecordsDeadLettered),
		pendingRecords: m.Gauge(MetricPendingRecords),
		commitsOK:      m.Counter(MetricCommitsSucceeded),
		commitsFailed:  m.Counter(MetricCommitsFailed),
	}
	return r, nil
}

// Start implements source.Reader: the client, its fetching goroutine and
// (with a group) the committing one.
func (r *reader[T]) Start() error {
	opts := []kgo.Opt{
		kgo.SeedBrokers(r.cfg.Brokers...),
		kgo.KeepControlRecords(), // their offsets count: a bounded split may end on one
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500 * time.Millisecond),
		// Without KIP-227 fetch sessions: franz-go 1.22.3's Close kills a
		// session while a fetch still in flight writes it (a data race the
		// race detector caught in CI as the reader closed after a failure).
		// A reader holds few partitions, so full fetch requests cost little.
		kgo.DisableFetchSessions(),
		kgo.WithHooks(&r.fetchReqs),
	}
	if r.cfg.ReadCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	var err error
	if r.cl, err = kgo.NewClient(opts...); err != nil {
		return fmt.Errorf("kafka source: %w", err)
	}
	r.started = true
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.done = make(chan struct{})
	go r.fetchLoop()
	if r.cfg.Group != "" {
		r.commitDone = make(chan struct{})
		go r.commitLoop()
	}
	if err := r.stopRestoredSplits(r.added); err != nil {
		return err
	}
	r.AddSplits(r.added)
	r.added = nil
	return nil
}

// stopRestoredSplits gives the splits a reader starts with (those of a
// restored checkpoint) the stop offsets of this run, so that runs can go on
// from each other's checkpoints whether each is bounded or not: a bounded
// run stops every split at its partition's end as listed now, at start (at
// least its position), also one restored from an unbounded run, which has
// none; an unbounded run reads on past a stop offset that a bounded run
// left in the checkpoint.
func (r *reader[T]) stopRestoredSplits(splits []Split) error {
	if !r.cfg.Bounded {
		for i := range splits {
			splits[i].StopOffset = NoStopOffset
		}
		return nil
	}
	if len(splits) == 0 {
		return nil
	}
	var topics []string
	for _, sp := range splits {
		if !slices.Contains(topics, sp.Topic) {
			topics = append(topics, sp.Topic)
		}
	}
	ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
	defer cancel()
	ends, err := listStopOffsets(ctx, kadm.NewClient(r.cl), r.cfg.ReadCommitted, topics)
	if err != nil {
		return err
	}
	for i, sp := range splits {
		lo, ok := ends.Lookup(sp.Topic, sp.Partition)
		if !ok {
			return fmt.Errorf("kafka source: no stop offset for restored topic %q partition %d (was the partition deleted?)", sp.Topic, sp.Partition)
		}
		splits[i].StopOffset = max(lo.Offset, sp.Offset)
	}
	return nil
}

// AddSplits implements source.Reader.
func (r *reader[T]) AddSplits(splits []Split) {
	if !r.started {
		r.added = append(r.added, splits...)
		return
	}
	add := map[string]map[int32]kgo.Offset{}
	for _, sp := range splits {
		id := sp.ID()
		if _, ok := r.splits[id]; ok {
			continue
		}
		s := &splitState[T]{sp: sp, id: id, tp: topicPartition{sp.Topic, sp.Partition},
			current:   r.metrics.Gauge(partitionMetric(sp.Topic, sp.Partition, "currentOffset")),
			committed: r.metrics.Gauge(partitionMetric(sp.Topic, sp.Partition, "committedOffset")),
			lag:       r.metrics.Gauge(partitionMetric(sp.Topic, sp.Partition, "recordsLag")),
		}
		s.current.Set(sp.Offset)
		r.splits[id] = s
		r.order = append(r.order, id)
		if !sp.finished() {
			if add[sp.Topic] == nil {
				add[sp.Topic] = map[int32]kgo.Offset{}
			}
			add[sp.Topic][sp.Partition] = kgo.NewOffset().At(sp.Offset)
		}
	}
	r.cl.AddConsumePartitions(add)
}

// NoMoreSplits implements source.Reader.
func (r *reader[T]) NoMoreSplits() { r.noMore = true }

func (r *reader[T]) signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// fetchLoop fetches on its own goroutine into a buffer of at most
// MaxBufferedRecords records.
func (r *reader[T]) fetchLoop() {
	defer close(r.done)
	for {
		r.mu.Lock()
		free := r.cfg.MaxBufferedRecords - r.buffered
		r.mu.Unlock()
		if free <= 0 {
			select {
			case <-r.space:
				continue
			case <-r.ctx.Done():
				return
			}
		}
		fs := r.cl.PollRecords(r.ctx, free)
		if r.ctx.Err() != nil || fs.IsClientClosed() {
			return
		}
		var recs []*kgo.Record
		var fatal error
		r.mu.Lock()
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if p.Err != nil {
				var dl *kgo.ErrDataLoss
				if !errors.As(p.Err, &dl) && !kgo.IsRetryableBrokerErr(p.Err) && !errors.Is(p.Err, context.Canceled) && fatal == nil {
					fatal = fmt.Errorf("kafka source: fetching topic %q partition %d: %w", p.Topic, p.Partition, p.Err)
				}
			}
			hw := p.HighWatermark
			if r.cfg.ReadCommitted {
				hw = p.LastStableOffset
			}
			if hw >= 0 {
				r.hwm[topicPartition{p.Topic, p.Partition}] = hw
			}
			if n := len(p.Records); n > 0 {
				r.lastRec[topicPartition{p.Topic, p.Partition}] = p.Records[n-1].Offset
			}
			recs = append(recs, p.Records...)
		})
		r.fetched = append(r.fetched, recs...)
		r.buffered += len(recs)
		if fatal != nil && r.fetchErr == nil {
			r.fetchErr = fatal
		}
		r.mu.Unlock()
		r.signal(r.wake)
	}
}

// PollNext implements source.Reader.
func (r *reader[T]) PollNext(out source.Output[T]) (source.Status, <-chan struct{}, time.Duration, error) {
	r.mu.Lock()
	fetched, err := r.fetched, r.fetchErr
	r.fetched = nil
	hwm := maps.Clone(r.hwm)
	r.mu.Unlock()
	if err != nil {
		return 0, nil, 0, err
	}
	dropped := 0
	for _, rec := range fetched {
		s, ok := r.splits[rec.Topic+"-"+strconv.Itoa(int(rec.Partition))]
		if !ok {
			dropped++
			continue
		}
		s.queue = append(s.queue, rec)
	}
	// Outputs of every split before any record (per-split watermarks).
	for _, id := range r.order {
		if s := r.splits[id]; s.out == nil {
			s.out = out.ForSplit(id)
		}
	}
	emitted := 0
	var perr error
	for pass := 0; pass < len(r.order) && emitted < maxPollBatch && perr == nil; pass++ {
		if r.rr >= len(r.order) {
			r.rr = 0
		}
		s := r.splits[r.order[r.rr]]
		r.rr++
		if s.paused {
			continue
		}
		n := 0
		n, perr = r.emit(s, out, maxPollBatch-emitted)
		emitted += n
		if out.ShouldYield() {
			break
		}
	}
	// Finished splits leave. Their partitions are paused in the client,
	// not removed from it: franz-go (1.22.3) stops and restarts its
	// consumer session to remove a partition, dropping what it fetched for
	// the others, and a restart can leave it fetching nothing, for good
	// (the old session's fetch loop, not yet counted as that session's
	// worker, sees it canceled after the new session asked it to go on, and
	// stops): a bounded job then never ended. Pausing only filters what
	// the client fetches; a reader never reads a finished partition again
	// (a restore starts new readers).
	var ended map[string][]int32
	for i := 0; i < len(r.order); i++ {
		s := r.splits[r.order[i]]
		if !s.sp.finished() {
			continue
		}
		dropped += len(s.queue)
		r.finished[s.tp] = s.sp.Offset
		out.ReleaseSplit(s.id)
		if ended == nil {
			ended = map[string][]int32{}
		}
		ended[s.sp.Topic] = append(ended[s.sp.Topic], s.sp.Partition)
		delete(r.splits, s.id)
		r.order = slices.Delete(r.order, i, i+1)
		i--
	}
	if ended != nil {
		r.cl.PauseFetchPartitions(ended)
	}
	if emitted+dropped > 0 {
		r.mu.Lock()
		r.buffered -= emitted + dropped
		r.mu.Unlock()
		r.signal(r.space)
	}
	r.updateMetrics(hwm)
	if perr != nil {
		return 0, nil, 0, perr
	}
	if r.noMore && len(r.splits) == 0 {
		return source.EndOfInput, nil, 0, nil
	}
	for _, s := range r.splits {
		if !s.paused && len(s.queue) > 0 {
			return source.MoreAvailable, nil, 0, nil
		}
	}
	return source.NothingAvailable, r.wake, 0, nil
}

// emit emits up to limit queued records of s; it returns how many records
// (emitted, skipped or control) it took from the queue.
func (r *reader[T]) emit(s *splitState[T], out source.Output[T], limit int) (int, error) {
	n := 0
	for len(s.queue) > 0 && n < limit {
		rec := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		n++
		if rec.Offset < s.sp.Offset {
			continue // before the position (never expected)
		}
		if s.sp.StopOffset != NoStopOffset && rec.Offset >= s.sp.StopOffset {
			s.sp.Offset = s.sp.StopOffset
			n += len(s.queue)
			s.queue = nil
			break
		}
		if rec.Attrs.IsControl() {
			s.sp.Offset = rec.Offset + 1
			continue
		}
		kr := Record{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Key: rec.Key, Value: rec.Value, Timestamp: rec.Timestamp.UnixMilli()}
		for _, h := range rec.Headers {
			kr.Headers = append(kr.Headers, Header{h.Key, h.Value})
		}
		v, err := r.deser(&kr)
		if err != nil {
			if err := r.badRecord(rec, err); err != nil {
				s.queue = append([]*kgo.Record{rec}, s.queue...) // not taken
				return n - 1, err
			}
			s.sp.Offset = rec.Offset + 1
			continue
		}
		s.out.CollectWithTimestamp(v, kr.Timestamp)
		s.sp.Offset = rec.Offset + 1
		if out.ShouldYield() {
			break
		}
	}
	if s.sp.StopOffset != NoStopOffset && len(s.queue) > 0 && s.queue[0].Offset >= s.sp.StopOffset {
		s.sp.Offset = s.sp.StopOffset
		n += len(s.queue)
		s.queue = nil
	}
	return n, nil
}

// badRecord handles a record the deserializer rejected, by the policy: an
// error fails the job.
func (r *reader[T]) badRecord(rec *kgo.Record, derr error) error {
	switch r.cfg.BadRecords {
	case SkipBadRecord:
		r.badSkipped.Inc()
		r.log.Warn("kafka source: skipped a bad record", "topic", rec.Topic, "partition", rec.Partition, "offset", rec.Offset, "err", derr)
		return nil
	case DeadLetterBadRecord:
		dl := &kgo.Record{Topic: r.cfg.DeadLetterTopic, Key: rec.Key, Value: rec.Value, Timestamp: rec.Timestamp}
		dl.Headers = append(slices.Clone(rec.Headers),
			kgo.RecordHeader{Key: "weir.source.topic", Value: []byte(rec.Topic)},
			kgo.RecordHeader{Key: "weir.source.partition", Value: []byte(strconv.Itoa(int(rec.Partition)))},
			kgo.RecordHeader{Key: "weir.source.offset", Value: []byte(strconv.FormatInt(rec.Offset, 10))},
			kgo.RecordHeader{Key: "weir.error", Value: []byte(derr.Error())},
		)
		ctx, cancel := context.WithTimeout(r.ctx, requestTimeout)
		defer cancel()
		if err := r.cl.ProduceSync(ctx, dl).FirstErr(); err != nil {
			return fmt.Errorf("kafka source: producing the bad record at topic %q partition %d offset %d to dead-letter topic %q: %w (the record: %v)",
				rec.Topic, rec.Partition, rec.Offset, r.cfg.DeadLetterTopic, err, derr)
		}
		r.badDead.Inc()
		return nil
	}
	// Permanent: after a restart the same record is read and rejected again.
	return failure.Permanent(fmt.Errorf("kafka source: bad record at topic %q partition %d offset %d: %w (value %s; SourceConfig.BadRecords can skip or dead-letter bad records)", rec.Topic, rec.Partition, rec.Offset, derr, ValueExcerpt(rec.Value)))
}

func (r *reader[T]) updateMetrics(hwm map[topicPartition]int64) {
	var total int64
	r.commitMu.Lock()
	for _, s := range r.splits {
		s.current.Set(s.sp.Offset)
		if c, ok := r.committedOffs[s.tp]; ok {
			s.committed.Set(c)
		}
		if h, ok := hwm[s.tp]; ok {
			end := h
			if s.sp.StopOffset != NoStopOffset {
				end = min(end, s.sp.StopOffset)
			}
			lag := max(end-s.sp.Offset, 0)
			s.lag.Set(lag)
			total += lag
		}
	}
	ok, failed := r.commitOK, r.commitFailed
	r.commitMu.Unlock()
	r.pendingRecords.Set(total)
	r.commitsOK.Add(ok - r.shownOK)
	r.commitsFailed.Add(failed - r.shownFailed)
	r.shownOK, r.shownFailed = ok, failed
}

// SnapshotState implements source.Reader: each split's next offset is one
// past the last record emitted (or skipped) before the barrier.
func (r *reader[T]) SnapshotState(id int64) ([]Split, error) {
	out := make([]Split, 0, len(r.splits)+len(r.finished))
	offs := maps.Clone(r.finished)
	for _, sid := range r.order {
		s := r.splits[sid]
		out = append(out, s.sp)
		offs[s.tp] = s.sp.Offset
	}
	// Finished bounded splits stay in the state at their stop offset, so a
	// run resumed from this checkpoint knows their partitions (the
	// enumerator assigns a partition once) and an unbounded one reads on.
	for _, tp := range slices.SortedFunc(maps.Keys(r.finished), func(a, b topicPartition) int {
		return cmp.Or(strings.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	}) {
		off := r.finished[tp]
		out = append(out, Split{Topic: tp.topic, Partition: tp.partition, Offset: off, StopOffset: off})
	}
	if r.cfg.Group != "" {
		r.pendingCommits[id] = offs
		// Checkpoints that never complete (aborted, declined) must not
		// pile up: keep the newest maxPendingCommits.
		for len(r.pendingCommits) > maxPendingCommits {
			delete(r.pendingCommits, slices.Min(slices.Collect(maps.Keys(r.pendingCommits))))
		}
	}
	return out, nil
}

// NotifyCheckpointComplete implements source.Reader: the offsets of that
// checkpoint go to the consumer group, best effort, on the committing
// goroutine (a failure is logged and counted, as in Flink); those of older
// checkpoints are dropped.
func (r *reader[T]) NotifyCheckpointComplete(id int64) error {
	offs, ok := r.pendingCommits[id]
	for k := range r.pendingCommits {
		if k <= id {
			delete(r.pendingCommits, k)
		}
	}
	if !ok || len(offs) == 0 || r.commitDone == nil {
		return nil
	}
	r.commitMu.Lock()
	if r.toCommit == nil {
		r.toCommit = offs
	} else {
		maps.Copy(r.toCommit, offs) // a newer checkpoint's offsets win
	}
	r.commitMu.Unlock()
	r.signal(r.commitWake)
	return nil
}

func (r *reader[T]) commitLoop() {
	defer close(r.commitDone)
	adm := kadm.NewClient(r.cl)
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.commitWake:
		}
		r.commitMu.Lock()
		offs := r.toCommit
		r.toCommit = nil
		r.commitMu.Unlock()
		if len(offs) == 0 {
			continue
		}
		var os kadm.Offsets
		for tp, o := range offs {
			os.AddOffset(tp.topic, tp.partition, o, -1)
		}
		ctx, cancel := context.WithTimeout(r.ctx, requestTimeout)
		resp, err := adm.CommitOffsets(ctx, r.cfg.Group, os)
		cancel()
		if err == nil {
			err = resp.Error()
		}
		r.commitMu.Lock()
		if err != nil {
			r.commitFailed++
		} else {
			r.commitOK++
			maps.Copy(r.committedOffs, offs)
		}
		r.commitMu.Unlock()
		if err != nil && r.ctx.Err() == nil {
			r.log.Warn("kafka source: committing offsets to the consumer group failed (the job goes on)", "group", r.cfg.Group, "err", err)
		}
	}
}

// PauseOrResumeSplits implements source.SplitPauser.
func (r *reader[T]) PauseOrResumeSplits(pause, resume []string) {
	toPause, toResume := map[string][]int32{}, map[string][]int32{}
	for _, id := range pause {
		if s, ok := r.splits[id]; ok && !s.paused {
			s.paused = true
			toPause[s.sp.Topic] = append(toPause[s.sp.Topic], s.sp.Partition)
		}
	}
	for _, id := range resume {
		if s, ok := r.splits[id]; ok && s.paused {
			s.paused = false
			toResume[s.sp.Topic] = append(toResume[s.sp.Topic], s.sp.Partition)
		}
	}
	if r.cl == nil {
		return
	}
	if len(toPause) > 0 {
		r.cl.PauseFetchPartitions(toPause)
	}
	if len(toResume) > 0 {
		r.cl.ResumeFetchPartitions(toResume)
		r.signal(r.wake)
	}
}

// Close implements source.Reader.
func (r *reader[T]) Close() error {
	if !r.started {
		return nil
	}
	r.cancel()
	r.cl.Close()
	<-r.done
	if r.commitDone != nil {
		<-r.commitDone
	}
	return nil
}

var _ source.SplitPauser = (*reader[int])(nil)

// fetchCounter is a franz-go hook that counts fetch requests and notes
// when the last one went out and when its answer came.
type fetchCounter struct {
	reqs, resps       atomic.Int64
	lastReq, lastResp atomic.Int64 // unix nanoseconds
}

var (
	_ kgo.HookBrokerWrite = (*fetchCounter)(nil)
	_ kgo.HookBrokerRead  = (*fetchCounter)(nil)
)

func (f *fetchCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, _ error) {
	if key == int16(kmsg.Fetch) {
		f.reqs.Add(1)
		f.lastReq.Store(time.Now().UnixNano())
	}
}

func (f *fetchCounter) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, _ error) {
	if key == int16(kmsg.Fetch) {
		f.resps.Add(1)
		f.lastResp.Store(time.Now().UnixNano())
	}
}

func since(unixNano int64) string {
	if unixNano == 0 {
		return "never"
	}
	return time.Since(time.Unix(0, unixNano)).Round(time.Millisecond).String() + " ago"
}

// DebugState says where the reader is, for a test's timeout message
// (connector/internal/sourcetest): whether it was told no more splits
// come, its buffer, its client's fetch requests, and for each split its
// position against its stop offset, the records queued, and the partition's
// last fetched record and high watermark. It runs on the reader's
// goroutine, as PollNext does.
func (r *reader[T]) DebugState() string {
	var b strings.Builder
	r.mu.Lock()
	fmt.Fprintf(&b, "noMoreSplits=%v buffered=%d of %d, %d fetched not polled, fetch error %v; %d fetch requests (last %s), %d answers (last %s)",
		r.noMore, r.buffered, r.cfg.MaxBufferedRecords, len(r.fetched), r.fetchErr,
		r.fetchReqs.reqs.Load(), since(r.fetchReqs.lastReq.Load()), r.fetchReqs.resps.Load(), since(r.fetchReqs.lastResp.Load()))
	for _, id := range r.order {
		s := r.splits[id]
		fmt.Fprintf(&b, "; split %s at %d, stop %d, %d queued, paused %v", id, s.sp.Offset, s.sp.StopOffset, len(s.queue), s.paused)
		if o, ok := r.lastRec[s.tp]; ok {
			fmt.Fprintf(&b, ", last record fetched %d", o)
		} else {
			b.WriteString(", no record fetched")
		}
		if h, ok := r.hwm[s.tp]; ok {
			fmt.Fprintf(&b, ", high watermark %d", h)
		}
	}
	r.mu.Unlock()
	if len(r.finished) > 0 {
		fmt.Fprintf(&b, "; %d splits finished", len(r.finished))
	}
	return b.String()
}

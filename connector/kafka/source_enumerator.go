package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/source"
)

// requestTimeout bounds each round of metadata and offset requests.
const requestTimeout = 30 * time.Second

type topicPartition struct {
	topic     string
	partition int32
}

// enumerator discovers partitions, resolves their starting (and, bounded,
// stopping) offsets off the JobManager's goroutine (source.AsyncCaller),
// and assigns each to its owner reader (Flink's: a start index from the
// topic's hash, then partitions round-robin).
type enumerator struct {
	cfg     *SourceConfig
	pattern *regexp.Regexp
	ctx     source.EnumeratorContext[Split]
	cl      *kgo.Client
	adm     *kadm.Client

	// mu guards known and initialized, which the discovery function reads
	// off the enumerator's goroutine.
	mu          sync.Mutex
	known       map[topicPartition]bool // every partition ever found (assigned or pending)
	initialized bool                    // the first discovery was handled
	pending     []Split                 // found, not assigned yet
	noMoreSent  map[int]bool
	stop        context.CancelFunc
	stopCtx     context.Context
}

func newEnumerator(cfg *SourceConfig, re *regexp.Regexp, ctx source.EnumeratorContext[Split], restored []byte) (*enumerator, error) {
	e := &enumerator{cfg: cfg, pattern: re, ctx: ctx, known: map[topicPartition]bool{}, noMoreSent: map[int]bool{}}
	if restored != nil {
		if err := e.restore(restored); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Start implements source.Enumerator.
func (e *enumerator) Start() error {
	var err error
	// kadm answers from the client's metadata cache while it is younger
	// than MetadataMinAge: discovery wants fresh metadata.
	e.cl, err = kgo.NewClient(kgo.SeedBrokers(e.cfg.Brokers...), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		return fmt.Errorf("kafka source: %w", err)
	}
	e.adm = kadm.NewClient(e.cl)
	e.stopCtx, e.stop = context.WithCancel(context.Background())
	if e.initialized && (e.cfg.Bounded || e.cfg.DiscoveryInterval < 0) {
		return nil // restored: nothing more to discover
	}
	a, ok := e.ctx.(source.AsyncCaller)
	if !ok {
		// A context without periodic work: the first discovery here, and
		// no later ones.
		d, err := e.discover()
		return e.handleDiscovery(d, err)
	}
	period := e.cfg.DiscoveryInterval
	if e.cfg.Bounded || period < 0 {
		period = 0
	}
	a.CallAsync(func() (any, error) { return e.discover() }, func(v any, err error) error {
		d, _ := v.(discovery)
		return e.handleDiscovery(d, err)
	}, 0, period)
	return nil
}

type discovery struct {
	initial bool
	splits  []Split
}

// discover lists the partitions and resolves the offsets of those not known
// yet. It runs off the enumerator's goroutine.
func (e *enumerator) discover() (discovery, error) {
	e.mu.Lock()
	initial := !e.initialized
	known := make(map[topicPartition]bool, len(e.known))
	for k := range e.known {
		known[k] = true
	}
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(e.stopCtx, requestTimeout)
	defer cancel()

	var details kadm.TopicDetails
	var err error
	if e.pattern != nil {
		details, err = e.adm.ListTopics(ctx)
	} else {
		details, err = e.adm.ListTopics(ctx, e.cfg.Topics...)
	}
	if err != nil {
		return discovery{}, fmt.Errorf("kafka source: listing topics: %w", err)
	}
	var fresh []topicPartition
	var topics []string
	for _, t := range details.Sorted() {
		if e.pattern != nil && !e.pattern.MatchString(t.Topic) {
			continue
		}
		if t.Err != nil {
			if initial && e.pattern == nil {
				return discovery{}, fmt.Errorf("kafka source: topic %q: %w", t.Topic, t.Err)
			}
			continue // created later, perhaps
		}
		added := false
		for _, p := range t.Partitions.Sorted() {
			tp := topicPartition{t.Topic, p.Partition}
			if !known[tp] {
				fresh = append(fresh, tp)
				added = true
			}
		}
		if added {
			topics = append(topics, t.Topic)
		}
	}
	if len(fresh) == 0 {
		return discovery{initial: initial}, nil
	}
	start := Earliest() // partitions found later start at their beginning
	if initial {
		start = e.cfg.Start
	}
	offsets, err := e.resolve(ctx, start, topics)
	if err != nil {
		return discovery{}, err
	}
	var stops kadm.ListedOffsets
	if e.cfg.Bounded {
		if stops, err = listStopOffsets(ctx, e.adm, e.cfg.ReadCommitted, topics); err != nil {
			return discovery{}, err
		}
	}
	d := discovery{initial: initial}
	for _, tp := range fresh {
		off, ok := offsets[tp]
		if !ok {
			return discovery{}, fmt.Errorf("kafka source: no starting offset for topic %q partition %d", tp.topic, tp.partition)
		}
		sp := Split{Topic: tp.topic, Partition: tp.partition, Offset: off, StopOffset: NoStopOffset}
		if e.cfg.Bounded {
			lo, ok := stops.Lookup(tp.topic, tp.partition)
			if !ok {
				return discovery{}, fmt.Errorf("kafka source: no stop offset for topic %q partition %d", tp.topic, tp.partition)
			}
			sp.StopOffset = max(lo.Offset, 0)
		}
		d.splits = append(d.splits, sp)
	}
	return d, nil
}

// resolve finds the starting offset of every partition of topics.
func (e *enumerator) resolve(ctx context.Context, start StartingOffsets, topics []string) (map[topicPartition]int64, error) {
	out := map[topicPartition]int64{}
	var listed kadm.ListedOffsets
	var err error
	switch start.kind {
	case startEarliest:
		listed, err = e.adm.ListStartOffsets(ctx, topics...)
	case startLatest:
		listed, err = e.adm.ListEndOffsets(ctx, topics...)
	case startTimestamp:
		listed, err = e.adm.ListOffsetsAfterMilli(ctx, start.ts, topics...)
		if err == nil && listed.Error() == nil {
			// No record at or after the time: the partition's end.
			var ends kadm.ListedOffsets
			ends, err = e.adm.ListEndOffsets(ctx, topics...)
			if err == nil {
				for t, ps := range listed {
					for p, lo := range ps {
						if lo.Offset < 0 {
							if end, ok := ends.Lookup(t, p); ok {
								lo.Offset = end.Offset
								ps[p] = lo
							}
						}
					}
				}
			}
		}
	case startCommitted:
		var committed kadm.OffsetResponses
		committed, err = fetchGroupOffsets(ctx, e.adm, e.cfg.Group, topics)
		if errors.Is(err, kerr.GroupIDNotFound) {
			committed, err = nil, nil // a group without offsets
		}
		if err != nil {
			return nil, fmt.Errorf("kafka source: fetching the offsets of group %q: %w", e.cfg.Group, err)
		}
		fb, err := e.resolve(ctx, *start.fallback, topics)
		if err != nil {
			return nil, err
		}
		for tp, off := range fb {
			if c, ok := committed.Lookup(tp.topic, tp.partition); ok && c.Err == nil && c.At >= 0 {
				off = c.At
			}
			out[tp] = off
		}
		return out, nil
	}
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("kafka source: listing the %s offsets: %w", start, err)
	}
	listed.Each(func(lo kadm.ListedOffset) {
		out[topicPartition{lo.Topic, lo.Partition}] = max(lo.Offset, 0)
	})
	return out, nil
}

// handleDiscovery runs on the enumerator's goroutine: new partitions join
// the pending ones and go to their readers.
func (e *enumerator) handleDiscovery(d discovery, err error) error {
	if err != nil {
		if e.stopCtx.Err() != nil {
			return nil // closed meanwhile
		}
		if e.initialized {
			// A later round: the partitions found so far are read on; the
			// next round tries again.
			e.logger().Warn("kafka source: discovering partitions failed; trying again at the next interval", "err", err)
			return nil
		}
		return err
	}
	e.mu.Lock()
	for _, sp := range d.splits {
		tp := topicPartition{sp.Topic, sp.Partition}
		if !e.known[tp] {
			e.known[tp] = true
			e.pending = append(e.pending, sp)
		}
	}
	if d.initial {
		e.initialized = true
	}
	e.mu.Unlock()
	for _, i := range e.ctx.Registered() {
		e.assignPending(i)
	}
	return nil
}

func (e *enumerator) logger() *slog.Logger {
	if e.cfg.Logger != nil {
		return e.cfg.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// owner is the reader subtask of a partition (Flink's
// KafkaSourceEnumerator.getSplitOwner).
func owner(topic string, partition int32, n int) int {
	var h int32 // Java's String.hashCode
	for _, c := range topic {
		h = 31*h + int32(c)
	}
	start := int((h*31)&0x7FFFFFFF) % n
	return (start + int(partition)) % n
}

func (e *enumerator) assignPending(i int) {
	n := e.ctx.Parallelism()
	var mine []Split
	rest := e.pending[:0]
	for _, sp := range e.pending {
		if owner(sp.Topic, sp.Partition, n) == i {
			mine = append(mine, sp)
		} else {
			rest = append(rest, sp)
		}
	}
	e.pending = rest
	if len(mine) > 0 {
		e.ctx.Assign(i, mine...)
	}
	if e.cfg.Bounded && e.initialized && !e.noMoreSent[i] {
		e.noMoreSent[i] = true
		e.ctx.NoMoreSplits(i)
	}
}

// AddReader implements source.Enumerator.
func (e *enumerator) AddReader(subtask int) error {
	delete(e.noMoreSent, subtask)
	e.assignPending(subtask)
	return nil
}

// HandleSplitRequest implements source.Enumerator: splits are pushed, not
// requested.
func (e *enumerator) HandleSplitRequest(int) error { return nil }

// Snapshot implements source.Enumerator: the partitions found so far and
// the pending ones with their resolved offsets (so a restore neither
// assigns a partition twice nor loses one).
func (e *enumerator) Snapshot(int64) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	b := []byte{splitVersion}
	if e.initialized {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	tps := make([]topicPartition, 0, len(e.known))
	for tp := range e.known {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, func(a, b topicPartition) int {
		if a.topic != b.topic {
			if a.topic < b.topic {
				return -1
			}
			return 1
		}
		return int(a.partition - b.partition)
	})
	b = binary.AppendUvarint(b, uint64(len(tps)))
	for _, tp := range tps {
		b = binary.AppendUvarint(b, uint64(len(tp.topic)))
		b = append(b, tp.topic...)
		b = binary.AppendVarint(b, int64(tp.partition))
	}
	b = binary.AppendUvarint(b, uint64(len(e.pending)))
	for _, sp := range e.pending {
		b = splitCodec{}.AppendEncode(b, sp)
	}
	return b, nil
}

func (e *enumerator) restore(b []byte) error {
	if len(b) == 0 {
		return nil // restored from a checkpoint taken before it started
	}
	d := decoder{b: b}
	if v := d.byte(); d.err == nil && v != splitVersion {
		return fmt.Errorf("%w: kafka enumerator state version %d, want %d", codec.ErrCorrupt, v, splitVersion)
	}
	e.initialized = d.byte() == 1
	n := d.uvarint()
	if n > uint64(len(b)) {
		d.fail("bad count")
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		t := d.string()
		p := d.varint()
		if p < 0 || p > 1<<31-1 {
			d.fail("bad partition")
		}
		e.known[topicPartition{t, int32(p)}] = true
	}
	m := d.uvarint()
	if m > uint64(len(b)) {
		d.fail("bad count")
	}
	for i := uint64(0); i < m && d.err == nil; i++ {
		sp, err := d.split()
		if err != nil {
			return err
		}
		e.pending = append(e.pending, sp)
	}
	if d.err != nil {
		return fmt.Errorf("kafka source: restoring the enumerator: %w", d.err)
	}
	if d.n != len(b) {
		return errors.New("kafka source: restoring the enumerator: trailing bytes")
	}
	return nil
}

// Close implements source.Enumerator.
func (e *enumerator) Close() error {
	if e.stop != nil {
		e.stop()
	}
	if e.cl != nil {
		e.cl.Close()
	}
	return nil
}

// listStopOffsets lists where bounded splits of topics stop: the end
// offsets, or with read_committed the last stable offsets (the end a
// read_committed consumer can reach).
func listStopOffsets(ctx context.Context, adm *kadm.Client, readCommitted bool, topics []string) (kadm.ListedOffsets, error) {
	var stops kadm.ListedOffsets
	var err error
	if readCommitted {
		stops, err = adm.ListCommittedOffsets(ctx, topics...)
	} else {
		stops, err = adm.ListEndOffsets(ctx, topics...)
	}
	if err == nil {
		err = stops.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("kafka source: listing the stop offsets: %w", err)
	}
	return stops, nil
}

// groupCoordinatorWait bounds how long fetching a group's offsets retries
// while the group coordinator is not available yet: a broker answers
// COORDINATOR_NOT_AVAILABLE until its offsets topic exists (a fresh
// broker, before its first group request) or while it loads it.
const groupCoordinatorWait = 60 * time.Second

// fetchGroupOffsets fetches group's committed offsets for topics, retrying
// retriable errors (the coordinator not available or loading) for up to
// groupCoordinatorWait.
func fetchGroupOffsets(ctx context.Context, adm *kadm.Client, group string, topics []string) (kadm.OffsetResponses, error) {
	deadline := time.Now().Add(groupCoordinatorWait)
	for {
		committed, err := adm.FetchOffsetsForTopics(ctx, group, topics...)
		if err == nil || !kerr.IsRetriable(err) || time.Now().After(deadline) {
			return committed, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

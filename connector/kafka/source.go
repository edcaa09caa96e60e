package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"time"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/source"
)

// StartingOffsets says where a fresh start (no checkpoint) reads each
// partition from.
type StartingOffsets struct {
	kind     startKind
	ts       int64
	fallback *StartingOffsets
}

type startKind int

const (
	startEarliest startKind = iota
	startLatest
	startCommitted
	startTimestamp
)

// Earliest starts at each partition's first offset.
func Earliest() StartingOffsets { return StartingOffsets{kind: startEarliest} }

// Latest starts at each partition's end: only records produced after the
// start are read.
func Latest() StartingOffsets { return StartingOffsets{kind: startLatest} }

// CommittedOffsets starts at the consumer group's committed offsets
// (SourceConfig.Group), and where the group has none at fallback.
func CommittedOffsets(fallback StartingOffsets) StartingOffsets {
	if fallback.kind == startCommitted {
		fallback = *fallback.fallback
	}
	return StartingOffsets{kind: startCommitted, fallback: &fallback}
}

// Timestamp starts at the first record whose timestamp is at or after ms
// (the partition's end when there is none).
func Timestamp(ms int64) StartingOffsets { return StartingOffsets{kind: startTimestamp, ts: ms} }

func (s StartingOffsets) String() string {
	switch s.kind {
	case startLatest:
		return "latest"
	case startCommitted:
		return "committed offsets, else " + s.fallback.String()
	case startTimestamp:
		return "timestamp " + strconv.FormatInt(s.ts, 10)
	}
	return "earliest"
}

// BadRecordPolicy says what a record the deserializer rejects does.
type BadRecordPolicy int

const (
	// FailOnBadRecord fails the job with an error naming the topic,
	// partition and offset (and a short excerpt of the value).
	FailOnBadRecord BadRecordPolicy = iota
	// SkipBadRecord skips the record and counts it (numBadRecordsSkipped).
	SkipBadRecord
	// DeadLetterBadRecord produces the raw record to
	// SourceConfig.DeadLetterTopic and counts it (numBadRecordsDeadLettered).
	DeadLetterBadRecord
)

// DefaultDiscoveryInterval is how often the source looks for new
// partitions and topics when SourceConfig.DiscoveryInterval is 0.
const DefaultDiscoveryInterval = 10 * time.Second

// DefaultMaxBufferedRecords is SourceConfig.MaxBufferedRecords when 0.
const DefaultMaxBufferedRecords = 10000

// SourceConfig configures a Kafka source.
type SourceConfig struct {
	Brokers      []string
	Topics       []string // or TopicPattern
	TopicPattern string   // a Go regexp over topic names (whole name)
	// Group is the consumer group the offsets of completed checkpoints are
	// committed to (none when empty); CommittedOffsets starts from it.
	Group string
	// Start is where a fresh start reads from (default Earliest()).
	// Partitions discovered while running start at their earliest offset.
	Start StartingOffsets
	// Bounded stops at the end offsets current at start (with
	// ReadCommitted, the last stable offsets); new partitions are not
	// discovered.
	Bounded bool
	// ReadCommitted reads with isolation level read_committed: records of
	// aborted and open transactions are not read.
	ReadCommitted bool
	// DiscoveryInterval is how often new partitions and topics are
	// looked for; 0 = DefaultDiscoveryInterval, < 0 = never.
	DiscoveryInterval time.Duration
	BadRecords        BadRecordPolicy
	DeadLetterTopic   string
	// MaxBufferedRecords bounds the records a reader's fetching goroutine
	// holds ahead of what the reader emitted (0 = DefaultMaxBufferedRecords).
	MaxBufferedRecords int
	// Logger receives warnings (skipped records, failed offset commits);
	// nil discards them.
	Logger *slog.Logger
}

func (c *SourceConfig) validate() (*regexp.Regexp, error) {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("kafka source: SourceConfig.%s: %s", field, fmt.Sprintf(format, a...)))
	}
	if len(c.Brokers) == 0 {
		bad("Brokers", "no broker address")
	}
	for i, b := range c.Brokers {
		if b == "" {
			bad("Brokers", "address %d is empty", i)
		}
	}
	var re *regexp.Regexp
	switch {
	case len(c.Topics) == 0 && c.TopicPattern == "":
		bad("Topics", "no topics and no TopicPattern")
	case len(c.Topics) > 0 && c.TopicPattern != "":
		bad("TopicPattern", "set together with Topics; use one of them")
	case c.TopicPattern != "":
		var err error
		if re, err = regexp.Compile("^(?:" + c.TopicPattern + ")$"); err != nil {
			bad("TopicPattern", "%v", err)
		}
	}
	for i, t := range c.Topics {
		if t == "" {
			bad("Topics", "topic %d is empty", i)
		}
	}
	if c.Start.kind == startCommitted && c.Group == "" {
		bad("Group", "empty, but Start is CommittedOffsets")
	}
	if c.Start.kind == startTimestamp && c.Start.ts < 0 {
		bad("Start", "negative timestamp %d", c.Start.ts)
	}
	switch c.BadRecords {
	case FailOnBadRecord, SkipBadRecord:
		if c.DeadLetterTopic != "" {
			bad("DeadLetterTopic", "set, but BadRecords is not DeadLetterBadRecord")
		}
	case DeadLetterBadRecord:
		if c.DeadLetterTopic == "" {
			bad("DeadLetterTopic", "empty, but BadRecords is DeadLetterBadRecord")
		}
	default:
		bad("BadRecords", "unknown policy %d", c.BadRecords)
	}
	if c.MaxBufferedRecords < 0 {
		bad("MaxBufferedRecords", "negative (%d)", c.MaxBufferedRecords)
	}
	return re, errors.Join(errs...)
}

// Source is a Kafka source of records of type T; it implements
// source.Source[T, Split].
type Source[T any] struct {
	cfg     SourceConfig
	pattern *regexp.Regexp
	deser   Deserializer[T]
}

var _ source.Source[int, Split] = (*Source[int])(nil)

// NewSource checks the config (errors name the field) and returns the
// source. Splits are partitions; their position is the next offset.
// Records carry the Kafka timestamp as event time.
func NewSource[T any](cfg SourceConfig, d Deserializer[T]) (*Source[T], error) {
	re, err := cfg.validate()
	if d == nil {
		err = errors.Join(err, errors.New("kafka source: the deserializer is nil"))
	}
	if err != nil {
		return nil, err
	}
	if cfg.MaxBufferedRecords == 0 {
		cfg.MaxBufferedRecords = DefaultMaxBufferedRecords
	}
	if cfg.DiscoveryInterval == 0 {
		cfg.DiscoveryInterval = DefaultDiscoveryInterval
	}
	cfg.Brokers = append([]string(nil), cfg.Brokers...)
	cfg.Topics = append([]string(nil), cfg.Topics...)
	return &Source[T]{cfg: cfg, pattern: re, deser: d}, nil
}

// Boundedness implements source.Source.
func (s *Source[T]) Boundedness() source.Boundedness {
	if s.cfg.Bounded {
		return source.Bounded
	}
	return source.Unbounded
}

// SplitCodec implements source.Source.
func (s *Source[T]) SplitCodec() codec.Codec[Split] { return SplitCodec() }

// CreateEnumerator implements source.Source.
func (s *Source[T]) CreateEnumerator(ctx source.EnumeratorContext[Split], restored []byte) (source.Enumerator[Split], error) {
	return newEnumerator(&s.cfg, s.pattern, ctx, restored)
}

// CreateReader implements source.Source.
func (s *Source[T]) CreateReader(ctx source.ReaderContext) (source.Reader[T, Split], error) {
	return newReader(&s.cfg, s.deser, ctx)
}

// NoStopOffset is Split.StopOffset of an unbounded split.
const NoStopOffset = -1

// Split is one topic partition and the position reached in it.
type Split struct {
	Topic     string
	Partition int32
	// Offset is the next offset to read.
	Offset int64
	// StopOffset is, in bounded mode, the first offset not to read;
	// NoStopOffset otherwise.
	StopOffset int64
}

// ID is the split's id: "<topic>-<partition>", as Flink names Kafka splits.
func (s Split) ID() string { return s.Topic + "-" + strconv.Itoa(int(s.Partition)) }

func (s Split) finished() bool { return s.StopOffset != NoStopOffset && s.Offset >= s.StopOffset }

// splitVersion is the first byte of every encoding this package stores in
// checkpoints.
const splitVersion = 1

// maxTopicLen is Kafka's limit on topic names.
const maxTopicLen = 249

// SplitCodec returns the codec of splits: a version byte, the topic
// (uvarint length and bytes), then the partition, offset and stop offset
// as varints.
func SplitCodec() codec.Codec[Split] { return splitCodec{} }

type splitCodec struct{}

func (splitCodec) AppendEncode(dst []byte, s Split) []byte {
	dst = append(dst, splitVersion)
	dst = binary.AppendUvarint(dst, uint64(len(s.Topic)))
	dst = append(dst, s.Topic...)
	dst = binary.AppendVarint(dst, int64(s.Partition))
	dst = binary.AppendVarint(dst, s.Offset)
	return binary.AppendVarint(dst, s.StopOffset)
}

func (splitCodec) Decode(src []byte) (Split, int, error) {
	d := decoder{b: src}
	s, err := d.split()
	if err != nil {
		return Split{}, 0, err
	}
	return s, d.n, nil
}

type decoder struct {
	b   []byte
	n   int
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: kafka split: %s at byte %d", codec.ErrCorrupt, what, d.n)
	}
}

func (d *decoder) byte() byte {
	if d.err != nil || d.n >= len(d.b) {
		d.fail("truncated")
		return 0
	}
	d.n++
	return d.b[d.n-1]
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, k := binary.Uvarint(d.b[d.n:])
	if k <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.n += k
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, k := binary.Varint(d.b[d.n:])
	if k <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.n += k
	return v
}

func (d *decoder) string() string {
	l := d.uvarint()
	if d.err != nil {
		return ""
	}
	if l > maxTopicLen || l > uint64(len(d.b)-d.n) {
		d.fail("bad topic length")
		return ""
	}
	s := string(d.b[d.n : d.n+int(l)])
	d.n += int(l)
	return s
}

func (d *decoder) split() (Split, error) {
	if v := d.byte(); d.err == nil && v != splitVersion {
		return Split{}, fmt.Errorf("%w: kafka split format version %d, want %d", codec.ErrCorrupt, v, splitVersion)
	}
	var s Split
	s.Topic = d.string()
	p := d.varint()
	s.Offset = d.varint()
	s.StopOffset = d.varint()
	if d.err != nil {
		return Split{}, d.err
	}
	if s.Topic == "" || p < 0 || p > 1<<31-1 || s.Offset < 0 || s.StopOffset < NoStopOffset {
		return Split{}, fmt.Errorf("%w: kafka split %q/%d at %d stop %d", codec.ErrCorrupt, s.Topic, p, s.Offset, s.StopOffset)
	}
	s.Partition = int32(p)
	return s, nil
}

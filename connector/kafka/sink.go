package kafka

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/sink"
)

// DefaultTransactionTimeout is SinkConfig.TransactionTimeout when 0: the
// default transaction.max.timeout.ms of a broker.
const DefaultTransactionTimeout = 15 * time.Minute

// closeTimeout bounds what Close waits for (aborting the open transaction).
const closeTimeout = 5 * time.Second

// SinkConfig configures a Kafka sink.
type SinkConfig struct {
	Brokers []string
	Topic   string // must exist
	// Guarantee is None, AtLeastOnce or ExactlyOnce.
	Guarantee Guarantee
	// TransactionalIDPrefix is required with ExactlyOnce and must be unique
	// per application: transactional ids are <prefix>-<subtask>-<n>.
	TransactionalIDPrefix string
	// TransactionTimeout is the Kafka transaction timeout (0: 15m); it must
	// exceed the checkpoint interval and not exceed the broker's
	// transaction.max.timeout.ms.
	TransactionTimeout time.Duration
	// CrashHook, when set, is called at the named points of the
	// exactly-once protocol; it is a testing hook, for tests that kill the
	// process in each window of the protocol (internal/crashpoint.Hit is
	// one). The points: "kafka-sink-write" (in Write, every record, with
	// ExactlyOnce), "kafka-sink-after-precommit" (PrepareCommit is about to
	// return a committable), "kafka-sink-before-commit" (Commit, before the
	// transactions are committed in Kafka) and "kafka-sink-after-commit"
	// (Commit, after they were). Nil: no hook, and no cost.
	CrashHook func(point string)
}

// Sink writes records to a Kafka topic; see docs/kafka.md (Sink) for the
// exactly-once protocol. It implements sink.TwoPhaseCommitting (use it with
// weir.SinkToCommitting); with None and AtLeastOnce it pre-commits nothing.
type Sink[T any] struct {
	cfg SinkConfig
	ser Serializer[T]
}

// NewSink checks the config and returns the sink.
func NewSink[T any](cfg SinkConfig, s Serializer[T]) (*Sink[T], error) {
	switch {
	case len(cfg.Brokers) == 0:
		return nil, errors.New("kafka sink: SinkConfig.Brokers is empty")
	case cfg.Topic == "":
		return nil, errors.New("kafka sink: SinkConfig.Topic is empty")
	case s == nil:
		return nil, errors.New("kafka sink: the serializer is nil")
	case cfg.Guarantee < None || cfg.Guarantee > ExactlyOnce:
		return nil, fmt.Errorf("kafka sink: SinkConfig.Guarantee %v: want None, AtLeastOnce or ExactlyOnce", cfg.Guarantee)
	case cfg.TransactionTimeout < 0:
		return nil, fmt.Errorf("kafka sink: SinkConfig.TransactionTimeout %v is negative", cfg.TransactionTimeout)
	}
	if cfg.Guarantee == ExactlyOnce {
		if cfg.TransactionalIDPrefix == "" {
			return nil, errors.New("kafka sink: exactly-once needs SinkConfig.TransactionalIDPrefix, unique to this application (its transactional ids are <prefix>-<subtask>-<checkpoint>; two jobs with one prefix abort each other's transactions)")
		}
		if len(cfg.TransactionalIDPrefix) > 200 {
			return nil, fmt.Errorf("kafka sink: SinkConfig.TransactionalIDPrefix is %d bytes long, want at most 200", len(cfg.TransactionalIDPrefix))
		}
	}
	if cfg.TransactionTimeout == 0 {
		cfg.TransactionTimeout = DefaultTransactionTimeout
	}
	cfg.Brokers = append([]string(nil), cfg.Brokers...)
	return &Sink[T]{cfg: cfg, ser: s}, nil
}

// crash calls hook (SinkConfig.CrashHook), if set, at point.
func crash(hook func(point string), point string) {
	if hook != nil {
		hook(point)
	}
}

// CommittableCodec implements sink.TwoPhaseCommitting.
func (s *Sink[T]) CommittableCodec() codec.Codec[Committable] { return committableCodec{} }

// taskContext returns a context canceled when the subtask is canceled or
// cancel is called.
func taskContext(ctx sink.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(context.Background())
	if done := ctx.Canceled(); done != nil {
		go func() {
			select {
			case <-done:
				cancel()
			case <-c.Done():
			}
		}()
	}
	return c, cancel
}

func (s *Sink[T]) clientOpts(extra ...kgo.Opt) []kgo.Opt {
	return append([]kgo.Opt{kgo.SeedBrokers(s.cfg.Brokers...), kgo.DefaultProduceTopic(s.cfg.Topic)}, extra...)
}

// checkTopic fails unless the topic exists; a missing topic is a permanent
// failure.
func (s *Sink[T]) checkTopic(ctx context.Context, adm *kadm.Client) error {
	td, err := adm.ListTopics(ctx, s.cfg.Topic)
	if err != nil {
		return fmt.Errorf("kafka sink: looking up topic %q on %v: %w", s.cfg.Topic, s.cfg.Brokers, err)
	}
	d, ok := td[s.cfg.Topic]
	if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		// Permanent: restarting does not create it, and a restart
		// strategy would retry for ever.
		return failure.Permanent(fmt.Errorf("kafka sink: topic %q does not exist on %v (the sink does not create topics: create it, e.g. with kafka-topics.sh --create --topic %s, then run the job again)", s.cfg.Topic, s.cfg.Brokers, s.cfg.Topic))
	}
	if d.Err != nil {
		return fmt.Errorf("kafka sink: topic %q: %w", s.cfg.Topic, d.Err)
	}
	return nil
}

// CreateWriter implements sink.TwoPhaseCommitting. It checks that the topic
// exists and, with ExactlyOnce, the transaction timeout against the
// checkpoint interval; it aborts transactions this subtask's predecessors
// left open, and opens the first transaction (where the broker checks the
// timeout against transaction.max.timeout.ms).
func (s *Sink[T]) CreateWriter(sc sink.Context) (sink.CommittingWriter[T, Committable], error) {
	if s.cfg.Guarantee == ExactlyOnce && sc.Checkpointing() && s.cfg.TransactionTimeout <= sc.CheckpointInterval() {
		return nil, failure.Permanent(fmt.Errorf("kafka sink: SinkConfig.TransactionTimeout %v must exceed the checkpoint interval %v: a transaction stays open from one checkpoint to the one after (raise the timeout, at most to the broker's transaction.max.timeout.ms, or checkpoint more often)",
			s.cfg.TransactionTimeout, sc.CheckpointInterval()))
	}
	ctx, cancel := taskContext(sc)
	w := &writer[T]{s: s, ctx: ctx, cancel: cancel, subtask: sc.Subtask(), parallelism: sc.Parallelism(), lastBarrier: sc.RestoredCheckpoint()}
	w.promise = func(_ *kgo.Record, err error) {
		if err != nil {
			w.setErr(fmt.Errorf("kafka sink: producing to %q: %w", s.cfg.Topic, err))
		}
	}
	admCl, err := kgo.NewClient(s.clientOpts()...)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("kafka sink: %w", err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	if err := s.checkTopic(ctx, adm); err != nil {
		cancel()
		return nil, err
	}
	if s.cfg.Guarantee != ExactlyOnce {
		if w.cl, err = kgo.NewClient(s.clientOpts()...); err != nil {
			cancel()
			return nil, fmt.Errorf("kafka sink: %w", err)
		}
		return w, nil
	}
	if err := abortLingering(ctx, admCl, adm, s.cfg, w.subtask, w.parallelism, w.lastBarrier); err != nil {
		cancel()
		return nil, err
	}
	if err := w.begin(); err != nil {
		cancel()
		return nil, err
	}
	return w, nil
}

// CreateCommitter implements sink.TwoPhaseCommitting.
func (s *Sink[T]) CreateCommitter(sc sink.Context) (sink.Committer[Committable], error) {
	if s.cfg.Guarantee != ExactlyOnce {
		return nopCommitter{}, nil
	}
	ctx, cancel := taskContext(sc)
	cl, err := kgo.NewClient(s.clientOpts()...)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("kafka sink: %w", err)
	}
	return &committer{cl: cl, ctx: ctx, cancel: cancel, crashHook: s.cfg.CrashHook}, nil
}

// transactionalID names the transaction a subtask opens after the barrier
// of checkpoint afterCheckpoint (0: at the start of a fresh run).
func transactionalID(prefix string, subtask int, afterCheckpoint int64) string {
	return prefix + "-" + strconv.Itoa(subtask) + "-" + strconv.FormatInt(afterCheckpoint+1, 10)
}

// parseTransactionalID reads the subtask and number of one of prefix's ids.
func parseTransactionalID(prefix, id string) (subtask int, n int64, ok bool) {
	rest, ok := strings.CutPrefix(id, prefix+"-")
	if !ok {
		return 0, 0, false
	}
	a, b, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, 0, false
	}
	st, err1 := strconv.Atoi(a)
	n, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || st < 0 || n < 1 || strconv.Itoa(st) != a || strconv.FormatInt(n, 10) != b {
		return 0, 0, false
	}
	return st, n, true
}

// abortLingering aborts the open transactions of the prefix that this
// subtask is responsible for: those of subtask indexes congruent to it
// modulo the parallelism (its own, and those of indexes beyond the
// parallelism after a scale-down), named after a checkpoint later than the
// restored one. The restored checkpoint's transactions are named after
// checkpoints at or below it, so they are never touched; the current run's
// other subtasks use other indexes. A transaction is aborted by
// InitProducerId on its transactional id, which fences its producer.
func abortLingering(ctx context.Context, cl *kgo.Client, adm *kadm.Client, cfg SinkConfig, subtask, parallelism int, restored int64) error {
	txns, err := adm.ListTransactions(ctx, nil, []string{"Ongoing", "PrepareAbort", "PrepareEpochFence"})
	if err != nil {
		return fmt.Errorf("kafka sink: listing open transactions to abort those of prefix %q a failed run left: %w", cfg.TransactionalIDPrefix, err)
	}
	for _, t := range txns.Sorted() {
		st, n, ok := parseTransactionalID(cfg.TransactionalIDPrefix, t.TxnID)
		if !ok || st%parallelism != subtask || n <= restored {
			continue
		}
		if _, _, err := initProducerID(ctx, cl, t.TxnID, cfg.TransactionTimeout); err != nil {
			return fmt.Errorf("kafka sink: aborting transaction %s, left open by a failed run: %w", t.TxnID, err)
		}
	}
	return nil
}

// initProducerID sends InitProducerId for a transactional id, which
// aborts its open transaction, retrying while the coordinator is busy.
func initProducerID(ctx context.Context, cl *kgo.Client, id string, timeout time.Duration) (int64, int16, error) {
	for {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = &id
		req.TransactionTimeoutMillis = int32(min(timeout.Milliseconds(), math.MaxInt32))
		req.ProducerID, req.ProducerEpoch = -1, -1
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return 0, 0, err
		}
		err = kerr.ErrorForCode(resp.ErrorCode)
		if err == nil {
			return resp.ProducerID, resp.ProducerEpoch, nil
		}
		if !retriable(err) {
			return 0, 0, err
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return 0, 0, err
		}
	}
}

func retriable(err error) bool {
	return errors.Is(err, kerr.ConcurrentTransactions) || kerr.IsRetriable(err)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// writer writes the records of one sink subtask.
type writer[T any] struct {
	s                    *Sink[T]
	ctx                  context.Context
	cancel               context.CancelFunc
	subtask, parallelism int
	promise              func(*kgo.Record, error)

	// cl is the producer: with ExactlyOnce, the open transaction's (nil
	// when none is open), named txnID, with records records in it.
	cl          *kgo.Client
	txnID       string
	records     int64
	lastBarrier int64 // the latest barrier's checkpoint (the restored one at first)

	mu  sync.Mutex
	err error // the first failed produce; every later call fails
}

func (w *writer[T]) setErr(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
}

func (w *writer[T]) getErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// begin opens the next transaction, under a transactional id named after
// the latest barrier. InitProducerId fences a producer of a failed run that
// used the same id, aborting its transaction.
func (w *writer[T]) begin() error {
	id := transactionalID(w.s.cfg.TransactionalIDPrefix, w.subtask, w.lastBarrier)
	cl, err := kgo.NewClient(w.s.clientOpts(kgo.TransactionalID(id), kgo.TransactionTimeout(w.s.cfg.TransactionTimeout))...)
	if err != nil {
		return fmt.Errorf("kafka sink: %w", err)
	}
	if _, _, err := cl.ProducerID(w.ctx); err != nil {
		cl.Close()
		if errors.Is(err, kerr.InvalidTransactionTimeout) {
			return failure.Permanent(fmt.Errorf("kafka sink: the broker rejected SinkConfig.TransactionTimeout %v: it exceeds the broker's transaction.max.timeout.ms (default 15m); lower TransactionTimeout (it must still exceed the checkpoint interval) or raise transaction.max.timeout.ms: %w", w.s.cfg.TransactionTimeout, err))
		}
		return fmt.Errorf("kafka sink: initializing transactional producer %s: %w", id, err)
	}
	if err := cl.BeginTransaction(); err != nil {
		cl.Close()
		return fmt.Errorf("kafka sink: beginning a transaction of %s: %w", id, err)
	}
	w.cl, w.txnID, w.records = cl, id, 0
	return nil
}

func (w *writer[T]) Write(v T, ts int64) error {
	if err := w.getErr(); err != nil {
		return err
	}
	key, value, err := w.s.ser(v)
	if err != nil {
		return fmt.Errorf("kafka sink: serializing a record for %q: %w", w.s.cfg.Topic, err)
	}
	if w.cl == nil { // ExactlyOnce after a pre-commit
		if err := w.begin(); err != nil {
			return err
		}
	}
	if h := w.s.cfg.CrashHook; h != nil && w.s.cfg.Guarantee == ExactlyOnce {
		h("kafka-sink-write")
	}
	r := &kgo.Record{Key: key, Value: value}
	if ts != math.MinInt64 {
		r.Timestamp = time.UnixMilli(ts)
	}
	w.records++
	w.cl.Produce(w.ctx, r, w.promise)
	return nil
}

// Flush waits for Kafka's acknowledgements at the end of input only; at
// barriers, PrepareCommit waits (with AtLeastOnce and ExactlyOnce).
func (w *writer[T]) Flush(endOfInput bool) error {
	if endOfInput && w.cl != nil {
		if err := w.cl.Flush(w.ctx); err != nil {
			w.setErr(fmt.Errorf("kafka sink: flushing: %w", err))
		}
	}
	return w.getErr()
}

// Barrier implements sink.BarrierAware: the next transaction is named after
// this checkpoint.
func (w *writer[T]) Barrier(checkpointID int64) error {
	w.lastBarrier = checkpointID
	return nil
}

// PrepareCommit waits until Kafka acknowledged every record written so far
// (AtLeastOnce, ExactlyOnce); with ExactlyOnce it ends the writer's use of
// the open transaction and returns it, open in Kafka, as the committable.
// The next transaction is opened at the next record.
func (w *writer[T]) PrepareCommit() ([]Committable, error) {
	if err := w.getErr(); err != nil {
		return nil, err
	}
	if w.s.cfg.Guarantee == None || w.cl == nil {
		return nil, nil
	}
	if err := w.cl.Flush(w.ctx); err != nil {
		w.setErr(fmt.Errorf("kafka sink: flushing: %w", err))
	}
	if err := w.getErr(); err != nil {
		return nil, err
	}
	if w.s.cfg.Guarantee == AtLeastOnce {
		return nil, nil
	}
	cl := w.cl
	w.cl = nil
	if w.records == 0 {
		// Nothing was produced: Kafka has no transaction to commit.
		defer cl.Close()
		if err := cl.EndTransaction(w.ctx, kgo.TryAbort); err != nil {
			return nil, fmt.Errorf("kafka sink: ending the empty transaction of %s: %w", w.txnID, err)
		}
		return nil, nil
	}
	pid, epoch, err := cl.ProducerID(w.ctx)
	// Closing leaves the transaction open in Kafka (the committer ends it);
	// it happens in the background, as it may wait on the client's
	// goroutines, off the barrier's path.
	go cl.Close()
	if err != nil {
		return nil, fmt.Errorf("kafka sink: the producer id of %s: %w", w.txnID, err)
	}
	crash(w.s.cfg.CrashHook, "kafka-sink-after-precommit")
	return []Committable{{TransactionalID: w.txnID, ProducerID: pid, Epoch: epoch}}, nil
}

// Close aborts the open transaction (bounded by closeTimeout) and closes
// the clients.
func (w *writer[T]) Close() error {
	defer w.cancel()
	if w.cl == nil {
		return nil
	}
	cl := w.cl
	w.cl = nil
	defer cl.Close()
	if w.s.cfg.Guarantee != ExactlyOnce {
		ctx, cancel := context.WithTimeout(w.ctx, closeTimeout)
		defer cancel()
		cl.Flush(ctx)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if err := cl.AbortBufferedRecords(ctx); err != nil {
		return nil // the next run's InitProducerId aborts it
	}
	cl.EndTransaction(ctx, kgo.TryAbort)
	return nil
}

type nopCommitter struct{}

func (nopCommitter) Commit([]Committable) error { return nil }
func (nopCommitter) Close() error               { return nil }

// committer commits pre-committed transactions with EndTxn(commit) for
// their stored producer id and epoch, sent to the transaction coordinator
// (kgo finds it with FindCoordinator of type transaction).
type committer struct {
	cl        *kgo.Client
	ctx       context.Context
	cancel    context.CancelFunc
	crashHook func(point string) // SinkConfig.CrashHook
}

// ErrTransactionLost is wrapped by the error of a Commit that found its
// transaction aborted: its records are not in Kafka. The error is
// permanent (failure.Permanent): restarting would only find it again.
var ErrTransactionLost = errors.New("kafka sink: a pre-committed transaction can no longer be committed")

func (c *committer) Commit(cs []Committable) error {
	crash(c.crashHook, "kafka-sink-before-commit")
	for _, x := range cs {
		if err := c.commit(x); err != nil {
			return err
		}
	}
	crash(c.crashHook, "kafka-sink-after-commit")
	return nil
}

// commit ends one transaction. Committing a committed transaction again
// succeeds: Kafka answers a retried EndTxn(commit) of the same producer
// epoch (or, with transactions v2, of the epoch before the bump the commit
// made) with success. A transaction that was aborted (its timeout expired,
// or a producer with its id was initialized) answers PRODUCER_FENCED,
// INVALID_PRODUCER_EPOCH or INVALID_TXN_STATE: its records are lost, and
// that is an error (ErrTransactionLost).
func (c *committer) commit(x Committable) error {
	for {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = x.TransactionalID, x.ProducerID, x.Epoch, true
		resp, err := req.RequestWith(c.ctx, c.cl)
		if err != nil {
			return fmt.Errorf("kafka sink: committing transaction %s (producer id %d, epoch %d): %w", x.TransactionalID, x.ProducerID, x.Epoch, err)
		}
		err = kerr.ErrorForCode(resp.ErrorCode)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, kerr.ProducerFenced), errors.Is(err, kerr.InvalidProducerEpoch), errors.Is(err, kerr.InvalidTxnState),
			errors.Is(err, kerr.InvalidProducerIDMapping), errors.Is(err, kerr.TransactionalIDNotFound):
			return failure.Permanent(fmt.Errorf("%w: transaction %s (producer id %d, epoch %d) was aborted, most likely because it outlived SinkConfig.TransactionTimeout (a long outage, or a checkpoint that took longer), or another application uses the same TransactionalIDPrefix; its records are lost: %v",
				ErrTransactionLost, x.TransactionalID, x.ProducerID, x.Epoch, err))
		case retriable(err):
			if err := sleep(c.ctx, 50*time.Millisecond); err != nil {
				return fmt.Errorf("kafka sink: committing transaction %s: %w", x.TransactionalID, err)
			}
		default:
			return fmt.Errorf("kafka sink: committing transaction %s (producer id %d, epoch %d): %w", x.TransactionalID, x.ProducerID, x.Epoch, err)
		}
	}
}

func (c *committer) Close() error {
	c.cancel()
	c.cl.Close()
	return nil
}

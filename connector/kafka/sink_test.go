package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/connector/kafka"
	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/internal/kafkatest"
	"github.com/weirhq/weir/sink"
)

// fakeCtx is a sink.Context.
type fakeCtx struct {
	subtask, p, attempt int
	checkpointing       bool
	interval            time.Duration
	restored            int64
	done                chan struct{}
}

func (c *fakeCtx) Subtask() int                      { return c.subtask }
func (c *fakeCtx) Parallelism() int                  { return c.p }
func (c *fakeCtx) Attempt() int                      { return c.attempt }
func (c *fakeCtx) Checkpointing() bool               { return c.checkpointing }
func (c *fakeCtx) Canceled() <-chan struct{}         { return c.done }
func (c *fakeCtx) CheckpointInterval() time.Duration { return c.interval }
func (c *fakeCtx) RestoredCheckpoint() int64         { return c.restored }
func (c *fakeCtx) Lineage() string                   { return "" }

func ctxFor(subtask, p int, restored int64) *fakeCtx {
	return &fakeCtx{subtask: subtask, p: p, checkpointing: true, interval: time.Second, restored: restored}
}

// cluster starts kfake with topic "out" of 3 partitions.
func cluster(t *testing.T, opts ...kfake.Opt) []string {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(3, "out")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

func strSer(v string) ([]byte, []byte, error) {
	k, _, _ := strings.Cut(v, ":")
	return []byte(k), []byte(v), nil
}

func newSink(t *testing.T, brokers []string, g kafka.Guarantee) *kafka.Sink[string] {
	t.Helper()
	s, err := kafka.NewSink(kafka.SinkConfig{Brokers: brokers, Topic: "out", Guarantee: g, TransactionalIDPrefix: "app"}, strSer)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// readTopic reads topic "out" from its start to its end offsets as they are
// now (last stable offsets with committed, else high watermarks). It stops at
// the end offsets rather than at the first empty poll: on a loaded machine
// (race detector, CI) a first fetch can take longer than a poll.
func readTopic(t *testing.T, brokers []string, committed bool) map[int32][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.OpLimit)
	defer cancel()
	recs, err := kafkatest.Read(ctx, strings.Join(brokers, ","), "out", committed)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32][]string{}
	for _, r := range recs {
		out[r.Partition] = append(out[r.Partition], string(r.Value))
	}
	return out
}

func all(m map[int32][]string) []string {
	var out []string
	for _, vs := range m {
		out = append(out, vs...)
	}
	slices.Sort(out)
	return out
}

func TestParseGuarantee(t *testing.T) {
	for _, g := range []kafka.Guarantee{kafka.None, kafka.AtLeastOnce, kafka.ExactlyOnce} {
		if got, err := kafka.ParseGuarantee(g.String()); err != nil || got != g {
			t.Fatalf("%v: %v, %v", g, got, err)
		}
	}
	if _, err := kafka.ParseGuarantee("exactly_once"); err == nil {
		t.Fatal("no error")
	}
}

func TestCommittableCodec(t *testing.T) {
	c := newSink(t, []string{"x:1"}, kafka.ExactlyOnce).CommittableCodec()
	for _, want := range []kafka.Committable{
		{TransactionalID: "app-3-17", ProducerID: 4001, Epoch: 2},
		{TransactionalID: "", ProducerID: -1, Epoch: -1},
		{TransactionalID: strings.Repeat("é", 300), ProducerID: 1<<63 - 1, Epoch: 1<<15 - 1},
	} {
		enc := c.AppendEncode([]byte("z"), want)
		got, n, err := c.Decode(enc[1:])
		if err != nil || n != len(enc)-1 || got != want {
			t.Fatalf("decoded %+v, %d, %v; want %+v", got, n, err, want)
		}
		for k := range len(enc) - 1 {
			if _, _, err := c.Decode(enc[1 : 1+k]); !errors.Is(err, codec.ErrTruncated) {
				t.Fatalf("cut to %d bytes: %v", k, err)
			}
		}
		enc[1] = 9
		if _, _, err := c.Decode(enc[1:]); !errors.Is(err, codec.ErrCorrupt) {
			t.Fatalf("unknown version: %v", err)
		}
	}
}

func FuzzCommittableCodec(f *testing.F) {
	c := committableCodec()
	f.Add(c.AppendEncode(nil, kafka.Committable{TransactionalID: "app-0-1", ProducerID: 7, Epoch: 3}))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{1, 0, 2, 0xfe, 0xff, 0x03})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, n, err := c.Decode(b)
		if err != nil {
			if !errors.Is(err, codec.ErrTruncated) && !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("error %v is neither truncated nor corrupt", err)
			}
			return
		}
		if n < 1 || n > len(b) {
			t.Fatalf("consumed %d of %d bytes", n, len(b))
		}
		again, m, err := c.Decode(c.AppendEncode(nil, v))
		if err != nil || again != v || m == 0 {
			t.Fatalf("re-encoding %+v: %+v, %v", v, again, err)
		}
	})
}

func committableCodec() codec.Codec[kafka.Committable] {
	s, _ := kafka.NewSink(kafka.SinkConfig{Brokers: []string{"x:1"}, Topic: "t", Guarantee: kafka.ExactlyOnce, TransactionalIDPrefix: "p"}, strSer)
	return s.CommittableCodec()
}

func TestNewSinkChecksTheConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  kafka.SinkConfig
		want string
	}{
		{kafka.SinkConfig{Topic: "t"}, "Brokers is empty"},
		{kafka.SinkConfig{Brokers: []string{"b:1"}}, "Topic is empty"},
		{kafka.SinkConfig{Brokers: []string{"b:1"}, Topic: "t", Guarantee: kafka.ExactlyOnce}, "needs SinkConfig.TransactionalIDPrefix"},
		{kafka.SinkConfig{Brokers: []string{"b:1"}, Topic: "t", Guarantee: 7}, "Guarantee"},
		{kafka.SinkConfig{Brokers: []string{"b:1"}, Topic: "t", TransactionTimeout: -time.Second}, "negative"},
	} {
		if _, err := kafka.NewSink(tc.cfg, strSer); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error with %q", tc.cfg, err, tc.want)
		}
	}
}

func TestCreateWriterChecks(t *testing.T) {
	brokers := cluster(t, kfake.BrokerConfigs(map[string]string{"transaction.max.timeout.ms": "60000"}))
	s, _ := kafka.NewSink(kafka.SinkConfig{Brokers: brokers, Topic: "missing", Guarantee: kafka.AtLeastOnce}, strSer)
	// Permanent: restarting does not create the topic.
	if _, err := s.CreateWriter(ctxFor(0, 1, 0)); err == nil || !failure.IsPermanent(err) || !strings.Contains(err.Error(), `topic "missing" does not exist on [`) {
		t.Fatalf("missing topic: %v (permanent %v)", err, failure.IsPermanent(err))
	}
	s, _ = kafka.NewSink(kafka.SinkConfig{Brokers: brokers, Topic: "out", Guarantee: kafka.ExactlyOnce, TransactionalIDPrefix: "a",
		TransactionTimeout: 30 * time.Second}, strSer)
	ctx := ctxFor(0, 1, 0)
	ctx.interval = time.Minute
	if _, err := s.CreateWriter(ctx); err == nil || !strings.Contains(err.Error(), "TransactionTimeout 30s must exceed the checkpoint interval 1m0s") {
		t.Fatalf("timeout below the interval: %v", err)
	}
	s, _ = kafka.NewSink(kafka.SinkConfig{Brokers: brokers, Topic: "out", Guarantee: kafka.ExactlyOnce, TransactionalIDPrefix: "a",
		TransactionTimeout: 2 * time.Minute}, strSer)
	if _, err := s.CreateWriter(ctxFor(0, 1, 0)); err == nil || !strings.Contains(err.Error(), "transaction.max.timeout.ms") ||
		!strings.Contains(err.Error(), "TransactionTimeout 2m0s") {
		t.Fatalf("timeout above the broker's maximum: %v", err)
	}
}

// prepare runs a barrier of checkpoint id on w.
func prepare(t *testing.T, w sink.CommittingWriter[string, kafka.Committable], id int64) []kafka.Committable {
	t.Helper()
	if err := w.(sink.BarrierAware).Barrier(id); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(false); err != nil {
		t.Fatal(err)
	}
	cs, err := w.PrepareCommit()
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func write(t *testing.T, w sink.Writer[string], vs ...string) {
	t.Helper()
	for _, v := range vs {
		if err := w.Write(v, 1000); err != nil {
			t.Fatal(err)
		}
	}
}

// Pre-committed records are invisible to read_committed consumers until
// committed; committing twice is a no-op; records of one key go to one
// partition; transactional ids are <prefix>-<subtask>-<checkpoint+1>.
func TestExactlyOnceTwoPhases(t *testing.T) {
	brokers := cluster(t)
	s := newSink(t, brokers, kafka.ExactlyOnce)
	w, err := s.CreateWriter(ctxFor(1, 2, 0))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.CreateCommitter(ctxFor(1, 2, 0))
	defer c.Close()
	write(t, w, "a:1", "b:1", "a:2")
	cs := prepare(t, w, 1)
	if len(cs) != 1 || cs[0].TransactionalID != "app-1-1" {
		t.Fatalf("committables %+v", cs)
	}
	write(t, w, "a:3", "c:1")
	cs2 := prepare(t, w, 2)
	if len(cs2) != 1 || cs2[0].TransactionalID != "app-1-2" {
		t.Fatalf("committables %+v", cs2)
	}
	// Read uncommitted first: once it has all 5, the records are fetchable
	// and read_committed's empty answer means what it should.
	if got := all(readTopic(t, brokers, false)); len(got) != 5 {
		t.Fatalf("read_uncommitted sees %v, want the 5 records", got)
	}
	if got := all(readTopic(t, brokers, true)); len(got) != 0 {
		t.Fatalf("read_committed sees %v before the commit", got)
	}
	if err := c.Commit(cs); err != nil {
		t.Fatal(err)
	}
	if got := all(readTopic(t, brokers, true)); !slices.Equal(got, []string{"a:1", "a:2", "b:1"}) {
		t.Fatalf("after the first commit: %v", got)
	}
	for range 2 {
		if err := c.Commit(append(cs, cs2...)); err != nil {
			t.Fatalf("committing again: %v", err)
		}
	}
	got := readTopic(t, brokers, true)
	if all := all(got); !slices.Equal(all, []string{"a:1", "a:2", "a:3", "b:1", "c:1"}) {
		t.Fatalf("after both commits: %v", all)
	}
	for _, vs := range got {
		if slices.Contains(vs, "a:1") && !(slices.Contains(vs, "a:2") && slices.Contains(vs, "a:3")) {
			t.Fatalf("records of key a in several partitions: %v", got)
		}
	}
	// A checkpoint without records pre-commits nothing.
	if cs := prepare(t, w, 3); len(cs) != 0 {
		t.Fatalf("empty checkpoint: %+v", cs)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// A transaction aborted before its commit (a producer with its id was
// initialized) fails the commit: the loss is not silent.
func TestCommitOfAnAbortedTransactionFails(t *testing.T) {
	brokers := cluster(t)
	s := newSink(t, brokers, kafka.ExactlyOnce)
	w, _ := s.CreateWriter(ctxFor(0, 1, 0))
	write(t, w, "a:1")
	cs := prepare(t, w, 1)
	w.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID(cs[0].TransactionalID))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := cl.ProducerID(context.Background()); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	c, _ := s.CreateCommitter(ctxFor(0, 1, 0))
	defer c.Close()
	if err := c.Commit(cs); !errors.Is(err, kafka.ErrTransactionLost) || !failure.IsPermanent(err) {
		t.Fatalf("commit of an aborted transaction: %v", err)
	}
}

// After a crash, the restored checkpoint's transactions are committed and
// the transactions the failed run left open are aborted, so read_committed
// consumers are not blocked; at a lower parallelism, those of the vanished
// subtasks too. Writers of the new run never abort each other's.
func TestRestoreAbortsLingeringTransactions(t *testing.T) {
	brokers := cluster(t)
	s := newSink(t, brokers, kafka.ExactlyOnce)
	// The first run, at parallelism 3: checkpoint 1 completes (its
	// committables are restored), then every subtask writes into the
	// transaction named after checkpoint 1, subtask 2 pre-commits
	// checkpoint 2 (never completed) and writes on; then the process dies.
	var restored []kafka.Committable
	var ws []sink.CommittingWriter[string, kafka.Committable]
	for i := range 3 {
		w, err := s.CreateWriter(ctxFor(i, 3, 0))
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
		defer w.Close() // after the test: the failed run's clients
		write(t, w, fmt.Sprintf("k%d:cp1", i))
		restored = append(restored, prepare(t, w, 1)...)
		write(t, w, fmt.Sprintf("k%d:lost", i))
	}
	prepare(t, ws[2], 2)
	write(t, ws[2], "k2:lost2")
	for _, w := range ws {
		w.Flush(true)
	}
	// The second run, at parallelism 2, restores checkpoint 1.
	var ws2 []sink.CommittingWriter[string, kafka.Committable]
	for i := range 2 {
		w, err := s.CreateWriter(ctxFor(i, 2, 1))
		if err != nil {
			t.Fatal(err)
		}
		ws2 = append(ws2, w)
		write(t, w, fmt.Sprintf("k%d:run2", i), fmt.Sprintf("k2:run2-%d", i))
	}
	c, _ := s.CreateCommitter(ctxFor(0, 2, 1))
	defer c.Close()
	if err := c.Commit(restored); err != nil {
		t.Fatal(err)
	}
	var next []kafka.Committable
	for _, w := range ws2 {
		next = append(next, prepare(t, w, 2)...)
	}
	if err := c.Commit(next); err != nil {
		t.Fatalf("the new run's transactions: %v", err)
	}
	want := []string{"k0:cp1", "k0:run2", "k1:cp1", "k1:run2", "k2:cp1", "k2:run2-0", "k2:run2-1"}
	got := all(readTopic(t, brokers, true))
	if !slices.Equal(got, want) {
		t.Fatalf("read_committed sees %v, want %v", got, want)
	}
	for _, w := range ws2 {
		w.Close()
	}
}

// With AtLeastOnce every record written before a barrier is in Kafka when
// PrepareCommit returns; None delivers everything by the end of input.
func TestAtLeastOnceAndNone(t *testing.T) {
	for _, g := range []kafka.Guarantee{kafka.AtLeastOnce, kafka.None} {
		brokers := cluster(t)
		s := newSink(t, brokers, g)
		w, err := s.CreateWriter(ctxFor(0, 1, 0))
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for i := range 500 {
			v := "k" + strconv.Itoa(i%7) + ":" + strconv.Itoa(i)
			want = append(want, v)
			write(t, w, v)
		}
		if g == kafka.AtLeastOnce {
			if cs := prepare(t, w, 1); len(cs) != 0 {
				t.Fatalf("at-least-once committables %v", cs)
			}
		} else if err := w.Flush(true); err != nil {
			t.Fatal(err)
		}
		slices.Sort(want)
		if got := all(readTopic(t, brokers, false)); !slices.Equal(got, want) {
			t.Fatalf("%v: %d records in Kafka, want %d", g, len(got), len(want))
		}
		w.Close()
	}
}

// Applications with different prefixes never abort each other's
// transactions, even when one prefix begins with the other.
func TestPrefixesDoNotInterfere(t *testing.T) {
	brokers := cluster(t)
	mk := func(prefix string) *kafka.Sink[string] {
		s, err := kafka.NewSink(kafka.SinkConfig{Brokers: brokers, Topic: "out", Guarantee: kafka.ExactlyOnce, TransactionalIDPrefix: prefix}, strSer)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var pending []kafka.Committable
	var open []sink.CommittingWriter[string, kafka.Committable]
	for _, prefix := range []string{"app-0", "app-1-2", "ap"} {
		w, err := mk(prefix).CreateWriter(ctxFor(0, 1, 0))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		write(t, w, prefix+":pre")
		pending = append(pending, prepare(t, w, 1)...)
		write(t, w, prefix+":open")
		w.Flush(true)
		open = append(open, w)
	}
	// Fresh starts of "app" at parallelism 1 and 2 abort what "app" left
	// open, and nothing of the others.
	for i := range 2 {
		w, err := mk("app").CreateWriter(ctxFor(i, 2, 0))
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	c, _ := mk("app").CreateCommitter(ctxFor(0, 1, 0))
	defer c.Close()
	if err := c.Commit(pending); err != nil {
		t.Fatalf("another prefix's transaction was aborted: %v", err)
	}
	var next []kafka.Committable
	for _, w := range open {
		next = append(next, prepare(t, w, 2)...)
	}
	if err := c.Commit(next); err != nil {
		t.Fatalf("another prefix's open transaction was aborted: %v", err)
	}
	got := all(readTopic(t, brokers, true))
	if len(got) != 6 {
		t.Fatalf("read_committed reads %v, want the 6 records", got)
	}
}

// SinkConfig.CrashHook is called at each point of the exactly-once
// protocol, in protocol order, and with AtLeastOnce at none of them.
func TestCrashHookPoints(t *testing.T) {
	for _, tc := range []struct {
		g    kafka.Guarantee
		want []string
	}{
		{kafka.ExactlyOnce, []string{"kafka-sink-write", "kafka-sink-write", "kafka-sink-after-precommit", "kafka-sink-before-commit", "kafka-sink-after-commit"}},
		{kafka.AtLeastOnce, nil},
	} {
		brokers := cluster(t)
		var got []string
		s, err := kafka.NewSink(kafka.SinkConfig{Brokers: brokers, Topic: "out", Guarantee: tc.g, TransactionalIDPrefix: "app",
			CrashHook: func(point string) { got = append(got, point) }}, strSer)
		if err != nil {
			t.Fatal(err)
		}
		w, err := s.CreateWriter(ctxFor(0, 1, 0))
		if err != nil {
			t.Fatal(err)
		}
		c, err := s.CreateCommitter(ctxFor(0, 1, 0))
		if err != nil {
			t.Fatal(err)
		}
		write(t, w, "a:1", "b:1")
		if err := c.Commit(prepare(t, w, 1)); err != nil {
			t.Fatal(err)
		}
		w.Close()
		c.Close()
		if !slices.Equal(got, tc.want) {
			t.Fatalf("%v: hook called at %q, want %q", tc.g, got, tc.want)
		}
	}
}

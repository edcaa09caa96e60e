package benchjobs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/connector/kafka"
)

// The Kafka -> map -> Kafka benchmark (`weir bench kafka`):
// KafkaCreateTopic and KafkaPreload prepare the input (not measured),
// KafkaMap is the measured job, KafkaCountCommitted checks its output.

// KafkaMapOptions configure KafkaMap.
type KafkaMapOptions struct {
	Brokers     []string
	InputTopic  string
	OutputTopic string
	Guarantee   kafka.Guarantee
	// TransactionalIDPrefix is needed with kafka.ExactlyOnce.
	TransactionalIDPrefix string
	Parallelism           int
	// CheckpointInterval > 0 checkpoints every interval into CheckpointDir.
	CheckpointInterval time.Duration
	CheckpointDir      string
}

// KafkaMap runs a bounded Kafka source (read_committed, raw values) -> map
// (ASCII lower case to upper case, the size kept) -> Kafka sink with the
// guarantee, to the end of the input as it is at start and the final
// checkpoint's commit, and returns how many records the map saw.
func KafkaMap(ctx context.Context, o KafkaMapOptions) (int64, error) {
	cfg := weir.Config{Parallelism: o.Parallelism}
	if o.CheckpointInterval > 0 {
		cfg.Checkpointing = &weir.CheckpointConfig{Interval: o.CheckpointInterval, Dir: o.CheckpointDir}
	}
	env := weir.NewEnvironment(cfg)
	src, err := kafka.NewSource(kafka.SourceConfig{
		Brokers:           o.Brokers,
		Topics:            []string{o.InputTopic},
		Start:             kafka.Earliest(),
		Bounded:           true,
		ReadCommitted:     true,
		DiscoveryInterval: -1,
	}, kafka.BytesValue())
	if err != nil {
		return 0, err
	}
	snk, err := kafka.NewSink(kafka.SinkConfig{
		Brokers:               o.Brokers,
		Topic:                 o.OutputTopic,
		Guarantee:             o.Guarantee,
		TransactionalIDPrefix: o.TransactionalIDPrefix,
	}, func(v []byte) (key, value []byte, err error) { return nil, v, nil })
	if err != nil {
		return 0, err
	}
	var seen atomic.Int64
	in := weir.FromSource[[]byte, kafka.Split](env, src, "Kafka "+o.InputTopic).UID("kafka-source")
	upper := weir.Map(in, func(v []byte) []byte {
		seen.Add(1)
		out := make([]byte, len(v))
		for i, c := range v {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out[i] = c
		}
		return out
	}).Name("Upper").UID("upper")
	weir.SinkToCommitting[[]byte, kafka.Committable](upper, snk, "Kafka "+o.OutputTopic).UID("kafka-sink")
	_, err = env.Execute(ctx, "bench-kafka-map")
	return seen.Load(), err
}

// KafkaCreateTopic creates topic with the given partitions (replication
// factor 1) and waits until every partition has a leader.
func KafkaCreateTopic(ctx context.Context, brokers []string, topic string, partitions int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, int32(partitions), 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s (%d partitions) on %v: %w", topic, partitions, brokers, err)
	}
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			td, ok := md.Topics[topic]
			ready := ok && td.Err == nil && len(td.Partitions) == partitions
			for _, p := range td.Partitions {
				ready = ready && p.Err == nil && p.Leader >= 0
			}
			if ready {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s: not every partition has a leader (last metadata error: %v)", topic, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// KafkaPreload writes n records of size random lower-case ASCII letters
// (no key: spread over the partitions in batches) to topic and waits until
// all are acknowledged.
func KafkaPreload(ctx context.Context, brokers []string, topic string, n int64, size int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchMaxBytes(1<<20),
		kgo.MaxBufferedRecords(1<<18), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return err
	}
	defer cl.Close()
	// A pool of distinct values, reused: generating 100 random bytes per
	// record would cost more than producing it.
	rng := rand.New(rand.NewPCG(1, 2))
	pool := make([][]byte, 4096)
	for i := range pool {
		pool[i] = make([]byte, size)
		for j := range pool[i] {
			pool[i][j] = byte('a' + rng.IntN(26))
		}
	}
	var first atomic.Pointer[error]
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			first.CompareAndSwap(nil, &err)
		}
	}
	for i := range n {
		if p := first.Load(); p != nil {
			return fmt.Errorf("preload %s: %w", topic, *p)
		}
		cl.Produce(ctx, &kgo.Record{Value: pool[i%int64(len(pool))]}, done)
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("preload %s: %w", topic, err)
	}
	if p := first.Load(); p != nil {
		return fmt.Errorf("preload %s: %w", topic, *p)
	}
	return nil
}

// KafkaCountCommitted waits until no transaction is open on topic, then
// counts the records a read_committed consumer reads from its start to the
// last stable offsets, and the bytes of their values.
func KafkaCountCommitted(ctx context.Context, brokers []string, topic string) (records, bytes int64, err error) {
	acl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return 0, 0, err
	}
	defer acl.Close()
	adm := kadm.NewClient(acl)
	var ends kadm.ListedOffsets
	for {
		stable, err1 := adm.ListCommittedOffsets(ctx, topic)
		high, err2 := adm.ListEndOffsets(ctx, topic)
		err := errors.Join(err1, err2)
		if err == nil {
			err = errors.Join(stable.Error(), high.Error())
		}
		settled := err == nil
		if settled {
			high.Each(func(h kadm.ListedOffset) {
				if s, _ := stable.Lookup(topic, h.Partition); s.Offset != h.Offset {
					settled = false
				}
			})
		}
		if settled {
			ends = stable
			break
		}
		select {
		case <-ctx.Done():
			return 0, 0, fmt.Errorf("output %s: transactions still open or offsets not listed (%v)", topic, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	want := map[int32]int64{}
	start := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
			start[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	if len(want) == 0 {
		return 0, 0, nil
	}
	// Control records (commit markers) take offsets too: they are kept to
	// see each partition's end, and not counted.
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		kgo.FetchMaxBytes(64<<20))
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return 0, 0, fmt.Errorf("reading %s did not reach the end offsets in time (%d partitions left)", topic, len(want))
		}
		if err := fs.Err0(); err != nil {
			return 0, 0, fmt.Errorf("reading %s: %w", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := want[r.Partition]
			if !ok || r.Offset >= end {
				return
			}
			if !r.Attrs.IsControl() {
				records++
				bytes += int64(len(r.Value))
			}
			if r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	return records, bytes, nil
}

// KafkaDeleteTopics deletes topics.
func KafkaDeleteTopics(ctx context.Context, brokers []string, topics ...string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).DeleteTopics(ctx, topics...)
	if err != nil {
		return err
	}
	return resp.Error()
}

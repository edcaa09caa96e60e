package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// OpLimit bounds each helper's requests to the broker.
const OpLimit = 60 * time.Second

// Seeds splits a bootstrap address list ("h1:p1,h2:p2") for kgo.SeedBrokers.
func Seeds(brokers string) []string {
	var out []string
	for _, s := range strings.Split(brokers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Client returns a franz-go client for brokers with opts, closed when the
// test ends.
func Client(t testing.TB, brokers string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(Seeds(brokers)...)}, opts...)...)
	if err != nil {
		t.Fatalf("kafkatest: client for %s: %v", brokers, err)
	}
	t.Cleanup(cl.Close)
	return cl
}

var topicSeq atomic.Int64

// Topic returns a topic name unique to this test binary run, built from the
// test's name and suffix, so tests sharing one broker never share topics.
func Topic(t testing.TB, suffix string) string {
	t.Helper()
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, t.Name())
	if len(name) > 150 {
		name = name[:150]
	}
	return fmt.Sprintf("%s-%s-%d-%d", name, suffix, time.Now().UnixNano()%1e9, topicSeq.Add(1))
}

// CreateTopic creates topic with the given number of partitions
// (replication factor 1) and waits until every partition has a leader.
func CreateTopic(t testing.TB, brokers, topic string, partitions int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), OpLimit)
	defer cancel()
	if err := CreateTopicContext(ctx, Client(t, brokers), topic, partitions); err != nil {
		t.Fatal(err)
	}
}

// CreateTopicContext is CreateTopic with a client and a context, for
// programs (see kafkactl).
func CreateTopicContext(ctx context.Context, cl *kgo.Client, topic string, partitions int) error {
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, int32(partitions), 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("kafkatest: create topic %s (%d partitions): %w", topic, partitions, err)
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
			return fmt.Errorf("kafkatest: topic %s has no leader for every partition in time (last metadata error: %v)", topic, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Produce writes lines to topic as record values (no key, so the default
// partitioner spreads them) and waits until all are acknowledged.
func Produce(t testing.TB, brokers, topic string, lines ...string) {
	t.Helper()
	recs := make([]*kgo.Record, len(lines))
	for i, l := range lines {
		recs[i] = &kgo.Record{Topic: topic, Value: []byte(l)}
	}
	ProduceRecords(t, brokers, recs...)
}

// ProduceRecords writes recs (each naming its topic) and waits until all
// are acknowledged.
func ProduceRecords(t testing.TB, brokers string, recs ...*kgo.Record) {
	t.Helper()
	cl := Client(t, brokers, kgo.ProducerLinger(0))
	ctx, cancel := context.WithTimeout(context.Background(), OpLimit)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("kafkatest: produce %d records: %v", len(recs), err)
	}
}

// SettleLimit bounds how long ReadCommitted waits for the transactions
// open on a topic to end.
const SettleLimit = 30 * time.Second

// ReadCommitted waits until no transaction is open on any partition of
// topic (each partition's last stable offset equals its high watermark),
// then reads the topic from its start with isolation level read_committed:
// every record of a committed transaction and every non-transactional
// record, none of an aborted one. The wait matters after a commit: Kafka
// answers EndTxn before it has written the commit markers, and until they
// are written read_committed readers do not see the transaction. A
// transaction still open after SettleLimit fails the test, naming the
// partitions it holds back. Records come in offset order per partition.
func ReadCommitted(t testing.TB, brokers, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), SettleLimit)
	defer cancel()
	if err := WaitSettled(ctx, Client(t, brokers), topic); err != nil {
		t.Fatalf("%v (after waiting %v)", err, SettleLimit)
	}
	return ReadCommittedNow(t, brokers, topic)
}

// WaitSettled waits until no transaction is open on any partition of topic
// (each partition's last stable offset equals its high watermark), or ctx
// ends; its error then names the partitions held back.
func WaitSettled(ctx context.Context, cl *kgo.Client, topic string) error {
	adm := kadm.NewClient(cl)
	for {
		stable, err1 := adm.ListCommittedOffsets(ctx, topic)
		high, err2 := adm.ListEndOffsets(ctx, topic)
		var open []string
		err := errors.Join(err1, err2)
		if err == nil {
			if err = errors.Join(stable.Error(), high.Error()); err == nil {
				high.Each(func(h kadm.ListedOffset) {
					if s, _ := stable.Lookup(topic, h.Partition); s.Offset != h.Offset {
						open = append(open, fmt.Sprintf("partition %d: last stable offset %d, high watermark %d", h.Partition, s.Offset, h.Offset))
					}
				})
				if len(open) == 0 {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("kafkatest: listing the offsets of %s: %w", topic, err)
			}
			return fmt.Errorf("kafkatest: %s still has open transactions: %s", topic, strings.Join(open, "; "))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ReadCommittedNow reads topic from its start with isolation level
// read_committed up to each partition's last stable offset as it is now,
// without waiting for open transactions to end.
func ReadCommittedNow(t testing.TB, brokers, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), OpLimit)
	defer cancel()
	recs, err := Read(ctx, brokers, topic, true)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// ReadUncommitted reads topic from its start with isolation level
// read_uncommitted up to each partition's high watermark: aborted and open
// transactions' records included.
func ReadUncommitted(t testing.TB, brokers, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), OpLimit)
	defer cancel()
	recs, err := Read(ctx, brokers, topic, false)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// Read reads topic from its start up to the end offsets as they are when
// called: with committed, isolation level read_committed up to the last
// stable offsets, else read_uncommitted up to the high watermarks.
func Read(ctx context.Context, brokers, topic string, committed bool) ([]*kgo.Record, error) {
	acl, err := kgo.NewClient(kgo.SeedBrokers(Seeds(brokers)...))
	if err != nil {
		return nil, err
	}
	defer acl.Close()
	adm := kadm.NewClient(acl)
	list := adm.ListEndOffsets
	level := kgo.ReadUncommitted()
	if committed {
		list, level = adm.ListCommittedOffsets, kgo.ReadCommitted()
	}
	ends, err := list(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("kafkatest: list end offsets of %s: %w", topic, err)
	}
	// The end offsets are where reading stops. Control records (the commit
	// and abort markers) take offsets too, so they are kept while reading
	// to know when a partition's end is reached, and dropped from the result.
	want := map[int32]int64{}
	start := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
			start[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	if len(want) == 0 {
		return nil, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(Seeds(brokers)...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}),
		kgo.FetchIsolationLevel(level),
		kgo.KeepControlRecords())
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []*kgo.Record
	next := map[int32]int64{}
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("kafkatest: reading %s did not reach the end offsets %v in time (reached %v)", topic, want, next)
		}
		if err := fs.Err0(); err != nil {
			return nil, fmt.Errorf("kafkatest: reading %s: %w", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := want[r.Partition]
			if !ok || r.Offset >= end {
				return
			}
			next[r.Partition] = r.Offset + 1
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
			if r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	return out, nil
}

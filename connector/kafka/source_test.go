package kafka

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/connector/internal/sourcetest"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/source"
)

// cluster starts an in-process fake Kafka with topics of the given
// partition counts, and returns its addresses.
func cluster(t *testing.T, topics map[string]int32) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addrs := c.ListenAddrs()
	adm := admin(t, addrs)
	for name, n := range topics {
		if _, err := adm.CreateTopic(context.Background(), n, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	return addrs
}

func admin(t *testing.T, addrs []string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// produce writes n records "<topic>/<i>" spread over the topic's
// partitions (key i), with timestamps base+i ms, and returns their values.
func produce(t *testing.T, addrs []string, topic string, from, n int, base int64) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	var want []string
	for i := from; i < from+n; i++ {
		v := fmt.Sprintf("%s/%d", topic, i)
		want = append(want, v)
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(v), Timestamp: time.UnixMilli(base + int64(i))})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return want
}

func TestSplitCodecRoundTrip(t *testing.T) {
	rng := testseed.Rand(t, 11)
	c := SplitCodec()
	for range 1000 {
		s := Split{Topic: strings.Repeat("t", 1+rng.IntN(200)), Partition: rng.Int32(), Offset: rng.Int64N(1 << 62), StopOffset: NoStopOffset}
		if rng.IntN(2) == 0 {
			s.StopOffset = rng.Int64N(1 << 62)
		}
		enc := c.AppendEncode([]byte("prefix"), s)[6:]
		got, n, err := c.Decode(append(enc, 7, 7))
		if err != nil || n != len(enc) || got != s {
			t.Fatalf("%+v: decoded %+v, %d of %d bytes, %v", s, got, n, len(enc), err)
		}
		for k := range len(enc) {
			if _, _, err := c.Decode(enc[:k]); err == nil {
				t.Fatalf("%+v: a truncation to %d bytes decoded", s, k)
			}
		}
	}
}

func FuzzSplitDecode(f *testing.F) {
	c := SplitCodec()
	f.Add(c.AppendEncode(nil, Split{Topic: "a", Partition: 3, Offset: 7, StopOffset: NoStopOffset}))
	f.Add(c.AppendEncode(nil, Split{Topic: "orders", Partition: 0, Offset: 1 << 40, StopOffset: 1 << 41}))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, n, err := c.Decode(b)
		if err != nil {
			if !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if n > len(b) {
			t.Fatalf("used %d of %d bytes", n, len(b))
		}
		again, m, err := c.Decode(c.AppendEncode(nil, s))
		if err != nil || again != s || m == 0 {
			t.Fatalf("%+v does not round-trip: %+v %v", s, again, err)
		}
	})
}

func TestEnumeratorStateRoundTrip(t *testing.T) {
	e := &enumerator{known: map[topicPartition]bool{{"a", 0}: true, {"a", 1}: true, {"b", 5}: true}, initialized: true,
		pending: []Split{{Topic: "a", Partition: 1, Offset: 4, StopOffset: 9}}}
	b, _ := e.Snapshot(1)
	r, err := newEnumerator(&SourceConfig{}, nil, nil, b)
	if err != nil || !r.initialized || len(r.known) != 3 || !slices.Equal(r.pending, e.pending) {
		t.Fatalf("restored %+v, %v", r, err)
	}
	for k := range len(b) {
		if _, err := newEnumerator(&SourceConfig{}, nil, nil, b[:k]); err == nil && k > 0 {
			t.Fatalf("a truncation to %d bytes restored", k)
		}
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	ok := SourceConfig{Brokers: []string{"x:1"}, Topics: []string{"t"}}
	for _, tc := range []struct {
		change func(*SourceConfig)
		want   string
	}{
		{func(c *SourceConfig) { c.Brokers = nil }, "SourceConfig.Brokers"},
		{func(c *SourceConfig) { c.Topics = nil }, "SourceConfig.Topics: no topics and no TopicPattern"},
		{func(c *SourceConfig) { c.TopicPattern = "x" }, "SourceConfig.TopicPattern: set together with Topics"},
		{func(c *SourceConfig) { c.Topics, c.TopicPattern = nil, "a(" }, "SourceConfig.TopicPattern: error parsing regexp"},
		{func(c *SourceConfig) { c.BadRecords = DeadLetterBadRecord }, "SourceConfig.DeadLetterTopic: empty"},
		{func(c *SourceConfig) { c.DeadLetterTopic = "dl" }, "SourceConfig.DeadLetterTopic: set, but"},
		{func(c *SourceConfig) { c.Start = CommittedOffsets(Earliest()) }, "SourceConfig.Group: empty"},
		{func(c *SourceConfig) { c.Start = Timestamp(-5) }, "SourceConfig.Start: negative timestamp"},
		{func(c *SourceConfig) { c.MaxBufferedRecords = -1 }, "SourceConfig.MaxBufferedRecords"},
		{func(c *SourceConfig) { c.BadRecords = 9 }, "SourceConfig.BadRecords"},
	} {
		cfg := ok
		tc.change(&cfg)
		_, err := NewSource(cfg, StringValue())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one with %q", err, tc.want)
		}
	}
	if _, err := NewSource(ok, StringValue()); err != nil {
		t.Fatal(err)
	}
}

func TestOwnerSpreadsPartitions(t *testing.T) {
	for n := 1; n < 6; n++ {
		count := make([]int, n)
		for p := range int32(10 * n) {
			count[owner("orders", p, n)]++
		}
		for i, c := range count {
			if c != 10 {
				t.Fatalf("parallelism %d: reader %d owns %d partitions", n, i, c)
			}
		}
	}
}

// A bounded source over several topics and partitions, snapshotted, failed
// and restored at random points at other parallelisms, reads every record
// exactly once and ends.
func TestBoundedExactlyOnceAcrossFailures(t *testing.T) {
	rng := testseed.Rand(t, 12)
	addrs := cluster(t, map[string]int32{"a": 5, "b": 3, "other": 2})
	var want []string
	want = append(want, produce(t, addrs, "a", 0, 700, 1000)...)
	want = append(want, produce(t, addrs, "b", 0, 300, 1000)...)
	produce(t, addrs, "other", 0, 50, 1000)
	slices.Sort(want)
	for round := range 6 {
		cfg := SourceConfig{Brokers: addrs, Bounded: true, MaxBufferedRecords: 1 + rng.IntN(300)}
		if round%2 == 0 {
			cfg.Topics = []string{"a", "b"}
		} else {
			cfg.TopicPattern = "a|b"
		}
		src, err := NewSource(cfg, StringValue())
		if err != nil {
			t.Fatal(err)
		}
		o := sourcetest.Options{
			Parallelism: 1 + rng.IntN(4),
			Failures:    rng.IntN(5),
			Steps:       1 + rng.IntN(80),
			Restore:     func(rng *rand.Rand) int { return 1 + rng.IntN(5) },
			Timeout:     60 * time.Second,
		}
		got, err := sourcetest.RunWithFailures(rng, source.Source[string, Split](src), o)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("round %d (%d failures): %d records, want %d", round, o.Failures, len(got), len(want))
		}
	}
}

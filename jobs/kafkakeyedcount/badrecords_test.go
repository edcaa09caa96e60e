package kafkakeyedcount_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	w "github.com/weirhq/weir"
	"github.com/weirhq/weir/connector/kafka"
	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/internal/kafkatest"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/jobs/badrecords"
	"github.com/weirhq/weir/jobs/kafkakeyedcount"
)

// fake starts an in-process Kafka (kfake) with the given topics of one
// partition each and returns its bootstrap addresses.
func fake(t *testing.T, topics ...string) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return strings.Join(c.ListenAddrs(), ",")
}

func runJob(t *testing.T, brokers string, o kafkakeyedcount.Options) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o.Brokers, o.InputTopic, o.OutputTopic, o.Bounded = kafkatest.Seeds(brokers), "in", "out", true
	o.Config = w.Config{Checkpointing: &w.CheckpointConfig{Interval: 50 * time.Millisecond, Dir: t.TempDir()}}
	return kafkakeyedcount.Run(ctx, o)
}

// A record that is not key<TAB>value fails the job at once under the
// default policy, permanently (with checkpoints it was restarted forever);
// skip and dead-letter count exactly the good records, blank ones are
// skipped, and the dead-letter topic gets each bad record once, with its
// topic/partition/offset, through a sink with the output's guarantee.
func TestBadRecordPolicies(t *testing.T) {
	r := testseed.Rand(t, 37)
	brokers := fake(t, "in", "out", "dead")
	var values, want, bad []string
	count, sum := map[string]int64{}, map[string]int64{}
	for i := range 400 {
		switch x := r.IntN(10); {
		case x == 0:
			v := []string{"no tab", "k\tx", "\t1"}[r.IntN(3)]
			values = append(values, v)
			bad = append(bad, fmt.Sprintf("in/0/%d\t%s", i, v))
		case x == 1:
			values = append(values, []string{"", " ", "\t"}[r.IntN(3)])
		default:
			k, v := fmt.Sprintf("k%d", r.IntN(5)), r.Int64N(100)
			values = append(values, fmt.Sprintf("%s\t%d", k, v))
			count[k]++
			sum[k] += v
			want = append(want, fmt.Sprintf("%s\t%d\t%d", k, count[k], sum[k]))
		}
	}
	firstBad := bad[0][:strings.Index(bad[0], "\t")]
	slices.Sort(want)
	slices.Sort(bad)
	kafkatest.Produce(t, brokers, "in", values...)

	start := time.Now()
	err := runJob(t, brokers, kafkakeyedcount.Options{Guarantee: kafka.AtLeastOnce})
	if err == nil || !failure.IsPermanent(err) || !strings.Contains(err.Error(), firstBad+" (topic/partition/offset)") {
		t.Fatalf("fail: %v, want a permanent error naming %s", err, firstBad)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("fail: took %v", took)
	}

	outputs := func() []string {
		var got []string
		for _, rec := range kafkatest.ReadCommitted(t, brokers, "out") {
			got = append(got, string(rec.Value))
		}
		slices.Sort(got)
		return got
	}
	if err := runJob(t, brokers, kafkakeyedcount.Options{Guarantee: kafka.AtLeastOnce, BadRecords: badrecords.Skip}); err != nil {
		t.Fatal(err)
	}
	if got := outputs(); !slices.Equal(got, want) {
		t.Fatalf("skip: %d output records, want %d", len(got), len(want))
	}
	if err := runJob(t, brokers, kafkakeyedcount.Options{Guarantee: kafka.ExactlyOnce, TransactionalIDPrefix: "t",
		BadRecords: badrecords.DeadLetter, DeadLetterTopic: "dead"}); err != nil {
		t.Fatal(err)
	}
	var dead []string
	for _, rec := range kafkatest.ReadCommitted(t, brokers, "dead") {
		var d struct{ Source, Error, Record string }
		if err := json.Unmarshal(rec.Value, &d); err != nil || d.Error == "" {
			t.Fatalf("dead letter %q: %v", rec.Value, err)
		}
		dead = append(dead, d.Source+"\t"+d.Record)
	}
	slices.Sort(dead)
	if !slices.Equal(dead, bad) {
		t.Fatalf("dead letters\n%s\nwant\n%s", strings.Join(dead, "\n"), strings.Join(bad, "\n"))
	}
}

// A missing output topic fails the job at once, permanently, naming the
// topic and the brokers (it was retried forever).
func TestMissingOutputTopicIsPermanent(t *testing.T) {
	brokers := fake(t, "in")
	kafkatest.Produce(t, brokers, "in", "a\t1")
	start := time.Now()
	err := runJob(t, brokers, kafkakeyedcount.Options{Guarantee: kafka.AtLeastOnce})
	if err == nil || !failure.IsPermanent(err) || !strings.Contains(err.Error(), `topic "out" does not exist on`) {
		t.Fatalf("got %v, want a permanent error naming topic out", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("took %v", took)
	}
}

package kafkatest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestMain(m *testing.M) { Main(m) }

// values returns the records' values, sorted.
func values(rs []*kgo.Record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, string(r.Value))
	}
	slices.Sort(out)
	return out
}

// The broker starts, a topic is created, plain records and a committed
// transaction are read back with read_committed, and an aborted
// transaction is not (while read_uncommitted shows it was written).
func TestBrokerTransactions(t *testing.T) {
	brokers := Broker(t)
	topic := Topic(t, "in")
	CreateTopic(t, brokers, topic, 3)
	Produce(t, brokers, topic, "plain-1", "plain-2")

	ctx, cancel := context.WithTimeout(context.Background(), OpLimit)
	defer cancel()
	txn := Client(t, brokers, kgo.TransactionalID(topic+"-txn"), kgo.DefaultProduceTopic(topic),
		kgo.TransactionTimeout(time.Minute))
	for _, tc := range []struct {
		commit bool
		values []string
	}{
		{true, []string{"committed-1", "committed-2", "committed-3"}},
		{false, []string{"aborted-1", "aborted-2"}},
		{true, []string{"committed-4"}},
	} {
		start := time.Now()
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range tc.values {
			if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
		}
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(tc.commit)); err != nil {
			t.Fatalf("end transaction (commit %v): %v", tc.commit, err)
		}
		t.Logf("transaction of %d records (commit %v): %v", len(tc.values), tc.commit, time.Since(start).Round(time.Millisecond))
	}

	got := values(ReadCommitted(t, brokers, topic))
	want := []string{"committed-1", "committed-2", "committed-3", "committed-4", "plain-1", "plain-2"}
	if !slices.Equal(got, want) {
		t.Errorf("read_committed: got %q, want %q", got, want)
	}
	got = values(ReadUncommitted(t, brokers, topic))
	want = []string{"aborted-1", "aborted-2", "committed-1", "committed-2", "committed-3", "committed-4", "plain-1", "plain-2"}
	if !slices.Equal(got, want) {
		t.Errorf("read_uncommitted: got %q, want %q", got, want)
	}
}

// An open transaction holds back read_committed readers at its first
// offset: ReadCommittedNow returns what precedes it and does not wait;
// ReadCommitted after the commit sees it all (it waits for the commit
// markers, which Kafka writes after it answers EndTxn).
func TestReadCommittedStopsAtOpenTransaction(t *testing.T) {
	brokers := Broker(t)
	topic := Topic(t, "open")
	CreateTopic(t, brokers, topic, 1)
	Produce(t, brokers, topic, "before")
	ctx, cancel := context.WithTimeout(context.Background(), OpLimit)
	defer cancel()
	txn := Client(t, brokers, kgo.TransactionalID(topic+"-txn"), kgo.DefaultProduceTopic(topic))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	Produce(t, brokers, topic, "after")
	if got := values(ReadCommittedNow(t, brokers, topic)); !slices.Equal(got, []string{"before"}) {
		t.Errorf("read_committed with a transaction open: got %q, want [before]", got)
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if got := values(ReadCommitted(t, brokers, topic)); !slices.Equal(got, []string{"after", "before", "open"}) {
		t.Errorf("read_committed after the commit: got %q, want [after before open]", got)
	}
}

func TestPortTaken(t *testing.T) {
	for _, tc := range []struct {
		stderr string
		want   bool
	}{
		{"scripts/kafka-broker: port 9092 on 127.0.0.1 is busy (another broker or program listens there)", true},
		{"Caused by: java.net.BindException: Address already in use", true},
		{"scripts/kafka-broker: java not found", false},
	} {
		if got := portTaken(tc.stderr); got != tc.want {
			t.Errorf("portTaken(%q) = %v, want %v", tc.stderr, got, tc.want)
		}
	}
}

package kafkakeyedcount

import (
	"context"
	"fmt"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/connector/kafka"
	"github.com/weirhq/weir/jobs/keyedcount"
)

// Options configure a run.
type Options struct {
	Brokers     []string // bootstrap addresses, host:port
	InputTopic  string
	OutputTopic string
	// Group is the consumer group the input offsets of completed
	// checkpoints are committed to (for monitoring lag; a restore uses the
	// checkpoint's offsets). A fresh start reads from the group's committed
	// offsets, else from the earliest. Empty: no group, a fresh start reads
	// from the earliest offsets.
	Group string
	// Guarantee of the output: kafka.None, kafka.AtLeastOnce or
	// kafka.ExactlyOnce (which needs TransactionalIDPrefix).
	Guarantee             kafka.Guarantee
	TransactionalIDPrefix string
	// Bounded stops at the input's end offsets (last stable offsets) current
	// at start; the run ends once everything before them is counted and the
	// output committed.
	Bounded bool
	// BadRecords is the source's policy for records that are not
	// key<TAB>value (default: fail, naming topic, partition and offset).
	BadRecords kafka.BadRecordPolicy
	Config     weir.Config
}

// Deserialize parses a record's value "key<TAB>value"; an error makes it a
// bad record of the source (which names topic, partition and offset).
func Deserialize(r *kafka.Record) (keyedcount.Record, error) {
	return keyedcount.ParseText(string(r.Value))
}

// Serialize writes a count as the record key<TAB>n<TAB>sum, with the key as
// the Kafka record key (so one key's counts go to one partition, in order).
func Serialize(c keyedcount.Count) (key, value []byte, err error) {
	return []byte(c.Key), []byte(keyedcount.Format(c)), nil
}

// Build declares the job on env: the Kafka source, the keyed count, the
// Kafka sink.
func Build(env *weir.Environment, o Options) error {
	start := kafka.Earliest()
	if o.Group != "" {
		start = kafka.CommittedOffsets(kafka.Earliest())
	}
	src, err := kafka.NewSource(kafka.SourceConfig{
		Brokers:       o.Brokers,
		Topics:        []string{o.InputTopic},
		Group:         o.Group,
		Start:         start,
		Bounded:       o.Bounded,
		ReadCommitted: true,
		BadRecords:    o.BadRecords,
	}, Deserialize)
	if err != nil {
		return err
	}
	snk, err := kafka.NewSink(kafka.SinkConfig{
		Brokers:               o.Brokers,
		Topic:                 o.OutputTopic,
		Guarantee:             o.Guarantee,
		TransactionalIDPrefix: o.TransactionalIDPrefix,
	}, Serialize)
	if err != nil {
		return err
	}
	records := weir.FromSource[keyedcount.Record, kafka.Split](env, src, "Kafka "+o.InputTopic).UID("kafka-source")
	keyed := weir.KeyBy(records, func(r keyedcount.Record) string { return r.Key })
	counts := weir.ProcessKeyed[string, keyedcount.Record, keyedcount.Count](keyed, &keyedcount.Counter{}).Name("Count").UID("count")
	weir.SinkToCommitting[keyedcount.Count, kafka.Committable](counts, snk, "Kafka "+o.OutputTopic).UID("kafka-sink")
	return nil
}

// Run runs the job until it is canceled or, when bounded, until all input
// up to the end offsets current at start is counted and committed.
func Run(ctx context.Context, o Options) error {
	if o.InputTopic != "" && o.InputTopic == o.OutputTopic {
		return fmt.Errorf("kafka-keyed-count: the input and output topics are both %q; they must differ", o.InputTopic)
	}
	env := weir.NewEnvironment(o.Config)
	if err := Build(env, o); err != nil {
		return err
	}
	_, err := env.Execute(ctx, "kafka-keyed-count")
	return err
}

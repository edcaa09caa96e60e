package kafkakeyedcount

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/connector/kafka"
	"github.com/weirhq/weir/jobs/badrecords"
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
	// BadRecords is what a record that is not key<TAB>value does (default
	// badrecords.Fail: the job fails naming topic, partition and offset).
	// Records whose value is blank are skipped.
	BadRecords badrecords.Policy
	// DeadLetterTopic is where bad records go with badrecords.DeadLetter:
	// one badrecords.Line each, written with Guarantee (exactly once: with
	// the transactional ids TransactionalIDPrefix+".dead-letter").
	DeadLetterTopic string
	Config          weir.Config
	// CrashHook is the Kafka sinks' SinkConfig.CrashHook (the output's and
	// the dead-letter sink's): a testing hook, set by the weir command to
	// kill the process at the point WEIR_CRASH_AT names. Nil: none.
	CrashHook func(point string)
}

// input is one record of the input topic: a parsed record, a blank one, or
// a bad one (Where says where it came from: topic/partition/offset).
type input struct {
	Record               keyedcount.Record
	Blank                bool
	Where, Reason, Value string
}

// decode is the source's deserializer: it never fails, so that the parsing
// operator applies the bad-record policy (and counts, and dead-letters
// through a sink with the output's guarantee).
func decode(r *kafka.Record) (input, error) {
	if len(bytes.TrimSpace(r.Value)) == 0 { // badrecords.Blank, without a copy of every value
		return input{Blank: true}, nil
	}
	rec, err := Deserialize(r)
	if err != nil {
		return input{Where: fmt.Sprintf("%s/%d/%d", r.Topic, r.Partition, r.Offset), Reason: err.Error(), Value: string(r.Value)}, nil
	}
	return input{Record: rec}, nil
}

// parse is the parsing operator: good records go on, blank ones are
// skipped, bad ones go by the policy.
type parse struct{ badrecords.Handler }

func (p *parse) ProcessElement(ctx weir.Context, in input, out weir.Collector[keyedcount.Record]) error {
	switch {
	case in.Blank:
	case in.Where != "":
		return p.Bad(ctx, in.Where, in.Where+" (topic/partition/offset), value "+kafka.ValueExcerpt([]byte(in.Value)), errors.New(in.Reason), in.Value)
	default:
		out.Collect(in.Record)
	}
	return nil
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
	}, decode)
	if err != nil {
		return err
	}
	snk, err := kafka.NewSink(kafka.SinkConfig{
		Brokers:               o.Brokers,
		Topic:                 o.OutputTopic,
		Guarantee:             o.Guarantee,
		TransactionalIDPrefix: o.TransactionalIDPrefix,
		CrashHook:             o.CrashHook,
	}, Serialize)
	if err != nil {
		return err
	}
	raw := weir.FromSource[input, kafka.Split](env, src, "Kafka "+o.InputTopic).UID("kafka-source")
	records := weir.Process[input, keyedcount.Record](raw, &parse{badrecords.Handler{Policy: o.BadRecords}}).Name("Parse").UID("parse")
	keyed := weir.KeyBy(records, func(r keyedcount.Record) string { return r.Key })
	counts := weir.ProcessKeyed[string, keyedcount.Record, keyedcount.Count](keyed, &keyedcount.Counter{}).Name("Count").UID("count")
	weir.SinkToCommitting[keyedcount.Count, kafka.Committable](counts, snk, "Kafka "+o.OutputTopic).UID("kafka-sink")
	if o.BadRecords == badrecords.DeadLetter {
		prefix := ""
		if o.TransactionalIDPrefix != "" {
			prefix = o.TransactionalIDPrefix + ".dead-letter" // not "-": ids of the output sink are prefix-<subtask>-<n>
		}
		dl, err := kafka.NewSink(kafka.SinkConfig{
			Brokers:               o.Brokers,
			Topic:                 o.DeadLetterTopic,
			Guarantee:             o.Guarantee,
			TransactionalIDPrefix: prefix,
			CrashHook:             o.CrashHook,
		}, func(line string) (key, value []byte, err error) { return nil, []byte(line), nil })
		if err != nil {
			return err
		}
		dead := weir.SideOutput(records, badrecords.DeadLetters)
		weir.SinkToCommitting[string, kafka.Committable](dead, dl, "Kafka "+o.DeadLetterTopic).UID("kafka-dead-letters")
	}
	return nil
}

// Run runs the job until it is canceled or, when bounded, until all input
// up to the end offsets current at start is counted and committed.
func Run(ctx context.Context, o Options) error {
	if o.InputTopic != "" && o.InputTopic == o.OutputTopic {
		return fmt.Errorf("kafka-keyed-count: the input and output topics are both %q; they must differ", o.InputTopic)
	}
	if err := badrecords.CheckTarget(o.BadRecords, o.DeadLetterTopic, "Options.DeadLetterTopic"); err != nil {
		return fmt.Errorf("kafka-keyed-count: %w", err)
	}
	if o.DeadLetterTopic != "" && (o.DeadLetterTopic == o.InputTopic || o.DeadLetterTopic == o.OutputTopic) {
		return fmt.Errorf("kafka-keyed-count: the dead-letter topic %q must differ from the input and output topics", o.DeadLetterTopic)
	}
	env := weir.NewEnvironment(o.Config)
	if err := Build(env, o); err != nil {
		return err
	}
	_, err := env.Execute(ctx, "kafka-keyed-count")
	return err
}

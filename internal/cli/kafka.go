package cli

import (
	"context"
	"flag"
	"io"
	"strings"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/connector/kafka"
	"github.com/weirhq/weir/internal/crashpoint"
	"github.com/weirhq/weir/jobs/badrecords"
	"github.com/weirhq/weir/jobs/kafkakeyedcount"
)

// kafkaFlags are the flags of kafka-keyed-count beyond the checkpoint flags.
var kafkaFlags = []string{"brokers", "input-topic", "output-topic", "group", "guarantee", "transactional-id-prefix", "bounded"}

// checkKafka validates kafka-keyed-count's own flags.
func (f *jobFlags) checkKafka(fs *flag.FlagSet) error {
	if f.inputTopic == "" || f.outputTopic == "" {
		return usagef("kafka-keyed-count needs --input-topic and --output-topic")
	}
	for _, t := range []struct{ flag, name string }{{"input-topic", f.inputTopic}, {"output-topic", f.outputTopic}} {
		if err := checkTopic(t.flag, t.name); err != nil {
			return err
		}
	}
	if f.inputTopic == f.outputTopic {
		return usagef("--input-topic and --output-topic are both %q; they must differ (the job would read its own output)", f.inputTopic)
	}
	if _, err := brokerList(f.brokers); err != nil {
		return err
	}
	g, err := kafka.ParseGuarantee(f.guarantee)
	if err != nil {
		return usagef("--guarantee %q: want none, at-least-once or exactly-once", f.guarantee)
	}
	switch {
	case g == kafka.ExactlyOnce && f.txnPrefix == "":
		return usagef("--guarantee exactly-once needs --transactional-id-prefix (unique to this job, the same when it resumes)")
	case g != kafka.ExactlyOnce && setFlag(fs, "transactional-id-prefix"):
		return usagef("--transactional-id-prefix applies only to --guarantee exactly-once, not %s", f.guarantee)
	case g != kafka.None && f.checkpointDir == "":
		return usagef("--guarantee %s needs --checkpoint-dir (output is flushed or committed at checkpoints)", f.guarantee)
	}
	return nil
}

// checkTopic accepts a legal Kafka topic name: 1-249 of [a-zA-Z0-9._-],
// not "." or "..".
func checkTopic(flagName, topic string) error {
	if topic == "." || topic == ".." || len(topic) > 249 {
		return usagef("--%s %q: not a valid Kafka topic name", flagName, topic)
	}
	for _, r := range topic {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return usagef("--%s %q: a Kafka topic name has only letters, digits, '.', '_' and '-'", flagName, topic)
		}
	}
	return nil
}

// brokerList splits --brokers into host:port addresses.
func brokerList(v string) ([]string, error) {
	var out []string
	for _, b := range strings.Split(v, ",") {
		b = strings.TrimSpace(b)
		if b == "" {
			continue
		}
		if err := checkAddress("brokers", b); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		return nil, usagef("--brokers is empty: want host:port[,host:port...]")
	}
	return out, nil
}

// runKafkaKeyedCount runs kafka-keyed-count (flags checked by checkKafka).
func runKafkaKeyedCount(ctx context.Context, f jobFlags, cfg weir.Config, stderr io.Writer, bad badrecords.Policy) error {
	brokers, _ := brokerList(f.brokers)
	g, _ := kafka.ParseGuarantee(f.guarantee)
	if f.checkpointDir != "" {
		f.checkpointing(&cfg, stderr)
	}
	return kafkakeyedcount.Run(ctx, kafkakeyedcount.Options{Brokers: brokers, InputTopic: f.inputTopic, OutputTopic: f.outputTopic,
		Group: f.group, Guarantee: g, TransactionalIDPrefix: f.txnPrefix, Bounded: f.bounded, Config: cfg,
		BadRecords: bad, DeadLetterTopic: f.bad.deadLetterTopic, CrashHook: crashpoint.Hit})
}

package cli

import (
	"strings"
	"testing"
)

// kafka-keyed-count's flags: each mistake is a usage error naming the flag.
func TestKafkaKeyedCountFlagValidation(t *testing.T) {
	ok := []string{"run", "kafka-keyed-count", "--input-topic", "in", "--output-topic", "out", "--checkpoint-dir", "ck",
		"--transactional-id-prefix", "kc"}
	with := func(args ...string) []string { return append(append([]string{}, ok...), args...) }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "kafka-keyed-count", "--output-topic", "out"}, "kafka-keyed-count needs --input-topic and --output-topic"},
		{[]string{"run", "kafka-keyed-count", "--input-topic", "in"}, "kafka-keyed-count needs --input-topic and --output-topic"},
		{with("--input-topic", "a b"), `--input-topic "a b": a Kafka topic name has only`},
		{with("--output-topic", ".."), `--output-topic "..": not a valid Kafka topic name`},
		{with("--output-topic", strings.Repeat("x", 250)), "not a valid Kafka topic name"},
		{with("--output-topic", "in"), `--input-topic and --output-topic are both "in"`},
		{with("--brokers", "localhost"), `--brokers "localhost": want HOST:PORT`},
		{with("--brokers", " , "), "--brokers is empty"},
		{with("--guarantee", "twice"), `--guarantee "twice": want none, at-least-once or exactly-once`},
		{[]string{"run", "kafka-keyed-count", "--input-topic", "in", "--output-topic", "out", "--checkpoint-dir", "ck"},
			"--guarantee exactly-once needs --transactional-id-prefix"},
		{with("--guarantee", "at-least-once"), "--transactional-id-prefix applies only to --guarantee exactly-once"},
		{[]string{"run", "kafka-keyed-count", "--input-topic", "in", "--output-topic", "out", "--guarantee", "at-least-once"},
			"--guarantee at-least-once needs --checkpoint-dir"},
		{[]string{"run", "kafka-keyed-count", "--input-topic", "in", "--output-topic", "out", "--guarantee", "none", "--from", "latest"},
			"--from needs --checkpoint-dir"},
		{with("--checkpoint-interval", "1ms"), "--checkpoint-interval must be at least 10ms"},
		{with("--input", "x"), "--input does not apply to kafka-keyed-count"},
		{with("--rate", "5"), "--rate does not apply to kafka-keyed-count"},
		{[]string{"run", "keyed-count", "--input", "a", "--output", "b", "--checkpoint-dir", "c", "--bounded"}, "--bounded does not apply to keyed-count"},
		{[]string{"run", "window-agg", "--brokers", "h:1"}, "--brokers does not apply to window-agg"},
		{with("--parallelism", "0"), "--parallelism must be between 1 and 32768"},
		{with("--state-backend", "rocksdb"), `--state-backend "rocksdb"`},
	} {
		code, out, errOut := runCLI(tc.args...)
		if code != ExitUsage || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
	if code, out, _ := runCLI("help"); code != ExitOK || !strings.Contains(out, "kafka-keyed-count") || !strings.Contains(out, "--transactional-id-prefix") {
		t.Errorf("help does not describe kafka-keyed-count: %s", out)
	}
}

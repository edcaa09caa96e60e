package cli

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/weirhq/weir/internal/kafkatest"
)

// TestBenchKafka runs `weir bench kafka` at a tiny size against the real
// broker (kafkatest: it fails, never skips, under CI when the broker is
// missing), for each guarantee. The "broker" pid is this test process, to
// check the /proc reading; the figures are not checked, the output count
// is (bench kafka fails when it differs).
func TestBenchKafka(t *testing.T) {
	brokers := kafkatest.Broker(t)
	for _, g := range []string{"none", "at-least-once", "exactly-once"} {
		t.Run(g, func(t *testing.T) {
			var out strings.Builder
			err := bench(context.Background(), []string{"kafka", "--brokers", brokers, "--guarantee", g,
				"--records", "3000", "--record-bytes", "100", "--parallelism", "2", "--partitions", "3",
				"--checkpoint-interval", "100ms", "--broker-pid", strconv.Itoa(os.Getpid())}, &out, &out)
			if err != nil {
				t.Fatalf("bench kafka: %v\n%s", err, out.String())
			}
			for _, want := range []string{
				"kafka " + g + ": 3000 records of 100 bytes, p=2, 3 partitions, checkpoints every 100ms:",
				"million records/s per core",
				"s per million records",
				"output checked: 3000 records, 300000 bytes read with read_committed",
			} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

func TestBenchKafkaFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "needs --guarantee"},
		{[]string{"--guarantee", "twice"}, `--guarantee "twice": want none, at-least-once or exactly-once`},
		{[]string{"--guarantee", "none", "--records", "0"}, "--records must be between 1"},
		{[]string{"--guarantee", "none", "--record-bytes", "0"}, "--record-bytes must be between 1"},
		{[]string{"--guarantee", "none", "--parallelism", "0"}, "--parallelism of a benchmark must be between 1 and 1024"},
		{[]string{"--guarantee", "none", "--partitions", "-1"}, "--partitions must be between 1"},
		{[]string{"--guarantee", "exactly-once", "--checkpoint-interval", "0s"}, "only goes with --guarantee none"},
		{[]string{"--guarantee", "none", "--checkpoint-interval", "-1s"}, "must not be negative"},
		{[]string{"--guarantee", "none", "--brokers", ""}, "--brokers is empty"},
		{[]string{"--guarantee", "none", "--broker-pid", "1", "--broker-dir", "/x"}, "not both"},
		{[]string{"--guarantee", "none", "--broker-dir", t.TempDir()}, "no broker pid file"},
		{[]string{"--guarantee", "none", "--broker-pid", "999999999"}, "broker pid 999999999"},
		{[]string{"--guarantee", "none", "extra"}, "no positional arguments"},
		{[]string{"--guarantee", "none", "--events", "5"}, "unknown flag --events"},
	} {
		err := bench(context.Background(), append([]string{"kafka"}, c.args...), &strings.Builder{}, &strings.Builder{})
		var u usageError
		if !errors.As(err, &u) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("bench kafka %q: got %v, want a usage error with %q", c.args, err, c.want)
		}
	}
}

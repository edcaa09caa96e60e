package cli

import (
	"strings"
	"testing"
)

// bench latency runs at a tiny size: the maximum throughput of each
// setting, then the latency table at half of the first one.
func TestBenchLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("runs jobs for a few seconds")
	}
	code, out, errOut := runCLI("bench", "latency", "--keys", "100", "--duration", "200ms", "--warmup", "100ms")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"maximum throughput", "| 100ms (default) |", "| 1ms |", "| 0 (every batch) |", "latency at ", "p99.9", "events/s per core"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "| 1ms |"); n != 2 {
		t.Errorf("1ms appears in %d rows, want 2 (throughput and latency):\n%s", n, out)
	}
}

func TestBenchLatencyOneSetting(t *testing.T) {
	code, out, errOut := runCLI("bench", "latency", "--keys", "100", "--duration", "100ms", "--warmup", "50ms",
		"--rate", "20000", "--buffer-timeout", "0", "--parallelism", "1")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if strings.Contains(out, "maximum throughput") || !strings.Contains(out, "| 0 (every batch) | 0.0") {
		t.Errorf("want only the latency row of the flush-every-batch setting at 20000/s:\n%s", out)
	}
}

func TestBenchLatencyFlagValidation(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "latency", "--keys", "0"}, "--keys must be between 1 and 1000000000, got 0"},
		{[]string{"bench", "latency", "--parallelism", "0"}, "--parallelism of a benchmark must be between 1 and 1024"},
		{[]string{"bench", "latency", "--duration", "10ms"}, "--duration must be between 100ms and 24h"},
		{[]string{"bench", "latency", "--rate", "0"}, "--rate must be between 1 and 1e10"},
		{[]string{"bench", "latency", "--rate", "NaN"}, "--rate must be between 1 and 1e10"},
		{[]string{"bench", "latency", "--buffer-timeout", "-1ms"}, "--buffer-timeout must not be negative"},
		{[]string{"bench", "latency", "--warmup", "-1s"}, "--warmup must be between 0 and 1h"},
		{[]string{"bench", "latency", "--events", "5"}, "unknown flag --events"},
		{[]string{"bench", "latency", "extra"}, `bench latency takes no arguments, got "extra"`},
	} {
		code, out, errOut := runCLI(tc.args...)
		if code != ExitUsage || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

package nexmark

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestAgainstJavaReference generates events with Weir's generator and with
// testdata/NexmarkReference.java (Nexmark's generator transcribed to plain
// Java with per-event java.util.Random) and compares the JSON lines.
func TestAgainstJavaReference(t *testing.T) {
	java := javaOrSkip(t)
	src, err := filepath.Abs("testdata/NexmarkReference.java")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		events, tps, base, group int64
	}{
		{events: 30000, tps: DefaultEventsPerSecond, base: DefaultBaseTime, group: 1},
		// A slow rate (auction expiries of minutes, times spanning an hour)
		// and out-of-order groups.
		{events: 20000, tps: 7, base: 1_700_000_000_123, group: 17},
	} {
		cmd := exec.Command(java, src, strconv.FormatInt(tc.events, 10), strconv.FormatInt(tc.tps, 10),
			strconv.FormatInt(tc.base, 10), strconv.FormatInt(tc.group, 10))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("java: %v\n%s", err, stderr.String())
		}
		cfg := DefaultConfig()
		cfg.Events, cfg.EventsPerSecond, cfg.BaseTime, cfg.OutOfOrderGroupSize = tc.events, tc.tps, tc.base, tc.group
		g, err := NewGenerator(cfg)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(nil, 1<<20)
		var e Event
		var line []byte
		n, bad := int64(0), 0
		for sc.Scan() {
			if n >= tc.events {
				t.Fatalf("java printed more than %d events", tc.events)
			}
			g.Event(n, &e)
			line = AppendJSON(line[:0], &e)
			if got := string(bytes.TrimSuffix(line, []byte("\n"))); got != sc.Text() {
				if bad++; bad <= 5 {
					t.Errorf("%+v: event %d:\njava %s\nweir %s", tc, n, sc.Text(), got)
				}
			}
			n++
		}
		if n != tc.events || bad > 0 {
			t.Fatalf("%+v: java printed %d events, %d of them differ from Weir's", tc, n, bad)
		}
	}
}

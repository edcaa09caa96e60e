package kafkakeyedcount_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/kafkatest"
	"github.com/weirhq/weir/internal/testseed"
)

// newSetup creates the topics (input with 3 partitions, output with 2) of
// one test on the test broker.
func newSetup(t *testing.T, guarantee string) setup {
	t.Helper()
	s := setup{brokers: kafkatest.Broker(t), in: kafkatest.Topic(t, "in"), out: kafkatest.Topic(t, "out"), ck: t.TempDir(),
		guarantee: guarantee, parallelism: 2, interval: 300 * time.Millisecond}
	kafkatest.CreateTopic(t, s.brokers, s.in, 3)
	kafkatest.CreateTopic(t, s.brokers, s.out, 2)
	weir(t) // build before the clock starts
	return s
}

// killAndResume is kafka-keyed-count's acceptance test for one guarantee: a
// producer writes input while weir run kafka-keyed-count (p=2, checkpoints
// every 300 ms, 3 input partitions) is killed with SIGKILL at random moments
// and restarted with --from latest; then the producer stops and a last run
// with --bounded counts the rest and exits 0. It returns the verified
// output's record and duplicate counts.
func killAndResume(t *testing.T, guarantee string) (records, duplicates int) {
	seed := testseed.New(t)
	r := rand.New(rand.NewPCG(seed, 1))
	s := newSetup(t, guarantee)
	kills := 8 + r.IntN(5)
	if testing.Short() {
		kills = 3
	}
	keys := 5 + r.IntN(60)
	t.Logf("%d kills, %d keys, topics %s -> %s", kills, keys, s.in, s.out)
	prod := kafkatest.StartProducer(t, s.brokers, s.in, rand.New(rand.NewPCG(seed, 2)), keys)
	start := time.Now()
	for k := range kills {
		j := s.start(t, nil)
		// From before the first checkpoint to several checkpoints in.
		delay := time.Duration(200+r.IntN(3500)) * time.Millisecond
		time.Sleep(delay)
		j.cmd.Process.Kill()
		code, killed := j.wait(t, 30*time.Second)
		if !killed {
			t.Fatalf("run %d ended by itself (exit %d) before the kill:\n%s", k, code, j.stderr.String())
		}
		t.Logf("run %d: resumed from %s, killed after %v, %d checkpoints completed; %d records written so far",
			k, j.resumed(), delay, j.checkpoints(), prod.Count())
	}
	model := prod.Finish(t)
	t.Logf("producer stopped: %d input records over %d keys in %v", prod.Count(), len(model), time.Since(start).Round(time.Millisecond))
	j := s.start(t, nil, "--bounded")
	code, _ := j.wait(t, 120*time.Second)
	if code != 0 {
		t.Fatalf("final bounded run: exit %d, want 0; stderr:\n%s", code, j.stderr.String())
	}
	t.Logf("final bounded run: resumed from %s, exit 0 after %v, %d checkpoints", j.resumed(), time.Since(j.started).Round(time.Millisecond), j.checkpoints())
	return verify(t, s.brokers, s.out, model, guarantee == "exactly-once")
}

// Exactly once under SIGKILL: a read_committed consumer of the output sees,
// for every key, n = 1..N exactly once each with the right sums.
func TestExactlyOnceUnderKills(t *testing.T) {
	records, _ := killAndResume(t, "exactly-once")
	t.Logf("verified %d output records: exactly once", records)
}

// At least once under SIGKILL: nothing is lost; records after the last
// completed checkpoint of a killed run are written again (counted).
func TestAtLeastOnceUnderKills(t *testing.T) {
	records, dups := killAndResume(t, "at-least-once")
	t.Logf("verified %d output records: none lost, %d duplicates", records, dups)
}

// A crash in each window of the exactly-once sink's commit protocol
// (docs/kafka.md, Crash points): the job kills itself at the point
// (WEIR_CRASH_AT) twice in a row, each time resumed with --from latest
// while input keeps coming, then a bounded run finishes; the output is
// exactly once.
func TestCrashInEachCommitWindow(t *testing.T) {
	seed := testseed.New(t)
	for i, point := range []string{"kafka-sink-write", "kafka-sink-after-precommit", "kafka-sink-before-commit", "kafka-sink-after-commit"} {
		t.Run(point, func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, uint64(10+i)))
			s := newSetup(t, "exactly-once")
			keys := 5 + r.IntN(40)
			prod := kafkatest.StartProducer(t, s.brokers, s.in, rand.New(rand.NewPCG(seed, uint64(20+i))), keys)
			for run := range 2 {
				// Hits of the write point count records, the others
				// checkpoints (one hit per sink subtask each).
				n := 2 + r.IntN(6)
				if point == "kafka-sink-write" {
					n = 300 + r.IntN(3000)
				}
				at := fmt.Sprintf("%s:%d", point, n)
				j := s.start(t, []string{"WEIR_CRASH_AT=" + at})
				code, killed := j.wait(t, 60*time.Second)
				if !killed || !strings.Contains(j.stderr.String(), "crash point "+point) {
					t.Fatalf("run %d with WEIR_CRASH_AT=%s: exit %d, not killed at the crash point; stderr:\n%s", run, at, code, j.stderr.String())
				}
				t.Logf("run %d: resumed from %s, crashed at %s after %v, %d checkpoints completed; %d records written so far",
					run, j.resumed(), at, time.Since(j.started).Round(time.Millisecond), j.checkpoints(), prod.Count())
			}
			model := prod.Finish(t)
			j := s.start(t, nil, "--bounded")
			if code, _ := j.wait(t, 120*time.Second); code != 0 {
				t.Fatalf("final bounded run: exit %d, want 0; stderr:\n%s", code, j.stderr.String())
			}
			t.Logf("final bounded run: resumed from %s, exit 0 after %v", j.resumed(), time.Since(j.started).Round(time.Millisecond))
			records, _ := verify(t, s.brokers, s.out, model, true)
			t.Logf("verified %d output records from %d input records: exactly once", records, prod.Count())
		})
	}
}

// A record that is not key<TAB>value fails the job (exit 1) with an error
// naming its topic, partition and offset.
func TestBadRecordFailsNamingItsOffset(t *testing.T) {
	s := newSetup(t, "none")
	kafkatest.Produce(t, s.brokers, s.in, "a\t1", "no tab here")
	args := []string{"run", "kafka-keyed-count", "--rest-address", "", "--brokers", s.brokers, "--input-topic", s.in,
		"--output-topic", s.out, "--guarantee", "none", "--bounded"}
	code, stderr := runWeir(t, 60*time.Second, args...)
	if code != 1 || !strings.Contains(stderr, s.in) || !strings.Contains(stderr, "offset") || !strings.Contains(stderr, "want key<TAB>value") {
		t.Fatalf("exit %d, want 1 and an error naming the topic %s, the partition and offset, and what is wrong; stderr:\n%s", code, s.in, stderr)
	}
	t.Logf("the error: %s", strings.TrimSpace(stderr))
}

// Runs go on from each other's checkpoints whatever their boundedness: a
// bounded run, more input, an unbounded run (killed), more input, a
// bounded run again. The source drops finished bounded partitions from its
// state, and a restored unbounded split has no stop offset; the job keeps
// the first and sets the second, so every record is counted exactly once.
func TestBoundedAndUnboundedRunsContinue(t *testing.T) {
	seed := testseed.New(t)
	r := rand.New(rand.NewPCG(seed, 30))
	s := newSetup(t, "exactly-once")
	keys := 5 + r.IntN(40)
	model := map[string][]int64{}
	add := func(m map[string][]int64) {
		for k, vs := range m {
			model[k] = append(model[k], vs...)
		}
	}
	bounded := func(name string) {
		t.Helper()
		j := s.start(t, nil, "--bounded")
		if code, _ := j.wait(t, 120*time.Second); code != 0 {
			t.Fatalf("%s: exit %d, want 0; stderr:\n%s", name, code, j.stderr.String())
		}
		t.Logf("%s: resumed from %s, exit 0 after %v", name, j.resumed(), time.Since(j.started).Round(time.Millisecond))
	}
	add(produceAll(t, s.brokers, s.in, r, keys, 500+r.IntN(2000)))
	bounded("first bounded run")
	add(produceAll(t, s.brokers, s.in, r, keys, 500+r.IntN(2000)))
	j := s.start(t, nil)
	time.Sleep(time.Duration(1000+r.IntN(2000)) * time.Millisecond)
	j.cmd.Process.Kill()
	j.wait(t, 30*time.Second)
	t.Logf("unbounded run: resumed from %s, killed after %d checkpoints", j.resumed(), j.checkpoints())
	add(produceAll(t, s.brokers, s.in, r, keys, 500+r.IntN(2000)))
	bounded("second bounded run")
	records, _ := verify(t, s.brokers, s.out, model, true)
	t.Logf("verified %d output records: exactly once", records)
}

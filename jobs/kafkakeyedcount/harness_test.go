package kafkakeyedcount_test

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirhq/weir/internal/kafkatest"
)

// The tests run the weir command as a separate process, so that it can be
// killed with SIGKILL (or kill itself at a crash point) like a real job:
// built once per test binary, removed when the tests end.
var weirBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	kafkatest.Main(m, func() {
		if weirBin.dir != "" {
			os.RemoveAll(weirBin.dir)
		}
	})
}

// weir returns the path of the weir binary, building it on first use.
func weir(t *testing.T) string {
	t.Helper()
	weirBin.once.Do(func() {
		start := time.Now()
		gomod, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			weirBin.err = fmt.Errorf("go env GOMOD: %v", err)
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(gomod)))
		if weirBin.dir, err = os.MkdirTemp("", "weir-bin-"); err != nil {
			weirBin.err = err
			return
		}
		weirBin.path = filepath.Join(weirBin.dir, "weir")
		cmd := exec.Command("go", "build", "-o", weirBin.path, "./cmd/weir")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			weirBin.err = fmt.Errorf("go build ./cmd/weir: %v\n%s", err, out)
			return
		}
		t.Logf("built weir in %v", time.Since(start).Round(time.Millisecond))
	})
	if weirBin.err != nil {
		t.Fatal(weirBin.err)
	}
	return weirBin.path
}

// lockedBuffer is a bytes.Buffer written by exec's copying goroutine and
// read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// job is one run of weir run kafka-keyed-count.
type job struct {
	cmd     *exec.Cmd
	stderr  lockedBuffer
	started time.Time
	done    chan struct{}
}

// setup is what the runs of one test share.
type setup struct {
	brokers, in, out, ck string
	guarantee            string
	parallelism          int
	interval             time.Duration
}

func (s setup) args(extra ...string) []string {
	a := []string{"run", "kafka-keyed-count", "--rest-address", "", "--brokers", s.brokers,
		"--input-topic", s.in, "--output-topic", s.out, "--group", "g-" + s.out,
		"--guarantee", s.guarantee, "--checkpoint-dir", s.ck, "--checkpoint-interval", s.interval.String(),
		"--parallelism", strconv.Itoa(s.parallelism), "--from", "latest"}
	if s.guarantee == "exactly-once" {
		a = append(a, "--transactional-id-prefix", "tx-"+s.out)
	}
	return append(a, extra...)
}

// start starts a run with env added to the test's environment.
func (s setup) start(t *testing.T, env []string, extra ...string) *job {
	t.Helper()
	return startWeir(t, env, s.args(extra...)...)
}

// startWeir starts weir with args, env added to the test's environment;
// the test's cleanup kills it if it still runs.
func startWeir(t *testing.T, env []string, args ...string) *job {
	t.Helper()
	j := &job{cmd: exec.Command(weir(t), args...), done: make(chan struct{})}
	j.cmd.Env = append(append(os.Environ(), privateTmp(t), traceback), env...)
	j.cmd.Stderr = &j.stderr
	dieWithParent(j.cmd)
	j.started = time.Now()
	if err := j.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { j.cmd.Wait(); close(j.done) }()
	t.Cleanup(func() {
		j.cmd.Process.Kill()
		<-j.done
	})
	return j
}

// privateTmp gives a weir process a TMPDIR of the test's own: a run the
// test kills cannot remove its state directory (os.MkdirTemp under TMPDIR),
// and the test's cleanup then does.
func privateTmp(t *testing.T) string { return "TMPDIR=" + t.TempDir() }

// traceback makes a run's first SIGQUIT write every goroutine's stack to
// stderr before it cancels (internal/cli): without it only a second SIGQUIT
// does, and the cancel may end a run that overran before then.
const traceback = "WEIR_TRACEBACK=1"

// dumpGrace is how long endWithDump gives a run after each signal.
const dumpGrace = 5 * time.Second

// endWithDump ends a run that overran, with every goroutine's stack on its
// stderr: the first SIGQUIT writes them as they were and cancels
// (traceback); a second, if the cancel has not ended the run within
// dumpGrace, writes them again (where the cancel is stuck) and exits at
// once; SIGKILL ends a run that outlived both (a signal that came before
// the command installed its handler, or after it returned, is swallowed).
func (j *job) endWithDump() {
	for _, sig := range []os.Signal{syscall.SIGQUIT, syscall.SIGQUIT, os.Kill} {
		j.cmd.Process.Signal(sig)
		select {
		case <-j.done:
			return
		case <-time.After(dumpGrace):
		}
	}
	<-j.done
}

// wait waits for the run to end (failing the test after limit, with a
// goroutine dump: endWithDump) and returns its exit code (-1 when killed by
// a signal) and whether SIGKILL ended it.
func (j *job) wait(t *testing.T, limit time.Duration) (code int, killed bool) {
	t.Helper()
	select {
	case <-j.done:
	case <-time.After(limit):
		j.endWithDump()
		t.Fatalf("weir %s did not exit within %v; stderr:\n%s", strings.Join(j.cmd.Args[1:], " "), limit, j.stderr.String())
	}
	ws, _ := j.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return j.cmd.ProcessState.ExitCode(), ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// runWeir runs weir with args to the end and returns its exit code and
// stderr.
func runWeir(t *testing.T, limit time.Duration, args ...string) (int, string) {
	t.Helper()
	j := startWeir(t, nil, args...)
	code, _ := j.wait(t, limit)
	return code, j.stderr.String()
}

// checkpoints counts the checkpoints the run reported complete.
func (j *job) checkpoints() int { return len(completeRE.FindAllString(j.stderr.String(), -1)) }

var completeRE = regexp.MustCompile(`(?m)^weir: checkpoint \d+ complete`)

// resumed says what the run resumed from, from its stderr.
func (j *job) resumed() string {
	s := j.stderr.String()
	if i := strings.Index(s, "weir: resuming from "); i >= 0 {
		rest := s[i+len("weir: resuming from "):]
		if k := strings.IndexByte(rest, '\n'); k >= 0 {
			rest = rest[:k]
		}
		return filepath.Base(rest)
	}
	return "the beginning"
}

// produceAll writes n records at once (a fixed input) and returns the model.
func produceAll(t *testing.T, brokers, topic string, r *rand.Rand, keys, n int) map[string][]int64 {
	t.Helper()
	model := map[string][]int64{}
	recs := make([]*kgo.Record, n)
	for i := range recs {
		k := fmt.Sprintf("k%03d", r.IntN(keys))
		v := int64(r.IntN(2001) - 1000)
		model[k] = append(model[k], v)
		recs[i] = &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte(k + "\t" + strconv.FormatInt(v, 10))}
	}
	kafkatest.ProduceRecords(t, brokers, recs...)
	return model
}

// verify reads the output topic with read_committed and compares it with
// the model (see compare); it fails the test at the first differing key.
func verify(t *testing.T, brokers, topic string, model map[string][]int64, exact bool) (records, duplicates int) {
	t.Helper()
	recs := kafkatest.ReadCommitted(t, brokers, topic)
	duplicates, err := compare(recs, model, exact)
	if err != nil {
		t.Fatal(err)
	}
	return len(recs), duplicates
}

// compare checks output records key<TAB>n<TAB>sum (Kafka key: the key)
// against the model: for every key, the records n = 1..N with the running
// sums of the values written. With exact, each must appear exactly once;
// else at least once (duplicates allowed, and counted). Its error names the
// first differing key with what was expected and what was read.
func compare(recs []*kgo.Record, model map[string][]int64, exact bool) (duplicates int, err error) {
	got := map[string]map[int64][]int64{} // key -> n -> sums read
	for _, r := range recs {
		f := strings.Split(string(r.Value), "\t")
		if len(f) != 3 {
			return 0, fmt.Errorf("output record at partition %d offset %d: %q is not key<TAB>n<TAB>sum", r.Partition, r.Offset, r.Value)
		}
		n, err1 := strconv.ParseInt(f[1], 10, 64)
		sum, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, fmt.Errorf("output record at partition %d offset %d: %q has a count or sum that is not an integer", r.Partition, r.Offset, r.Value)
		}
		if string(r.Key) != f[0] {
			return 0, fmt.Errorf("output record at partition %d offset %d: Kafka key %q, want the counted key %q", r.Partition, r.Offset, r.Key, f[0])
		}
		if got[f[0]] == nil {
			got[f[0]] = map[int64][]int64{}
		}
		got[f[0]][n] = append(got[f[0]][n], sum)
	}
	var keys []string
	want := 0
	for k, vs := range model {
		keys = append(keys, k)
		want += len(vs)
	}
	for k := range got {
		if _, ok := model[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var bad []string
	for _, k := range keys {
		vals := model[k]
		var sum int64
		problem := ""
		for i, v := range vals {
			n := int64(i + 1)
			sum += v
			sums := got[k][n]
			switch {
			case len(sums) == 0:
				problem = fmt.Sprintf("n=%d missing (expected sum %d)", n, sum)
			case slices.ContainsFunc(sums, func(s int64) bool { return s != sum }):
				problem = fmt.Sprintf("n=%d: expected sum %d, got sums %v", n, sum, sums)
			case len(sums) > 1:
				duplicates += len(sums) - 1
				if exact {
					problem = fmt.Sprintf("n=%d (sum %d) read %d times", n, sum, len(sums))
				}
			}
			if problem != "" {
				break
			}
		}
		if problem == "" {
			for _, n := range slices.Sorted(maps.Keys(got[k])) {
				if n < 1 || n > int64(len(vals)) {
					problem = fmt.Sprintf("n=%d (sums %v) beyond the %d values written", n, got[k][n], len(vals))
					break
				}
			}
		}
		if problem != "" {
			sum = 0
			for _, v := range vals {
				sum += v
			}
			bad = append(bad, fmt.Sprintf("key %q (expected n=1..%d, final sum %d; read %d distinct n): %s", k, len(vals), sum, len(got[k]), problem))
		}
	}
	if len(bad) > 0 {
		return duplicates, fmt.Errorf("output of %d records read with read_committed differs from the model of %d input records (%d keys); %d keys differ; the first: %s",
			len(recs), want, len(model), len(bad), bad[0])
	}
	return duplicates, nil
}

// A run that overruns its limit is ended with every goroutine's stack on
// its stderr (endWithDump): the test's failure shows where it hung.
func TestOverrunEndsWithGoroutineDump(t *testing.T) {
	s := setup{brokers: fake(t, "in", "out"), in: "in", out: "out", ck: t.TempDir(),
		guarantee: "at-least-once", parallelism: 1, interval: time.Second}
	j := s.start(t, nil)
	for deadline := time.Now().Add(60 * time.Second); !startedRE.MatchString(j.stderr.String()); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the run did not start; stderr:\n%s", j.stderr.String())
		}
	}
	j.endWithDump()
	stderr := j.stderr.String()
	if !goroutineRE.MatchString(stderr) {
		t.Fatalf("no goroutine dump on stderr (exit %d):\n%s", j.cmd.ProcessState.ExitCode(), stderr)
	}
}

var (
	startedRE   = regexp.MustCompile(`(?m)^weir: job [0-9a-f]{32} started`)
	goroutineRE = regexp.MustCompile(`(?m)^goroutine \d+ \[`)
)

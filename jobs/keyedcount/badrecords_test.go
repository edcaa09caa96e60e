package keyedcount_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/internal/rest"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/jobs/badrecords"
	"github.com/weirhq/weir/jobs/keyedcount"
)

// mixedInput writes n random lines to path: good key<TAB>value lines, blank
// lines, and bad lines of several kinds; the file starts with a UTF-8 byte
// order mark. It returns the expected output (the counts of the good lines
// only, computed here) and the bad lines as "path:line<TAB>text", sorted.
func mixedInput(t *testing.T, path string, r *rand.Rand, n int) (want, bad []string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("\ufeff")
	count, sum := map[string]int64{}, map[string]int64{}
	badKinds := []string{"no tab here", "\t5", "k1\tfive", "k1\t1.5", "k1\t99999999999999999999", "k1"}
	blanks := []string{"", " ", "\t \t", "  "}
	for i := 1; i <= n; i++ {
		switch x := r.IntN(10); {
		case x == 0:
			text := badKinds[r.IntN(len(badKinds))]
			b.WriteString(text + "\n")
			bad = append(bad, fmt.Sprintf("%s:%d\t%s", path, i, text))
		case x == 1 && i > 1:
			b.WriteString(blanks[r.IntN(len(blanks))] + "\n")
		default:
			key := fmt.Sprintf("k%d", r.IntN(7))
			v := r.Int64N(2000) - 1000
			fmt.Fprintf(&b, "%s\t%d\n", key, v)
			count[key]++
			sum[key] += v
			want = append(want, fmt.Sprintf("%s\t%d\t%d", key, count[key], sum[key]))
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	slices.Sort(bad)
	return want, bad
}

// deadLetters reads the dead-letter lines of dir as "source<TAB>record",
// sorted, checking that each says why the record was bad.
func deadLetters(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, l := range committed(t, dir) {
		var d struct{ Source, Error, Record string }
		if err := json.Unmarshal([]byte(l), &d); err != nil || d.Error == "" {
			t.Fatalf("dead letter %q: %v, or no error", l, err)
		}
		out = append(out, d.Source+"\t"+d.Record)
	}
	slices.Sort(out)
	return out
}

func checkpointed(dir string) weir.Config {
	return weir.Config{Parallelism: 2, Checkpointing: &weir.CheckpointConfig{Interval: 50 * time.Millisecond, Dir: filepath.Join(dir, "ck")}}
}

// Under the default policy a bad line ends the job at once with a permanent
// error naming file and line (with checkpoints the restart strategy would
// otherwise restart it for ever); under skip and dead-letter the output is
// the counts of the good lines exactly, and dead-letter writes each bad line
// once with where it came from. Blank lines and the byte order mark are
// never bad.
func TestBadRecordPolicies(t *testing.T) {
	r := testseed.Rand(t, 34)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	want, bad := mixedInput(t, in, r, 3000)
	if len(bad) == 0 {
		t.Fatal("no bad line: the test would prove nothing")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err := keyedcount.Run(ctx, keyedcount.Options{Input: in, Output: filepath.Join(dir, "out-fail"), Config: checkpointed(filepath.Join(dir, "fail"))})
	// The first bad line, by line number.
	first, firstN := "", 0
	for _, b := range bad {
		where, _, _ := strings.Cut(b, "\t")
		var n int
		fmt.Sscanf(where[strings.LastIndex(where, ":")+1:], "%d", &n)
		if first == "" || n < firstN {
			first, firstN = where, n
		}
	}
	wantMsg := fmt.Sprintf("%s line %d: ", in, firstN)
	if err == nil || !failure.IsPermanent(err) || !strings.Contains(err.Error(), wantMsg) {
		t.Fatalf("fail policy: %v (permanent %v), want a permanent error containing %q", err, failure.IsPermanent(err), wantMsg)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("fail policy: the job took %v to fail", took)
	}

	for _, p := range []badrecords.Policy{badrecords.Skip, badrecords.DeadLetter} {
		out, dl := filepath.Join(dir, "out-"+p.String()), ""
		if p == badrecords.DeadLetter {
			dl = filepath.Join(dir, "dead")
		}
		err := keyedcount.Run(ctx, keyedcount.Options{Input: in, Output: out, BadRecords: p, DeadLetter: dl, Config: checkpointed(filepath.Join(dir, p.String()))})
		if err != nil {
			t.Fatalf("%v: %v", p, err)
		}
		if got := committed(t, out); !slices.Equal(got, want) {
			t.Fatalf("%v: %d output lines, want %d", p, len(got), len(want))
		}
		if dl != "" {
			if got := deadLetters(t, dl); !slices.Equal(got, bad) {
				t.Fatalf("dead letters:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(bad, "\n"))
			}
		}
	}
}

// A sum past int64 ends the job at once with a permanent error naming the
// key (it was detected, then retried for ever).
func TestOverflowFailsPermanently(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	os.WriteFile(in, []byte("a\t1\nbig\t9223372036854775807\nbig\t1\n"), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := keyedcount.Run(ctx, keyedcount.Options{Input: in, Output: filepath.Join(dir, "out"), Config: checkpointed(dir)})
	if err == nil || !failure.IsPermanent(err) || !strings.Contains(err.Error(), `key "big": the sum overflows int64`) {
		t.Fatalf("got %v, want a permanent error naming key big", err)
	}
}

// Skipped and dead-lettered lines are counted in the Parse operator's
// numBadRecords, which REST shows.
func TestNumBadRecordsMetric(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	var b strings.Builder
	// Bad lines only in the first half: the job runs on while the last
	// published value is read.
	const n, every = 400, 8
	for i := range n {
		if i%every == 3 && i < n/2 {
			b.WriteString("bad\n")
		} else {
			fmt.Fprintf(&b, "k\t%d\n", i)
		}
	}
	os.WriteFile(in, []byte(b.String()), 0o644)
	cfg := checkpointed(dir)
	cfg.Parallelism = 1
	cfg.RESTAddr = "127.0.0.1:0"
	jobs := make(chan *weir.Job, 1)
	cfg.OnSubmit = func(j *weir.Job) { jobs <- j }
	done := make(chan error, 1)
	go func() {
		done <- keyedcount.Run(context.Background(), keyedcount.Options{Input: in, Output: filepath.Join(dir, "out"), RatePerSecond: 200,
			BadRecords: badrecords.Skip, Config: cfg})
	}()
	j := <-jobs
	c := rest.NewClient(j.RESTAddr(), nil)
	var seen int64
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && seen < n/2/every; time.Sleep(20 * time.Millisecond) {
		d, err := c.Job(context.Background(), j.ID())
		if err != nil {
			break // the job ended
		}
		for _, v := range d.Vertices {
			if !strings.Contains(v.Name, "Parse") {
				continue
			}
			ms, err := c.AggregatedMetrics(context.Background(), j.ID(), v.ID, "Parse."+badrecords.MetricName)
			if err == nil && len(ms) == 1 && ms[0].Sum != nil {
				seen = int64(*ms[0].Sum)
			}
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if seen != n/2/every {
		t.Fatalf("Parse.%s = %d, want %d", badrecords.MetricName, seen, n/2/every)
	}
}

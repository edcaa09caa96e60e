package frauddetection_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/jobs/badrecords"
	"github.com/weirhq/weir/jobs/frauddetection"
	"go.uber.org/goleak"
)

// Skip and dead-letter give exactly the alerts of the good lines (computed
// here by the rule), and dead-letter writes each bad line once with its
// origin; fail, the default, fails permanently naming the first bad line.
// A leading byte order mark and blank lines are not bad.
func TestBadRecordPolicies(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := testseed.Rand(t, 36)
	dir := t.TempDir()
	in := filepath.Join(dir, "tx.jsonl")
	var b strings.Builder
	b.WriteString("\ufeff")
	prev := map[string][2]float64{} // account: ts, amount of its previous transaction
	var want, bad []string
	badKinds := []string{`{"account": "a", "amount": "600", "ts": 1}`, `oops`, `{"account": "a", "ts": 1}`}
	ts := int64(0)
	firstBad := 0
	for i := 1; i <= 3000; i++ {
		switch x := r.IntN(15); {
		case x == 0:
			text := badKinds[r.IntN(len(badKinds))]
			b.WriteString(text + "\n")
			bad = append(bad, fmt.Sprintf("%s:%d\t%s", in, i, text))
			if firstBad == 0 {
				firstBad = i
			}
		case x == 1 && i > 1:
			b.WriteString(" \n")
		default:
			ts += r.Int64N(30_000)
			acc := fmt.Sprintf("acc%d", r.IntN(5))
			amount := []float64{0.5, 0.25, 10, 600, 750.5}[r.IntN(5)]
			fmt.Fprintf(&b, `{"account": %q, "amount": %v, "ts": %d}`+"\n", acc, amount, ts)
			if p, ok := prev[acc]; ok && p[1] < 1 && amount > 500 && ts-int64(p[0]) <= 60_000 {
				want = append(want, fmt.Sprintf("%s/%d/%v", acc, ts, amount))
			}
			prev[acc] = [2]float64{float64(ts), amount}
		}
	}
	os.WriteFile(in, []byte(b.String()), 0o644)
	slices.Sort(want)
	slices.Sort(bad)
	if len(want) == 0 || len(bad) == 0 {
		t.Fatalf("%d alerts, %d bad lines: the test would prove little", len(want), len(bad))
	}

	err := frauddetection.Run(context.Background(), frauddetection.Options{Input: in, Output: filepath.Join(dir, "fail.jsonl"), Parallelism: 2})
	if msg := fmt.Sprintf("%s line %d: ", in, firstBad); err == nil || !failure.IsPermanent(err) || !strings.Contains(err.Error(), msg) {
		t.Fatalf("fail: %v, want a permanent error containing %q", err, msg)
	}
	for _, p := range []badrecords.Policy{badrecords.Skip, badrecords.DeadLetter} {
		o := frauddetection.Options{Input: in, Output: filepath.Join(dir, p.String()+".jsonl"), Parallelism: 2, BadRecords: p}
		if p == badrecords.DeadLetter {
			o.DeadLetter = filepath.Join(dir, "dead.jsonl")
		}
		if err := frauddetection.Run(context.Background(), o); err != nil {
			t.Fatalf("%v: %v", p, err)
		}
		if got := readAlerts(t, o.Output); !slices.Equal(got, want) {
			t.Fatalf("%v: alerts %v, want %v", p, got, want)
		}
		if o.DeadLetter == "" {
			continue
		}
		data, _ := os.ReadFile(o.DeadLetter)
		var got []string
		for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			var d struct{ Source, Error, Record string }
			if err := json.Unmarshal([]byte(l), &d); err != nil || d.Error == "" {
				t.Fatalf("dead letter %q: %v", l, err)
			}
			got = append(got, d.Source+"\t"+d.Record)
		}
		slices.Sort(got)
		if !slices.Equal(got, bad) {
			t.Fatalf("dead letters\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(bad, "\n"))
		}
	}
}

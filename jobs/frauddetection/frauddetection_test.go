package frauddetection_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/weirhq/weir/internal/testseed"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/jobs/frauddetection"
	"go.uber.org/goleak"
)

func seed(t *testing.T) uint64 { t.Helper(); return testseed.New(t) }

type tx struct {
	Account string  `json:"account"`
	Amount  float64 `json:"amount"`
	TS      int64   `json:"ts"`
}

// reference applies the rule in file order with a map of the previous
// transaction of every account, never forgetting anything.
func reference(txs []tx) []string {
	prev := map[string]tx{}
	var alerts []string
	for _, t := range txs {
		if p, ok := prev[t.Account]; ok && t.Amount > 500 && p.Amount < 1 && p.TS <= t.TS && t.TS-p.TS <= 60000 {
			alerts = append(alerts, fmt.Sprintf("%s/%d/%v", t.Account, t.TS, t.Amount))
		}
		prev[t.Account] = t
	}
	slices.Sort(alerts)
	return alerts
}

// generate makes transactions whose timestamps jitter by at most ooo/2
// around a baseline that only moves forward, so each is at most ooo behind
// the highest before it: the bounded out-of-orderness the job is told.
func generate(rng *rand.Rand, n, accounts int, ooo int64) []tx {
	out := make([]tx, n)
	base := int64(1_700_000_000_000) // moves forward only; timestamps jitter around it
	for i := range out {
		base += int64(rng.IntN(3)) * 700
		var amount float64
		switch rng.IntN(10) {
		case 0, 1, 2:
			amount = float64(rng.IntN(100)) / 100 // below 1.00 (0.00 .. 0.99)
		case 3, 4, 5:
			amount = 500 + float64(rng.IntN(100000))/100 // 500.00 .. 1499.99
		default:
			amount = float64(rng.IntN(60000)) / 100
		}
		if rng.IntN(50) == 0 {
			amount = []float64{1.00, 500.00, 0.999, 500.001}[rng.IntN(4)] // at the thresholds
		}
		jitter := int64(0)
		if ooo > 0 {
			jitter = rng.Int64N(ooo+1) - ooo/2
		}
		out[i] = tx{Account: fmt.Sprintf("acc-%d", rng.IntN(accounts)), Amount: amount, TS: base + jitter}
	}
	return out
}

func writeInput(t *testing.T, txs []tx) string {
	path := filepath.Join(t.TempDir(), "tx.jsonl")
	var b strings.Builder
	for _, x := range txs {
		line, _ := json.Marshal(x)
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readAlerts(t *testing.T, path string) []string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var a tx
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			t.Fatalf("output line %q: %v", sc.Text(), err)
		}
		got = append(got, fmt.Sprintf("%s/%d/%v", a.Account, a.TS, a.Amount))
	}
	slices.Sort(got)
	return got
}

func TestFraudDetectionMatchesReference(t *testing.T) {
	defer goleak.VerifyNone(t)
	rng := rand.New(rand.NewPCG(seed(t), 4))
	const ooo = 5000
	n := 60_000
	if testing.Short() {
		n = 5000
	}
	txs := generate(rng, n, 300, ooo)
	in := writeInput(t, txs)
	want := reference(txs)
	if len(want) < 10 {
		t.Fatalf("the generated input has only %d alerts; the test would prove little", len(want))
	}
	for _, backend := range []string{"hashmap", "pebble"} {
		for _, p := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("%s/parallelism=%d", backend, p), func(t *testing.T) {
				out := filepath.Join(t.TempDir(), "alerts.jsonl")
				err := frauddetection.Run(context.Background(), frauddetection.Options{
					Input: in, Output: out, Parallelism: p, StateBackend: backend, MaxOutOfOrderness: ooo * time.Millisecond,
					// Frequent watermarks make cleanup timers fire during the run,
					// so the test checks that cleanup never drops state that matters.
					WatermarkInterval: time.Millisecond,
				})
				if err != nil {
					t.Fatal(err)
				}
				got := readAlerts(t, out)
				if !slices.Equal(got, want) {
					t.Fatalf("%d alerts, want %d; first differences: %v", len(got), len(want), firstDiff(got, want))
				}
			})
		}
	}
}

func firstDiff(got, want []string) string {
	g, w := map[string]int{}, map[string]int{}
	for _, s := range got {
		g[s]++
	}
	for _, s := range want {
		w[s]++
	}
	var d []string
	for s, n := range w {
		if g[s] != n && len(d) < 5 {
			d = append(d, fmt.Sprintf("missing %s", s))
		}
	}
	for s, n := range g {
		if w[s] != n && len(d) < 10 {
			d = append(d, fmt.Sprintf("extra %s", s))
		}
	}
	return strings.Join(d, "; ")
}

func TestBadLineIsNamed(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte(`{"account": "a", "amount": 0.5, "ts": 1}
{"account": "a", "amount": "lots", "ts": 2}
`), 0o644)
	err := frauddetection.Run(context.Background(), frauddetection.Options{Input: in, Output: filepath.Join(dir, "out")})
	if err == nil || !strings.Contains(err.Error(), in+" line 2") || !strings.Contains(err.Error(), `operator "Parse"`) {
		t.Fatalf("got %v", err)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct{ line, err string }{
		{`{"account": "x", "amount": 1.5, "ts": 10}`, ""},
		{`{"account": "x", "amount": 1.5}`, `no "ts"`},
		{`{"amount": 1.5, "ts": 1}`, `no "account"`},
		{`{"account": "x", "amount": 1.5, "ts": 1.5}`, "not an integer"},
		{`nope`, "not a JSON transaction"},
	} {
		_, err := frauddetection.Parse(file.Line{Path: "in.jsonl", Number: 7, Text: tc.line})
		if (err == nil) != (tc.err == "") || (err != nil && (!strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "in.jsonl line 7: "))) {
			t.Errorf("Parse(%q) = %v, want error containing %q", tc.line, err, tc.err)
		}
	}
}

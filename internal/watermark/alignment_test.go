package watermark

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/weirhq/weir/internal/goldentrace"
	"github.com/weirhq/weir/internal/testseed"
)

// TestAlignmentTraces runs Alignment through testdata/alignment/*.txt:
//
//	new drift=100
//	report id=s0 w=10     a reader's watermark report (w=min: the minimum)
//	idle id=s0 / finished id=s0 / remove id=s0
//	pause w=150           would a reader at 150 pause now?
//
// Each prints the group state (allowed and every reader).
func TestAlignmentTraces(t *testing.T) {
	goldentrace.RunAll(t, "testdata/alignment/*.txt", 3, func(t *testing.T, path string) {
		rec := goldentrace.NewRecorder(path, *rewrite)
		var a *Alignment
		for _, blk := range goldentrace.Parse(t, path) {
			f := strings.Fields(blk.Cmd)
			args := map[string]string{}
			for _, x := range f[1:] {
				k, v, _ := strings.Cut(x, "=")
				args[k] = v
			}
			num := func(k string) int64 {
				if args[k] == "min" {
					return math.MinInt64
				}
				n, err := strconv.ParseInt(args[k], 10, 64)
				if err != nil {
					t.Fatalf("%s:%d: %s=%q: %v", path, blk.Line, k, args[k], err)
				}
				return n
			}
			if f[0] != "new" && a == nil {
				t.Fatalf("%s:%d: trace must start with new", path, blk.Line)
			}
			var got []string
			switch f[0] {
			case "new":
				a = NewAlignment(num("drift"))
			case "report":
				a.Report(args["id"], num("w"))
			case "idle":
				a.Idle(args["id"])
			case "finished":
				a.Finished(args["id"])
			case "remove":
				a.Remove(args["id"])
			case "pause":
				got = append(got, fmt.Sprintf("pause=%t", ShouldPause(num("w"), a.Allowed())))
			default:
				t.Fatalf("%s:%d: unknown command %q", path, blk.Line, f[0])
			}
			got = append(got, a.String())
			rec.Check(t, blk, got)
		}
		rec.Finish(t)
	})
}

// TestAlignmentAgainstModel: Allowed equals the minimum over the readers'
// last reports, leaving out those whose last word was idle or that
// finished, plus the drift — recomputed from the history.
func TestAlignmentAgainstModel(t *testing.T) {
	r := testseed.Rand(t, 2)
	for iter := range 2000 {
		drift := int64(r.IntN(50))
		a := NewAlignment(drift)
		type ev struct {
			id   string
			kind int // 0 report, 1 idle, 2 finished
			wm   int64
		}
		var hist []ev
		for range 1 + r.IntN(40) {
			e := ev{id: fmt.Sprint("r", r.IntN(4)), kind: []int{0, 0, 0, 1, 2}[r.IntN(5)], wm: int64(r.IntN(200))}
			hist = append(hist, e)
			switch e.kind {
			case 0:
				a.Report(e.id, e.wm)
			case 1:
				a.Idle(e.id)
			case 2:
				a.Finished(e.id)
			}
			// The model: per reader, finished if it ever finished; else its
			// last event decides (idle, or a report's watermark).
			lo, any := int64(math.MaxInt64), false
			for _, id := range []string{"r0", "r1", "r2", "r3"} {
				fin, last := false, -1
				for i, h := range hist {
					if h.id == id {
						fin = fin || h.kind == 2
						if h.kind != 2 {
							last = i
						}
					}
				}
				if fin || last < 0 || hist[last].kind == 1 {
					continue
				}
				lo, any = min(lo, hist[last].wm), true
			}
			want := int64(math.MaxInt64)
			if any {
				want = lo + drift
			}
			if got := a.Allowed(); got != want {
				t.Fatalf("iteration %d: after %+v: allowed %d, model %d", iter, hist, got, want)
			}
		}
	}
}

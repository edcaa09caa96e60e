package weir

import (
	"math"
	"testing"

	"github.com/weirhq/weir/internal/operator"
)

type watermarkRecorder struct{ wms []int64 }

func (r *watermarkRecorder) ProcessElement(int64, int64) {}
func (r *watermarkRecorder) ProcessWatermark(wm int64)   { r.wms = append(r.wms, wm) }

// Timestamps near math.MinInt64 must not wrap the watermark around to a huge
// value that fires every timer at once (max - delay - 1 must not overflow).
func TestWatermarkNearMinimumDoesNotWrap(t *testing.T) {
	for _, tc := range []struct {
		ts, delay, want int64 // want: the watermark, or MinInt64 for none
	}{
		{math.MinInt64 + 3, 5000, math.MinInt64},
		{math.MinInt64, 0, math.MinInt64},
		{math.MinInt64 + 1, 0, math.MinInt64}, // max-0-1 is the minimum itself: nothing new
		{math.MinInt64 + 2, 0, math.MinInt64 + 1},
		{math.MinInt64 + 5001, 5000, math.MinInt64},
		{math.MinInt64 + 5002, 5000, math.MinInt64 + 1},
		{math.MaxInt64, 5000, math.MaxInt64 - 5001},
	} {
		rec := &watermarkRecorder{}
		cur := 0
		ctx := operator.NewContext(&cur, 0)
		o := &watermarkOp[int64]{ts: func(v int64) int64 { return v }, delay: tc.delay, out: rec, ctx: ctx, max: math.MinInt64,
			watermarkEmitter: watermarkEmitter{interval: 200, emitted: math.MinInt64}}
		o.ProcessElement(tc.ts, 0)
		o.OnProcessingTime(0)
		got := int64(math.MinInt64)
		if len(rec.wms) > 0 {
			got = rec.wms[len(rec.wms)-1]
		}
		if got != tc.want {
			t.Errorf("ts %d, out-of-orderness %d ms: watermark %d, want %d", tc.ts, tc.delay, got, tc.want)
		}
	}
}

// twoWatermarks follows Flink's IndexedCombinedWatermarkStatus: the
// minimum over inputs that are not idle, the larger of both when both are
// idle, never going back.
func TestTwoWatermarksIdleness(t *testing.T) {
	type step struct {
		input int
		wm    int64 // 0: a status step
		idle  bool
		want  int64 // the combined watermark after the step
		rose  bool
	}
	w := newTwoWatermarks()
	for i, s := range []step{
		{input: 0, wm: 100, want: math.MinInt64},
		{input: 1, idle: true, want: 100, rose: true}, // input 1 leaves the minimum
		{input: 0, wm: 150, want: 150, rose: true},
		{input: 1, idle: false, want: 150},            // back, behind: holds, never goes back
		{input: 0, wm: 200, want: 150},                // held by input 1 at the minimum
		{input: 1, wm: 170, want: 170, rose: true},    // caught up partly
		{input: 0, idle: true, want: 170},             // only input 1 counts
		{input: 1, idle: true, want: 200, rose: true}, // both idle: the larger
		{input: 0, idle: false, want: 200},
		{input: 0, wm: 190, want: 200}, // still behind
		{input: 1, idle: false, want: 200},
		{input: 0, wm: 260, want: 200},
		{input: 1, wm: 250, want: 250, rose: true},
	} {
		var rose bool
		if s.wm != 0 {
			rose = w.update(s.input, s.wm)
		} else {
			rose = w.setIdle(s.input, s.idle)
		}
		if w.wm != s.want || rose != s.rose {
			t.Fatalf("step %d %+v: combined %d (rose %v), want %d (rose %v)", i, s, w.wm, rose, s.want, s.rose)
		}
	}
}

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
// value that fires every timer at once (max - delay - 1 used to overflow).
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

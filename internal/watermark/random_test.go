package watermark

import (
	"fmt"
	"math"
	"testing"

	"github.com/weirhq/weir/internal/testseed"
)

// valveModel is the valve's definition without idleness, computed from the
// whole history: a channel's watermark is the largest it sent; the candidate
// is the smallest over channels that have not ended; the output is the
// largest candidate so far, reported when it grows.
type valveModel struct {
	sent    [][]int64
	ended   []bool
	emitted []int64
}

func (m *valveModel) step(ch int, w int64, end bool) (int64, bool) {
	if end {
		m.ended[ch] = true
	} else if !m.ended[ch] {
		m.sent[ch] = append(m.sent[ch], w)
	}
	cand, live := int64(math.MaxInt64), false
	for c, ws := range m.sent {
		if m.ended[c] {
			continue
		}
		chWM := int64(math.MinInt64)
		for _, x := range ws {
			chWM = max(chWM, x)
		}
		cand, live = min(cand, chWM), true
	}
	best := int64(math.MinInt64)
	for _, e := range m.emitted {
		best = max(best, e)
	}
	if !live || cand <= best {
		return 0, false
	}
	m.emitted = append(m.emitted, cand)
	return cand, true
}

// TestValveAgainstModel: without idleness the valve is the plain minimum.
func TestValveAgainstModel(t *testing.T) {
	r := testseed.Rand(t, 0)
	for iter := range 3000 {
		n := 1 + r.IntN(6)
		v := NewValve(n)
		m := &valveModel{sent: make([][]int64, n), ended: make([]bool, n)}
		var trace []string
		for range 1 + r.IntN(60) {
			ch := r.IntN(n)
			isEnd := r.IntN(12) == 0
			w := int64(r.IntN(100)) - 10 // small range: many ties and regressions
			var res Result
			if isEnd {
				trace = append(trace, fmt.Sprintf("end(%d)", ch))
				res = v.End(ch)
			} else {
				trace = append(trace, fmt.Sprintf("wm(%d,%d)", ch, w))
				res = v.Watermark(ch, w)
			}
			want, wantAdv := m.step(ch, w, isEnd)
			if res.Advanced != wantAdv || (wantAdv && res.Watermark != want) || res.Status {
				t.Fatalf("iteration %d, %d channels: after %v: valve %+v, model (%d, %t)",
					iter, n, trace, res, want, wantAdv)
			}
		}
	}
}

// TestValveIdleProperties drives random histories with idleness and checks
// what must hold whatever the order: the output never goes back; no
// watermark is emitted while idle and none above every live channel's
// (or, when all are idle, above their largest); the output is idle exactly
// when every live channel is idle after a status change; an output that is
// active and whose channels are all active and caught up equals their
// minimum.
func TestValveIdleProperties(t *testing.T) {
	r := testseed.Rand(t, 1)
	for iter := range 3000 {
		n := 1 + r.IntN(5)
		v := NewValve(n)
		wms := make([]int64, n)
		for i := range wms {
			wms[i] = math.MinInt64
		}
		ended := make([]bool, n)
		last, idle := int64(math.MinInt64), false
		var trace []string
		for range 1 + r.IntN(60) {
			ch := r.IntN(n)
			var res Result
			switch k := r.IntN(10); {
			case k < 5:
				w := int64(r.IntN(100))
				trace = append(trace, fmt.Sprintf("wm(%d,%d)", ch, w))
				res = v.Watermark(ch, w)
				if !ended[ch] {
					wms[ch] = max(wms[ch], w)
				}
			case k < 7:
				trace = append(trace, fmt.Sprintf("idle(%d)", ch))
				res = v.Idle(ch)
			case k < 9:
				trace = append(trace, fmt.Sprintf("active(%d)", ch))
				res = v.Active(ch)
			default:
				trace = append(trace, fmt.Sprintf("end(%d)", ch))
				res = v.End(ch)
				ended[ch] = true
			}
			fail := func(msg string) {
				t.Fatalf("iteration %d: after %v: %s (result %+v, valve %s)", iter, trace, msg, res, v)
			}
			if res.Status {
				if res.Idle == idle {
					fail("status change to the same status")
				}
				idle = res.Idle
			}
			if res.Advanced {
				if res.Watermark <= last {
					fail("watermark went back or repeated")
				}
				if idle && !(res.Status && res.Idle) {
					fail("watermark while idle")
				}
				hi := int64(math.MinInt64)
				for c := range wms {
					if !ended[c] {
						hi = max(hi, wms[c])
					}
				}
				if res.Watermark > hi {
					fail("watermark above every live channel")
				}
				last = res.Watermark
			}
			if v.Current() != last || v.OutputIdle() != idle {
				fail("state differs from what was emitted")
			}
		}
	}
}

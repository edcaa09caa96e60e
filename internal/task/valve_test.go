package task

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// valveStep is a watermark from a channel (end=false) or the end of a
// channel (end=true), and the input watermark the valve must then report
// ("-" if it does not advance).
type valveStep struct {
	ch   int
	wm   int64
	end  bool
	want string
}

func wm(ch int, w int64, want string) valveStep { return valveStep{ch: ch, wm: w, want: want} }
func end(ch int, want string) valveStep         { return valveStep{ch: ch, end: true, want: want} }

func TestValve(t *testing.T) {
	for _, tc := range []struct {
		name     string
		channels int
		steps    []valveStep
	}{
		{"one channel passes its watermarks through", 1, []valveStep{
			wm(0, 5, "5"), wm(0, 7, "7"), wm(0, 7, "-"), wm(0, 100, "100"),
		}},
		{"minimum over channels", 3, []valveStep{
			wm(0, 10, "-"), wm(1, 20, "-"), wm(2, 5, "5"),
			wm(2, 30, "10"), wm(0, 25, "20"), wm(1, 40, "25"),
		}},
		{"monotone per channel: a smaller watermark is ignored", 2, []valveStep{
			wm(0, 10, "-"), wm(1, 10, "10"), wm(0, 3, "-"), wm(1, 12, "-"), wm(0, 11, "11"),
		}},
		{"the input watermark never goes back", 2, []valveStep{
			wm(0, 10, "-"), wm(1, 10, "10"), wm(1, 9, "-"), wm(0, 9, "-"),
		}},
		{"an ended channel leaves the minimum", 3, []valveStep{
			wm(0, 10, "-"), wm(1, 20, "-"), end(2, "10"), end(0, "20"), wm(1, 30, "30"),
		}},
		{"an end that does not change the minimum", 2, []valveStep{
			wm(0, 10, "-"), wm(1, 20, "10"), end(1, "-"), wm(0, 15, "15"),
		}},
		{"a channel that ends before any watermark", 2, []valveStep{
			end(0, "-"), wm(1, 7, "7"),
		}},
		{"all channels ended: the watermark stays where it was", 2, []valveStep{
			wm(0, 10, "-"), wm(1, 4, "4"), end(1, "10"), end(0, "-"),
		}},
		{"watermarks of an ended channel are ignored", 2, []valveStep{
			wm(0, 10, "-"), end(0, "-"), wm(0, 50, "-"), wm(1, 20, "20"),
		}},
		{"extreme values", 2, []valveStep{
			wm(0, math.MinInt64, "-"), wm(1, math.MaxInt64, "-"), wm(0, math.MaxInt64, fmt.Sprint(int64(math.MaxInt64))),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newValve(tc.channels)
			for k, s := range tc.steps {
				var got int64
				var adv bool
				if s.end {
					got, adv = v.end(s.ch)
				} else {
					got, adv = v.watermark(s.ch, s.wm)
				}
				g := "-"
				if adv {
					g = fmt.Sprint(got)
				}
				if g != s.want {
					t.Fatalf("step %d (%+v): got %s, want %s", k, s, g, s.want)
				}
			}
		})
	}
}

// valveModel is the valve's definition, computed from the whole history:
// a channel's watermark is the largest it sent; the input's candidate is the
// smallest over channels that have not ended; the input watermark is the
// largest candidate so far, reported when it grows.
type valveModel struct {
	sent    [][]int64
	ended   []bool
	emitted []int64
}

func (m *valveModel) step(ch int, w int64, end bool) (int64, bool) {
	if end {
		m.ended[ch] = true
	} else {
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

func TestValveAgainstModel(t *testing.T) {
	seed := rand.Uint64()
	if s := os.Getenv("WEIR_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("WEIR_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (WEIR_SEED=%d reproduces this run)", seed, seed)
	r := rand.New(rand.NewPCG(seed, 0))
	for iter := range 3000 {
		n := 1 + r.IntN(6)
		v := newValve(n)
		m := &valveModel{sent: make([][]int64, n), ended: make([]bool, n)}
		var trace []string
		for range 1 + r.IntN(60) {
			ch := r.IntN(n)
			isEnd := r.IntN(12) == 0
			w := int64(r.IntN(100)) - 10 // small range: many ties and regressions
			var got, want int64
			var gotAdv, wantAdv bool
			if isEnd {
				trace = append(trace, fmt.Sprintf("end(%d)", ch))
				got, gotAdv = v.end(ch)
			} else {
				trace = append(trace, fmt.Sprintf("wm(%d,%d)", ch, w))
				got, gotAdv = v.watermark(ch, w)
			}
			want, wantAdv = m.step(ch, w, isEnd)
			if gotAdv != wantAdv || (wantAdv && got != want) {
				t.Fatalf("iteration %d, %d channels: after %v: valve (%d, %t), model (%d, %t)",
					iter, n, trace, got, gotAdv, want, wantAdv)
			}
		}
	}
}

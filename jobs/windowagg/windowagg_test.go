package windowagg_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/jobs/windowagg"
)

// event is an input element of the reference.
type event struct {
	ts, value int64
	key       string
	text      string
}

// genInput writes n random JSON lines: timestamps mostly increasing, some
// out of order within about ooo, some far behind (late); a few keys.
func genInput(r *rand.Rand, path string, n, keys int, ooo int64) []event {
	var b strings.Builder
	evs := make([]event, 0, n)
	t := r.Int64N(1000) - 500 // negative timestamps too
	for range n {
		t += r.Int64N(30)
		ts := t - r.Int64N(ooo+1)
		if r.IntN(20) == 0 {
			ts = t - r.Int64N(600) // far behind
		}
		e := event{ts: ts, value: r.Int64N(2001) - 1000, key: fmt.Sprintf("k%d", r.IntN(keys))}
		e.text = fmt.Sprintf(`{"ts": %d, "key": %q, "value": %d}`, e.ts, e.key, e.value)
		evs = append(evs, e)
		b.WriteString(e.text + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		panic(err)
	}
	return evs
}

type win struct{ start, end int64 }

type acc struct{ count, sum, min, max int64 }

func (a acc) add(v int64) acc {
	if a.count == 0 {
		a.min, a.max = v, v
	}
	a.count++
	a.sum += v
	a.min, a.max = min(a.min, v), max(a.max, v)
	return a
}

func (a acc) merge(b acc) acc {
	if a.count == 0 {
		return b
	}
	return acc{a.count + b.count, a.sum + b.sum, min(a.min, b.min), max(a.max, b.max)}
}

func line(key string, w win, a acc) string {
	return fmt.Sprintf(`{"key": %q, "window_start": %d, "window_end": %d, "count": %d, "sum": %d, "min": %d, "max": %d}`,
		key, w.start, w.end, a.count, a.sum, a.min, a.max)
}

// reference computes window-agg's output from the rules of
// docs/windows.md and Flink's reference directly, without timers: elements
// in file order, the watermark after each (highest ts - ooo - 1), windows
// by their definition.
func reference(evs []event, sp windowagg.Spec, ooo, lateness int64) (results, late []string) {
	return referenceDrained(evs, sp, ooo, lateness, -1)
}

// referenceDrained is reference with a stop with --drain before element
// drainAt (-1: none): every window fires and is purged as at the end of
// input, and the run resumed from the savepoint goes on with the watermark
// of before the drain (the maximum watermark is not kept in checkpoints).
func referenceDrained(evs []event, sp windowagg.Spec, ooo, lateness int64, drainAt int) (results, late []string) {
	wm, maxTs := int64(math.MinInt64), int64(math.MinInt64)
	maxOf := func(w win) int64 { return w.end - 1 }
	cleanup := func(w win) int64 { return maxOf(w) + lateness }
	type kw struct {
		key string
		w   win
	}
	state := map[kw]acc{}          // tumbling and sliding
	sessions := map[string][]win{} // session windows per key
	emit := func(key string, w win) { results = append(results, line(key, w, state[kw{key, w}])) }

	windowsOf := func(ts int64) []win {
		size, slide := sp.Size.Milliseconds(), sp.Size.Milliseconds()
		if sp.Kind == "sliding" {
			slide = sp.Slide.Milliseconds()
		}
		var ws []win
		// every start k*slide (offset 0) with start <= ts < start+size
		for k := ts/slide + 1; k*slide > ts-size-slide; k-- {
			if s := k * slide; s <= ts && ts < s+size {
				ws = append(ws, win{s, s + size})
			}
		}
		return ws
	}
	advance := func(nwm int64) {
		for k, a := range state {
			if wm < maxOf(k.w) && maxOf(k.w) <= nwm {
				results = append(results, line(k.key, k.w, a))
			}
		}
		for k := range state {
			if cleanup(k.w) <= nwm {
				delete(state, k)
				if sp.Kind == "session" {
					sessions[k.key] = slices.DeleteFunc(sessions[k.key], func(w win) bool { return w == k.w })
				}
			}
		}
		wm = nwm
	}
	for i, e := range evs {
		if i == drainAt {
			before := wm
			advance(math.MaxInt64)
			wm = before
		}
		if sp.Kind == "session" {
			gap := sp.Gap.Milliseconds()
			n := win{e.ts, e.ts + gap}
			merged, a := n, acc{}
			var rest []win
			for _, s := range sessions[e.key] {
				if s.start <= n.end && s.end >= n.start {
					merged = win{min(merged.start, s.start), max(merged.end, s.end)}
					a = a.merge(state[kw{e.key, s}])
					delete(state, kw{e.key, s})
				} else {
					rest = append(rest, s)
				}
			}
			if merged == n && cleanup(n) <= wm && len(rest) == len(sessions[e.key]) {
				if e.ts+lateness <= wm {
					late = append(late, e.text)
				}
			} else {
				sessions[e.key] = append(rest, merged)
				state[kw{e.key, merged}] = a.add(e.value)
				if maxOf(merged) <= wm {
					emit(e.key, merged)
				}
			}
		} else {
			skipped := true
			for _, w := range windowsOf(e.ts) {
				if cleanup(w) <= wm {
					continue
				}
				skipped = false
				state[kw{e.key, w}] = state[kw{e.key, w}].add(e.value)
				if maxOf(w) <= wm {
					emit(e.key, w)
				}
			}
			if skipped && e.ts+lateness <= wm {
				late = append(late, e.text)
			}
		}
		maxTs = max(maxTs, e.ts)
		if nwm := maxTs - ooo - 1; nwm > wm {
			advance(nwm)
		}
	}
	advance(math.MaxInt64)
	slices.Sort(results)
	slices.Sort(late)
	return results, late
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		lines = nil
	}
	slices.Sort(lines)
	return lines
}

// window-agg's output equals the reference on random out-of-order input
// with late elements, for every window kind, with and without allowed
// lateness, at parallelism 1 and 4, on both backends.
func TestWindowAggMatchesReference(t *testing.T) {
	seed := testseed.New(t)
	r := rand.New(rand.NewPCG(seed, 9))
	n := 1500
	if testing.Short() {
		n = 400
	}
	for _, kind := range []string{"tumbling", "sliding", "session"} {
		for _, withLateness := range []bool{false, true} {
			for _, p := range []int{1, 4} {
				for _, backend := range []string{"hashmap", "pebble"} {
					name := fmt.Sprintf("%s/lateness=%t/p=%d/%s", kind, withLateness, p, backend)
					ooo := r.Int64N(60)
					var sp windowagg.Spec
					switch kind {
					case "tumbling":
						sp = windowagg.Spec{Kind: kind, Size: time.Duration(20+r.Int64N(200)) * time.Millisecond}
					case "sliding":
						sp = windowagg.Spec{Kind: kind, Size: time.Duration(50+r.Int64N(200)) * time.Millisecond, Slide: time.Duration(10+r.Int64N(60)) * time.Millisecond}
					case "session":
						sp = windowagg.Spec{Kind: kind, Gap: time.Duration(5+r.Int64N(60)) * time.Millisecond}
					}
					var lateness int64
					if withLateness {
						lateness = 1 + r.Int64N(300)
					}
					caseSeed := r.Uint64()
					t.Run(name, func(t *testing.T) {
						t.Logf("seed %d, window %+v, out-of-orderness %dms, lateness %dms", seed, sp, ooo, lateness)
						dir := t.TempDir()
						in := filepath.Join(dir, "in.jsonl")
						evs := genInput(rand.New(rand.NewPCG(caseSeed, 1)), in, n, 5, ooo)
						o := windowagg.Options{Input: in, Output: filepath.Join(dir, "out.jsonl"), LateOutput: filepath.Join(dir, "late.jsonl"),
							Window: sp, OutOfOrderness: time.Duration(ooo) * time.Millisecond, AllowedLateness: time.Duration(lateness) * time.Millisecond,
							Punctuated: true, Config: weir.Config{Parallelism: p, StateBackend: backend, StateDir: filepath.Join(dir, "state"), RESTAddr: ""}}
						if err := windowagg.Run(context.Background(), o); err != nil {
							t.Fatal(err)
						}
						wantRes, wantLate := reference(evs, sp, ooo, lateness)
						gotRes, gotLate := readLines(t, o.Output), readLines(t, o.LateOutput)
						if len(wantRes) == 0 {
							t.Fatal("the reference fired no window: the test input is too small")
						}
						diff(t, "results", gotRes, wantRes)
						diff(t, "late elements", gotLate, wantLate)
					})
				}
			}
		}
	}
}

// diff reports the first differences of two sorted line lists.
func diff(t *testing.T, what string, got, want []string) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	var extra, missing []string
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case j == len(want) || (i < len(got) && got[i] < want[j]):
			extra = append(extra, got[i])
			i++
		case i == len(got) || got[i] > want[j]:
			missing = append(missing, want[j])
			j++
		default:
			i++
			j++
		}
	}
	t.Errorf("%s: %d lines, want %d; %d unexpected, first %q; %d missing, first %q",
		what, len(got), len(want), len(extra), first(extra), len(missing), first(missing))
}

func first(s []string) []string { return s[:min(3, len(s))] }

package watermark

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/weirhq/weir/internal/goldentrace"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/*.txt")

// TestTraces runs the Valve through the traces in testdata. Commands:
//
//	new channels=3
//	wm ch=0 w=10        a watermark (w=min / w=max for the extremes)
//	idle ch=0           an IDLE status
//	active ch=0         an ACTIVE status
//	data ch=0           records (make an idle channel active)
//	end ch=0            the channel ended
//	add                 a new channel (a new source split)
//
// Each prints what the output emits, in the order Result prescribes
// ("(nothing)" if nothing), then the valve's state. Run with -rewrite to
// regenerate the expected output.
func TestTraces(t *testing.T) {
	goldentrace.RunAll(t, "testdata/*.txt", 6, func(t *testing.T, path string) {
		rec := goldentrace.NewRecorder(path, *rewrite)
		var v *Valve
		for _, blk := range goldentrace.Parse(t, path) {
			f := strings.Fields(blk.Cmd)
			args := map[string]string{}
			for _, a := range f[1:] {
				k, val, _ := strings.Cut(a, "=")
				args[k] = val
			}
			num := func(k string) int64 {
				switch args[k] {
				case "min":
					return math.MinInt64
				case "max":
					return math.MaxInt64
				}
				n, err := strconv.ParseInt(args[k], 10, 64)
				if err != nil {
					t.Fatalf("%s:%d: %s=%q: %v", path, blk.Line, k, args[k], err)
				}
				return n
			}
			if f[0] != "new" && v == nil {
				t.Fatalf("%s:%d: trace must start with new", path, blk.Line)
			}
			var r Result
			var got []string
			switch f[0] {
			case "new":
				v = NewValve(int(num("channels")))
			case "wm":
				r = v.Watermark(int(num("ch")), num("w"))
			case "idle":
				r = v.Idle(int(num("ch")))
			case "active":
				r = v.Active(int(num("ch")))
			case "data":
				if ch := int(num("ch")); v.ChannelIdle(ch) {
					r = v.Active(ch)
				}
			case "end":
				r = v.End(int(num("ch")))
			case "add":
				var i int
				i, r = v.Add()
				got = append(got, fmt.Sprintf("channel %d", i))
			default:
				t.Fatalf("%s:%d: unknown command %q", path, blk.Line, f[0])
			}
			got = append(got, render(r)...)
			checkInvariants(t, v, path, blk.Line)
			got = append(got, v.String())
			rec.Check(t, blk, got)
		}
		rec.Finish(t)
	})
}

// render lists a Result's emissions in the order a caller applies them.
func render(r Result) []string {
	var out []string
	if r.Status && !r.Idle {
		out = append(out, "emit active")
	}
	if r.Advanced {
		out = append(out, "emit watermark "+fmtWM(r.Watermark))
	}
	if r.Status && r.Idle {
		out = append(out, "emit idle")
	}
	if len(out) == 0 {
		out = append(out, "(nothing)")
	}
	return out
}

// checkInvariants: an aligned channel is live and active (a channel added
// later may be aligned below the output: it holds it back); an idle output
// means every live channel is idle.
func checkInvariants(t *testing.T, v *Valve, path string, line int) {
	t.Helper()
	live, idle := 0, 0
	for i, c := range v.chans {
		if c.aligned && (c.ended || c.idle) {
			t.Fatalf("%s:%d: channel %d aligned but %+v (output %d)", path, line, i, c, v.current)
		}
		if !c.ended {
			live++
			if c.idle {
				idle++
			}
		}
	}
	if v.idle && idle != live {
		t.Fatalf("%s:%d: output idle but %d of %d live channels idle", path, line, idle, live)
	}
}

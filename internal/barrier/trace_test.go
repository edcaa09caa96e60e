package barrier

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/weirhq/weir/internal/goldentrace"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/*.txt")

// TestTraces runs the Handler through the traces in testdata, in the style of
// etcd-raft's interaction tests.
//
// The file format is goldentrace's. A trace starts with new; the other
// commands take the current time (epoch ms) first:
//
//	new channels=3 mode=exactly-once     (or mode=at-least-once)
//	                                     [max-tracked=N] lowers the at-least-once bound
//	barrier 100 ch=0 id=1 [unaligned] [timeout=50] [ts=90]
//	                                     ts defaults to the command's time
//	cancel 120 ch=1 id=1                 a cancel marker
//	end 130 ch=2                         end of partition
//	tick 200
//	abort 210 id=1 reason="snapshot failed"
//
// Every command prints the Actions fields that are set, one a line in the
// order the caller applies them ("(nothing)" if none), then the Handler's
// state (Handler.String). After every command the test checks the Handler's
// invariants and the protocol (see caller.apply). Run with -rewrite to
// regenerate the expected output.
func TestTraces(t *testing.T) {
	goldentrace.RunAll(t, "testdata/*.txt", 15, runTrace)
}

// traceCmd is one parsed command: its name, time and key=value arguments
// (a bare word such as "unaligned" maps to "").
type traceCmd struct {
	name string
	now  int64
	args map[string]string
}

func parseCmd(line string) (traceCmd, error) {
	var c traceCmd
	c.args = map[string]string{}
	if i := strings.Index(line, ` reason="`); i >= 0 {
		r := line[i+len(` reason="`):]
		if !strings.HasSuffix(r, `"`) {
			return c, fmt.Errorf("unterminated reason")
		}
		c.args["reason"] = strings.TrimSuffix(r, `"`)
		line = line[:i]
	}
	f := strings.Fields(line)
	c.name = f[0]
	f = f[1:]
	if c.name != "new" {
		if len(f) == 0 {
			return c, fmt.Errorf("%s needs a time", c.name)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return c, fmt.Errorf("bad time %q", f[0])
		}
		c.now = n
		f = f[1:]
	}
	for _, kv := range f {
		k, v, _ := strings.Cut(kv, "=")
		c.args[k] = v
	}
	return c, nil
}

func (c traceCmd) int(key string) (int64, error) {
	v, ok := c.args[key]
	if !ok {
		return 0, fmt.Errorf("%s needs %s=", c.name, key)
	}
	return strconv.ParseInt(v, 10, 64)
}

func runTrace(t *testing.T, path string) {
	blocks := goldentrace.Parse(t, path)
	rec := goldentrace.NewRecorder(path, *rewrite)
	var (
		h *Handler
		k *caller
	)
	for _, blk := range blocks {
		fail := func(format string, args ...any) {
			t.Fatalf("%s:%d: %s: %s", path, blk.Line, blk.Cmd, fmt.Sprintf(format, args...))
		}
		c, err := parseCmd(blk.Cmd)
		if err != nil {
			fail("%v", err)
		}
		if c.name != "new" && h == nil {
			fail("trace must start with new")
		}
		var got []string
		var a Actions
		ch64, _ := c.int("ch")
		ch := int(ch64)
		switch c.name {
		case "new":
			n, err := c.int("channels")
			if err != nil {
				fail("%v", err)
			}
			var mode Mode
			switch c.args["mode"] {
			case "exactly-once":
				mode = ExactlyOnce
			case "at-least-once":
				mode = AtLeastOnce
			default:
				fail("mode=exactly-once or mode=at-least-once")
			}
			h = New(int(n), mode)
			if _, ok := c.args["max-tracked"]; ok {
				m, err := c.int("max-tracked")
				if err != nil {
					fail("%v", err)
				}
				h.maxTracked = int(m)
			}
			k = newCaller(h)
		case "barrier":
			b := Barrier{Timestamp: c.now}
			if b.ID, err = c.int("id"); err != nil {
				fail("%v", err)
			}
			_, b.Unaligned = c.args["unaligned"]
			if _, ok := c.args["timeout"]; ok {
				if b.AlignedTimeout, err = c.int("timeout"); err != nil {
					fail("%v", err)
				}
			}
			if _, ok := c.args["ts"]; ok {
				if b.Timestamp, err = c.int("ts"); err != nil {
					fail("%v", err)
				}
			}
			a = h.Barrier(c.now, ch, b)
		case "cancel":
			id, err := c.int("id")
			if err != nil {
				fail("%v", err)
			}
			a = h.CancelMarker(c.now, ch, id)
		case "end":
			a = h.EndOfPartition(c.now, ch)
		case "tick":
			a = h.Tick(c.now)
		case "abort":
			id, err := c.int("id")
			if err != nil {
				fail("%v", err)
			}
			a = h.Abort(c.now, id, c.args["reason"])
		default:
			fail("unknown command")
		}
		if c.name != "new" {
			got = format(a)
			if err := k.apply(c.now, a); err != nil {
				t.Errorf("%s:%d: %s: %v", path, blk.Line, blk.Cmd, err)
			}
		}
		got = append(got, h.String())
		rec.Check(t, blk, got)
	}
	rec.Finish(t)
}

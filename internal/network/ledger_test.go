package network

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/weirhq/weir/internal/goldentrace"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/ledger/*.txt")

// TestLedgerTraces runs the credit ledger through the traces in
// testdata/ledger, in the style of etcd-raft's interaction tests.
//
// The file format is goldentrace's. Commands:
//
//	add bN     the producer finishes buffer bN (N a name, any token); a
//	           name starting with "wm" is a watermark event, one starting
//	           with "eop" an end-of-partition event, "barN" the aligned
//	           barrier of checkpoint N, "idle" or "active" a watermark status

//	grant N    the receiver grants N credits
//	priority eN  a priority event (an unaligned barrier): it goes at once
//	           (once connected) and prints the data buffers it overtook
//	add b1 b2  several adds, one output line each
//	promote N  the aligned barrier of checkpoint N, if still in the
//	           backlog, becomes a priority event (aligned timeout)
//
// Every command prints what was delivered ("deliver b1 b2" or "deliver -",
// and "replaces wm1" when a watermark made a queued one obsolete),
// then the ledger state: "credit=C backlog=[...] sent=S". After every command
// the test also checks the invariant that a non-empty backlog means zero
// credit. Run with -rewrite to regenerate the expected output.
func TestLedgerTraces(t *testing.T) {
	goldentrace.RunAll(t, "testdata/ledger/*.txt", 6, runLedgerTrace)
}

func runLedgerTrace(t *testing.T, path string) {
	blocks := goldentrace.Parse(t, path)
	rec := goldentrace.NewRecorder(path, *rewrite)
	var (
		l       ledger
		scratch []*Buffer
	)
	names := map[*Buffer]string{} // barriers, whose data is binary
	name := func(b *Buffer) string {
		if n, ok := names[b]; ok {
			return n
		}
		return string(b.Data)
	}
	state := func() string {
		names := make([]string, len(l.backlog))
		for i, b := range l.backlog {
			names[i] = name(b)
		}
		open := ""
		if !l.open {
			open = " (not connected)"
		}
		return fmt.Sprintf("credit=%d backlog=[%s] sent=%d%s", l.credit, strings.Join(names, " "), l.sent, open)
	}
	for _, blk := range blocks {
		fields := strings.Fields(blk.Cmd)
		var got []string
		switch fields[0] {
		case "add":
			if len(fields) < 2 {
				t.Fatalf("%s:%d: add needs buffer names", path, blk.Line)
			}
			for _, n := range fields[1:] {
				b := &Buffer{Data: []byte(n)}
				switch {
				case strings.HasPrefix(n, "wm"):
					b.Kind = KindWatermark
				case strings.HasPrefix(n, "idle"), strings.HasPrefix(n, "active"):
					b.Kind = KindWatermarkStatus
				case strings.HasPrefix(n, "eop"):
					b.Kind = KindEndOfPartition
				case strings.HasPrefix(n, "bar"):
					id, err := strconv.ParseInt(n[3:], 10, 64)
					if err != nil {
						t.Fatalf("%s:%d: bad barrier name %q", path, blk.Line, n)
					}
					b = NewBarrier(Barrier{ID: id, AlignedTimeout: 10})
					names[b] = n
				}
				now, replaced := l.add(b)
				line := "deliver -"
				if now {
					line = "deliver " + n
				}
				for _, r := range replaced {
					line += " replaces " + name(r)
				}
				got = append(got, line)
			}
		case "priority":
			if len(fields) != 2 {
				t.Fatalf("%s:%d: priority takes one event name", path, blk.Line)
			}
			b := &Buffer{Data: []byte(fields[1]), Kind: KindBarrier}
			over, now := l.addPriority(b)
			names := make([]string, len(over))
			for i, o := range over {
				names[i] = name(o)
			}
			line := "deliver -"
			if now {
				line = "deliver " + fields[1]
			}
			got = append(got, line+" overtakes ["+strings.Join(names, " ")+"]")
		case "promote":
			id, err := strconv.ParseInt(fields[len(fields)-1], 10, 64)
			if len(fields) != 2 || err != nil {
				t.Fatalf("%s:%d: promote takes one checkpoint id", path, blk.Line)
			}
			b, over, now := l.promote(id)
			if b == nil {
				got = append(got, "nothing to promote")
				break
			}
			if br := b.Barrier(); !br.Unaligned || !b.priority {
				t.Errorf("%s:%d: promoted barrier is not an unaligned priority event: %+v", path, blk.Line, br)
			}
			over2 := make([]string, len(over))
			for i, o := range over {
				over2[i] = name(o)
			}
			line := "deliver -"
			if now {
				line = "deliver " + name(b)
			}
			got = append(got, line+" overtakes ["+strings.Join(over2, " ")+"]")
		case "grant":
			if len(fields) != 2 {
				t.Fatalf("%s:%d: grant takes one count", path, blk.Line)
			}
			n, err := strconv.Atoi(fields[1])
			if err != nil || n < 0 {
				t.Fatalf("%s:%d: bad credit count %q", path, blk.Line, fields[1])
			}
			scratch = l.grant(n, scratch)
			if len(scratch) == 0 {
				got = append(got, "deliver -")
			} else {
				names := make([]string, len(scratch))
				for i, b := range scratch {
					names[i] = name(b)
				}
				got = append(got, "deliver "+strings.Join(names, " "))
			}
		default:
			t.Fatalf("%s:%d: unknown command %q", path, blk.Line, blk.Cmd)
		}
		got = append(got, state())
		if l.open && len(l.backlog) > 0 && (l.credit != 0 || l.backlog[0].IsEvent()) {
			t.Errorf("%s:%d: invariant broken: backlog of %d with %d credits, head %s", path, blk.Line, len(l.backlog), l.credit, l.backlog[0].Kind)
		}
		for i := 1; i < len(l.backlog); i++ {
			if l.backlog[i].Kind == KindWatermark && l.backlog[i-1].Kind == KindWatermark {
				t.Errorf("%s:%d: invariant broken: two watermarks in a row in the backlog", path, blk.Line)
			}
		}
		rec.Check(t, blk, got)
	}
	rec.Finish(t)
}

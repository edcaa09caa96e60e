package socket_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/connector/internal/sourcetest"
	"github.com/weirhq/weir/connector/socket"
	"github.com/weirhq/weir/source"
	"go.uber.org/goleak"
)

// The lines the server sends, \r\n or \n, come in order to subtask 0; the
// other subtasks end at once, and subtask 0 when the server closes.
func TestSocketTextStream(t *testing.T) {
	defer goleak.VerifyNone(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const n = 20000
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		for i := range n {
			fmt.Fprintf(conn, "line %d\r\n", i)
		}
		conn.Close()
	}()
	job, err := sourcetest.Start[string](socket.TextSource{Address: ln.Addr().String()}, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	if err := job.Run(rand.New(rand.NewPCG(1, 2)), 20*time.Second); err != nil {
		t.Fatal(err)
	}
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("line %d", i)
	}
	if got := job.Reader(0).Out; !slices.Equal(got, want) {
		t.Fatalf("subtask 0: %d lines, want %d in order", len(got), n)
	}
	if got := job.Reader(1).Out; len(got) != 0 {
		t.Fatalf("subtask 1 read %d lines", len(got))
	}
}

func TestSocketRefused(t *testing.T) {
	defer goleak.VerifyNone(t)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	job, err := sourcetest.Start[string](socket.TextSource{Address: addr}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	err = job.Run(rand.New(rand.NewPCG(1, 2)), 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "socket source") {
		t.Fatalf("got %v, want a connection error", err)
	}
}

// After a restore the reader connects again and reads what the server
// sends from then on: the source is not replayable. Closing a reader whose
// server keeps the connection open and silent ends it at once.
func TestSocketRestoreReconnects(t *testing.T) {
	defer goleak.VerifyNone(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conns := make(chan net.Conn, 2)
	go func() {
		for c := 0; ; c++ {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprintf(conn, "connection %d line 1\nconnection %d line 2\n", c, c)
			conns <- conn // kept open
		}
	}()
	src := socket.TextSource{Address: ln.Addr().String()}
	job, err := sourcetest.Start[string](src, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	read := func(job *sourcetest.Job[string, socket.Split], n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for len(job.Reader(0).Out) < n {
			job.Deliver()
			st, wake, _, err := job.Reader(0).Poll()
			if err != nil || st == source.EndOfInput {
				t.Fatalf("Poll = %v, %v", st, err)
			}
			if st == source.NothingAvailable && len(job.Reader(0).Out) < n {
				select {
				case <-wake:
				case <-time.After(time.Until(deadline)):
					t.Fatalf("%d lines after 10s, want %d", len(job.Reader(0).Out), n)
				}
			}
		}
	}
	read(job, 2)
	cp, err := job.Checkpoint(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(cp.Splits[0]) != 1 {
		t.Fatalf("the checkpoint holds %d splits, want the connection's", len(cp.Splits[0]))
	}
	t0 := time.Now()
	job.Close()
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("Close took %v", d)
	}
	(<-conns).Close()
	job, err = sourcetest.Restore[string](src, cp, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	read(job, 2)
	if got, want := job.Reader(0).Out, []string{"connection 1 line 1", "connection 1 line 2"}; !slices.Equal(got, want) {
		t.Fatalf("after the restore: %q, want %q", got, want)
	}
	(<-conns).Close()
	if err := job.Run(rand.New(rand.NewPCG(1, 2)), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	job.Close()
}

func TestSplitCodec(t *testing.T) {
	c := socket.TextSource{}.SplitCodec()
	s := socket.Split{Address: "localhost:9999"}
	enc := c.AppendEncode(nil, s)
	if got, n, err := c.Decode(enc); err != nil || n != len(enc) || got != s {
		t.Fatalf("decoded %v, %d, %v", got, n, err)
	}
	for k := range len(enc) {
		if _, _, err := c.Decode(enc[:k]); !errors.Is(err, codec.ErrTruncated) {
			t.Fatalf("cut to %d bytes: %v", k, err)
		}
	}
}

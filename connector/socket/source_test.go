package socket_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"testing"

	"github.com/weirhq/weir"
	"go.uber.org/goleak"
)

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
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	lines := weir.SocketTextStream(env, ln.Addr().String())
	got, err := weir.ExecuteAndCollect(context.Background(), env, weir.Map(lines, func(s string) string { return s }), "socket")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("%d lines, want %d", len(got), n)
	}
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("line %d", i)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatal("lines differ")
	}
}

func TestSocketRefused(t *testing.T) {
	defer goleak.VerifyNone(t)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	env := weir.NewEnvironment(weir.Config{})
	weir.Discard(weir.SocketTextStream(env, addr))
	if _, err := env.Execute(context.Background(), "refused"); err == nil {
		t.Fatal("want an error")
	}
}

package etcdtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestRestartKeepsData: a key written before Stop is read after Restart on
// the same endpoints, and nothing answers while the server is stopped.
func TestRestartKeepsData(t *testing.T) {
	s := Start(t)
	c, err := clientv3.New(clientv3.Config{Endpoints: s.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	sctx, scancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err = c.Get(sctx, "k")
	scancel()
	if err == nil {
		t.Fatal("a stopped server answered")
	}
	s.Restart()
	r, err := c.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "v" {
		t.Fatalf("after Restart: %v, want k=v", r.Kvs)
	}
}

// TestOtherProcess: a process the test starts reaches the server (as
// JobManager processes will).
func TestOtherProcess(t *testing.T) {
	s := Start(t)
	c, err := clientv3.New(clientv3.Config{Endpoints: s.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, "k", "from the parent"); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestChildProcess$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+strings.Join(s.Endpoints(), ","))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `read "from the parent"`) {
		t.Fatalf("child process: %v\n%s", err, out)
	}
}

const childEnv = "WEIR_ETCDTEST_CHILD"

// TestChildProcess is TestOtherProcess's child: it reads the key.
func TestChildProcess(t *testing.T) {
	ep := os.Getenv(childEnv)
	if ep == "" {
		t.Skip("the child of TestOtherProcess")
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(ep, ","), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := c.Get(ctx, "k")
	if err != nil || len(r.Kvs) != 1 {
		t.Fatalf("get k: %v, %v", r, err)
	}
	fmt.Printf("read %q\n", r.Kvs[0].Value)
}

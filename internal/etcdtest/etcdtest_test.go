package etcdtest

import (
	"context"
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

package etcdha

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/weirhq/weir/internal/etcdtest"
	"github.com/weirhq/weir/internal/ha"
	"github.com/weirhq/weir/internal/ha/hatest"
)

// pausable offers the suite the renewals' pause (hatest.Pauser), a test
// hook the production Service does not export.
type pausable struct{ *service }

func (p pausable) PauseRenewals() { p.pauseRenewals() }

func factory(srv *etcdtest.Server) hatest.Factory {
	return func(t *testing.T, s ha.Settings) ha.Service {
		t.Helper()
		return newService(t, srv, s)
	}
}

func newService(t *testing.T, srv *etcdtest.Server, s ha.Settings) pausable {
	t.Helper()
	s.Type, s.EtcdEndpoints = "etcd", srv.Endpoints()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	svc, err := New(ctx, s, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return pausable{svc.(*service)}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	hatest.Run(t, factory(etcdtest.Start(t)))
}

func settings(id string) ha.Settings {
	return ha.Settings{ClusterID: id, LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 250 * time.Millisecond}
}

// TestEtcdUnreachable: a leader whose etcd stops closes Done within the
// renew deadline and cannot write (the error names the endpoints and their
// setting); once etcd is back, a new campaign wins with a larger epoch.
func TestEtcdUnreachable(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	s := settings("unreachable")
	a := newService(t, srv, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ld, err := a.Campaign(ctx, ha.LeaderInfo{RPCAddress: "a:1", RESTAddress: "a:2"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ld.Store().Put(ctx, "jobs/j", []byte("before")); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	go srv.Stop()
	select {
	case <-ld.Done():
		t.Logf("Done closed %v after etcd stopped (renew deadline %v)", time.Since(stopped), s.RenewDeadline)
	case <-time.After(s.RenewDeadline + 750*time.Millisecond):
		t.Fatalf("Done not closed %v after etcd stopped (renew deadline %v)", time.Since(stopped), s.RenewDeadline)
	}
	wctx, wcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	err = ld.Store().Put(wctx, "jobs/j", []byte("during"))
	wcancel()
	if err == nil || !strings.Contains(err.Error(), srv.Endpoints()[0]) || !strings.Contains(err.Error(), "high-availability.etcd.endpoints") {
		t.Fatalf("Put with etcd stopped: %v; want an error naming %s and high-availability.etcd.endpoints", err, srv.Endpoints()[0])
	}
	srv.Restart()
	restarted := time.Now()
	ld2, err := a.Campaign(ctx, ha.LeaderInfo{RPCAddress: "a:1", RESTAddress: "a:2"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("won again %v after etcd restarted", time.Since(restarted))
	if ld2.Epoch() <= ld.Epoch() {
		t.Fatalf("epoch after the restart %d, not above %d", ld2.Epoch(), ld.Epoch())
	}
	if err := ld.Store().Put(ctx, "jobs/j", []byte("stale")); !errors.Is(err, ha.ErrNotLeader) {
		t.Fatalf("the first term's Put after the second won: %v, want ErrNotLeader", err)
	}
	if v, err := ld2.Store().Get(ctx, "jobs/j"); err != nil || string(v) != "before" {
		t.Fatalf("jobs/j = %q, %v; want %q", v, err, "before")
	}
}

// TestKeys: the election and the store live under /weir/<cluster id>/.
func TestKeys(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	a := newService(t, srv, settings("keys"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ld, err := a.Campaign(ctx, ha.LeaderInfo{RPCAddress: "r:1", RESTAddress: "r:2"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ld.Store().Put(ctx, "jobs/j", []byte("v")); err != nil {
		t.Fatal(err)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: srv.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Get(ctx, "/weir/keys/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range r.Kvs {
		keys = append(keys, string(kv.Key))
		if strings.HasPrefix(string(kv.Key), "/weir/keys/leader/") {
			if uint64(kv.CreateRevision) != ld.Epoch() || string(kv.Value) != `{"rpc":"r:1","rest":"r:2"}` {
				t.Fatalf("election key %s: create revision %d, value %s; want epoch %d and the LeaderInfo", kv.Key, kv.CreateRevision, kv.Value, ld.Epoch())
			}
		}
	}
	if len(keys) != 2 || !strings.HasPrefix(keys[0], "/weir/keys/leader/") || keys[1] != "/weir/keys/store/jobs/j" {
		t.Fatalf("keys %q, want one election key and /weir/keys/store/jobs/j", keys)
	}
	// The lease's TTL: the lease duration rounded up to whole seconds.
	lr, err := c.TimeToLive(ctx, ld.(*term).lease)
	if err != nil || lr.GrantedTTL != 2 {
		t.Fatalf("lease TTL %v, %v; want 2 s", lr, err)
	}
}

// TestNewFails: New names the endpoints and their setting when none
// answers, and returns within its context's deadline.
func TestNewFails(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	s := settings("nothing")
	s.EtcdEndpoints = []string{addr}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	svc, err := New(ctx, s, nil)
	if err == nil {
		svc.Close()
		t.Fatal("New succeeded with no etcd")
	}
	if !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "high-availability.etcd.endpoints") {
		t.Fatalf("New: %v; want an error naming %s and high-availability.etcd.endpoints", err, addr)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("New returned after %v, its context's deadline was 500ms", d)
	}
	if _, err := New(ctx, settings("x"), nil); err == nil || !strings.Contains(err.Error(), "high-availability.etcd.endpoints") {
		t.Fatalf("New without endpoints: %v", err)
	}
}

// TestCloseResigns: Close resigns a term at once (another contender wins
// well before the lease would expire), and ends a campaign, its key gone
// before Close returns.
func TestCloseResigns(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	s := settings("close")
	a := newService(t, srv, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ld, err := a.Campaign(ctx, ha.LeaderInfo{RPCAddress: "a:1"})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		who int
		err error
		at  time.Time
	}
	ends := make(chan result, 2)
	others := []pausable{newService(t, srv, s), newService(t, srv, s)}
	for i, o := range others {
		go func() {
			_, err := o.Campaign(ctx, ha.LeaderInfo{RPCAddress: "o:" + strconv.Itoa(i)})
			ends <- result{i, err, time.Now()}
		}()
	}
	time.Sleep(300 * time.Millisecond) // both campaign behind a
	closed := time.Now()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if !isClosed(ld.Done()) {
		t.Fatal("Close returned and the term's Done is not closed")
	}
	var winner result
	select {
	case winner = <-ends:
		if winner.err != nil {
			t.Fatalf("contender %d: %v", winner.who, winner.err)
		}
		if d := winner.at.Sub(closed); d > time.Second {
			t.Fatalf("contender %d won %v after the leader closed, want at once (the lease lasts %v)", winner.who, d, s.LeaseDuration)
		}
	case <-time.After(s.LeaseDuration):
		t.Fatal("no contender won within the lease duration after the leader closed")
	}
	loser := others[1-winner.who]
	loser.Close()
	select {
	case r := <-ends:
		if r.err == nil || !strings.Contains(r.err.Error(), "closed") {
			t.Fatalf("campaign of a closed contender: %v, want an error saying it was closed", r.err)
		}
	default:
		t.Fatal("Close returned before the contender's campaign ended")
	}
	// The closed contender's key left the queue with it: the winner's is
	// the only one.
	r, err := others[winner.who].client.Get(ctx, "/weir/close/leader/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if r.Count != 1 {
		t.Fatalf("%d election keys after the loser closed, want the winner's alone", r.Count)
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestLeaseLost: when the term's lease is revoked behind its leader's back,
// Done closes within a retry period and the leader's writes fail.
func TestLeaseLost(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	s := settings("lost")
	a := newService(t, srv, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ld, err := a.Campaign(ctx, ha.LeaderInfo{RPCAddress: "a:1"})
	if err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	if _, err := a.client.Revoke(ctx, ld.(*term).lease); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ld.Done():
		t.Logf("Done closed %v after the lease was revoked", time.Since(revoked))
	case <-time.After(s.RetryPeriod + 500*time.Millisecond):
		t.Fatalf("Done not closed %v after the lease was revoked", time.Since(revoked))
	}
	if err := ld.Store().Put(ctx, "jobs/j", []byte("v")); !errors.Is(err, ha.ErrNotLeader) {
		t.Fatalf("Put after the lease was revoked: %v, want ErrNotLeader", err)
	}
}

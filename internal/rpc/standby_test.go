package rpc

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/protocol"
)

// TestConnectFollowsTheLeader: a TaskManager given two JobManagers
// registers with the one that leads: a standby naming a leader that is
// gone and then none keeps it retrying at the first backoff step (not a
// grown one), and it registers within moments of the leader starting,
// having followed the standby's hint to it.
func TestConnectFollowsTheLeader(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	leaderAddr := ln.Addr().String()
	ln.Close() // not listening yet: the leader is being elected
	var leader atomic.Value
	leader.Store("127.0.0.1:1") // a leader that is gone
	sb, sbAddr, err := StartStandby("127.0.0.1:0", func() string { return leader.Load().(string) }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	p := &pair{}
	connected := make(chan *ClientSession, 1)
	go func() {
		reg := Registration{TaskManagerRegistration: protocol.TaskManagerRegistration{ID: "tm-1", Slots: 1, NetworkMemory: 64 << 20},
			DataAddress: "127.0.0.1:7000", BuildID: "build-1"}
		cs, err := Connect(context.Background(), ClientConfig{JobManager: sbAddr.String() + "," + leaderAddr, Registration: reg,
			TaskManager: fakeTM{newRecorder()}, Backoff: Backoff{Initial: 50 * time.Millisecond, Max: 5 * time.Second, Timeout: time.Minute}})
		if err != nil {
			t.Error(err)
		}
		connected <- cs
	}()
	// Long enough for an unpaced backoff to grow past a second.
	time.Sleep(3 * time.Second)
	leader.Store(leaderAddr)
	startServer(t, p, pairOpts{}, leaderAddr)
	started := time.Now()
	select {
	case cs := <-connected:
		if cs == nil {
			return
		}
		defer cs.Close()
		if took := time.Since(started); took > 500*time.Millisecond {
			t.Errorf("registered %v after the leader started listening, want within the first backoff step", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the TaskManager did not register with the new leader")
	}
	var nl *NotLeaderError
	if _, err := SubmitJob(context.Background(), sbAddr.String(), "build-1", "p", nil, true, nil); !errors.As(err, &nl) || nl.Leader != leaderAddr {
		t.Errorf("a submission to the standby alone: %v, want a NotLeaderError naming %s", err, leaderAddr)
	}
}

// TestFollowApplicationFollowsTheLeader: a TaskManager of an application
// with high availability, given a standby first, follows the leader the
// standby names and gets the application from it at once.
func TestFollowApplicationFollowsTheLeader(t *testing.T) {
	app := NewApplication("b1", AppInfo{Name: "app", Digest: "d1"})
	leaderAddr := startApplication(t, app)
	sb, sbAddr, err := StartStandby("127.0.0.1:0", func() string { return leaderAddr }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	var waited error
	f, err := FollowApplication(ctx, sbAddr.String()+","+leaderAddr, "b1", "tm-1", Backoff{Initial: time.Second}, func(err error) { waited = err })
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Info.Digest != "d1" || waited != nil {
		t.Fatalf("got %+v (waited: %v), want the leader's application at once", f.Info, waited)
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("took %v, want the standby's hint followed without a backoff step", took)
	}
}

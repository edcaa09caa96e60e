package etcdha

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/weirhq/weir/internal/ha"
)

// dialTimeout bounds the connection to etcd at New and each reconnection's
// dial.
const dialTimeout = 5 * time.Second

// service is one contender's connection (ha.Service).
type service struct {
	s         ha.Settings
	logger    *slog.Logger
	client    *clientv3.Client
	ttl       int    // the lease's TTL in seconds
	election  string // the election's key prefix, /weir/<cluster id>/leader
	storeRoot string // the store's keys' prefix, /weir/<cluster id>/store/
	where     string // the endpoints and their setting, for error messages
	ctx       context.Context
	cancel    context.CancelFunc // ends ctx at Close

	// campaigns counts the Campaign calls in progress: Close waits for
	// them to delete their keys before it closes the client.
	campaigns sync.WaitGroup

	mu       sync.Mutex                                  // guards sessions, terms, paused, and campaigns.Add against Close
	sessions map[*concurrency.Session]context.CancelFunc // of campaigns and terms: cancel stops its keepalive
	terms    map[*term]struct{}                          // terms not ended
	paused   bool

	closeOnce sync.Once
}

// New connects to the etcd servers of s.EtcdEndpoints (within a bounded
// time) as a contender for the leadership of s.ClusterID.
func New(ctx context.Context, s ha.Settings, logger *slog.Logger) (ha.Service, error) {
	if len(s.EtcdEndpoints) == 0 {
		return nil, fmt.Errorf("etcd high availability needs high-availability.etcd.endpoints (host:port of the etcd servers, comma-separated)")
	}
	if s.ClusterID == "" || s.LeaseDuration <= 0 || s.RenewDeadline <= 0 || s.RetryPeriod <= 0 ||
		s.RenewDeadline >= s.LeaseDuration || s.RetryPeriod >= s.RenewDeadline {
		return nil, fmt.Errorf("etcd high availability: settings not checked by ha.ParseSettings (cluster id %q, lease %v, renew deadline %v, retry period %v)",
			s.ClusterID, s.LeaseDuration, s.RenewDeadline, s.RetryPeriod)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	where := fmt.Sprintf("etcd at %s (high-availability.etcd.endpoints)", strings.Join(s.EtcdEndpoints, ","))
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   s.EtcdEndpoints,
		DialTimeout: dialTimeout,
		// The client's retries and reconnections are routine here; what
		// matters is told through logger, by this package.
		Logger: zap.NewNop(),
		// Reconnect within a retry period of etcd's return (gRPC's
		// default backoff grows to two minutes), and give up a connection
		// attempt after the dial timeout.
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: s.RetryPeriod / 4, Multiplier: 1.6, Jitter: 0.2, MaxDelay: s.RetryPeriod},
			MinConnectTimeout: dialTimeout,
		})},
	})
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", where, err)
	}
	svc := &service{
		s: s, logger: logger.With("cluster-id", s.ClusterID), client: client,
		ttl:       max(1, int(math.Ceil(s.LeaseDuration.Seconds()))),
		election:  "/weir/" + s.ClusterID + "/leader",
		storeRoot: "/weir/" + s.ClusterID + "/store/",
		where:     where,
		sessions:  map[*concurrency.Session]context.CancelFunc{},
		terms:     map[*term]struct{}{},
	}
	svc.ctx, svc.cancel = context.WithCancel(context.Background())
	// The client dials lazily: ask once, so that wrong endpoints fail here.
	pctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	if _, err := client.Get(pctx, svc.election+"/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil {
		svc.cancel()
		client.Close()
		return nil, fmt.Errorf("%s did not answer: %w", where, err)
	}
	return svc, nil
}

// failed wraps err of op with where the service is.
func (s *service) failed(op string, err error) error {
	return fmt.Errorf("%s on %s: %w", op, s.where, err)
}

// Campaign implements ha.Service: each attempt takes a new lease (so a new
// term has a new election key, whose create revision is above every
// earlier one) and retries every retry period until it wins or ctx ends.
func (s *service) Campaign(ctx context.Context, info ha.LeaderInfo) (ha.Leadership, error) {
	val, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	closed := s.ctx.Err() != nil
	if !closed {
		s.campaigns.Add(1)
	}
	s.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("campaign for the leadership of cluster %s: the contender was closed", s.s.ClusterID)
	}
	defer s.campaigns.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	for {
		t, err := s.campaignOnce(ctx, string(val))
		if err == nil {
			return t, nil
		}
		if s.ctx.Err() != nil {
			return nil, fmt.Errorf("campaign for the leadership of cluster %s: the contender was closed", s.s.ClusterID)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("campaign for the leadership of cluster %s: %w", s.s.ClusterID, ctx.Err())
		}
		s.logger.Warn("campaign failed, retrying", "err", err, "retry-period", s.s.RetryPeriod)
		select {
		case <-time.After(s.s.RetryPeriod):
		case <-ctx.Done():
		}
	}
}

// campaignOnce campaigns with a new lease until it wins, ctx ends or etcd
// fails.
func (s *service) campaignOnce(ctx context.Context, val string) (*term, error) {
	grant, err := s.client.Grant(ctx, int64(s.ttl))
	if err != nil {
		return nil, s.failed("grant a lease", err)
	}
	lease := grant.ID
	sctx, scancel := context.WithCancel(s.ctx)
	sess, err := concurrency.NewSession(s.client, concurrency.WithLease(lease), concurrency.WithTTL(s.ttl), concurrency.WithContext(sctx))
	if err != nil {
		scancel()
		s.revoke(lease)
		return nil, s.failed("keep a lease alive", err)
	}
	s.mu.Lock()
	s.sessions[sess] = scancel
	if s.paused {
		scancel()
	}
	s.mu.Unlock()
	abandon := func() {
		s.forget(sess)
		s.revoke(lease)
	}
	el := concurrency.NewElection(sess, s.election)
	if err := el.Campaign(ctx, val); err != nil {
		abandon()
		return nil, s.failed("campaign", err)
	}
	// Won: renew once (the lease may have expired while etcd was away
	// during the campaign), then check that the key is still ours.
	renewed := time.Now()
	if !s.isPaused() {
		rctx, cancel := context.WithTimeout(ctx, s.s.RenewDeadline)
		_, err := s.client.KeepAliveOnce(rctx, lease)
		cancel()
		if err != nil {
			abandon()
			return nil, s.failed("renew the lease after winning", err)
		}
	}
	r, err := s.client.Get(ctx, el.Key())
	if err == nil && (len(r.Kvs) == 0 || r.Kvs[0].CreateRevision != el.Rev()) {
		err = errors.New("the election key was deleted during the campaign")
	}
	if err != nil {
		abandon()
		return nil, s.failed("check the won election key", err)
	}
	t := &term{svc: s, sess: sess, key: el.Key(), epoch: el.Rev(), lease: lease,
		done: make(chan struct{}), stop: make(chan struct{})}
	t.store = &store{svc: s, electionKey: t.key, epoch: t.epoch}
	s.mu.Lock()
	closed := s.ctx.Err() != nil
	if !closed {
		s.terms[t] = struct{}{}
	}
	s.mu.Unlock()
	if closed { // Close did not see this term: it must not outlive Close
		abandon()
		return nil, fmt.Errorf("the contender was closed")
	}
	s.logger.Info("won the leadership", "epoch", t.epoch, "key", t.key)
	go t.keep(renewed)
	return t, nil
}

// forget stops the keepalive of a session and forgets it.
func (s *service) forget(sess *concurrency.Session) {
	s.mu.Lock()
	cancel := s.sessions[sess]
	delete(s.sessions, sess)
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// revoke revokes lease, deleting its election key, with a bounded wait: a
// lease not revoked expires after its TTL anyway.
func (s *service) revoke(lease clientv3.LeaseID) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(s.ttl)*time.Second)
	defer cancel()
	if _, err := s.client.Revoke(ctx, lease); err != nil {
		return s.failed("revoke the lease", err)
	}
	return nil
}

func (s *service) isPaused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paused
}

// pauseRenewals stops every renewal of s's leases, without revoking them
// (a test's stand-in for SIGSTOP of the process, hatest.Pauser): the terms
// end by their renew deadline, the leases expire on the server.
func (s *service) pauseRenewals() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paused = true
	for _, cancel := range s.sessions {
		cancel()
	}
}

// Leader implements ha.Service: the leader is the election key created
// first, its value the LeaderInfo, its create revision the epoch.
func (s *service) Leader(ctx context.Context) (ha.LeaderInfo, uint64, bool, error) {
	r, err := s.client.Get(ctx, s.election+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return ha.LeaderInfo{}, 0, false, s.failed("read the leader", err)
	}
	if len(r.Kvs) == 0 {
		return ha.LeaderInfo{}, 0, false, nil
	}
	kv := r.Kvs[0]
	var info ha.LeaderInfo
	if err := json.Unmarshal(kv.Value, &info); err != nil {
		return ha.LeaderInfo{}, 0, false, fmt.Errorf("the leader's key %s on %s holds %q, not a leader's addresses: %w", kv.Key, s.where, kv.Value, err)
	}
	return info, uint64(kv.CreateRevision), true, nil
}

// Reader implements ha.Service.
func (s *service) Reader() ha.Reader { return &store{svc: s} }

// Close implements ha.Service: it resigns the terms, ends the campaigns
// and closes the connection.
func (s *service) Close() error {
	var errs []error
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.cancel() // under mu: a campaign won from now on sees it
		terms := make([]*term, 0, len(s.terms))
		for t := range s.terms {
			terms = append(terms, t)
		}
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(s.ttl)*time.Second)
		defer cancel()
		for _, t := range terms {
			if err := t.Resign(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		s.campaigns.Wait()
		errs = append(errs, s.client.Close())
	})
	return errors.Join(errs...)
}

// term is a won term (ha.Leadership).
type term struct {
	svc   *service
	sess  *concurrency.Session
	key   string // the election key
	epoch int64  // its create revision
	lease clientv3.LeaseID
	store *store

	done    chan struct{} // closed by end
	stop    chan struct{} // closed by end: the renewals stop
	endOnce sync.Once
}

func (t *term) Epoch() uint64                { return uint64(t.epoch) }
func (t *term) Done() <-chan struct{}        { return t.done }
func (t *term) Store() ha.Store              { return t.store }
func (t *term) String() string               { return fmt.Sprintf("term %d (%s)", t.epoch, t.key) }
func (t *term) renewDeadline() time.Duration { return t.svc.s.RenewDeadline }

// keep renews the term's lease every retry period, and ends the term when
// no renewal has succeeded within the renew deadline (renewed is when the
// last successful one was sent: the lease runs from its arrival, later),
// or etcd says the lease is gone, or the session ends. The renewals are
// its own, one request each: the session's keepalive stream renews every
// third of the TTL whatever the retry period, and reports a failure only
// once the lease has expired, too late for the renew deadline.
func (t *term) keep(renewed time.Time) {
	s := t.svc
	next := renewed.Add(s.s.RetryPeriod)
	timer := time.NewTimer(0)
	defer timer.Stop()
	sessionDone := t.sess.Done()
	for {
		deadline := renewed.Add(t.renewDeadline())
		if s.isPaused() {
			next = deadline
		}
		timer.Reset(time.Until(earlier(next, deadline)))
		select {
		case <-timer.C:
		case <-t.stop:
			return
		case <-sessionDone:
			// The session's keepalive stream ended: the lease is gone,
			// or the pause stopped it (then the deadline decides).
			if s.isPaused() {
				sessionDone = nil
				continue
			}
			t.end("the etcd session ended (its lease is gone)")
			return
		}
		now := time.Now()
		if !now.Before(deadline) {
			t.end(fmt.Sprintf("the lease was not renewed within the renew deadline %v (last renewal %v ago)", t.renewDeadline(), now.Sub(renewed).Round(time.Millisecond)))
			return
		}
		if now.Before(next) || s.isPaused() {
			continue
		}
		ctx, cancel := context.WithDeadline(s.ctx, deadline)
		_, err := s.client.KeepAliveOnce(ctx, t.lease)
		cancel()
		switch {
		case err == nil:
			renewed = now
		case isLeaseNotFound(err):
			t.end("the lease expired on the server")
			return
		case s.ctx.Err() != nil:
			t.end(closedWhy)
			return
		default:
			s.logger.Warn("lease renewal failed", "epoch", t.epoch, "err", s.failed("renew", err))
		}
		next = now.Add(s.s.RetryPeriod)
	}
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func isLeaseNotFound(err error) bool { return errors.Is(err, rpctypes.ErrLeaseNotFound) }

// end ends the term once: Done closes and the renewals stop. Unless the
// renewals are paused (a stand-in for a stopped process, which could not
// revoke), the lease is revoked in the background, so another contender
// need not wait for it to expire.
func (t *term) end(why string) {
	t.endOnce.Do(func() {
		close(t.done)
		close(t.stop)
		s := t.svc
		s.mu.Lock()
		delete(s.terms, t)
		paused := s.paused
		s.mu.Unlock()
		s.forget(t.sess)
		level := slog.LevelWarn
		if why == resigned || why == closedWhy {
			level = slog.LevelInfo
		}
		s.logger.Log(context.Background(), level, "leadership ended", "epoch", t.epoch, "why", why)
		if !paused && why != resigned {
			go s.revoke(t.lease)
		}
	})
}

// The reasons of an end that are no trouble.
const (
	resigned  = "resigned"
	closedWhy = "the contender was closed"
)

// Resign implements ha.Leadership: Done closes at once, then the lease is
// revoked (its election key deleted) so another contender wins at once.
func (t *term) Resign(ctx context.Context) error {
	t.end(resigned)
	if _, err := t.svc.client.Revoke(ctx, t.lease); err != nil && !isLeaseNotFound(err) {
		return t.svc.failed(fmt.Sprintf("resign term %d (its lease expires in %ds)", t.epoch, t.svc.ttl), err)
	}
	return nil
}

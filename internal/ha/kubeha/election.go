package kubeha

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirhq/weir/internal/ha"
)

// service is one contender of one cluster id.
type service struct {
	s   ha.Settings
	log *slog.Logger
	c   *client
	ns  string

	leasePath, leaseObj string // the Lease's URL path, and its name for errors
	storePath           string // the ConfigMaps' collection

	ctx    context.Context // ends with Close
	cancel context.CancelFunc

	mu         sync.Mutex
	observedRV string    // the Lease's resourceVersion last seen
	observedAt time.Time // when this process first saw it (its clock, not the writer's)
	terms      map[*leadership]struct{}
	paused     atomic.Bool // PauseRenewals
}

// New connects to the Kubernetes API server that s names (or, inside a
// pod, the in-cluster one) and returns a contender for s.ClusterID's Lease
// and store in s.Namespace. It checks that the API server answers and the
// token may read the Lease.
func New(ctx context.Context, s ha.Settings, logger *slog.Logger) (ha.Service, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if s.RenewDeadline <= 0 || s.RetryPeriod <= 0 || s.RenewDeadline >= s.LeaseDuration || s.RetryPeriod >= s.RenewDeadline {
		return nil, fmt.Errorf("kubeha: want 0 < retry period (%v) < renew deadline (%v) < lease duration (%v) (high-availability.leader-election.*)",
			s.RetryPeriod, s.RenewDeadline, s.LeaseDuration)
	}
	cfg, err := resolveConfig(s)
	if err != nil {
		return nil, err
	}
	if s.APIServer == "" { // in a pod
		b, err := os.ReadFile(serviceAccountDir + "/namespace")
		pod := strings.TrimSpace(string(b))
		switch {
		case cfg.namespace == "" && err == nil:
			cfg.namespace = pod
		case err == nil && cfg.namespace != "" && pod != cfg.namespace:
			logger.Warn("kubernetes.namespace differs from the pod's namespace: the Lease and ConfigMap live in kubernetes.namespace, which the pod's ServiceAccount must be allowed to use",
				"kubernetes.namespace", cfg.namespace, "pod namespace", pod)
		}
	}
	if cfg.namespace == "" {
		// Outside a pod, or a pod without its namespace file.
		cfg.namespace = "default"
	}
	c, err := newClient(cfg, s)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.Background())
	svc := &service{
		s: s, log: logger.With("cluster-id", s.ClusterID), c: c, ns: cfg.namespace,
		leasePath: "/apis/coordination.k8s.io/v1/namespaces/" + cfg.namespace + "/leases/" + leaseName(s.ClusterID),
		leaseObj:  "Lease " + cfg.namespace + "/" + leaseName(s.ClusterID),
		storePath: "/api/v1/namespaces/" + cfg.namespace + "/configmaps",
		ctx:       sctx, cancel: cancel,
		terms: map[*leadership]struct{}{},
	}
	if _, err := svc.getLease(ctx); err != nil && statusOf(err) != http.StatusNotFound {
		cancel()
		return nil, fmt.Errorf("kubeha: %w", err)
	}
	return svc, nil
}

func (s *service) getLease(ctx context.Context) (*lease, error) {
	var l lease
	if err := s.c.do(ctx, http.MethodGet, s.leasePath, s.leaseObj, nil, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

func (s *service) putLease(ctx context.Context, l *lease) (*lease, error) {
	var out lease
	if err := s.c.do(ctx, http.MethodPut, s.leasePath, s.leaseObj, l, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// observe notes when this process first saw the Lease's current version
// and tells whether its holder's term may still run: client-go's rule, on
// the local clock only (the renew time is the writer's clock).
func (s *service) observe(l *lease) (held bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if l.Metadata.ResourceVersion != s.observedRV {
		s.observedRV, s.observedAt = l.Metadata.ResourceVersion, now
	}
	d := l.duration()
	if d == 0 {
		d = s.s.LeaseDuration
	}
	return l.holder() != "" && now.Before(s.observedAt.Add(d))
}

// Leader reads the Lease: its holder leads if the lease has not expired
// (as this process observes it).
func (s *service) Leader(ctx context.Context) (ha.LeaderInfo, uint64, bool, error) {
	l, err := s.getLease(ctx)
	if statusOf(err) == http.StatusNotFound {
		return ha.LeaderInfo{}, 0, false, nil
	}
	if err != nil {
		return ha.LeaderInfo{}, 0, false, err
	}
	if !s.observe(l) {
		return ha.LeaderInfo{}, 0, false, nil
	}
	var info ha.LeaderInfo
	if v := l.Metadata.Annotations[annotationLeader]; v != "" {
		if err := json.Unmarshal([]byte(v), &info); err != nil {
			return ha.LeaderInfo{}, 0, false, fmt.Errorf("%s: annotation %s %q: %w", s.leaseObj, annotationLeader, v, err)
		}
	}
	return info, uint64(l.transitions()), true, nil
}

// Campaign tries to acquire the Lease every retry period until it does
// (or ctx or the service ends), then stamps its epoch into the store.
func (s *service) Campaign(ctx context.Context, info ha.LeaderInfo) (ha.Leadership, error) {
	infoJSON, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	id := newIdentity()
	var lastErr string // the last attempt error logged, and when
	var loggedAt time.Time
	for {
		sent := time.Now()
		var l *lease
		var err error
		if !s.paused.Load() {
			l, err = s.tryAcquire(ctx, id, string(infoJSON))
		}
		if err != nil && ctx.Err() == nil && (err.Error() != lastErr || time.Since(loggedAt) > time.Minute) {
			// A new error, or the same once a minute: a standby that
			// cannot reach the API server (or is forbidden) says so.
			s.log.Warn("kubeha: campaign attempt failed; retrying every retry period", "err", err)
			lastErr, loggedAt = err.Error(), time.Now()
		}
		if l != nil {
			lead, err := s.begin(ctx, l, id, sent)
			if err == nil {
				return lead, nil
			}
			s.log.Warn("kubeha: acquired the lease but could not stamp the store; campaigning again", "err", err)
			id = newIdentity()
		}
		wait := time.Duration(float64(s.s.RetryPeriod) * (1 + 0.2*mrand.Float64()))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.ctx.Done():
			return nil, errors.New("kubeha: the service is closed")
		case <-time.After(wait):
		}
	}
}

// tryAcquire takes the Lease for identity id if it is free or expired; it
// returns the Lease as written, or nil when another holds it or a
// concurrent update won.
func (s *service) tryAcquire(ctx context.Context, id, info string) (*lease, error) {
	ctx, cancel := context.WithTimeout(ctx, s.s.RenewDeadline)
	defer cancel()
	old, err := s.getLease(ctx)
	if statusOf(err) == http.StatusNotFound {
		old = nil
	} else if err != nil {
		return nil, err
	}
	// An earlier attempt's update went through and its answer was lost:
	// the Lease is this campaign's, but renewed when that attempt was
	// sent, so it is renewed again (same epoch) before the term counts
	// from this attempt.
	mine := old != nil && old.holder() == id
	if old != nil && !mine && s.observe(old) {
		return nil, nil
	}
	var next int32
	if mine {
		next = old.transitions()
	} else {
		// Epochs must grow even if the Lease was deleted (or replaced by
		// an older one): the next is above both the Lease's count and the
		// store's last stamped epoch.
		next = 1
		if old != nil {
			next = old.transitions() + 1
		}
		stamped, err := s.storeEpoch(ctx)
		if err != nil {
			return nil, err
		}
		if stamped >= uint64(next) {
			next = int32(stamped + 1)
		}
	}
	now := time.Now()
	l := &lease{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"}
	if old != nil {
		l.Metadata = old.Metadata
	}
	l.Metadata.Name, l.Metadata.Namespace = leaseName(s.s.ClusterID), s.ns
	l.Metadata.Labels = setKey(l.Metadata.Labels, labelCluster, s.s.ClusterID)
	l.Metadata.Annotations = setKey(l.Metadata.Annotations, annotationLeader, info)
	l.Spec = leaseSpec{HolderIdentity: &id, LeaseDurationSeconds: leaseSeconds(s.s.LeaseDuration),
		AcquireTime: microTime(now), RenewTime: microTime(now), LeaseTransitions: &next}
	var out lease
	if old == nil {
		l.Metadata.ResourceVersion = ""
		err = s.c.do(ctx, http.MethodPost, strings.TrimSuffix(s.leasePath, "/"+leaseName(s.s.ClusterID)), s.leaseObj, l, &out)
	} else {
		err = s.c.do(ctx, http.MethodPut, s.leasePath, s.leaseObj, l, &out)
	}
	if code := statusOf(err); code == http.StatusConflict || code == http.StatusNotFound {
		return nil, nil // another contender was faster
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// begin starts the term of an acquired Lease: it stamps the epoch into the
// store within the renew deadline of the acquisition, then renews.
func (s *service) begin(ctx context.Context, l *lease, id string, acquired time.Time) (*leadership, error) {
	lead := &leadership{svc: s, id: id, epoch: uint64(l.transitions()), lease: l,
		done: make(chan struct{}), stop: make(chan struct{}), stopped: make(chan struct{})}
	lead.ctx, lead.cancel = context.WithCancel(s.ctx)
	lead.lastRenew.Store(mono(acquired))
	sctx, cancel := context.WithDeadline(ctx, acquired.Add(s.s.RenewDeadline))
	err := s.stamp(sctx, lead.epoch)
	cancel()
	if err != nil {
		lead.cancel()
		rctx, cancel := context.WithTimeout(s.ctx, s.s.RenewDeadline)
		lead.release(rctx)
		cancel()
		return nil, err
	}
	s.mu.Lock()
	s.terms[lead] = struct{}{}
	s.mu.Unlock()
	s.log.Info("kubeha: leading", "epoch", lead.epoch, "identity", id, "lease", s.leaseObj)
	go lead.renewLoop()
	return lead, nil
}

// Reader reads the store without leading.
func (s *service) Reader() ha.Reader { return &reader{svc: s} }

// Close ends campaigns, resigns every term this contender holds and
// releases the connections. A term it cannot release (the API server is
// unreachable) expires with its lease.
func (s *service) Close() error {
	s.cancel()
	s.mu.Lock()
	terms := make([]*leadership, 0, len(s.terms))
	for l := range s.terms {
		terms = append(terms, l)
	}
	s.mu.Unlock()
	for _, l := range terms {
		ctx, cancel := context.WithTimeout(context.Background(), s.s.RenewDeadline)
		if err := l.Resign(ctx); err != nil {
			s.log.Warn("kubeha: could not release the lease on close; it expires after the lease duration", "err", err)
		}
		cancel()
	}
	s.c.http.CloseIdleConnections()
	return nil
}

// leadership is a won term.
type leadership struct {
	svc   *service
	id    string
	epoch uint64

	lastRenew atomic.Int64 // mono of the send time of the last successful acquire or renewal

	mu    sync.Mutex
	lease *lease // as last written

	ctx    context.Context // of the renewals: ends with Resign or Close
	cancel context.CancelFunc

	done     chan struct{}
	doneOnce sync.Once
	stop     chan struct{} // closed by Resign: the renew loop ends
	stopOnce sync.Once
	stopped  chan struct{} // closed when the renew loop has ended
}

func (l *leadership) Epoch() uint64         { return l.epoch }
func (l *leadership) Done() <-chan struct{} { return l.done }
func (l *leadership) Store() ha.Store       { return &store{reader: reader{svc: l.svc}, lead: l} }
func (l *leadership) deadline() time.Time {
	return monoBase.Add(time.Duration(l.lastRenew.Load()) + l.svc.s.RenewDeadline)
}

// end closes Done once, logging why.
func (l *leadership) end(why string, attrs ...any) {
	l.doneOnce.Do(func() {
		l.svc.log.Info("kubeha: term over", append([]any{"epoch", l.epoch, "why", why}, attrs...)...)
		close(l.done)
	})
}

// PauseRenewals stops every renewal and campaign attempt of this
// contender without resigning, as SIGSTOP of its process would: its terms
// end by their renew deadline and their leases expire for the others,
// while its Stores and Reader stay usable (their writes are refused). It is
// hatest.Pauser, for the tests of fencing.
func (s *service) PauseRenewals() { s.paused.Store(true) }

// holds tells whether the term may still hold: Done is open and the renew
// deadline has not passed.
func (l *leadership) holds() error {
	select {
	case <-l.done:
		return fmt.Errorf("kubeha: the term of epoch %d is over: %w", l.epoch, ha.ErrNotLeader)
	default:
	}
	if !time.Now().Before(l.deadline()) {
		return fmt.Errorf("kubeha: the term of epoch %d was not renewed within the renew deadline %v: %w", l.epoch, l.svc.s.RenewDeadline, ha.ErrNotLeader)
	}
	return nil
}

// monoBase and mono keep instants in an atomic integer on the monotonic
// clock: a step of the wall clock must not lengthen a term.
var monoBase = time.Now()

func mono(t time.Time) int64 { return int64(t.Sub(monoBase)) }

var errLost = errors.New("another contender holds the lease")

// renewLoop renews the lease every retry period and ends the term when a
// renewal finds another holder or none succeeded within the renew
// deadline (the timer wakes at the deadline, whatever a request does).
func (l *leadership) renewLoop() {
	defer close(l.stopped)
	s := l.svc
	for {
		wait := s.s.RetryPeriod
		if until := time.Until(l.deadline()); until < wait {
			wait = until
		}
		select {
		case <-l.stop:
			return
		case <-s.ctx.Done():
			l.end("the service was closed")
			return
		case <-time.After(wait):
		}
		if !time.Now().Before(l.deadline()) {
			l.end("not renewed within the renew deadline", "renew-deadline", s.s.RenewDeadline)
			return
		}
		if s.paused.Load() {
			continue
		}
		ctx, cancel := context.WithDeadline(l.ctx, l.deadline())
		sent := time.Now()
		err := l.renew(ctx, sent)
		cancel()
		switch {
		case errors.Is(err, errLost):
			l.end("lost the lease", "err", err)
			return
		case err != nil:
			s.log.Warn("kubeha: renewal failed", "epoch", l.epoch, "err", err)
		default:
			l.lastRenew.Store(mono(sent))
		}
	}
}

// renew updates the lease's renew time, guarded by its resourceVersion.
func (l *leadership) renew(ctx context.Context, now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for try := 0; try < 2; try++ {
		next := *l.lease
		next.Spec.RenewTime = microTime(now)
		out, err := l.svc.putLease(ctx, &next)
		if err == nil {
			l.lease = out
			return nil
		}
		switch statusOf(err) {
		case http.StatusNotFound:
			return fmt.Errorf("%w: %s was deleted", errLost, l.svc.leaseObj)
		case http.StatusConflict:
			cur, gerr := l.svc.getLease(ctx)
			if gerr != nil {
				return gerr
			}
			if cur.holder() != l.id {
				return fmt.Errorf("%w: %s is held by %q", errLost, l.svc.leaseObj, cur.holder())
			}
			l.lease = cur // our earlier update went through; its answer was lost
		default:
			return err
		}
	}
	return errors.New("kubeha: renewal conflicted twice")
}

// Resign ends the term and releases the lease (holder cleared), so another
// contender may acquire it at once.
func (l *leadership) Resign(ctx context.Context) error {
	l.stopOnce.Do(func() { close(l.stop) })
	l.cancel() // a renewal under way ends now
	<-l.stopped
	l.end("resigned")
	l.svc.mu.Lock()
	delete(l.svc.terms, l)
	l.svc.mu.Unlock()
	return l.release(ctx)
}

// release clears the holder if this term still holds the lease.
func (l *leadership) release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for try := 0; try < 3; try++ {
		if l.lease.holder() != l.id {
			return nil
		}
		next := *l.lease
		empty := ""
		next.Spec.HolderIdentity = &empty
		next.Spec.LeaseDurationSeconds = leaseSeconds(time.Second)
		next.Spec.RenewTime = microTime(time.Now())
		next.Metadata.Annotations = setKey(next.Metadata.Annotations, annotationLeader, "")
		out, err := l.svc.putLease(ctx, &next)
		if err == nil {
			l.lease = out
			return nil
		}
		if statusOf(err) == http.StatusNotFound {
			return nil
		}
		if statusOf(err) != http.StatusConflict {
			return err
		}
		cur, gerr := l.svc.getLease(ctx)
		if gerr != nil {
			return gerr
		}
		l.lease = cur
	}
	return fmt.Errorf("kubeha: releasing %s conflicted 3 times", l.svc.leaseObj)
}

// newIdentity is a holder identity used for one campaign only: the host
// name (the pod's name in Kubernetes) and random bits.
func newIdentity() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "weir"
	}
	b := make([]byte, 6)
	rand.Read(b)
	return host + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b)
}

// setKey returns m with k set to v (removed when v is empty), copied so
// the caller's map (of a Lease as read) is not changed.
func setKey(m map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for a, b := range m {
		out[a] = b
	}
	if v == "" {
		delete(out, k)
	} else {
		out[k] = v
	}
	return out
}

package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A lineage lease makes one run at a time the writer of a job's checkpoints
// in a store (and, through them, of its sinks' commits). It lives under
// LeasePrefix/<job name>/ as numbered generations: "<gen>" objects, each
// created with Create, so that of two runs taking a lease at once exactly
// one gets the next generation. The newest generation is the lease; its
// holder rewrites it every timeout/3 (a heartbeat) and checks, before each
// checkpoint's metadata is written, that no newer generation exists. A run
// may take the lease when the newest generation is released, expired
// (not renewed for its timeout, by the taker's clock), or held by a process
// of this machine that is gone (same host and boot, pid not running or
// running another program): so a `kill -9` followed by `--from latest` on
// the same machine resumes at once, and one on another machine after the
// timeout. Works on any store with Create: file:// (hard links), mem://,
// and S3 (conditional writes).

// LeasePrefix is the folder of the leases at a store's root. Its name cannot
// be a job ID (32 hex digits), so listings of jobs skip it.
const LeasePrefix = "_leases"

// maxLeaseRetries bounds how often taking a lease retries after the store
// failed (a transient error of an object store).
const maxLeaseRetries = 4

// DefaultLeaseTimeout is how long a lease outlives its holder's last
// heartbeat.
const DefaultLeaseTimeout = 10 * time.Second

// LeaseInfo is what a lease's holder says of itself.
type LeaseInfo struct {
	Owner    string `json:"owner"` // the holder's job ID
	JobName  string `json:"jobName"`
	Lineage  string `json:"lineage,omitempty"`
	Host     string `json:"host"`
	BootID   string `json:"bootId,omitempty"`   // Linux's boot id: a pid of another boot is not the holder
	PID      int    `json:"pid"`                // the holder's process
	PIDStart uint64 `json:"pidStart,omitempty"` // its start time (Linux clock ticks since boot): a reused pid is not the holder
	REST     string `json:"rest,omitempty"`     // the holder's REST API, to name it in errors
	// Acquired and Renewed are epoch ms; Timeout ms after Renewed the lease
	// expires. Released is set when the holder ended.
	Acquired int64 `json:"acquired"`
	Renewed  int64 `json:"renewed"`
	Timeout  int64 `json:"timeout"`
	Released bool  `json:"released,omitempty"`
}

// LocalProcess fills the fields of a LeaseInfo that name this process.
func LocalProcess(info LeaseInfo) LeaseInfo {
	info.Host, _ = os.Hostname()
	info.BootID = bootID()
	info.PID = os.Getpid()
	info.PIDStart, _ = processStart(info.PID)
	return info
}

// LeaseHeldError says that another run holds the lease.
type LeaseHeldError struct {
	Store  string
	Holder LeaseInfo
	Now    int64 // epoch ms, when it was read
}

func (e *LeaseHeldError) Error() string {
	h := e.Holder
	who := fmt.Sprintf("job %s (pid %d on %s", h.Owner, h.PID, h.Host)
	if h.REST != "" {
		who += ", REST API at http://" + h.REST
	}
	who += ")"
	return fmt.Sprintf("checkpoint storage %s: %q is being written by %s, last heard from %s ago: "+
		"two runs writing one job's checkpoints and output would duplicate or lose results. "+
		"Stop that run first (weir cancel %s), or, if it is gone, wait %s for its lease to expire",
		e.Store, h.JobName, who, time.Duration(max(e.Now-h.Renewed, 0))*time.Millisecond, h.Owner,
		time.Duration(max(h.Renewed+h.Timeout-e.Now, 0))*time.Millisecond)
}

// ErrLeaseLost is wrapped by the errors of a Lease whose holder can no longer
// be sure it is the only writer.
var ErrLeaseLost = errors.New("lineage lease lost")

// Lease is a held lineage lease.
type Lease struct {
	store   *Store
	dir     string // LeasePrefix/<name>/
	gen     int64
	timeout time.Duration
	now     func() time.Time

	mu   sync.Mutex // guards info, ok, lost
	info LeaseInfo
	ok   time.Time // when the last heartbeat was written
	lost error
}

// leaseName is the folder name of jobName's lease: the name itself when it
// is a safe key element, else a hash of it.
func leaseName(jobName string) string {
	if safeLeaseName.MatchString(jobName) && checkComponent(jobName) == nil {
		return jobName
	}
	sum := sha256.Sum256([]byte(jobName))
	return "h-" + hex.EncodeToString(sum[:16])
}

var safeLeaseName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$`)

// genKey is the key of generation gen: fixed width, so keys sort as numbers.
func genKey(dir string, gen int64) string { return fmt.Sprintf("%s%020d", dir, gen) }

// AcquireLease takes the lease of jobName's checkpoints in s for the run
// info describes (LocalProcess fills its process fields), with timeout (0:
// DefaultLeaseTimeout); now is the clock (nil: time.Now). It fails with a
// *LeaseHeldError when another run holds it.
func AcquireLease(ctx context.Context, s *Store, jobName string, info LeaseInfo, timeout time.Duration, now func() time.Time) (*Lease, error) {
	if timeout <= 0 {
		timeout = DefaultLeaseTimeout
	}
	if now == nil {
		now = time.Now
	}
	l := &Lease{store: s, dir: LeasePrefix + "/" + leaseName(jobName) + "/", timeout: timeout, now: now}
	info.JobName = jobName
	info.Timeout = timeout.Milliseconds()
	failures := 0
	for range 16 {
		gen, holder, err := l.newest(ctx)
		if err != nil {
			if failures++; failures > maxLeaseRetries {
				return nil, err
			}
			if err := retryPause(ctx, failures, err); err != nil {
				return nil, fmt.Errorf("taking the lineage lease in %s: %w", s.URL(), err)
			}
			continue
		}
		t := now().UnixMilli()
		if holder != nil {
			if live, _ := leaseLive(*holder, t, localProbe{}); live {
				return nil, &LeaseHeldError{Store: s.URL(), Holder: *holder, Now: t}
			}
		}
		info.Acquired, info.Renewed = t, t
		data, _ := json.Marshal(info)
		err = s.Create(ctx, genKey(l.dir, gen+1), data)
		if errors.Is(err, ErrExists) {
			continue // another run took gen+1 first: look at it
		}
		if err != nil {
			if failures++; failures > maxLeaseRetries {
				return nil, fmt.Errorf("taking the lineage lease in %s: %w", s.URL(), err)
			}
			if err := retryPause(ctx, failures, err); err != nil {
				return nil, fmt.Errorf("taking the lineage lease in %s: %w", s.URL(), err)
			}
			continue
		}
		l.gen, l.info, l.ok = gen+1, info, now()
		l.dropOlder(ctx)
		return l, nil
	}
	return nil, fmt.Errorf("taking the lineage lease in %s: other runs kept taking it first", s.URL())
}

// retryPause waits before the retry that follows the failures-th failure
// (failed, the last error) of the store: failures*50ms, or until ctx ends,
// whose error it then returns together with failed.
func retryPause(ctx context.Context, failures int, failed error) error {
	t := time.NewTimer(time.Duration(failures) * 50 * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w while retrying after: %w", context.Cause(ctx), failed)
	}
}

// newest returns the newest generation in l.dir and what it says (nil when
// there is none). An unreadable generation counts as held until its
// timeout can be judged: it is treated as expired only once a newer one is
// written, so it never lets two runs in.
func (l *Lease) newest(ctx context.Context) (int64, *LeaseInfo, error) {
	for try := 0; ; try++ {
		gen, info, err := l.newestOnce(ctx)
		if !errors.Is(err, errGenGone) {
			return gen, info, err
		}
		if try == 8 {
			return 0, nil, fmt.Errorf("reading the lineage lease in %s: generations kept changing while it was read", l.store.URL())
		}
	}
}

// errGenGone says that a listed generation was deleted before it was read:
// a newer one exists (only a newer holder deletes older generations), so
// the listing is stale. Taking it for "no lease" would hand out a number
// below the newest again.
var errGenGone = errors.New("lease generation gone")

func (l *Lease) newestOnce(ctx context.Context) (int64, *LeaseInfo, error) {
	keys, err := l.store.List(ctx, l.dir)
	if err != nil {
		return 0, nil, fmt.Errorf("reading the lineage lease in %s: %w", l.store.URL(), err)
	}
	for i := len(keys) - 1; i >= 0; i-- {
		gen, err := strconv.ParseInt(strings.TrimPrefix(keys[i], l.dir), 10, 64)
		if err != nil || gen <= 0 {
			continue
		}
		data, err := l.store.Get(ctx, keys[i])
		if errors.Is(err, ErrNotFound) {
			return 0, nil, errGenGone
		}
		if err != nil {
			return 0, nil, fmt.Errorf("reading the lineage lease in %s: %w", l.store.URL(), err)
		}
		var info LeaseInfo
		if err := json.Unmarshal(data, &info); err != nil {
			// A torn or foreign object: it holds nothing, but its
			// generation is taken.
			info = LeaseInfo{Owner: "unknown", Released: true}
		}
		return gen, &info, nil
	}
	return 0, nil, nil
}

// dropOlder deletes the generations before l's (best effort: they hold
// nothing once a newer one exists).
func (l *Lease) dropOlder(ctx context.Context) {
	keys, err := l.store.List(ctx, l.dir)
	if err != nil {
		return
	}
	for _, k := range keys {
		if gen, err := strconv.ParseInt(strings.TrimPrefix(k, l.dir), 10, 64); err == nil && gen < l.gen {
			_ = l.store.Delete(ctx, k)
		}
	}
}

// Info returns what the lease says of its holder.
func (l *Lease) Info() LeaseInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.info
}

// SetREST records the holder's REST address (known once its cluster runs);
// the next heartbeat writes it.
func (l *Lease) SetREST(addr string) {
	l.mu.Lock()
	l.info.REST = addr
	l.mu.Unlock()
}

// Check returns nil while l is certainly the only lease of its job: no newer
// generation exists and the last heartbeat was written less than the
// timeout ago (after that another run may have judged it expired). Its
// error wraps ErrLeaseLost.
func (l *Lease) Check(ctx context.Context) error {
	l.mu.Lock()
	lost, ok := l.lost, l.ok
	l.mu.Unlock()
	if lost != nil {
		return lost
	}
	if age := l.now().Sub(ok); age >= l.timeout {
		return l.lose(fmt.Errorf("%w: no heartbeat could be written for %v (the lease's timeout is %v), so another run may have taken it",
			ErrLeaseLost, age.Round(time.Millisecond), l.timeout))
	}
	gen, holder, err := l.newest(ctx)
	if err != nil {
		return err // the store failing: not lost yet, the timeout decides
	}
	if gen != l.gen {
		who := "another run"
		if holder != nil {
			who = fmt.Sprintf("job %s (pid %d on %s)", holder.Owner, holder.PID, holder.Host)
		}
		if gen < l.gen {
			who = "someone who deleted it"
		}
		return l.lose(fmt.Errorf("%w: %s took the lease of %q in %s (generation %d, ours %d); this run stops writing",
			ErrLeaseLost, who, l.Info().JobName, l.store.URL(), gen, l.gen))
	}
	return nil
}

func (l *Lease) lose(err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost == nil {
		l.lost = err
	}
	return l.lost
}

// Renew writes a heartbeat after checking that the lease is still l's.
func (l *Lease) Renew(ctx context.Context) error {
	if err := l.Check(ctx); err != nil {
		return err
	}
	t := l.now()
	l.mu.Lock()
	l.info.Renewed = t.UnixMilli()
	data, _ := json.Marshal(l.info)
	l.mu.Unlock()
	if err := l.store.Put(ctx, genKey(l.dir, l.gen), data); err != nil {
		return err
	}
	l.mu.Lock()
	l.ok = t
	l.mu.Unlock()
	return nil
}

// Keep renews l every timeout/3 until ctx is done, and calls lost once if
// the lease is lost (another run took it, or no heartbeat could be written
// for the timeout).
func (l *Lease) Keep(ctx context.Context, lost func(error)) {
	tick := time.NewTicker(l.timeout / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := l.Renew(ctx)
		if errors.Is(err, ErrLeaseLost) {
			if ctx.Err() == nil {
				lost(err)
			}
			return
		}
	}
}

// Release marks the lease released, so the next run takes it at once. A
// lost lease is left alone. Call it after Keep has returned, or a heartbeat
// written after it could undo it.
func (l *Lease) Release(ctx context.Context) error {
	if err := l.Check(ctx); errors.Is(err, ErrLeaseLost) {
		return nil
	} else if err != nil {
		return err
	}
	l.mu.Lock()
	l.info.Released = true
	l.info.Renewed = l.now().UnixMilli()
	data, _ := json.Marshal(l.info)
	l.mu.Unlock()
	return l.store.Put(ctx, genKey(l.dir, l.gen), data)
}

// processProbe tells whether a process of this machine still runs.
type processProbe interface {
	host() (name, boot string)
	// start returns the start time of pid, false if no such process.
	start(pid int) (uint64, bool)
}

// leaseLive decides whether holder still holds its lease at now (epoch ms),
// as seen by a process of the machine p describes, and why.
func leaseLive(holder LeaseInfo, now int64, p processProbe) (bool, string) {
	if holder.Released {
		return false, "released"
	}
	if now >= holder.Renewed+holder.Timeout {
		return false, "expired"
	}
	host, boot := p.host()
	if holder.Host == "" || holder.Host != host || holder.BootID != boot || holder.PID <= 0 {
		return true, "renewed by a process elsewhere"
	}
	start, ok := p.start(holder.PID)
	switch {
	case !ok:
		return false, "its process is gone"
	case holder.PIDStart != 0 && start != holder.PIDStart:
		return false, "its pid runs another process"
	}
	return true, "its process runs"
}

// localProbe looks at this machine's processes through /proc.
type localProbe struct{}

func (localProbe) host() (string, string) {
	h, _ := os.Hostname()
	return h, bootID()
}

func (localProbe) start(pid int) (uint64, bool) { return processStart(pid) }

func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// processStart returns the start time of pid in clock ticks since boot
// (field 22 of /proc/<pid>/stat), and whether the process exists. A zombie
// counts as gone. Without /proc it says the process exists, with start 0,
// so the lease's timeout decides.
func processStart(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if _, serr := os.Stat("/proc/self/stat"); serr != nil {
			return 0, true
		}
		return 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, true
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state), so field 22 is f[19].
	if len(f) < 20 {
		return 0, true
	}
	if f[0] == "Z" || f[0] == "X" {
		return 0, false
	}
	v, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, true
	}
	return v, true
}

package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/blob/memblob"
	"gocloud.dev/gcerrors"
)

// ErrNotFound is wrapped by the errors of Get, Open and ReadMetadata when the
// object does not exist.
var ErrNotFound = errors.New("object not found")

// ErrClosed is wrapped by the errors of operations on a closed Store or
// ReaderAt.
var ErrClosed = errors.New("store closed")

// BucketOpener opens the bucket named by u: its scheme, its host (the bucket)
// and its query (driver options). u has no path: Open keeps the path as a key
// prefix itself.
type BucketOpener func(ctx context.Context, u *url.URL) (*blob.Bucket, error)

// schemes holds the openers of schemes other than file and mem, registered by
// driver packages (s3store) so that binaries that do not import them do not
// link their SDKs.
var schemes struct {
	mu sync.Mutex // guards m
	m  map[string]BucketOpener
}

// driverPackages names the package to import for a known scheme that is not
// registered.
var driverPackages = map[string]string{
	"s3": "github.com/weirhq/weir/internal/checkpoint/storage/s3store",
}

// RegisterScheme makes Open accept URLs of scheme, opened by open. Driver
// packages call it from init. It panics if scheme is file, mem or already
// registered.
func RegisterScheme(scheme string, open BucketOpener) {
	schemes.mu.Lock()
	defer schemes.mu.Unlock()
	if scheme == "file" || scheme == "mem" || schemes.m[scheme] != nil {
		panic(fmt.Sprintf("storage: scheme %q registered twice", scheme))
	}
	if schemes.m == nil {
		schemes.m = make(map[string]BucketOpener)
	}
	schemes.m[scheme] = open
}

func schemeOpener(scheme string) BucketOpener {
	schemes.mu.Lock()
	defer schemes.mu.Unlock()
	return schemes.m[scheme]
}

// memBuckets is the process-wide registry of mem:// stores: one bucket per
// name, created on first open and kept for the life of the process, so that
// every Store opened from the same mem:// name sees the same objects.
var memBuckets struct {
	mu sync.Mutex // guards m
	m  map[string]*blob.Bucket
}

func memBucket(name string) *blob.Bucket {
	memBuckets.mu.Lock()
	defer memBuckets.mu.Unlock()
	b := memBuckets.m[name]
	if b == nil {
		if memBuckets.m == nil {
			memBuckets.m = make(map[string]*blob.Bucket)
		}
		b = memblob.OpenBucket(nil)
		memBuckets.m[name] = b
	}
	return b
}

// Store is an object store addressed by a URL, rooted at the URL's path:
// every key is relative to that root and uses "/" separators. A Store is safe
// for concurrent use.
//
// Keys are checked (see checkKey): no empty, "." or ".." elements, no leading
// or trailing "/", no control characters or backslashes, no elements ending
// in ".attrs" or ".<hex>.tmp" (reserved by the file store). On a file store a
// key cannot also be a "directory" of other keys ("a/b" and "a/b/c"); the
// checkpoint layout never does that.
type Store struct {
	url    string       // the canonical URL of the root
	bucket *blob.Bucket // the whole bucket; keys are prefixed with prefix
	prefix string       // "" or the root's key prefix ending in "/" (never for file)
	dir    string       // file stores: the root directory, for fsync and temp files
	owns   bool         // Close closes bucket (false for mem)
	view   bool         // a WithFaults copy: Close does nothing
	closed *atomic.Bool // shared with WithFaults copies
	fault  FaultFunc    // nil, or decides injected delays and failures
	budget *writeBudget // the bound of LimitWriteMemory; shared with WithFaults copies
}

// Open opens the store at rawURL:
//
//	file:///abs/path, or a plain path (absolute or relative): a directory,
//	    created if missing. Writes go to a temporary file next to the target
//	    and are renamed into place on success, then fsynced with their directory.
//	mem://name[/prefix]: an in-process store; every Open of the same name in a
//	    process shares one bucket (for tests).
//	s3://bucket[/prefix][?options]: Amazon S3 or an S3-compatible server, when
//	    the s3store package is linked in. Options are gocloud.dev/blob/s3blob's
//	    (v0.47): region, endpoint (e.g. http://127.0.0.1:9000), use_path_style
//	    or s3ForcePathStyle=true, disable_https, anonymous=true, profile,
//	    request_checksum_calculation and response_checksum_validation
//	    (when_required for S3-compatible servers that do not support the SDK's
//	    default trailing checksums), ssetype, kmskeyid, accelerate, dualstack,
//	    fips, hostname_immutable, rate_limiter_capacity, role. Credentials come
//	    from the AWS SDK's default chain (environment, shared config, ...).
//	    Open checks that the bucket exists.
//
// The error names the URL and what is wrong with it.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	loc, err := parseLocation(rawURL)
	if err != nil {
		return nil, fmt.Errorf("storage: open %q: %w", rawURL, err)
	}
	s, err := openLocation(ctx, loc, true)
	if err != nil {
		return nil, fmt.Errorf("storage: open %q: %w", rawURL, err)
	}
	interceptors.mu.Lock()
	defer interceptors.mu.Unlock()
	for _, ic := range interceptors.list {
		if strings.HasPrefix(s.URL(), ic.prefix) {
			s = ic.wrap(s)
		}
	}
	return s, nil
}

// interceptors wrap the stores Open returns (see Intercept).
var interceptors struct {
	mu   sync.Mutex // guards list
	list []*interceptor
}

type interceptor struct {
	prefix string
	wrap   func(*Store) *Store
}

// Intercept makes Open pass every store whose URL starts with prefix
// through wrap (WithFaults, say), until undo is called. It lets tests inject
// faults into the checkpoint storage a job opens by URL.
func Intercept(prefix string, wrap func(*Store) *Store) (undo func()) {
	ic := &interceptor{prefix: prefix, wrap: wrap}
	interceptors.mu.Lock()
	interceptors.list = append(interceptors.list, ic)
	interceptors.mu.Unlock()
	return func() {
		interceptors.mu.Lock()
		defer interceptors.mu.Unlock()
		for i, x := range interceptors.list {
			if x == ic {
				interceptors.list = append(interceptors.list[:i], interceptors.list[i+1:]...)
				return
			}
		}
	}
}

// openLocation opens the store at loc, creating a missing file root if create.
func openLocation(ctx context.Context, loc location, create bool) (*Store, error) {
	s := &Store{url: loc.String(), closed: new(atomic.Bool), budget: &writeBudget{}}
	switch loc.scheme {
	case "file":
		info, err := os.Stat(loc.path)
		switch {
		case err == nil && !info.IsDir():
			return nil, fmt.Errorf("root %s is not a directory", loc.path)
		case errors.Is(err, fs.ErrNotExist) && create:
			if err := os.MkdirAll(loc.path, 0o777); err != nil {
				return nil, fmt.Errorf("creating root: %w", err)
			}
		case err != nil:
			return nil, fmt.Errorf("root: %w", err)
		}
		b, err := fileblob.OpenBucket(loc.path, &fileblob.Options{
			NoTempDir: true, // rename within the root's file system
			Metadata:  fileblob.MetadataDontWrite,
		})
		if err != nil {
			return nil, err
		}
		s.bucket, s.dir, s.owns = b, loc.path, true
		return s, nil
	case "mem":
		s.bucket = memBucket(loc.host)
	default:
		open := schemeOpener(loc.scheme)
		if open == nil {
			if pkg, ok := driverPackages[loc.scheme]; ok {
				return nil, fmt.Errorf("the %s driver is not linked into this binary (import _ %q)", loc.scheme, pkg)
			}
			return nil, fmt.Errorf("unsupported scheme %q (want file, mem or s3)", loc.scheme)
		}
		b, err := open(ctx, &url.URL{Scheme: loc.scheme, Host: loc.host, RawQuery: loc.rawQuery})
		if err != nil {
			return nil, err
		}
		ok, err := b.IsAccessible(ctx)
		if err == nil && !ok {
			err = fmt.Errorf("bucket %q does not exist", loc.host)
		}
		if err != nil {
			b.Close()
			return nil, err
		}
		s.bucket, s.owns = b, true
	}
	if loc.path != "" {
		s.prefix = loc.path + "/"
	}
	return s, nil
}

// URL returns the canonical URL of the store's root (a plain path becomes a
// file:// URL).
func (s *Store) URL() string { return s.url }

// Close releases the store. Operations on a closed store fail with ErrClosed.
// Closing a mem:// store keeps its objects for other stores of the same name;
// closing a store returned by WithFaults does not close the store it wraps.
func (s *Store) Close() error {
	if s.view || s.closed.Swap(true) || !s.owns {
		return nil
	}
	return s.bucket.Close()
}

// fail wraps err as the error of op on key.
func (s *Store) fail(op, key string, err error) error {
	if gcerrors.Code(err) == gcerrors.NotFound {
		err = ErrNotFound
	}
	return fmt.Errorf("storage: %s %q in %s: %w", op, key, s.url, err)
}

// begin checks key and the store's state and applies injected faults.
func (s *Store) begin(ctx context.Context, op, key string, isKey bool) error {
	if err := s.check(op, key, isKey); err != nil {
		return err
	}
	fault, err := s.inject(ctx, op, key)
	if err == nil {
		err = fault
	}
	if err != nil {
		return s.fail(op, key, err)
	}
	return nil
}

// check checks key (if isKey) and that the store is open.
func (s *Store) check(op, key string, isKey bool) error {
	if isKey {
		if err := checkKey(key); err != nil {
			return fmt.Errorf("storage: %s in %s: %w", op, s.url, err)
		}
	}
	if s.closed.Load() {
		return s.fail(op, key, ErrClosed)
	}
	return nil
}

var writeOptions = &blob.WriterOptions{
	ContentType:                 "application/octet-stream",
	DisableContentTypeDetection: true,
	BufferSize:                  blobWriteBuffer,
	MaxConcurrency:              1, // one buffer per writer (WriterMemory)
}

// Put writes data to key atomically: readers see the old object (or none) or
// all of data, never a part.
func (s *Store) Put(ctx context.Context, key string, data []byte) error {
	if err := s.begin(ctx, OpPut, key, true); err != nil {
		return err
	}
	if err := s.prepare(key); err != nil {
		return s.fail(OpPut, key, err)
	}
	if s.dir == "" {
		// A bucket's upload buffers the data again (a file store's does
		// not): it counts as a writer.
		if err := s.budget.acquire(ctx, s.WriterMemory()); err != nil {
			return s.fail(OpPut, key, err)
		}
		defer s.budget.release(s.WriterMemory())
	}
	if err := s.bucket.WriteAll(ctx, s.prefix+key, data, writeOptions); err != nil {
		return s.fail(OpPut, key, err)
	}
	if err := s.persist(key); err != nil {
		return s.fail(OpPut, key, err)
	}
	return nil
}

// NewWriter starts a streaming write of key. The object appears atomically
// when Close returns nil. If ctx is canceled before Close, or a Write failed,
// Close aborts the write and nothing is left at key (an existing object is
// kept). To abandon a write, cancel ctx and call Close.
func (s *Store) NewWriter(ctx context.Context, key string) (io.WriteCloser, error) {
	fault, err := s.startWrite(ctx, key)
	if err != nil {
		return nil, err
	}
	return s.openWriter(ctx, key, fault)
}

// startWrite checks key, applies injected faults and creates key's
// directories. An injected write failure is returned as fault, for the
// writer's Close to return after the data was accepted, as a failed
// upload would.
func (s *Store) startWrite(ctx context.Context, key string) (fault error, err error) {
	if err := s.check(OpWrite, key, true); err != nil {
		return nil, err
	}
	fault, err = s.inject(ctx, OpWrite, key)
	if err != nil {
		return nil, s.fail(OpWrite, key, err)
	}
	if fault != nil {
		fault = s.fail(OpWrite, key, fault)
	}
	if err := s.prepare(key); err != nil {
		return nil, s.fail(OpWrite, key, err)
	}
	return fault, nil
}

// openWriter is NewWriter after startWrite.
// It waits for the writer's memory within the store's bound
// (LimitWriteMemory); Close gives it back.
func (s *Store) openWriter(ctx context.Context, key string, fault error) (io.WriteCloser, error) {
	mem := s.WriterMemory()
	if err := s.budget.acquire(ctx, mem); err != nil {
		return nil, s.fail(OpWrite, key, err)
	}
	var ow objectWriter
	if s.dir != "" {
		fw, err := newFileWriter(s.path(key))
		if err != nil {
			s.budget.release(mem)
			return nil, s.fail(OpWrite, key, err)
		}
		ow = fw
	} else {
		wctx, cancel := context.WithCancel(ctx)
		bw, err := s.bucket.NewWriter(wctx, s.prefix+key, writeOptions)
		if err != nil {
			cancel()
			s.budget.release(mem)
			return nil, s.fail(OpWrite, key, err)
		}
		ow = blobWriter{bw, cancel}
	}
	return &writer{s: s, key: key, ctx: ctx, w: ow, fault: fault, mem: mem}, nil
}

// objectWriter is how a writer writes its object: Close publishes it,
// abort leaves nothing.
type objectWriter interface {
	io.WriteCloser
	abort()
}

// blobWriter writes through the bucket, under a child of the writer's
// context that abort cancels.
type blobWriter struct {
	w      *blob.Writer
	cancel context.CancelFunc
}

func (b blobWriter) Write(p []byte) (int, error) { return b.w.Write(p) }

func (b blobWriter) Close() error {
	err := b.w.Close()
	b.cancel()
	return err
}

func (b blobWriter) abort() {
	b.cancel() // aborts the upload: nothing is written
	_ = b.w.Close()
}

// writer is the io.WriteCloser of NewWriter.
type writer struct {
	s     *Store
	key   string
	ctx   context.Context // the caller's
	w     objectWriter    // a fileWriter in file stores, else a blobWriter
	err   error           // the first Write error; Close aborts when set
	fault error           // an injected failure, returned by Close after aborting
	mem   int64           // of the store's write budget, released by Close
	done  bool
}

func (w *writer) Write(p []byte) (int, error) {
	if w.done {
		return 0, w.s.fail(OpWrite, w.key, errors.New("write after Close"))
	}
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.w.Write(p)
	if err != nil {
		w.err = w.s.fail(OpWrite, w.key, err)
		return n, w.err
	}
	return n, nil
}

func (w *writer) Close() error {
	if w.done {
		return w.s.fail(OpWrite, w.key, errors.New("closed twice"))
	}
	w.done = true
	defer w.s.budget.release(w.mem)
	if w.err == nil && w.ctx.Err() != nil {
		w.err = w.s.fail(OpWrite, w.key, context.Cause(w.ctx))
	}
	if w.err == nil {
		w.err = w.fault
	}
	if w.err != nil {
		w.w.abort()
		return w.err
	}
	if err := w.w.Close(); err != nil {
		return w.s.fail(OpWrite, w.key, err)
	}
	if err := w.s.persist(w.key); err != nil {
		return w.s.fail(OpWrite, w.key, err)
	}
	return nil
}

// Get reads the whole object at key. A missing key gives an error wrapping
// ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if err := s.begin(ctx, OpGet, key, true); err != nil {
		return nil, err
	}
	data, err := s.bucket.ReadAll(ctx, s.prefix+key)
	if err != nil {
		return nil, s.fail(OpGet, key, err)
	}
	return data, nil
}

// ReaderAt reads an object by ranges. Every ReadAt is one range read of the
// store (one request for s3), so callers should read in large pieces. It is
// safe for concurrent use.
type ReaderAt interface {
	io.ReaderAt
	io.Closer
	// Size is the object's size when it was opened.
	Size() int64
}

// Open opens the object at key for range reads. The ReaderAt's reads use ctx
// (io.ReaderAt takes none), so it must stay live while the ReaderAt is used.
// A missing key gives an error wrapping ErrNotFound.
func (s *Store) Open(ctx context.Context, key string) (ReaderAt, error) {
	if err := s.begin(ctx, OpOpen, key, true); err != nil {
		return nil, err
	}
	if s.dir != "" {
		// One open file for all the reads, direct where the file system
		// allows it (see fileReader).
		f, size, err := s.openFile(OpOpen, key)
		if err != nil {
			return nil, err
		}
		return &objectReader{s: s, ctx: ctx, key: key, size: size, f: f}, nil
	}
	attrs, err := s.bucket.Attributes(ctx, s.prefix+key)
	if err != nil {
		return nil, s.fail(OpOpen, key, err)
	}
	return &objectReader{s: s, ctx: ctx, key: key, size: attrs.Size}, nil
}

// openFile opens the file of key in a file store for op, an error naming
// both if it fails (ErrNotFound for a missing one).
func (s *Store) openFile(op, key string) (*fileReader, int64, error) {
	f, size, err := openFileReader(s.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		err = ErrNotFound
	}
	if err != nil {
		return nil, 0, s.fail(op, key, err)
	}
	return f, size, nil
}

// objectReader is the ReaderAt of Store.Open.
type objectReader struct {
	s      *Store
	ctx    context.Context
	key    string
	size   int64
	f      *fileReader // file stores: the object's file, open until Close
	closed atomic.Bool
}

func (r *objectReader) Size() int64 { return r.size }

func (r *objectReader) Close() error {
	if r.closed.Swap(true) || r.f == nil {
		return nil
	}
	return r.f.Close()
}

func (r *objectReader) ReadAt(p []byte, off int64) (int, error) {
	switch {
	case r.closed.Load():
		return 0, r.s.fail(OpRead, r.key, ErrClosed)
	case off < 0:
		return 0, r.s.fail(OpRead, r.key, fmt.Errorf("negative offset %d", off))
	case len(p) == 0:
		return 0, nil
	case off >= r.size:
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), r.size-off))
	if err := r.s.begin(r.ctx, OpRead, r.key, false); err != nil {
		return 0, err
	}
	var m int
	var err error
	if r.f != nil {
		m, err = r.f.ReadAt(p[:n], off)
	} else {
		rr, rerr := r.s.bucket.NewRangeReader(r.ctx, r.s.prefix+r.key, off, int64(n), nil)
		if rerr != nil {
			return 0, r.s.fail(OpRead, r.key, rerr)
		}
		m, err = io.ReadFull(rr, p[:n])
		rr.Close()
	}
	if err != nil {
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			err = fmt.Errorf("object shorter than its size %d when opened", r.size)
		}
		return m, r.s.fail(OpRead, r.key, err)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Delete deletes the object at key. Deleting a missing key is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	return s.remove(ctx, key, true)
}

// remove deletes key; isKey false skips checking key (to delete a file
// store's temporary files).
func (s *Store) remove(ctx context.Context, key string, isKey bool) error {
	if err := s.begin(ctx, OpDelete, key, isKey); err != nil {
		return err
	}
	err := s.bucket.Delete(ctx, s.prefix+key)
	if err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return s.fail(OpDelete, key, err)
	}
	return nil
}

// List returns the keys that start with prefix, sorted. Objects being written
// are not listed.
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	return s.list(ctx, prefix, false)
}

// list lists keys under prefix; withTemp includes a file store's temporary
// files (left by writes in progress or by a crash).
func (s *Store) list(ctx context.Context, prefix string, withTemp bool) ([]string, error) {
	if err := s.begin(ctx, OpList, prefix, false); err != nil {
		return nil, err
	}
	// A file store's listing walks directories and fails when a file or
	// directory goes while it walks (a checkpoint being deleted): list again.
	for try := 0; ; try++ {
		keys, err := s.listOnce(ctx, prefix, withTemp)
		if err == nil || !errors.Is(err, ErrNotFound) || try == 4 || ctx.Err() != nil {
			return keys, err
		}
	}
}

func (s *Store) listOnce(ctx context.Context, prefix string, withTemp bool) ([]string, error) {
	var keys []string
	it := s.bucket.List(&blob.ListOptions{Prefix: s.prefix + prefix})
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, s.fail(OpList, prefix, err)
		}
		key := strings.TrimPrefix(obj.Key, s.prefix)
		if s.dir != "" && !withTemp && tempName.MatchString(key) {
			continue
		}
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return keys, nil
}

// listDirs returns the names of the "directories" directly under prefix
// (which is "" or ends in "/"), sorted.
func (s *Store) listDirs(ctx context.Context, prefix string) ([]string, error) {
	if err := s.begin(ctx, OpList, prefix, false); err != nil {
		return nil, err
	}
	var names []string
	it := s.bucket.List(&blob.ListOptions{Prefix: s.prefix + prefix, Delimiter: "/"})
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, s.fail(OpList, prefix, err)
		}
		if obj.IsDir {
			name := strings.TrimSuffix(strings.TrimPrefix(obj.Key, s.prefix+prefix), "/")
			if name != "" {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// path returns the file of key in a file store.
func (s *Store) path(key string) string {
	return filepath.Join(s.dir, filepath.FromSlash(key))
}

// prepare creates, in a file store, the missing directories of key, syncing
// the parent of each new one so that a written object's directory entry
// survives a crash.
func (s *Store) prepare(key string) error {
	if s.dir == "" {
		return nil
	}
	var missing []string
	for d := filepath.Dir(s.path(key)); ; d = filepath.Dir(d) {
		_, err := os.Stat(d)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		if d == s.dir || filepath.Dir(d) == d {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		if err := syncDir(filepath.Dir(missing[i])); err != nil {
			return err
		}
	}
	return nil
}

// persist makes a write to a file store durable: fileblob renames its
// temporary file into place without fsync, so sync the file and its directory.
func (s *Store) persist(key string) error {
	if s.dir == "" {
		return nil
	}
	p := s.path(key)
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return syncDir(filepath.Dir(p))
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	f.Close()
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		return nil // the file system cannot sync directories
	}
	return err
}

// removeEmptyDirs removes, in a file store, the directory of prefix (ending
// in "/") and its subdirectories if they are empty. Only for directories no
// writer uses any more (a writer creates its directories before its file).
func (s *Store) removeEmptyDirs(prefix string) {
	if s.dir == "" || prefix == "" {
		return
	}
	removeEmptyTree(s.path(strings.TrimSuffix(prefix, "/")))
}

// removeRoot removes, in a file store, the root directory if it and its
// subdirectories are empty (a failed savepoint's folder).
func (s *Store) removeRoot() {
	if s.dir != "" {
		removeEmptyTree(s.dir)
	}
}

// removeEmptyTree removes the empty directories of the tree at root, root
// included.
func removeEmptyTree(root string) {
	var dirs []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for _, d := range slices.Backward(dirs) {
		_ = os.Remove(d) // fails, as it should, if not empty
	}
}

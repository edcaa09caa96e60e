package storage

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"log/slog"
	"slices"
	"strings"
)

// WriteMetadata validates m and writes it, encoded, to MetadataKey atomically.
// Call it after every object m names is written: its presence completes the
// checkpoint.
func WriteMetadata(ctx context.Context, s *Store, m Metadata) error {
	key := MetadataKey(m.JobID, m.CheckpointID)
	m = m.normalized()
	if err := m.Validate(); err != nil {
		return fmt.Errorf("storage: write metadata of checkpoint %d of job %q: %w", m.CheckpointID, m.JobID, err)
	}
	data := EncodeMetadata(m)
	if len(data) > MaxMetadataSize {
		return fmt.Errorf("storage: write metadata %q: %d bytes, more than %d", key, len(data), MaxMetadataSize)
	}
	return s.Put(ctx, key, data)
}

// ReadMetadata reads and decodes the metadata of checkpoint id of jobID. A
// missing file gives an error wrapping ErrNotFound (the checkpoint is not
// complete); a damaged one, or one naming another job or checkpoint, a
// *CorruptError with the key.
func ReadMetadata(ctx context.Context, s *Store, jobID string, id int64) (*Metadata, error) {
	key := MetadataKey(jobID, id)
	data, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	m, err := DecodeMetadata(data)
	if err != nil {
		var ce *CorruptError
		if errors.As(err, &ce) {
			ce.Key = key
		}
		return nil, err
	}
	if m.JobID != jobID || m.CheckpointID != id {
		return nil, &CorruptError{Key: key, Part: "content", Reason: fmt.Sprintf("names checkpoint %d of job %q (moved or copied?)", m.CheckpointID, m.JobID)}
	}
	return &m, nil
}

// PutObject writes data to key and returns its handle.
func PutObject(ctx context.Context, s *Store, key string, data []byte) (ObjectHandle, error) {
	if err := s.Put(ctx, key, data); err != nil {
		return ObjectHandle{}, err
	}
	return HandleOf(key, data), nil
}

// ObjectWriter streams an object and computes its handle.
type ObjectWriter struct {
	w    io.WriteCloser
	key  string
	size int64
	crc  hash.Hash32
	ok   bool
}

// NewObjectWriter starts a streaming write of key (see Store.NewWriter).
func NewObjectWriter(ctx context.Context, s *Store, key string) (*ObjectWriter, error) {
	w, err := s.NewWriter(ctx, key)
	if err != nil {
		return nil, err
	}
	return newObjectWriter(w, key), nil
}

func newObjectWriter(w io.WriteCloser, key string) *ObjectWriter {
	return &ObjectWriter{w: w, key: key, crc: crc32.New(crcTable)}
}

func (w *ObjectWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.size += int64(n)
	w.crc.Write(p[:n])
	return n, err
}

// Close completes the write (see Store.NewWriter).
func (w *ObjectWriter) Close() error {
	err := w.w.Close()
	w.ok = err == nil
	return err
}

// Handle returns the handle of the object; valid once Close returned nil.
func (w *ObjectWriter) Handle() ObjectHandle {
	if !w.ok {
		panic("storage: ObjectWriter.Handle before a successful Close")
	}
	return ObjectHandle{Key: w.key, Size: w.size, CRC: w.crc.Sum32()}
}

// ReadVerified reads the object of h and checks its size and CRC32C; a
// mismatch is a *CorruptError naming the key.
func ReadVerified(ctx context.Context, s *Store, h ObjectHandle) ([]byte, error) {
	data, err := s.Get(ctx, h.Key)
	if err != nil {
		return nil, err
	}
	if err := verify(h, int64(len(data)), Checksum(data)); err != nil {
		return nil, err
	}
	return data, nil
}

// CopyVerified streams the object of h to dst (one read, not ranges) and
// checks its size and CRC32C; a mismatch is a *CorruptError naming the key,
// reported after dst received the bytes.
func CopyVerified(ctx context.Context, s *Store, h ObjectHandle, dst io.Writer) error {
	if err := s.begin(ctx, OpGet, h.Key, true); err != nil {
		return err
	}
	return copyVerified(ctx, s, h, dst)
}

// copyVerified is CopyVerified after begin.
func copyVerified(ctx context.Context, s *Store, h ObjectHandle, dst io.Writer) error {
	var r io.Reader
	if s.dir != "" {
		// The direct reader: objects written with direct I/O are not in
		// the page cache, and buffered reads would fill it (see
		// fileReader).
		fr, size, err := s.openFile(OpGet, h.Key)
		if err != nil {
			return err
		}
		defer fr.Close()
		r = io.NewSectionReader(fr, 0, size)
	} else {
		br, err := s.bucket.NewReader(ctx, s.prefix+h.Key, nil)
		if err != nil {
			return s.fail(OpGet, h.Key, err)
		}
		defer br.Close()
		r = br
	}
	// An aligned buffer of whole blocks: a file store's direct writer
	// takes its reads without a copy.
	buf := fileBuffers.Get().(*[]byte)
	defer fileBuffers.Put(buf)
	crc := crc32.New(crcTable)
	n, err := io.CopyBuffer(io.MultiWriter(dst, crc), io.LimitReader(r, h.Size+1), *buf)
	if err != nil {
		return s.fail(OpGet, h.Key, err)
	}
	return verify(h, n, crc.Sum32())
}

func verify(h ObjectHandle, size int64, crc uint32) error {
	if size != h.Size {
		return &CorruptError{Key: h.Key, Part: "size", Reason: fmt.Sprintf("%d bytes, the handle says %d", size, h.Size)}
	}
	if crc != h.CRC {
		return &CorruptError{Key: h.Key, Part: "checksum", Reason: fmt.Sprintf("CRC32C %08x, the handle says %08x", crc, h.CRC)}
	}
	return nil
}

// CheckpointIDs returns the ids of the chk-<n> directories of jobID,
// ascending: complete checkpoints and incomplete ones alike.
func CheckpointIDs(ctx context.Context, s *Store, jobID string) ([]int64, error) {
	return checkpointIDs(ctx, s, jobID)
}

// checkpointIDs returns the ids of the chk-<n> directories of jobID, ascending.
func checkpointIDs(ctx context.Context, s *Store, jobID string) ([]int64, error) {
	names, err := s.listDirs(ctx, jobID+"/")
	if err != nil {
		return nil, err
	}
	var ids []int64
	for _, name := range names {
		if id, ok := ParseCheckpointDir(name); ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// skippable reports whether err makes a checkpoint incomplete or unusable
// (missing or corrupt metadata) rather than the store unreachable.
func skippable(err error) bool {
	var ce *CorruptError
	return errors.Is(err, ErrNotFound) || errors.As(err, &ce)
}

// Completed returns the ids of jobID's complete checkpoints (those with valid
// metadata), ascending. Incomplete or corrupt ones are left out; other errors
// (the store failing) are returned.
func Completed(ctx context.Context, s *Store, jobID string) ([]int64, error) {
	if err := checkComponent(jobID); err != nil {
		return nil, fmt.Errorf("storage: job ID %q: %w", jobID, err)
	}
	ids, err := checkpointIDs(ctx, s, jobID)
	if err != nil {
		return nil, err
	}
	var done []int64
	for _, id := range ids {
		_, err := ReadMetadata(ctx, s, jobID, id)
		switch {
		case err == nil:
			done = append(done, id)
		case !skippable(err):
			return nil, err
		}
	}
	return done, nil
}

// Latest returns the newest complete checkpoint, under the store's root, of
// any job ID whose metadata has JobName jobName: newest by CompleteMillis,
// then CheckpointID. A checkpoint whose metadata is missing (partial),
// unreadable or corrupt is skipped with a Warn on log saying which and why,
// and the job's previous one is used (falling_back_to: its ID, 0 for none);
// a job ID whose complete checkpoints
// belong to another job name is ignored (its skips are logged at Debug). A
// canceled ctx or a failing listing is returned as an error. It returns
// (nil, nil) when there is no complete checkpoint of jobName. log may be nil.
func Latest(ctx context.Context, s *Store, jobName string, log *slog.Logger) (*Metadata, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	jobs, err := s.listDirs(ctx, "")
	if err != nil {
		return nil, err
	}
	var best *Metadata
	for _, jobID := range jobs {
		if checkComponent(jobID) != nil {
			continue
		}
		m, err := latestOfJob(ctx, s, jobID, jobName, log)
		if err != nil {
			return nil, err
		}
		if m != nil && (best == nil || cmp.Or(cmp.Compare(m.CompleteMillis, best.CompleteMillis), cmp.Compare(m.CheckpointID, best.CheckpointID)) > 0) {
			best = m
		}
	}
	return best, nil
}

// skipped is a checkpoint Latest passed over.
type skipped struct {
	key    string
	id     int64
	reason string
}

// latestOfJob returns the newest complete checkpoint of jobID if it belongs
// to jobName.
func latestOfJob(ctx context.Context, s *Store, jobID, jobName string, log *slog.Logger) (*Metadata, error) {
	ids, err := checkpointIDs(ctx, s, jobID)
	if err != nil {
		return nil, err
	}
	var skips []skipped
	report := func(level slog.Level, name string, fallback int64) {
		for _, sk := range skips {
			log.Log(ctx, level, "skipping checkpoint", "reason", sk.reason,
				"store", s.URL(), "job_id", jobID, "job_name", name, "checkpoint", sk.id, "metadata", sk.key,
				"falling_back_to", fallback)
		}
	}
	for _, id := range slices.Backward(ids) {
		m, err := ReadMetadata(ctx, s, jobID, id)
		if err == nil {
			if !OfLineage(m, &Metadata{JobName: jobName}) {
				report(slog.LevelDebug, m.JobName, id)
				return nil, nil
			}
			report(slog.LevelWarn, m.JobName, id)
			return m, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		var ce *CorruptError
		reason := "unreadable " + MetadataName + ": " + err.Error()
		switch {
		case errors.Is(err, ErrNotFound):
			reason = "no " + MetadataName + " (incomplete: it never finished, or is being discarded)"
		case errors.As(err, &ce):
			reason = "corrupt " + MetadataName + ": " + err.Error()
		}
		skips = append(skips, skipped{key: MetadataKey(jobID, id), id: id, reason: reason})
	}
	// No complete checkpoint: the job's name is unknown, so it may be ours.
	report(slog.LevelWarn, "", 0)
	return nil, nil
}

// Resolve opens the checkpoint named by pathOrURL, as given to --from: a
// checkpoint directory ".../<job-id>/chk-<n>", a savepoint folder (any other
// name), or its "_metadata" file, as a plain path or a file://, mem:// or
// s3:// URL. It returns the store on which every key of the metadata
// resolves (the checkpoint root, two levels above chk-<n>, or the savepoint
// folder itself), and the metadata.
func Resolve(ctx context.Context, pathOrURL string) (*Store, *Metadata, error) {
	fail := func(format string, args ...any) (*Store, *Metadata, error) {
		return nil, nil, fmt.Errorf("storage: resolve %q: %s", pathOrURL, fmt.Sprintf(format, args...))
	}
	const want = "want a checkpoint directory .../<job-id>/chk-<n> or its " + MetadataName + " file"
	loc, err := parseLocation(pathOrURL)
	if err != nil {
		return fail("%v (%s)", err, want)
	}
	elems := loc.elements()
	if n := len(elems); n > 0 && elems[n-1] == MetadataName {
		elems = elems[:n-1]
	}
	if n := len(elems); n > 0 {
		if _, ok := ParseCheckpointDir(elems[n-1]); !ok {
			// Not chk-<n>: a savepoint folder, under any name (a
			// savepoint may be moved and renamed).
			return resolveSavepoint(ctx, loc.withElements(elems), fail)
		}
	}
	if len(elems) < 2 {
		return fail("%s", want)
	}
	dir, jobID := elems[len(elems)-1], elems[len(elems)-2]
	id, ok := ParseCheckpointDir(dir)
	if !ok {
		return fail("%q is not a checkpoint directory name chk-<n> (%s)", dir, want)
	}
	if checkComponent(jobID) != nil {
		return fail("%q is not a job ID (%s)", jobID, want)
	}
	root := loc.withElements(elems[:len(elems)-2])
	s, err := openLocation(ctx, root, false)
	if err != nil {
		return fail("opening the checkpoint root %s: %v", root, err)
	}
	m, err := ReadMetadata(ctx, s, jobID, id)
	if err != nil {
		s.Close()
		if errors.Is(err, ErrNotFound) {
			return fail("checkpoint %d of job %s in %s has no %s: it is not a complete checkpoint, or the path is wrong", id, jobID, s.URL(), MetadataName)
		}
		return fail("%v", err)
	}
	return s, m, nil
}

// Discard deletes checkpoint m: its metadata first (so that a checkpoint
// deleted halfway is never taken as complete), then every object under its
// chk-<n>/ prefix (the task-owned objects, including leftovers of failed
// writes), then sharedToDelete (from Registry.Discard). After the metadata is
// gone it keeps deleting past failures and returns them joined.
func Discard(ctx context.Context, s *Store, m Metadata, sharedToDelete []string) error {
	prefix := CheckpointPrefix(m.JobID, m.CheckpointID)
	if err := s.Delete(ctx, MetadataKey(m.JobID, m.CheckpointID)); err != nil {
		return err
	}
	var errs []error
	keys, err := s.list(ctx, prefix, true)
	if err != nil {
		errs = append(errs, err)
	}
	for _, key := range keys {
		if err := s.remove(ctx, key, false); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		s.removeEmptyDirs(prefix)
	}
	for _, key := range sharedToDelete {
		if !strings.HasPrefix(key, prefix) {
			if err := s.Delete(ctx, key); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// resolveSavepoint opens the savepoint folder at loc.
func resolveSavepoint(ctx context.Context, loc location, fail func(string, ...any) (*Store, *Metadata, error)) (*Store, *Metadata, error) {
	s, err := openLocation(ctx, loc, false)
	if err != nil {
		return fail("%s is not a checkpoint directory .../<job-id>/chk-<n>, and opening it as a savepoint folder failed: %v", loc, err)
	}
	m, err := ReadSavepointMetadata(ctx, s)
	if err != nil {
		s.Close()
		if errors.Is(err, ErrNotFound) {
			return fail("%s is not a checkpoint directory .../<job-id>/chk-<n>, nor a complete savepoint folder (it has no %s)", s.URL(), MetadataName)
		}
		return fail("%v", err)
	}
	if !m.Savepoint {
		s.Close()
		return fail("%s holds the metadata of checkpoint %d of job %s, not a savepoint: resume from its directory .../%s/%s instead", s.URL(), m.CheckpointID, m.JobID, m.JobID, CheckpointDir(m.CheckpointID))
	}
	return s, m, nil
}

package task

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statebackend"
)

// restore loads the state of a checkpoint into the operators' stores, keyed
// backends and timer services, before the operators are initialized and
// opened. Channel state is replayed later, once the chain is open.
func (t *Task) restore() error {
	r := t.spec.Restore
	if r == nil {
		return nil
	}
	byID := make(map[string]protocol.OperatorRestore, len(r.Operators))
	for _, o := range r.Operators {
		byID[o.OperatorID] = o
	}
	for i, ctx := range t.contexts {
		o, ok := byID[ctx.OperatorID]
		if !ok {
			continue
		}
		t.current = i
		if o.Operator != nil {
			if err := t.states[i].store.Restore(o.Operator); err != nil {
				return t.opError(i, restoreError(r, "operator state", err))
			}
		}
		if len(o.Keyed) > 0 {
			if t.states[i].keyed == nil {
				return t.opError(i, fmt.Errorf("checkpoint %d has keyed state for this operator, which is not keyed any more", r.CheckpointID))
			}
			if err := t.restoreKeyed(i, o.Keyed); err != nil {
				return t.opError(i, restoreError(r, "keyed state", err))
			}
		}
		if i == 0 {
			t.restoredChannels = o
		}
	}
	return nil
}

// restoreError says what of checkpoint r could not be restored. An object
// the checkpoint names that is missing or corrupt (storage.ErrNotFound, a
// *storage.CorruptError) is there again at every restart from the same
// checkpoint: the error is permanent, and says to resume from an older one.
// Other errors (the store unreachable, I/O) are left to the restart
// strategy.
func restoreError(r *protocol.TaskRestore, what string, err error) error {
	err = fmt.Errorf("restoring %s of checkpoint %d (job %s in %s): %w", what, r.CheckpointID, r.JobID, r.StorageURL, err)
	var ce *storage.CorruptError
	var se *snapshot.CorruptError
	if errors.Is(err, storage.ErrNotFound) || errors.As(err, &ce) || errors.As(err, &se) {
		return failure.Permanent(fmt.Errorf("%w; restarting from this checkpoint cannot help: resume from an older retained checkpoint or a savepoint of the job with --from PATH (Config.ResumeFrom; this job's checkpoints are %s/%s/chk-N)",
			err, strings.TrimSuffix(r.StorageURL, "/"), r.JobID))
	}
	return err
}

// restoreKeyed restores one operator's keyed backend and timers from the
// snapshots that cover its key groups.
func (t *Task) restoreKeyed(i int, handles []storage.KeyedHandle) error {
	ctx, store := t.asyncCtx, t.spec.RestoreStore
	ks := t.states[i].keyed
	var sources []statebackend.Source
	var closers []io.Closer
	defer func() {
		for _, c := range closers {
			c.Close()
		}
	}()
	openCanonical := func(h storage.ObjectHandle) (*snapshot.Reader, error) {
		ra, err := store.Open(ctx, h.Key)
		if err != nil {
			return nil, err
		}
		closers = append(closers, ra)
		if ra.Size() != h.Size {
			return nil, &storage.CorruptError{Key: h.Key, Part: "size", Reason: fmt.Sprintf("%d bytes, the checkpoint says %d", ra.Size(), h.Size)}
		}
		sr, err := snapshot.Open(ra, ra.Size())
		var se *snapshot.CorruptError
		if errors.As(err, &se) {
			// The object has the size the checkpoint says, but its
			// content is not a sound snapshot.
			return nil, &storage.CorruptError{Key: h.Key, Part: "content", Reason: err.Error()}
		}
		return sr, err
	}
	for k, h := range handles {
		switch h.Kind {
		case storage.KindCanonical:
			sr, err := openCanonical(h.Object)
			if err != nil {
				return err
			}
			// Timers come out of the backend's pass over the snapshot.
			sr.SetTimerReader(ks.Timers.RestoreEntry)
			sources = append(sources, statebackend.Source{Canonical: sr})
		case storage.KindNative:
			dir := filepath.Join(t.contexts[i].State.Dir+"-restore", fmt.Sprint(k))
			if t.contexts[i].State.Dir == "" {
				return fmt.Errorf("a native (Pebble) snapshot needs the pebble backend, not %q", t.spec.StateBackend)
			}
			defer os.RemoveAll(dir) // also after a failed download
			if err := t.download(h, dir); err != nil {
				return err
			}
			sources = append(sources, statebackend.Source{NativeDir: dir})
			if h.Timers != nil {
				sr, err := openCanonical(*h.Timers)
				if err != nil {
					return err
				}
				if err := ks.Timers.Restore(sr); err != nil {
					return err
				}
			}
			// The restored files are not reused by the next checkpoints:
			// the backend copies their entries into its own database, whose
			// files are new (the first checkpoint after a restore is full).
		default:
			return fmt.Errorf("unknown keyed snapshot kind %q", h.Kind)
		}
	}
	return ks.Backend.Restore(sources)
}

// downloads is how many files of a native snapshot download copies at
// once: the reads of a file store are direct (not from the page cache), so
// each file's first read waits for the device; a few at a time overlap
// those waits. Each copy holds up to three 1 MiB buffers (a linked SST,
// storage.GetFile, none).
const downloads = 4

// download copies a native snapshot's files into dir, checking each.
func (t *Task) download(h storage.KeyedHandle, dir string) error {
	// A fresh directory: files left there (by a process that died while
	// restoring) may be links to checkpoint objects.
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range h.Files {
		if f.Name != filepath.Base(f.Name) || f.Name == "." || f.Name == ".." {
			return fmt.Errorf("bad file name %q in a native snapshot", f.Name)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(h.Files))
	slots := make(chan struct{}, downloads)
	for i, f := range h.Files {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			errs[i] = t.downloadFile(f, filepath.Join(dir, f.Name))
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// downloadFile copies one file of a native snapshot to path, checking it.
// An SST is immutable: a file store on the same file system links it
// (storage.GetFile); Pebble opens the copy read-only.
func (t *Task) downloadFile(f storage.NativeFile, path string) error {
	return storage.GetFile(t.asyncCtx, t.spec.RestoreStore, f.Object, path, filepath.Ext(f.Name) == ".sst")
}

// replayChannelState sends the restored output channel state downstream
// and feeds the restored input channel state to the chain, before any new
// record: those records were in flight when the checkpoint was taken.
func (t *Task) replayChannelState() error {
	o := t.restoredChannels
	if len(o.InputChannels)+len(o.OutputChannels) == 0 {
		return nil
	}
	for _, h := range o.OutputChannels {
		data, err := storage.ReadVerified(t.asyncCtx, t.spec.RestoreStore, h)
		if err != nil {
			return t.opError(0, restoreError(t.spec.Restore, "output channel state", err))
		}
		err = frames(data, func(wi, ch int, b []byte) error {
			wi, kind := frameKind(wi)
			if wi >= len(t.writers) || ch >= len(t.writers[wi].Partition().Subs) {
				return fmt.Errorf("output channel state for output %d channel %d, which this task does not have (the parallelism changed?)", wi, ch)
			}
			rp := t.writers[wi].Partition()
			if kind != network.KindData {
				ev, err := inFlightEvent(kind, b)
				if err != nil {
					return err
				}
				rp.Subs[ch].Add(ev)
				return nil
			}
			buf, err := rp.Pool.Request(t.cancel)
			if err != nil {
				return err
			}
			buf.Data = append(buf.Data, b...)
			rp.Subs[ch].Add(buf)
			return nil
		})
		if err != nil {
			return t.opError(0, err)
		}
	}
	chans := t.gateChannels()
	for _, h := range o.InputChannels {
		data, err := storage.ReadVerified(t.asyncCtx, t.spec.RestoreStore, h)
		if err != nil {
			return t.opError(0, restoreError(t.spec.Restore, "input channel state", err))
		}
		err = frames(data, func(idx, _ int, b []byte) error {
			idx, kind := frameKind(idx)
			if idx >= len(chans) {
				return fmt.Errorf("input channel state for channel %d, which this task does not have (the parallelism changed?)", idx)
			}
			c := chans[idx]
			t.current = 0
			if kind == network.KindData {
				return t.readers[c.Input].ProcessBuffer(c.Channel, b)
			}
			// A watermark or status that was in flight among the data:
			// the records after it are taken at it, as they were.
			ev, err := inFlightEvent(kind, b)
			if err != nil {
				return err
			}
			return t.handleEvent(c, ev)
		})
		if err != nil {
			return t.opError(0, err)
		}
	}
	return nil
}

// inFlightEvent is the watermark or status event of a channel state frame.
func inFlightEvent(kind network.Kind, b []byte) (*network.Buffer, error) {
	switch {
	case kind == network.KindWatermark && len(b) == 8:
		return network.NewWatermark(int64(binary.LittleEndian.Uint64(b))), nil
	case kind == network.KindWatermarkStatus && len(b) == 1:
		return network.NewWatermarkStatus(b[0] == 1), nil
	}
	return nil, fmt.Errorf("channel state: a frame of kind %v with %d bytes", kind, len(b))
}

func (t *Task) gateChannels() []*network.InputChannel {
	if t.spec.Gate == nil {
		return nil
	}
	return t.spec.Gate.Channels()
}

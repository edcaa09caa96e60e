package storage

import (
	"context"
	"hash/crc32"
	"io"
	"os"
)

// Immutable files, a Pebble SST above all (written once, then only read
// and at last unlinked), move between a task's local directory and a file
// store on the same file system as hard links rather than copies, as
// Pebble's and RocksDB's own checkpoints do: a native checkpoint uploads
// only the SSTs it has not uploaded before, but those are most of its
// bytes, and a restore downloads all of them. A link costs neither a
// device write nor the page cache; the object's checksum is still
// computed from the bytes (read from the page cache, where Pebble's
// writes left them) and a linked download is still verified.
//
// Only immutable files are linked: Pebble writes its MANIFEST and recycles
// WAL files in place, and a link to one would let the live database
// change a checkpoint. A file store on another file system (EXDEV), or one
// whose file system has no hard links, gets a copy.

// PutFile stores the file at path as the object key and returns its
// handle. When immutable (neither the file nor the object is ever written
// in place afterwards) a file store on path's file system links the file
// instead of copying it.
func PutFile(ctx context.Context, s *Store, key, path string, immutable bool) (ObjectHandle, error) {
	fault, err := s.startWrite(ctx, key)
	if err != nil {
		return ObjectHandle{}, err
	}
	if immutable && s.dir != "" && fault == nil {
		sum := func(p string) (int64, uint32, error) { return checksumFile(ctx, p) }
		if h, linked, err := s.linkIn(key, path, sum); linked || err != nil {
			return h, err
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return ObjectHandle{}, err
	}
	defer f.Close()
	ww, err := s.openWriter(ctx, key, fault)
	if err != nil {
		return ObjectHandle{}, err
	}
	w := newObjectWriter(ww, key)
	if _, err := f.WriteTo(w); err != nil {
		w.Close()
		return ObjectHandle{}, err
	}
	if err := w.Close(); err != nil {
		return ObjectHandle{}, err
	}
	return w.Handle(), nil
}

// linkIn publishes a hard link to path as key, its handle from sum of the
// link: linked is false, with no error, when the file system cannot link
// it there.
func (s *Store) linkIn(key, path string, sum func(string) (int64, uint32, error)) (h ObjectHandle, linked bool, err error) {
	tmp, err := createTemp(s.path(key), func(name string) error { return os.Link(path, name) })
	if err != nil {
		return h, false, nil
	}
	size, crc, err := sum(tmp)
	if err == nil {
		err = os.Rename(tmp, s.path(key))
	}
	if err == nil {
		err = s.persist(key)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return h, true, s.fail(OpWrite, key, err)
	}
	return ObjectHandle{Key: key, Size: size, CRC: crc}, true, nil
}

// copyObject copies the object of h in src to key in dst, checking its size
// and CRC32C. Between file stores on one file system the copy is a link
// (every object of a store is immutable: writes replace files, they never
// change them), checked by reading it without filling the page cache.
func copyObject(ctx context.Context, src *Store, h ObjectHandle, dst *Store, key string) error {
	if err := src.begin(ctx, OpGet, h.Key, true); err != nil {
		return err
	}
	fault, err := dst.startWrite(ctx, key)
	if err != nil {
		return err
	}
	if fault == nil && src.dir != "" && dst.dir != "" {
		verified := func(path string) (int64, uint32, error) {
			size, crc, err := checksumDirect(ctx, path)
			if err == nil {
				err = verify(h, size, crc)
			}
			return size, crc, err
		}
		if _, linked, err := dst.linkIn(key, src.path(h.Key), verified); linked || err != nil {
			return err
		}
	}
	w, err := dst.openWriter(ctx, key, fault)
	if err != nil {
		return err
	}
	if err := copyVerified(ctx, src, h, w); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// GetFile writes the object of h to path, replacing any file there, and
// checks its size and CRC32C (a mismatch is a *CorruptError naming the
// key, and removes path). When immutable, a file store on path's file
// system links the object's file instead of copying it.
func GetFile(ctx context.Context, s *Store, h ObjectHandle, path string, immutable bool) error {
	if err := s.begin(ctx, OpGet, h.Key, true); err != nil {
		return err
	}
	// Never write into a file already at path: it may be a link to an
	// object (a download that failed part way), which a truncating open
	// would destroy.
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	if immutable && s.dir != "" && os.Link(s.path(h.Key), path) == nil {
		size, crc, err := checksumFile(ctx, path)
		if err != nil {
			err = s.fail(OpGet, h.Key, err)
		} else {
			err = verify(h, size, crc)
		}
		if err != nil {
			_ = os.Remove(path)
		}
		return err
	}
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return err
	}
	err = copyVerified(ctx, s, h, out)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
	}
	return err
}

// checksumDirect is checksumFile through the direct reader (see
// fileReader).
func checksumDirect(ctx context.Context, path string) (int64, uint32, error) {
	fr, size, err := openFileReader(path)
	if err != nil {
		return 0, 0, err
	}
	defer fr.Close()
	return checksum(ctx, io.NewSectionReader(fr, 0, size))
}

// checksumFile returns the size and CRC32C of the file at path, read
// through the page cache (where a file just written, or about to be read,
// is).
func checksumFile(ctx context.Context, path string) (int64, uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	return checksum(ctx, f)
}

// checksum returns the length and CRC32C of what r reads, stopping with
// ctx's error when it is done (a large SST takes a while).
func checksum(ctx context.Context, r io.Reader) (int64, uint32, error) {
	crc := crc32.New(crcTable)
	// A pooled buffer, not 256 KiB made per file; read a quarter at a time
	// so that ctx is checked every 256 KiB.
	pooled := fileBuffers.Get().(*[]byte)
	defer fileBuffers.Put(pooled)
	buf := (*pooled)[:256<<10]
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, 0, context.Cause(ctx)
		}
		k, err := r.Read(buf)
		crc.Write(buf[:k])
		n += int64(k)
		if err == io.EOF {
			return n, crc.Sum32(), nil
		}
		if err != nil {
			return n, 0, err
		}
	}
}

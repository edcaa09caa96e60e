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
		if h, linked, err := s.linkIn(key, path); linked || err != nil {
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

// linkIn publishes a hard link to path as key: linked is false, with no
// error, when the file system cannot link it there.
func (s *Store) linkIn(key, path string) (h ObjectHandle, linked bool, err error) {
	tmp, err := createTemp(s.path(key), func(name string) error { return os.Link(path, name) })
	if err != nil {
		return h, false, nil
	}
	size, crc, err := checksumFile(tmp)
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

// GetFile writes the object of h to path and checks its size
// and CRC32C (a mismatch is a *CorruptError naming the key, and removes
// path). When immutable, a file store on path's file system links the
// object's file instead of copying it.
func GetFile(ctx context.Context, s *Store, h ObjectHandle, path string, immutable bool) error {
	if err := s.begin(ctx, OpGet, h.Key, true); err != nil {
		return err
	}
	if immutable && s.dir != "" && os.Link(s.path(h.Key), path) == nil {
		size, crc, err := checksumFile(path)
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
	out, err := os.Create(path)
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

// checksumFile returns the size and CRC32C of the file at path.
func checksumFile(path string) (int64, uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	crc := crc32.New(crcTable)
	n, err := io.Copy(crc, f)
	return n, crc.Sum32(), err
}

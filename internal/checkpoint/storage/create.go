package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// ErrExists is wrapped by the error of Create when the key already holds an
// object.
var ErrExists = errors.New("object exists")

// createOptions are writeOptions with the condition that nothing exists at
// the key yet (S3's If-None-Match: *; the mem store checks under its lock).
var createOptions = func() *blob.WriterOptions {
	o := *writeOptions
	o.IfNotExist = true
	return &o
}()

// Create writes data to key only if no object is there; otherwise it returns
// an error wrapping ErrExists and leaves the object as it was. Of writers
// racing for one key, exactly one succeeds: on a file store the object is
// written to a temporary file and hard-linked to its name, which the kernel
// refuses atomically when the name exists (fileblob's own condition is a
// stat before a rename, which two processes can both pass); a bucket relies
// on the server's conditional write. It is the primitive of the lineage lease
// (lease.go); it is not for large objects.
func (s *Store) Create(ctx context.Context, key string, data []byte) error {
	if err := s.begin(ctx, OpPut, key, true); err != nil {
		return err
	}
	if err := s.prepare(key); err != nil {
		return s.fail(OpPut, key, err)
	}
	if s.dir != "" {
		if err := s.createFile(key, data); err != nil {
			return s.fail(OpPut, key, err)
		}
		return nil
	}
	if err := s.bucket.WriteAll(ctx, s.prefix+key, data, createOptions); err != nil {
		if gcerrors.Code(err) == gcerrors.FailedPrecondition {
			err = ErrExists
		}
		return s.fail(OpPut, key, err)
	}
	return nil
}

// createFile is Create on a file store: the temporary file's name matches
// tempName, so listings skip it and a crash leaves nothing that looks like
// an object.
func (s *Store) createFile(key string, data []byte) error {
	var b [8]byte
	_, _ = rand.Read(b[:])
	target := s.path(key)
	tmp := target + "." + hex.EncodeToString(b[:]) + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Link(tmp, target); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return ErrExists
		}
		return err
	}
	return syncDir(filepath.Dir(target))
}

package task

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/snapshot"
)

// An object the checkpoint names that is missing or corrupt fails the
// restore permanently, naming the checkpoint and the object and pointing
// at --from; an error of the store itself (I/O, network) is left to the
// restart strategy.
func TestRestoreErrorClassification(t *testing.T) {
	r := &protocol.TaskRestore{StorageURL: "file:///ck", JobID: "j1", CheckpointID: 7}
	key := "j1/chk-7/op-1-0"
	for _, c := range []struct {
		name      string
		err       error
		permanent bool
	}{
		{"missing", fmt.Errorf("opening %s: %w", key, storage.ErrNotFound), true},
		{"truncated", &storage.CorruptError{Key: key, Part: "size", Reason: "10 bytes, the checkpoint says 20"}, true},
		{"bad content", &storage.CorruptError{Key: key, Part: "content", Reason: (&snapshot.CorruptError{Part: "header", Reason: "bad magic"}).Error()}, true},
		{"corrupt chunk", fmt.Errorf("reading key group 3: %w", &snapshot.CorruptError{Part: "chunk", Reason: "checksum"}), true},
		{"I/O", fmt.Errorf("reading %s: %w", key, fs.ErrPermission), false},
		{"network", errors.New("dial tcp 10.0.0.1:9000: connection refused"), false},
	} {
		err := restoreError(r, "keyed state", c.err)
		if got := failure.IsPermanent(err); got != c.permanent {
			t.Errorf("%s: permanent %v, want %v: %v", c.name, got, c.permanent, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, "checkpoint 7") || !strings.Contains(msg, "file:///ck") || !strings.Contains(msg, c.err.Error()) {
			t.Errorf("%s: %q does not name the checkpoint, the store and the cause", c.name, msg)
		}
		if c.permanent && !strings.Contains(msg, "--from") {
			t.Errorf("%s: %q does not say to resume from an older checkpoint with --from", c.name, msg)
		}
	}
}

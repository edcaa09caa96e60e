package storage_test

import (
	"testing"

	"github.com/weirhq/weir/internal/checkpoint/storage"
)

func TestLayout(t *testing.T) {
	if got := storage.CheckpointPrefix("j", 12); got != "j/chk-12/" {
		t.Errorf("CheckpointPrefix = %q", got)
	}
	if got := storage.MetadataKey("j", 12); got != "j/chk-12/_metadata" {
		t.Errorf("MetadataKey = %q", got)
	}
	if got := storage.SharedKey("j", "000004.sst"); got != "j/shared/000004.sst" {
		t.Errorf("SharedKey = %q", got)
	}
	for _, c := range []struct {
		name string
		id   int64
		ok   bool
	}{
		{"chk-1", 1, true},
		{"chk-42", 42, true},
		{"chk-9223372036854775807", 9223372036854775807, true},
		{"chk-9223372036854775808", 0, false},
		{"chk-0", 0, false},
		{"chk-007", 0, false},
		{"chk--1", 0, false},
		{"chk-+1", 0, false},
		{"chk-1a", 0, false},
		{"chk-", 0, false},
		{"chk1", 0, false},
		{"shared", 0, false},
		{"_metadata", 0, false},
	} {
		id, ok := storage.ParseCheckpointDir(c.name)
		if id != c.id || ok != c.ok {
			t.Errorf("ParseCheckpointDir(%q) = %d, %v; want %d, %v", c.name, id, ok, c.id, c.ok)
		}
		if ok && storage.CheckpointDir(id) != c.name {
			t.Errorf("CheckpointDir(%d) = %q", id, storage.CheckpointDir(id))
		}
	}
}

package storage_test

import (
	"slices"
	"testing"

	"github.com/weirhq/weir/internal/checkpoint/storage"
)

func TestRegistry(t *testing.T) {
	type step struct {
		register int64    // > 0: register this checkpoint with keys
		keys     []string // for register
		discard  int64    // > 0: discard this checkpoint, expecting want
		want     []string
	}
	for _, c := range []struct {
		name  string
		steps []step
	}{
		{"unknown checkpoint", []step{{discard: 1}}},
		{"sole reference", []step{
			{register: 1, keys: []string{"j/shared/b", "j/shared/a"}},
			{discard: 1, want: []string{"j/shared/a", "j/shared/b"}},
			{discard: 1}, // twice: nothing more
		}},
		{"incremental chain", []step{
			{register: 1, keys: []string{"a", "b"}},
			{register: 2, keys: []string{"b", "c"}},
			{register: 3, keys: []string{"c", "d"}},
			{discard: 1, want: []string{"a"}},
			{discard: 2, want: []string{"b"}},
			{discard: 3, want: []string{"c", "d"}},
		}},
		{"out of order", []step{
			{register: 1, keys: []string{"a", "b"}},
			{register: 2, keys: []string{"a", "b"}},
			{discard: 2},
			{discard: 1, want: []string{"a", "b"}},
		}},
		{"no shared files", []step{{register: 1}, {discard: 1}}},
		{"duplicates and re-registration", []step{
			{register: 1, keys: []string{"a", "a"}},
			{register: 1, keys: []string{"b"}},
			{register: 2, keys: []string{"b"}},
			{discard: 1, want: []string{"a"}},
			{discard: 2, want: []string{"b"}},
		}},
		{"key registered again after deletion", []step{
			{register: 1, keys: []string{"a"}},
			{discard: 1, want: []string{"a"}},
			{register: 2, keys: []string{"a"}},
			{discard: 2, want: []string{"a"}},
		}},
	} {
		var r storage.Registry
		for i, s := range c.steps {
			if s.register > 0 {
				r.Register(s.register, s.keys)
				continue
			}
			if got := r.Discard(s.discard); !slices.Equal(got, s.want) {
				t.Errorf("%s: step %d: Discard(%d) = %q, want %q", c.name, i, s.discard, got, s.want)
			}
		}
		if cps := r.Checkpoints(); len(cps) != 0 {
			t.Errorf("%s: checkpoints %v left", c.name, cps)
		}
	}
}

func TestRegistryRebuild(t *testing.T) {
	var r storage.Registry
	r.Register(99, []string{"stale"})
	m3, m4 := sampleMetadata("job", 3), sampleMetadata("job", 4)
	// Checkpoint 4 reuses one SST of checkpoint 3 and adds one.
	files := m4.Operators[1].Subtasks[1].Keyed[0].Files
	files[1].Object.Key = storage.SharedKey("job", "b-1-000009.sst")
	r.Rebuild([]storage.Metadata{m3, m4})
	if got := r.Checkpoints(); !slices.Equal(got, []int64{3, 4}) {
		t.Fatalf("Checkpoints = %v", got)
	}
	if got := r.References(storage.SharedKey("job", "b-1-000004.sst")); !slices.Equal(got, []int64{3, 4}) {
		t.Fatalf("References = %v", got)
	}
	if got, want := r.Discard(3), []string{storage.SharedKey("job", "b-1-000007.sst")}; !slices.Equal(got, want) {
		t.Fatalf("Discard(3) = %q, want %q", got, want)
	}
	want := []string{storage.SharedKey("job", "b-1-000004.sst"), storage.SharedKey("job", "b-1-000009.sst")}
	if got := r.Discard(4); !slices.Equal(got, want) {
		t.Fatalf("Discard(4) = %q, want %q", got, want)
	}
}

package statebackend

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/state"
)

// rssBytes is the process's resident set size, from /proc (0 elsewhere).
func rssBytes() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// fillPebble writes n keys with valSize-byte values into a value state and
// calls sample every 64k keys.
func fillPebble(t testing.TB, k Keyed, n int64, valSize int, sample func()) state.ValueState[[]byte] {
	v := state.GetValueState(k, state.ValueDescriptor[[]byte]{Name: "blob", Codec: codec.Bytes()})
	val := make([]byte, valSize)
	var kb [8]byte
	for i := range n {
		binary.BigEndian.PutUint64(kb[:], uint64(i))
		k.SetCurrentKey(kb[:], keygroup.ForHash(keygroup.HashInt64(i), benchMaxPar))
		binary.BigEndian.PutUint64(val, uint64(i))
		v.Update(val)
		if i%(64<<10) == 0 {
			sample()
		}
	}
	return v
}

// TestPebbleMemoryBounded writes far more state than the memory bound into
// the Pebble backend and checks that the Go heap and the RSS stay bounded.
// CI size: 1.5 million keys of 100 bytes (about 160 MB of state) under a
// 64 MiB heap bound. WEIR_BIG_KEYS=20000000 runs the 20 million keys
// (about 2.2 GB) with the same bound; it needs -timeout 30m.
func TestPebbleMemoryBounded(t *testing.T) {
	n := int64(1_500_000)
	if v := os.Getenv("WEIR_BIG_KEYS"); v != "" {
		n, _ = strconv.ParseInt(v, 10, 64)
	} else if testing.Short() {
		n = 400_000
	}
	const heapBound = 64 << 20
	k, err := New(Config{Kind: KindPebble, Dir: t.TempDir(), MaxParallelism: benchMaxPar,
		Range: keygroup.Range{Start: 0, End: benchMaxPar - 1}, Clock: clock.NewManual(0),
		Pebble: PebbleOptions{CacheBytes: 16 << 20, MemTableBytes: 8 << 20, WriteCacheBytes: 4 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	var maxHeap, maxRSS uint64
	var ms runtime.MemStats
	sample := func() {
		runtime.ReadMemStats(&ms)
		maxHeap = max(maxHeap, ms.HeapInuse)
		maxRSS = max(maxRSS, rssBytes())
	}
	v := fillPebble(t, k, n, 100, sample)
	sample()
	// Everything is still there: spot-check keys across the range.
	var kb [8]byte
	for _, i := range []int64{0, n / 3, n - 1} {
		binary.BigEndian.PutUint64(kb[:], uint64(i))
		k.SetCurrentKey(kb[:], keygroup.ForHash(keygroup.HashInt64(i), benchMaxPar))
		got, ok := v.Value()
		if !ok || binary.BigEndian.Uint64(got) != uint64(i) {
			t.Fatalf("key %d: %x %v", i, got, ok)
		}
	}
	dataMB := float64(n*(100+8)) / (1 << 20)
	t.Logf("%d keys (%.0f MB of keys and values): max HeapInuse %.1f MiB, max RSS %.1f MiB",
		n, dataMB, float64(maxHeap)/(1<<20), float64(maxRSS)/(1<<20))
	if maxHeap > heapBound {
		t.Fatalf("Go heap reached %.1f MiB, bound %d MiB", float64(maxHeap)/(1<<20), heapBound>>20)
	}
}

// settle compacts everything loaded so far and waits until no flush or
// compaction runs, so the next checkpoint sees the LSM in its steady state.
// Otherwise compactions of the freshly loaded data that finish between two
// checkpoints rewrite most files, and the second checkpoint is no longer an
// incremental one after a small change.
func settle(t testing.TB, db *pebble.DB) {
	t.Helper()
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(context.Background(), []byte{0}, []byte{0xff, 0xff, 0xff}, true); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		m := db.Metrics()
		if m.Compact.NumInProgress == 0 && m.Flush.NumInProgress == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("pebble compactions did not settle within a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// incrementalRatio fills n keys, takes a native checkpoint, changes 1% of the
// keys, takes another, and returns both sizes.
func incrementalRatio(t testing.TB, n int64) (full, incr int64) {
	k, err := New(Config{Kind: KindPebble, Dir: t.TempDir(), MaxParallelism: benchMaxPar,
		Range: keygroup.Range{Start: 0, End: benchMaxPar - 1}, Clock: clock.NewManual(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	v := fillPebble(t, k, n, 100, func() {})
	settle(t, k.(*pebbleKeyed).db.Pebble())
	snap := func(id int64) Handle {
		p, err := k.Snapshot(id, Native)
		if err != nil {
			t.Fatal(err)
		}
		h, err := p.Materialize(nil)
		if err != nil {
			t.Fatal(err)
		}
		os.RemoveAll(h.Dir)
		return h
	}
	h1 := snap(1)
	rnd := rand.New(rand.NewPCG(1, 2))
	val := make([]byte, 100)
	var kb [8]byte
	for range n / 100 {
		i := rnd.Int64N(n)
		binary.BigEndian.PutUint64(kb[:], uint64(i))
		k.SetCurrentKey(kb[:], keygroup.ForHash(keygroup.HashInt64(i), benchMaxPar))
		val[0]++
		v.Update(val)
	}
	h2 := snap(2)
	var files []string
	for _, f := range h2.Files {
		if !f.Shared {
			files = append(files, fmt.Sprintf("%s(%d)", f.Name, f.Size))
		}
	}
	t.Logf("full %d bytes (%d files), incremental %d bytes: %v", h1.Size, len(h1.Files), h2.IncrementalSize, files)
	return h1.Size, h2.IncrementalSize
}

// TestIncrementalCheckpointAfterOnePercent checks the goal: after
// changing 1% of the keys, the new files of a native checkpoint are under 5%
// of the full checkpoint.
func TestIncrementalCheckpointAfterOnePercent(t *testing.T) {
	n := int64(1_000_000)
	if testing.Short() {
		n = 300_000
	}
	full, incr := incrementalRatio(t, n)
	ratio := float64(incr) / float64(full)
	t.Logf("%d keys: incremental/full = %.2f%%", n, 100*ratio)
	if ratio >= 0.05 {
		t.Fatalf("incremental checkpoint is %.1f%% of the full one, goal < 5%%", 100*ratio)
	}
}

package storage_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/testseed"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files in testdata")

const goldenFile = "testdata/metadata-v1.bin"

func goldenMetadata() storage.Metadata {
	m := sampleMetadata("a1b2c3d4e5f60718293a4b5c6d7e8f90", 7)
	m.Savepoint = true
	return m
}

// TestMetadataGolden reads a version 1 metadata file checked in when the
// format was made: a build that cannot read it breaks old checkpoints.
func TestMetadataGolden(t *testing.T) {
	enc := storage.EncodeMetadata(goldenMetadata())
	if *rewrite {
		if err := os.WriteFile(goldenFile, enc, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatalf("%v (regenerate only for a new format, with -rewrite)", err)
	}
	m, err := storage.DecodeMetadata(data)
	if err != nil {
		t.Fatalf("golden v1 metadata no longer decodes: %v", err)
	}
	if want := goldenMetadata(); !reflect.DeepEqual(m, want) {
		t.Fatalf("golden v1 metadata decodes as\n%+v\nwant\n%+v", m, want)
	}
	if !bytes.Equal(data, enc) {
		t.Logf("note: the encoder's bytes changed since the golden file (it still decodes); bump MetadataVersion if the format changed")
	}
}

func TestMetadataRoundTrip(t *testing.T) {
	r := testseed.Rand(t, 3)
	for i := range 200 {
		m := sampleMetadata("job", int64(i+1))
		// Shuffle operators and subtasks: encoding sorts them.
		shuffled := m
		shuffled.Operators = slices.Clone(m.Operators)
		r.Shuffle(len(shuffled.Operators), func(a, b int) {
			shuffled.Operators[a], shuffled.Operators[b] = shuffled.Operators[b], shuffled.Operators[a]
		})
		for j := range shuffled.Operators {
			subs := slices.Clone(shuffled.Operators[j].Subtasks)
			r.Shuffle(len(subs), func(a, b int) { subs[a], subs[b] = subs[b], subs[a] })
			shuffled.Operators[j].Subtasks = subs
		}
		m.TriggerMillis = r.Int64()
		m.CompleteMillis = -r.Int64()
		shuffled.TriggerMillis, shuffled.CompleteMillis = m.TriggerMillis, m.CompleteMillis
		got, err := storage.DecodeMetadata(storage.EncodeMetadata(shuffled))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("round trip:\n%+v\nwant\n%+v", got, m)
		}
	}
}

// TestMetadataEveryByteFlip changes every byte of an encoded metadata to
// every other value (only some in -short mode): each change must be detected,
// as the part that holds the byte.
func TestMetadataEveryByteFlip(t *testing.T) {
	enc := storage.EncodeMetadata(sampleMetadata("job", 3))
	deltas := []byte{}
	for d := 1; d < 256; d++ {
		if !testing.Short() || d&(d-1) == 0 || d == 255 {
			deltas = append(deltas, byte(d))
		}
	}
	data := slices.Clone(enc)
	for i := range data {
		want := "checksum"
		switch {
		case i < 8:
			want = "magic"
		case i < 10:
			want = "version"
		case i < 14:
			want = "length"
		}
		for _, d := range deltas {
			data[i] = enc[i] ^ d
			_, err := storage.DecodeMetadata(data)
			var ce *storage.CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("byte %d ^ %#x: err %v, want a CorruptError", i, d, err)
			}
			if ce.Part != want {
				t.Fatalf("byte %d ^ %#x: corrupt %s (%v), want %s", i, d, ce.Part, err, want)
			}
		}
		data[i] = enc[i]
	}
	for n := range len(enc) {
		if _, err := storage.DecodeMetadata(enc[:n]); err == nil {
			t.Fatalf("truncated to %d of %d bytes: decoded", n, len(enc))
		}
	}
	if _, err := storage.DecodeMetadata(append(slices.Clone(enc), 0)); err == nil {
		t.Fatalf("a trailing byte was accepted")
	}
}

// reencode builds a metadata file around payload, with a valid checksum.
func reencode(t *testing.T, version uint16, payload []byte) []byte {
	t.Helper()
	enc := storage.EncodeMetadata(sampleMetadata("job", 1))
	out := append([]byte(nil), enc[:8]...)
	out = append(out, byte(version>>8), byte(version))
	n := len(payload)
	out = append(out, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	out = append(out, payload...)
	c := storage.Checksum(out)
	return append(out, byte(c>>24), byte(c>>16), byte(c>>8), byte(c))
}

func TestMetadataCorruptParts(t *testing.T) {
	enc := storage.EncodeMetadata(sampleMetadata("job", 1))
	payload := enc[14 : len(enc)-4]
	for _, c := range []struct {
		name, part, reason string
		data               []byte
	}{
		{"empty", "magic", "", nil},
		{"other file", "magic", "", []byte("WEIRKGS\x00 a snapshot, not metadata")},
		{"future version", "version", "version 2, this build reads 1", reencode(t, 2, payload)},
		{"bad JSON", "JSON", "", reencode(t, 1, []byte(`{"jobId":`))},
		{"two objects", "JSON", "after", reencode(t, 1, append(slices.Clone(payload), []byte(" {}")...))},
		{"unknown field", "JSON", "unknown field", reencode(t, 1, []byte(`{"jobId":"j","checkpointId":1,"extra":1}`))},
		{"invalid content", "content", "checkpoint ID 0", reencode(t, 1, []byte(`{"jobId":"j","checkpointId":0}`))},
		{"bad key", "content", "..", reencode(t, 1, []byte(`{"jobId":"j","checkpointId":1,"operators":[{"operatorId":"a","parallelism":1,"maxParallelism":1,"subtasks":[{"subtask":0,"operator":{"key":"../x"}}]}]}`))},
	} {
		_, err := storage.DecodeMetadata(c.data)
		var ce *storage.CorruptError
		if !errors.As(err, &ce) || ce.Part != c.part || !strings.Contains(ce.Reason, c.reason) {
			t.Errorf("%s: %v, want corrupt %s saying %q", c.name, err, c.part, c.reason)
		}
	}
}

func TestMetadataValidate(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(m *storage.Metadata)
		want   string
	}{
		{"ok", func(m *storage.Metadata) {}, ""},
		{"no job", func(m *storage.Metadata) { m.JobID = "" }, "job ID"},
		{"job with slash", func(m *storage.Metadata) { m.JobID = "a/b" }, "job ID"},
		{"zero id", func(m *storage.Metadata) { m.CheckpointID = 0 }, "not positive"},
		{"fnv keys", func(m *storage.Metadata) { m.KeyHash = keygroup.HashFNV }, ""},
		{"word keys", func(m *storage.Metadata) { m.KeyHash = keygroup.HashWords }, ""},
		{"newer key hash", func(m *storage.Metadata) { m.KeyHash = keygroup.CurrentHash + 1 }, "key hash version 3 is unknown"},
		{"unsorted", func(m *storage.Metadata) { m.Operators[0], m.Operators[1] = m.Operators[1], m.Operators[0] }, "sorted"},
		{"duplicate op", func(m *storage.Metadata) { m.Operators[1].OperatorID = m.Operators[0].OperatorID }, "sorted"},
		{"no op id", func(m *storage.Metadata) { m.Operators[0].OperatorID = "" }, "no ID"},
		{"parallelism", func(m *storage.Metadata) { m.Operators[0].MaxParallelism = 1 }, "max parallelism"},
		{"subtask range", func(m *storage.Metadata) { m.Operators[0].Subtasks[1].Subtask = 2 }, "out of range"},
		{"duplicate subtask", func(m *storage.Metadata) { m.Operators[0].Subtasks[1].Subtask = 0 }, "sorted"},
		{"key groups", func(m *storage.Metadata) { m.Operators[1].Subtasks[0].Keyed[0].KeyGroupEnd = 128 }, "key groups"},
		{"kind", func(m *storage.Metadata) { m.Operators[1].Subtasks[0].Keyed[0].Kind = "rocks" }, "kind"},
		{"canonical with files", func(m *storage.Metadata) {
			m.Operators[1].Subtasks[0].Keyed[0].Files = m.Operators[1].Subtasks[1].Keyed[0].Files
		}, "canonical"},
		{"native with object", func(m *storage.Metadata) {
			m.Operators[1].Subtasks[1].Keyed[0].Object = m.Operators[1].Subtasks[0].Keyed[0].Object
		}, "native"},
		{"repeated native file", func(m *storage.Metadata) {
			f := m.Operators[1].Subtasks[1].Keyed[0].Files
			f[1].Name = f[0].Name
		}, "repeated"},
		{"absolute key", func(m *storage.Metadata) { m.Operators[0].Subtasks[0].Operator.Key = "/abs" }, "key"},
		{"url key", func(m *storage.Metadata) { m.Operators[0].Subtasks[0].Operator.Key = "s3://b/k" }, "key"},
		{"negative size", func(m *storage.Metadata) { m.Operators[0].Subtasks[0].Operator.Size = -1 }, "negative"},
		{"inline and object", func(m *storage.Metadata) { m.Operators[0].Subtasks[0].Inline = []byte{1} }, "both"},
		{"inline too big", func(m *storage.Metadata) {
			m.Operators[0].Subtasks[1].Inline = make([]byte, storage.InlineLimit)
		}, "limit"},
		{"bad channel", func(m *storage.Metadata) { m.Operators[0].Subtasks[1].InputChannels[0].Key = "" }, "empty key"},
	} {
		m := sampleMetadata("job", 1)
		c.change(&m)
		err := m.Validate()
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Validate = %v, want %q", c.name, err, c.want)
		}
	}
}

func TestSharedKeys(t *testing.T) {
	m := sampleMetadata("job", 1)
	want := []string{"job/shared/b-1-000004.sst", "job/shared/b-1-000007.sst"}
	if got := m.SharedKeys(); !slices.Equal(got, want) {
		t.Fatalf("SharedKeys = %q, want %q", got, want)
	}
}

func FuzzDecodeMetadata(f *testing.F) {
	if data, err := os.ReadFile(filepath.FromSlash(goldenFile)); err == nil {
		f.Add(data)
	}
	enc := storage.EncodeMetadata(sampleMetadata("job", 1))
	f.Add(enc)
	f.Add(enc[:20])
	f.Add([]byte("WEIRCKPT"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		// The input as is, and with its length and checksum fixed so that
		// mutations reach the JSON and validation.
		fuzzDecode(t, data)
		if len(data) >= 18 {
			fixed := slices.Clone(data)
			binary.BigEndian.PutUint32(fixed[10:], uint32(len(fixed)-18))
			binary.BigEndian.PutUint32(fixed[len(fixed)-4:], storage.Checksum(fixed[:len(fixed)-4]))
			fuzzDecode(t, fixed)
		}
	})
}

func fuzzDecode(t *testing.T, data []byte) {
	m, err := storage.DecodeMetadata(data)
	if err != nil {
		var ce *storage.CorruptError
		if !errors.As(err, &ce) {
			t.Fatalf("error %v is not a CorruptError", err)
		}
		return
	}
	// What decodes re-encodes stably.
	enc := storage.EncodeMetadata(m)
	m2, err := storage.DecodeMetadata(enc)
	if err != nil {
		t.Fatalf("re-encoded metadata does not decode: %v", err)
	}
	if !bytes.Equal(storage.EncodeMetadata(m2), enc) {
		t.Fatalf("encoding is not stable")
	}
}

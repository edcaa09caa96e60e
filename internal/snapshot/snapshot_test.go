package snapshot

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/weirhq/weir/internal/keygroup"
)

var update = flag.Bool("update", false, "rewrite golden files")

type sliceSource struct {
	meta    StateMeta
	entries map[int][]Entry
}

func (s sliceSource) Meta() StateMeta { return s.meta }
func (s sliceSource) KeyGroup(kg int, add func(Entry) error) error {
	for _, e := range s.entries[kg] {
		if err := add(e); err != nil {
			return err
		}
	}
	return nil
}

// goldenSources is the fixed content of testdata/v1.snap.
func goldenSources() []Source {
	return []Source{
		sliceSource{StateMeta{Name: "count", Kind: KindValue}, map[int][]Entry{
			3: {{Key: []byte("alice"), Value: []byte{0x02}}},
			5: {{Key: []byte("bob"), Namespace: []byte("w1"), Value: []byte{0x04}}},
		}},
		sliceSource{StateMeta{Name: "seen", Kind: KindMap, TTLMillis: 60000, TTLUpdate: TTLOnReadAndWrite}, map[int][]Entry{
			3: {{Key: []byte("alice"), HasUserKey: true, UserKey: []byte("x"), Value: []byte("1"), HasTS: true, TS: 1700000000000}},
		}},
		sliceSource{StateMeta{Name: "items", Kind: KindList}, map[int][]Entry{
			5: {{Key: []byte("bob"), Value: []byte("a")}, {Key: []byte("bob"), Value: []byte("")}},
		}},
		sliceSource{StateMeta{Name: "_timers/event", Kind: KindEventTimers}, map[int][]Entry{
			7: {{Key: []byte("carol"), Value: []byte{0, 0, 0, 0, 0, 0, 3, 232}}},
		}},
	}
}

type flatEntry struct {
	KG    int
	State string
	Entry
}

func readAll(t testing.TB, r *Reader) []flatEntry {
	var out []flatEntry
	for _, kg := range r.KeyGroups() {
		err := r.ReadKeyGroup(kg, func(e Entry) error {
			c := e
			c.Key = bytes.Clone(e.Key)
			c.Namespace = bytes.Clone(e.Namespace)
			c.UserKey = bytes.Clone(e.UserKey)
			c.Value = bytes.Clone(e.Value)
			name := r.States()[e.State].Name
			c.State = 0
			out = append(out, flatEntry{kg, name, c})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	h := Header{MaxParallelism: 128, Range: keygroup.Range{Start: 0, End: 9}, CheckpointID: 42}
	n, err := Write(&buf, h, goldenSources())
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("Write returned %d, wrote %d", n, buf.Len())
	}
	r, err := Open(bytes.NewReader(buf.Bytes()), n)
	if err != nil {
		t.Fatal(err)
	}
	h.Version = Version
	if r.Header() != h {
		t.Fatalf("header %+v, want %+v", r.Header(), h)
	}
	if got := r.KeyGroups(); !reflect.DeepEqual(got, []int{3, 5, 7}) {
		t.Fatalf("key groups %v", got)
	}
	all := readAll(t, r)
	if len(all) != 6 || all[0].State != "count" || string(all[0].Key) != "alice" || all[1].TS != 1700000000000 {
		t.Fatalf("entries %+v", all)
	}
}

func TestLargeKeyGroupSplitsIntoChunks(t *testing.T) {
	var entries []Entry
	val := bytes.Repeat([]byte{7}, 1000)
	for i := range 3000 {
		entries = append(entries, Entry{Key: []byte(fmt.Sprint(i)), Value: val})
	}
	src := sliceSource{StateMeta{Name: "v", Kind: KindValue}, map[int][]Entry{1: entries, 2: entries[:1]}}
	var buf bytes.Buffer
	n, err := Write(&buf, Header{MaxParallelism: 4, Range: keygroup.Range{Start: 0, End: 3}}, []Source{src})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(bytes.NewReader(buf.Bytes()), n)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.groups[1]) < 3 {
		t.Fatalf("key group 1 in %d chunks, want >= 3", len(r.groups[1]))
	}
	count := 0
	if err := r.ReadKeyGroup(1, func(e Entry) error {
		if string(e.Key) != fmt.Sprint(count) {
			return fmt.Errorf("entry %d has key %q", count, e.Key)
		}
		count++
		return nil
	}); err != nil || count != 3000 {
		t.Fatalf("read %d entries, err %v", count, err)
	}
}

// goldenV2Sources is the fixed content of testdata/v2.snap: the states of
// goldenSources with codec identities (format version 2).
func goldenV2Sources() []Source {
	src := goldenSources()
	codecs := []string{"int64", "string->string", "string", ""}
	for i := range src {
		s := src[i].(sliceSource)
		s.meta.Codec = codecs[i]
		src[i] = s
	}
	return src
}

// Version 2 files keep decoding with their codec identities.
func TestGoldenV2StillDecodes(t *testing.T) {
	path := filepath.Join("testdata", "v2.snap")
	h := Header{MaxParallelism: 128, Range: keygroup.Range{Start: 0, End: 9}, CheckpointID: 42}
	if *update && Version == 2 {
		var buf bytes.Buffer
		if _, err := Write(&buf, h, goldenV2Sources()); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if r.Header().Version != 2 {
		t.Fatalf("golden v2 file has version %d", r.Header().Version)
	}
	var want bytes.Buffer
	if _, err := Write(&want, h, goldenV2Sources()); err != nil {
		t.Fatal(err)
	}
	wr, _ := Open(bytes.NewReader(want.Bytes()), int64(want.Len()))
	if !reflect.DeepEqual(readAll(t, r), readAll(t, wr)) || !reflect.DeepEqual(r.States(), wr.States()) {
		t.Fatalf("golden v2 file decodes differently from the current writer's output: %+v vs %+v", r.States(), wr.States())
	}
	if got := r.States()[0].Codec; got != "int64" {
		t.Errorf("codec of state %q is %q, want int64", r.States()[0].Name, got)
	}
}

// goldenV3Sources is the fixed content of testdata/v3.snap: goldenV2Sources
// with schemas (format version 3; the bytes stand for codec.Schema
// encodings, which this package does not read).
func goldenV3Sources() []Source {
	src := goldenV2Sources()
	schemas := [][2]string{{"\x01\x00\x05", ""}, {"\x01\x00\x0e", "\x01\x00\x0e"}, {"", ""}, {"", ""}}
	for i := range src {
		s := src[i].(sliceSource)
		s.meta.Schema, s.meta.KeySchema = schemas[i][0], schemas[i][1]
		src[i] = s
	}
	return src
}

// Version 3 files decode with their schemas (go test -run GoldenV3 -update
// rewrites the file while Version is 3).
func TestGoldenV3Decodes(t *testing.T) {
	path := filepath.Join("testdata", "v3.snap")
	h := Header{MaxParallelism: 128, Range: keygroup.Range{Start: 0, End: 9}, CheckpointID: 42}
	if *update && Version == 3 {
		var buf bytes.Buffer
		if _, err := Write(&buf, h, goldenV3Sources()); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if r.Header().Version != 3 {
		t.Fatalf("golden v3 file has version %d", r.Header().Version)
	}
	want := []StateMeta{}
	for _, s := range goldenV3Sources() {
		want = append(want, s.Meta())
	}
	if !reflect.DeepEqual(r.States(), want) {
		t.Fatalf("golden v3 states %+v, want %+v", r.States(), want)
	}
}

// Version 1 files (no codec identities) are frozen: they keep decoding, with
// Codec "" (unknown, not checked on restore).
func TestGoldenV1StillDecodes(t *testing.T) {
	path := filepath.Join("testdata", "v1.snap")
	h := Header{MaxParallelism: 128, Range: keygroup.Range{Start: 0, End: 9}, CheckpointID: 42}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if _, err := Write(&want, h, goldenSources()); err != nil {
		t.Fatal(err)
	}
	wr, _ := Open(bytes.NewReader(want.Bytes()), int64(want.Len()))
	if !reflect.DeepEqual(readAll(t, r), readAll(t, wr)) || !reflect.DeepEqual(r.States(), wr.States()) {
		t.Fatalf("golden file decodes differently from the current writer's output")
	}
	if r.Header().Version != 1 {
		t.Errorf("golden v1 file has version %d", r.Header().Version)
	}
}

func TestCorruptionNamesThePart(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "v1.snap"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		mut  func([]byte) []byte
		part string
	}{
		{"magic", func(b []byte) []byte { b[0] = 'X'; return b }, "header"},
		{"version", func(b []byte) []byte { b[9] = 9; return b }, "header"},
		{"metadata byte", func(b []byte) []byte { b[headerSize+7] ^= 1; return b }, "metadata chunk"},
		{"truncated", func(b []byte) []byte { return b[:len(b)-3] }, "footer"},
		{"footer offset", func(b []byte) []byte { b[len(b)-footerSize+7] ^= 1; return b }, "footer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := c.mut(bytes.Clone(b))
			_, err := Open(bytes.NewReader(m), int64(len(m)))
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Part != c.part {
				t.Fatalf("error %v, want a CorruptError naming %q", err, c.part)
			}
		})
	}
	// A flipped bit inside a key-group chunk is found when that key group is read.
	r, _ := Open(bytes.NewReader(b), int64(len(b)))
	ie := r.groups[5][0]
	m := bytes.Clone(b)
	m[ie.offset+8] ^= 0x40
	r, err = Open(bytes.NewReader(m), int64(len(m)))
	if err != nil {
		t.Fatal(err)
	}
	err = r.ReadKeyGroup(5, func(Entry) error { return nil })
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Part != fmt.Sprintf("key group 5 chunk at offset %d", ie.offset) {
		t.Fatalf("error %v", err)
	}
	if err := r.ReadKeyGroup(3, func(Entry) error { return nil }); err != nil {
		t.Fatalf("intact key group 3: %v", err)
	}
}

func FuzzOpen(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "v1.snap"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:len(b)/2])
	if b2, err := os.ReadFile(filepath.Join("testdata", "v2.snap")); err == nil {
		f.Add(b2)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Open(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		for _, kg := range r.KeyGroups() {
			_ = r.ReadKeyGroup(kg, func(Entry) error { return nil })
		}
	})
}

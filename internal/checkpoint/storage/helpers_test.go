package storage_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/weirhq/weir/internal/checkpoint/storage"
	_ "github.com/weirhq/weir/internal/checkpoint/storage/s3store"
)

// scheme makes fresh, empty store roots of one kind.
type scheme struct {
	name string
	root func(t *testing.T) string // a new empty root URL
}

var uniq atomic.Int64

// s3Query is what the test server needs besides its endpoint: a region, path
// style addressing and no credentials (so that the environment's do not
// matter; signed requests work too).
const s3Query = "region=us-east-1&use_path_style=true&anonymous=true"

// newS3 starts an in-process S3 server with one bucket and returns the URL of
// a root inside it (under prefix, which may be "").
func newS3(t *testing.T, prefix string) string {
	t.Helper()
	bucket, endpoint := startS3(t)
	if prefix != "" {
		prefix = "/" + prefix
	}
	return fmt.Sprintf("s3://%s%s?endpoint=%s&%s", bucket, prefix, endpoint, s3Query)
}

// startS3 starts an in-process S3 server (gofakes3 over s3mem, on a loopback
// port) with one bucket, stopped at the end of the test.
func startS3(t *testing.T) (bucket, endpoint string) {
	t.Helper()
	backend := s3mem.New()
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	bucket = fmt.Sprintf("bucket%d", uniq.Add(1))
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	return bucket, srv.URL
}

var schemes = []scheme{
	{"file", func(t *testing.T) string { return "file://" + t.TempDir() + "/root" }},
	{"mem", func(t *testing.T) string { return fmt.Sprintf("mem://test%d/root", uniq.Add(1)) }},
	{"s3", func(t *testing.T) string { return newS3(t, "root") }},
}

// forEachScheme runs f against a file, a mem and an s3 store.
func forEachScheme(t *testing.T, f func(t *testing.T, root string)) {
	for _, sc := range schemes {
		t.Run(sc.name, func(t *testing.T) { f(t, sc.root(t)) })
	}
}

// open opens url or fails t, closing the store at the end of the test.
func open(t *testing.T, url string) *storage.Store {
	t.Helper()
	s, err := storage.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustPut(t *testing.T, s *storage.Store, key string, data []byte) {
	t.Helper()
	if err := s.Put(context.Background(), key, data); err != nil {
		t.Fatal(err)
	}
}

func mustList(t *testing.T, s *storage.Store, prefix string) []string {
	t.Helper()
	keys, err := s.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// sampleMetadata returns a checkpoint of jobID using every field of the format.
func sampleMetadata(jobID string, id int64) storage.Metadata {
	chk := storage.CheckpointPrefix(jobID, id)
	h := func(key string, size int64, crc uint32) storage.ObjectHandle {
		return storage.ObjectHandle{Key: key, Size: size, CRC: crc}
	}
	timers := h(chk+"op-b-1-timers", 77, 0xdeadbeef)
	opState := h(chk+"op-a-0-operator", 5000, 7)
	return storage.Metadata{
		JobID:          jobID,
		JobName:        "wordcount",
		CheckpointID:   id,
		TriggerMillis:  1_700_000_000_000 + id*1000,
		CompleteMillis: 1_700_000_000_500 + id*1000,
		Fingerprint:    "f1e2d3c4b5a69788",
		Operators: []storage.OperatorState{
			{
				OperatorID: "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a", UID: "source", Name: "Source: numbers",
				Parallelism: 2, MaxParallelism: 128,
				Coordinator: []byte(`{"splits":[0,1]}`),
				Subtasks: []storage.SubtaskState{
					{Subtask: 0, Operator: &opState},
					{Subtask: 1, Inline: []byte{1, 2, 3, 0, 255},
						InputChannels:  []storage.ObjectHandle{h(chk+"op-a-1-in", 10, 1)},
						OutputChannels: []storage.ObjectHandle{h(chk+"op-a-1-out-0", 11, 2), h(chk+"op-a-1-out-1", 12, 3)}},
				},
			},
			{
				OperatorID: "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", Name: "Reduce (ümlaut \"quoted\")",
				Parallelism: 2, MaxParallelism: 128,
				Subtasks: []storage.SubtaskState{
					{Subtask: 0, Keyed: []storage.KeyedHandle{{Kind: storage.KindCanonical, KeyGroupStart: 0, KeyGroupEnd: 63,
						Object: h(chk+"op-b-0-keyed", 123456, 0x01020304)}}},
					{Subtask: 1, Keyed: []storage.KeyedHandle{{Kind: storage.KindNative, KeyGroupStart: 64, KeyGroupEnd: 127,
						Files: []storage.NativeFile{
							{Name: "000004.sst", Object: h(storage.SharedKey(jobID, "b-1-000004.sst"), 4096, 44), Shared: true},
							{Name: "000007.sst", Object: h(storage.SharedKey(jobID, "b-1-000007.sst"), 8192, 77), Shared: true},
							{Name: "MANIFEST-000001", Object: h(chk+"op-b-1-MANIFEST-000001", 300, 5)},
							{Name: "OPTIONS-000003", Object: h(chk+"op-b-1-OPTIONS-000003", 400, 6)},
						},
						Timers: &timers}}},
				},
			},
			{OperatorID: "0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c", Name: "Sink: print", Parallelism: 1, MaxParallelism: 128},
		},
	}
}

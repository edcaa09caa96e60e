package keyedcount_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/weirhq/weir"
	_ "github.com/weirhq/weir/internal/checkpoint/storage/s3store"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/jobs/keyedcount"
)

// Checkpoints in S3 (an in-process S3 server): a job canceled half way
// resumes from its latest checkpoint there and the committed output is
// exactly right.
func TestCheckpointsInS3(t *testing.T) {
	backend := s3mem.New()
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	defer srv.Close()
	if err := backend.CreateBucket("checkpoints"); err != nil {
		t.Fatal(err)
	}
	url := func(prefix string) string {
		return fmt.Sprintf("s3://checkpoints/%s?endpoint=%s&region=us-east-1&use_path_style=true&anonymous=true", prefix, srv.URL)
	}

	r := testseed.Rand(t, 0)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out")
	want := writeInput(t, in, r, 3000, 20)
	for _, backendKind := range []string{"hashmap", "pebble"} {
		out := out + "-" + backendKind
		cfg := weir.Config{Parallelism: 2, StateBackend: backendKind, Checkpointing: &weir.CheckpointConfig{
			Interval: 50 * time.Millisecond, Timeout: time.Minute, Dir: url("weir-" + backendKind)}}
		ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
		err := keyedcount.Run(ctx, keyedcount.Options{Input: in, Output: out, RatePerSecond: 3000, Config: cfg})
		cancel()
		if err == nil {
			t.Fatalf("%s: the first run was meant to be canceled half way", backendKind)
		}
		if err != context.DeadlineExceeded {
			t.Fatalf("%s: the first run: %v", backendKind, err)
		}
		half := len(committed(t, out))
		cfg.ResumeFrom = "latest"
		resumed := ""
		cfg.OnSubmit = func(j *weir.Job) { resumed = j.RestoredFrom() }
		if err := keyedcount.Run(context.Background(), keyedcount.Options{Input: in, Output: out, RatePerSecond: 3000, Config: cfg}); err != nil {
			t.Fatalf("%s: resumed run: %v", backendKind, err)
		}
		if resumed == "" {
			t.Fatalf("%s: the second run did not resume from a checkpoint in S3", backendKind)
		}
		if got := committed(t, out); !slices.Equal(got, want) {
			t.Fatalf("%s: %d committed lines, want %d", backendKind, len(got), len(want))
		}
		t.Logf("%s: canceled with %d of %d lines committed, resumed from %s", backendKind, half, len(want), resumed)
	}
}

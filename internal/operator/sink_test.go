package operator

import (
	"testing"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/sink"
)

// ctxSink records the sink.Context its writer and committer get.
type ctxSink struct{ got *[]sink.Context }

func (s ctxSink) CreateWriter(ctx sink.Context) (sink.CommittingWriter[string, string], error) {
	*s.got = append(*s.got, ctx)
	return nopWriter{}, nil
}

func (s ctxSink) CreateCommitter(ctx sink.Context) (sink.Committer[string], error) {
	*s.got = append(*s.got, ctx)
	return nopCommitter{}, nil
}

func (ctxSink) CommittableCodec() codec.Codec[string] { return codec.String() }

type nopWriter struct{}

func (nopWriter) Write(string, int64) error        { return nil }
func (nopWriter) Flush(bool) error                 { return nil }
func (nopWriter) Close() error                     { return nil }
func (nopWriter) PrepareCommit() ([]string, error) { return nil, nil }

type nopCommitter struct{}

func (nopCommitter) Commit([]string) error { return nil }
func (nopCommitter) Close() error          { return nil }

// A sink's writer and committer see the task's lineage and restored
// checkpoint through sink.Context.
func TestSinkContextLineage(t *testing.T) {
	var got []sink.Context
	cur := 0
	ctx := NewContext(&cur, 0)
	ctx.Lineage, ctx.RestoredCheckpoint, ctx.Checkpointing = "lineage-7", 12, true
	if _, err := NewCommittingSinkFactory[string, string](ctxSink{&got}).Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d contexts", len(got))
	}
	for _, c := range got {
		if c.Lineage() != "lineage-7" || c.RestoredCheckpoint() != 12 {
			t.Fatalf("Lineage %q, RestoredCheckpoint %d", c.Lineage(), c.RestoredCheckpoint())
		}
	}
}

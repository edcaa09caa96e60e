package typedstore

import (
	"bytes"

	"github.com/weirhq/weir/internal/snapshot"
)

// raw is a restored state that no operator has registered yet. It keeps the
// canonical entries so that a snapshot taken before (or without) the
// registration still contains the state.
type raw struct {
	meta   snapshot.StateMeta
	start  int
	groups [][]snapshot.Entry // by key group - start; the byte slices are owned copies
}

func (r *raw) add(kg int, e snapshot.Entry) {
	e.Key = bytes.Clone(e.Key)
	e.Namespace = bytes.Clone(e.Namespace)
	e.UserKey = bytes.Clone(e.UserKey)
	e.Value = bytes.Clone(e.Value)
	r.groups[kg-r.start] = append(r.groups[kg-r.start], e)
}

type rawSource struct {
	r   *raw
	n   []int // lengths at snapshot time: raw groups only grow by Restore, before processing
	now int64
}

func (r *raw) source(now int64) snapshot.Source {
	n := make([]int, len(r.groups))
	for i, g := range r.groups {
		n[i] = len(g)
	}
	return rawSource{r: r, n: n, now: now}
}

func (s rawSource) Meta() snapshot.StateMeta { return s.r.meta }

func (s rawSource) KeyGroup(kg int, add func(snapshot.Entry) error) error {
	i := kg - s.r.start
	if i < 0 || i >= len(s.r.groups) {
		return nil
	}
	for _, e := range s.r.groups[i][:s.n[i]] {
		if e.HasTS && s.r.meta.HasTTL() && e.TS+s.r.meta.TTLMillis <= s.now {
			continue
		}
		if err := add(e); err != nil {
			return err
		}
	}
	return nil
}

package kubeha

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/internal/ha"
)

// The store's ConfigMaps: storeShards of them, <cluster-id>-store-<i>, a
// key in the one its hash picks. A ConfigMap holds at most 1 MiB and a
// value up to ha.MaxValueSize (64 KiB), so one ConfigMap would hold as few
// as 14 values; four hold 56 at least. The number is part of the store's
// format: a different one would look for keys in other ConfigMaps.
const storeShards = 4

func shardName(clusterID string, i int) string { return clusterID + "-store-" + strconv.Itoa(i) }

// shardOf is the shard of an encoded key (FNV-1a).
func shardOf(enc string) int {
	h := uint32(2166136261)
	for i := 0; i < len(enc); i++ {
		h = (h ^ uint32(enc[i])) * 16777619
	}
	return int(h % storeShards)
}

func (s *service) shardPath(i int) string { return s.storePath + "/" + shardName(s.s.ClusterID, i) }
func (s *service) shardObj(i int) string {
	return "ConfigMap " + s.ns + "/" + shardName(s.s.ClusterID, i)
}

// getShard reads shard i (nil, nil when it does not exist).
func (s *service) getShard(ctx context.Context, i int) (*configMap, error) {
	var cm configMap
	err := s.c.do(ctx, http.MethodGet, s.shardPath(i), s.shardObj(i), nil, &cm)
	if statusOf(err) == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &cm, nil
}

// listShards reads every shard in one request (a consistent snapshot);
// a missing one is nil.
func (s *service) listShards(ctx context.Context) ([storeShards]*configMap, error) {
	var shards [storeShards]*configMap
	var list struct {
		Items []configMap `json:"items"`
	}
	path := s.storePath + "?labelSelector=" + url.QueryEscape(labelCluster+"="+s.s.ClusterID)
	if err := s.c.do(ctx, http.MethodGet, path, "ConfigMaps "+s.ns+"/"+s.s.ClusterID+"-store-*", nil, &list); err != nil {
		return shards, err
	}
	for j := range list.Items {
		for i := range shards {
			if list.Items[j].Metadata.Name == shardName(s.s.ClusterID, i) {
				shards[i] = &list.Items[j]
			}
		}
	}
	return shards, nil
}

// epochOf is the epoch stamped on shard i (0: none, or no shard).
func (s *service) epochOf(cm *configMap, i int) (uint64, error) {
	if cm == nil {
		return 0, nil
	}
	v, ok := cm.Metadata.Annotations[annotationEpoch]
	if !ok {
		return 0, nil
	}
	e, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: annotation %s %q is not an epoch (a decimal number)", s.shardObj(i), annotationEpoch, v)
	}
	return e, nil
}

// storeEpoch is the largest epoch stamped on the store (0: none yet).
func (s *service) storeEpoch(ctx context.Context) (uint64, error) {
	shards, err := s.listShards(ctx)
	if err != nil {
		return 0, err
	}
	var top uint64
	for i, cm := range shards {
		e, err := s.epochOf(cm, i)
		if err != nil {
			return 0, err
		}
		top = max(top, e)
	}
	return top, nil
}

// stamp makes epoch the leader epoch of every shard, in parallel.
func (s *service) stamp(ctx context.Context, epoch uint64) error {
	errs := make([]error, storeShards)
	var wg sync.WaitGroup
	for i := range storeShards {
		wg.Go(func() { errs[i] = s.stampShard(ctx, epoch, i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// stampShard makes epoch shard i's leader epoch: it creates the ConfigMap
// if it is missing, and refuses (as not the leader) if a larger epoch is
// stamped already. Every update is guarded by resourceVersion; a conflict
// reads again.
func (s *service) stampShard(ctx context.Context, epoch uint64, i int) error {
	for {
		cm, err := s.getShard(ctx, i)
		if err == nil {
			var cur uint64
			if cur, err = s.epochOf(cm, i); err == nil {
				switch {
				case cur > epoch:
					return fmt.Errorf("kubeha: %s is stamped with epoch %d, above this term's %d: %w", s.shardObj(i), cur, epoch, ha.ErrNotLeader)
				case cur == epoch && cm != nil:
					return nil
				}
				err = s.putShard(ctx, i, cm, func(c *configMap) {
					c.Metadata.Annotations = setKey(c.Metadata.Annotations, annotationEpoch, strconv.FormatUint(epoch, 10))
				})
			}
		}
		if err == nil {
			return nil
		}
		// A conflict (or a ConfigMap created or deleted meanwhile) reads
		// again; so does a request that got no answer, within ctx.
		if code := statusOf(err); code != 0 && code != http.StatusConflict && code != http.StatusNotFound || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kubeha: stamping epoch %d on %s: %w (last error: %v)", epoch, s.shardObj(i), ctx.Err(), err)
		case <-time.After(s.s.RetryPeriod / 4):
		}
	}
}

// putShard writes shard i after change (creating it when cm is nil),
// guarded by cm's resourceVersion.
func (s *service) putShard(ctx context.Context, i int, cm *configMap, change func(*configMap)) error {
	if cm == nil {
		cm = &configMap{Metadata: objectMeta{Name: shardName(s.s.ClusterID, i), Namespace: s.ns}}
		change(cm)
		cm.APIVersion, cm.Kind = "v1", "ConfigMap"
		cm.Metadata.Labels = setKey(cm.Metadata.Labels, labelCluster, s.s.ClusterID)
		return s.c.do(ctx, http.MethodPost, s.storePath, s.shardObj(i), cm, nil)
	}
	change(cm)
	cm.APIVersion, cm.Kind = "v1", "ConfigMap"
	return s.c.do(ctx, http.MethodPut, s.shardPath(i), s.shardObj(i), cm, nil)
}

// reader reads the store ConfigMap.
type reader struct{ svc *service }

func (r *reader) Get(ctx context.Context, key string) ([]byte, error) {
	enc, err := checkedKey(key)
	if err != nil {
		return nil, err
	}
	i := shardOf(enc)
	cm, err := r.svc.getShard(ctx, i)
	if err != nil {
		return nil, err
	}
	if cm == nil {
		return nil, fmt.Errorf("HA store key %q (%s): %w", key, r.svc.shardObj(i), ha.ErrNotFound)
	}
	v, ok := cm.BinaryData[enc]
	if !ok {
		return nil, fmt.Errorf("HA store key %q (%s): %w", key, r.svc.shardObj(i), ha.ErrNotFound)
	}
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

func (r *reader) List(ctx context.Context, prefix string) (map[string][]byte, error) {
	shards, err := r.svc.listShards(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for i, cm := range shards {
		if cm == nil {
			continue
		}
		for enc, v := range cm.BinaryData {
			key, ok := decodeKey(enc)
			if !ok || shardOf(enc) != i || !strings.HasPrefix(key, prefix) {
				continue
			}
			if v == nil {
				v = []byte{}
			}
			out[key] = v
		}
	}
	return out, nil
}

func checkedKey(key string) (string, error) {
	if err := ha.CheckKey(key); err != nil {
		return "", err
	}
	return encodeKey(key)
}

// store is a term's view of the store: every write is a read, a check of
// the epoch and a change, written back guarded by the resourceVersion read.
type store struct {
	reader
	lead *leadership
}

// maxConflicts bounds the retries of one write whose update conflicted
// while the store still carried its epoch (writes of the same leader
// racing each other).
const maxConflicts = 100

// update applies change to the values of enc's shard, fenced: it fails
// with ha.ErrNotLeader once the term is over or another epoch is stamped
// on the shard. change returns false when there is nothing to write.
func (s *store) update(ctx context.Context, what, enc string, change func(data map[string][]byte) (bool, error)) error {
	svc, i := s.svc, shardOf(enc)
	for try := 0; ; try++ {
		if err := s.lead.holds(); err != nil {
			return fmt.Errorf("HA store %s: %w", what, err)
		}
		cm, err := svc.getShard(ctx, i)
		if err != nil {
			return fmt.Errorf("HA store %s: %w", what, err)
		}
		if cm == nil {
			return fmt.Errorf("HA store %s: %s was deleted after epoch %d was stamped on it: %w", what, svc.shardObj(i), s.lead.epoch, ha.ErrNotLeader)
		}
		cur, err := svc.epochOf(cm, i)
		if err != nil {
			return fmt.Errorf("HA store %s: %w", what, err)
		}
		if cur != s.lead.epoch {
			return fmt.Errorf("HA store %s: %s carries leader epoch %d, this term's is %d: %w", what, svc.shardObj(i), cur, s.lead.epoch, ha.ErrNotLeader)
		}
		if cm.BinaryData == nil {
			cm.BinaryData = map[string][]byte{}
		}
		changed, err := change(cm.BinaryData)
		if err != nil || !changed {
			return err
		}
		if n := cm.size(); n > maxStoreBytes {
			return failure.Permanent(fmt.Errorf("HA store %s: %s would hold %d bytes of keys and values, above the bound of %d (a ConfigMap holds at most 1 MiB; the store spreads its keys over %d of them): the HA store is for metadata only",
				what, svc.shardObj(i), n, maxStoreBytes, storeShards))
		}
		if err := s.lead.holds(); err != nil {
			return fmt.Errorf("HA store %s: %w", what, err)
		}
		err = svc.putShard(ctx, i, cm, func(*configMap) {})
		if statusOf(err) == http.StatusConflict && try < maxConflicts {
			continue // changed since the read: read again, check the epoch again
		}
		if statusOf(err) == http.StatusNotFound {
			return fmt.Errorf("HA store %s: %s was deleted: %w", what, svc.shardObj(i), ha.ErrNotLeader)
		}
		if err != nil {
			return fmt.Errorf("HA store %s: %w", what, err)
		}
		return nil
	}
}

func (s *store) Put(ctx context.Context, key string, value []byte) error {
	enc, err := checkedKey(key)
	if err != nil {
		return err
	}
	if len(value) > ha.MaxValueSize {
		return failure.Permanent(fmt.Errorf("HA store put %q: value of %d bytes, above the bound of %d (the HA store holds metadata only)", key, len(value), ha.MaxValueSize))
	}
	v := append([]byte{}, value...)
	return s.update(ctx, fmt.Sprintf("put %q", key), enc, func(data map[string][]byte) (bool, error) {
		data[enc] = v
		return true, nil
	})
}

func (s *store) Delete(ctx context.Context, key string) error {
	enc, err := checkedKey(key)
	if err != nil {
		return err
	}
	return s.update(ctx, fmt.Sprintf("delete %q", key), enc, func(data map[string][]byte) (bool, error) {
		if _, ok := data[enc]; !ok {
			return false, nil
		}
		delete(data, enc)
		return true, nil
	})
}

func (s *store) Increment(ctx context.Context, key string) (int64, error) {
	enc, err := checkedKey(key)
	if err != nil {
		return 0, err
	}
	var n int64
	err = s.update(ctx, fmt.Sprintf("increment %q", key), enc, func(data map[string][]byte) (bool, error) {
		n = 0
		if v, ok := data[enc]; ok {
			var perr error
			if n, perr = strconv.ParseInt(string(v), 10, 64); perr != nil {
				return false, failure.Permanent(fmt.Errorf("HA store increment %q: its value %q is not a decimal counter", key, v))
			}
		}
		n++
		data[enc] = []byte(strconv.FormatInt(n, 10))
		return true, nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

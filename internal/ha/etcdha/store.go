package etcdha

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/weirhq/weir/internal/ha"
)

// store is the HA store of one cluster id: its keys are etcd keys under
// the service's storeRoot. A term's store (ha.Store) makes every write a
// transaction guarded by the term's election key still having the term's
// create revision; the service's Reader (no electionKey) only reads.
type store struct {
	svc         *service
	electionKey string // the term's election key; "" for a Reader
	epoch       int64  // its create revision
}

// guard is the compare of every write: the term's election key still
// exists with the term's create revision (a deleted key compares as 0).
func (st *store) guard() clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(st.electionKey), "=", st.epoch)
}

// notLeader is the error of a write whose guard failed.
func (st *store) notLeader(op, key string) error {
	return fmt.Errorf("HA store %s %q of cluster %s: the election key of epoch %d is gone: %w", op, key, st.svc.s.ClusterID, st.epoch, ha.ErrNotLeader)
}

func (st *store) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ha.CheckKey(key); err != nil {
		return nil, err
	}
	r, err := st.svc.client.Get(ctx, st.svc.storeRoot+key)
	if err != nil {
		return nil, st.svc.failed(fmt.Sprintf("HA store get %q", key), err)
	}
	if len(r.Kvs) == 0 {
		return nil, fmt.Errorf("HA store get %q of cluster %s: %w", key, st.svc.s.ClusterID, ha.ErrNotFound)
	}
	v := r.Kvs[0].Value
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

func (st *store) List(ctx context.Context, prefix string) (map[string][]byte, error) {
	if prefix != "" {
		if err := ha.CheckKey(strings.TrimSuffix(prefix, "/")); err != nil {
			return nil, fmt.Errorf("HA store list: prefix: %w", err)
		}
	}
	r, err := st.svc.client.Get(ctx, st.svc.storeRoot+prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, st.svc.failed(fmt.Sprintf("HA store list %q", prefix), err)
	}
	m := make(map[string][]byte, len(r.Kvs))
	for _, kv := range r.Kvs {
		v := kv.Value
		if v == nil {
			v = []byte{}
		}
		m[strings.TrimPrefix(string(kv.Key), st.svc.storeRoot)] = v
	}
	return m, nil
}

// write runs op on key in a transaction guarded by the term.
func (st *store) write(ctx context.Context, name, key string, op clientv3.Op) error {
	if st.electionKey == "" {
		return fmt.Errorf("HA store %s %q: a Reader does not write", name, key)
	}
	r, err := st.svc.client.Txn(ctx).If(st.guard()).Then(op).Commit()
	if err != nil {
		return st.svc.failed(fmt.Sprintf("HA store %s %q", name, key), err)
	}
	if !r.Succeeded {
		return st.notLeader(name, key)
	}
	return nil
}

func (st *store) Put(ctx context.Context, key string, value []byte) error {
	if err := ha.CheckKey(key); err != nil {
		return err
	}
	if len(value) > ha.MaxValueSize {
		return fmt.Errorf("HA store put %q: a value of %d bytes is above the limit of %d bytes (the store holds pointers and descriptions, never state)",
			key, len(value), ha.MaxValueSize)
	}
	return st.write(ctx, "put", key, clientv3.OpPut(st.svc.storeRoot+key, string(value)))
}

func (st *store) Delete(ctx context.Context, key string) error {
	if err := ha.CheckKey(key); err != nil {
		return err
	}
	return st.write(ctx, "delete", key, clientv3.OpDelete(st.svc.storeRoot+key))
}

// Increment reads the counter and writes it plus one in a transaction
// guarded by the term and by the counter's mod revision (0: absent); when
// only the latter fails (a concurrent increment of the same term), it
// tries again with the value the failed transaction read.
func (st *store) Increment(ctx context.Context, key string) (int64, error) {
	if err := ha.CheckKey(key); err != nil {
		return 0, err
	}
	if st.electionKey == "" {
		return 0, fmt.Errorf("HA store increment %q: a Reader does not write", key)
	}
	k := st.svc.storeRoot + key
	r, err := st.svc.client.Get(ctx, k)
	if err != nil {
		return 0, st.svc.failed(fmt.Sprintf("HA store increment %q", key), err)
	}
	kvs := r.Kvs
	for {
		var n, rev int64
		if len(kvs) > 0 {
			rev = kvs[0].ModRevision
			if n, err = strconv.ParseInt(string(kvs[0].Value), 10, 64); err != nil || n < 0 {
				return 0, fmt.Errorf("HA store increment %q: it holds %.40q, not a counter (a decimal number)", key, kvs[0].Value)
			}
		}
		tr, err := st.svc.client.Txn(ctx).
			If(st.guard(), clientv3.Compare(clientv3.ModRevision(k), "=", rev)).
			Then(clientv3.OpPut(k, strconv.FormatInt(n+1, 10))).
			Else(clientv3.OpGet(st.electionKey), clientv3.OpGet(k)).
			Commit()
		if err != nil {
			return 0, st.svc.failed(fmt.Sprintf("HA store increment %q", key), err)
		}
		if tr.Succeeded {
			return n + 1, nil
		}
		ek := tr.Responses[0].GetResponseRange().Kvs
		if len(ek) == 0 || ek[0].CreateRevision != st.epoch {
			return 0, st.notLeader("increment", key)
		}
		kvs = tr.Responses[1].GetResponseRange().Kvs
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("HA store increment %q: %w", key, err)
		}
	}
}

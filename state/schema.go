package state

import (
	"fmt"
	"reflect"
	"sync"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/internal/snapshot"
)

// Schema evolution. A state records the schema of its codecs
// (codec.SchemaOf) in snapshots. On restore, a backend compares the
// recorded metadata with the registered state's (snapshot.Resolve): equal
// is the common case and costs nothing per entry; otherwise it calls the
// state's evolve function once, which decides by codec.Compare (or the
// codec's own codec.Migrator) and returns the per-value rewrite the
// backend applies to the restored bytes. Values are never migrated after
// the restore, so reads and writes cost the same as without evolution.

// schemaOf is the persisted schema of c's values, "" if c has none.
// Get*State may be called per element (a trigger's state), so schemas of
// codecs that do not declare one, which depend only on T and the codec's
// type, are derived once and cached.
func schemaOf[T any](c codec.Codec[T]) string {
	if c == nil {
		return ""
	}
	_, declared := c.(codec.SchemaDeclarer)
	key := schemaKey{reflect.TypeFor[T](), reflect.TypeOf(c)}
	if !declared {
		if s, ok := derivedSchemas.Load(key); ok {
			return s.(string)
		}
	}
	var out string
	if s, ok := codec.SchemaOf(c); ok {
		out = string(s.AppendBinary(nil))
	}
	if !declared {
		derivedSchemas.Store(key, out)
	}
	return out
}

type schemaKey struct{ value, codec reflect.Type }

// derivedSchemas caches schemaOf by schemaKey.
var derivedSchemas sync.Map

// part is one codec of a state (its values, or its map user keys) with
// the schema recorded for it now.
type part[T any] struct {
	what   string // "value", "user key", "accumulator"...
	codec  codec.Codec[T]
	schema string
}

// migrate decides how bytes written under the restored schema become
// bytes of p's codec: nil keeps them as they are. Errors are permanent.
func (p part[T]) migrate(restoredMeta, meta snapshot.StateMeta, restored string) (func(dst, old []byte) ([]byte, error), error) {
	state := meta.Name
	if restored == p.schema {
		return nil, nil
	}
	old, err := codec.ParseSchema([]byte(restored))
	if err != nil {
		return nil, failure.Permanent(fmt.Errorf("state %q: the snapshot's %s schema is corrupt: %w", state, p.what, err))
	}
	if m, ok := p.codec.(codec.Migrator[T]); ok {
		c := p.codec
		return func(dst, b []byte) ([]byte, error) {
			v, err := m.Migrate(old, b)
			if err != nil { // the same bytes fail again after a restart
				return dst, failure.Permanent(fmt.Errorf("state %q: the codec's migration of a %s from %s: %w", state, p.what, old, err))
			}
			return c.AppendEncode(dst, v), nil
		}, nil
	}
	cur, err := codec.ParseSchema([]byte(p.schema))
	if err != nil {
		return nil, err // written by this process: cannot happen
	}
	if c, err := codec.Compare(old, cur); err != nil {
		return nil, failure.Permanent(fmt.Errorf("state %q was written with codec %q and is declared now with codec %q, whose %s schema is incompatible: %w; "+
			"Weir migrates added, removed and moved fields only: restore with the old type, declare a migration on the %s codec (codec.Migrator), "+
			"or move the data to a state of a new name",
			state, restoredMeta.Codec, meta.Codec, p.what, err, p.what))
	} else if c == codec.CompatibleAsIs {
		return nil, nil
	}
	tc, err := codec.Transcoder(old, cur)
	if err != nil {
		return nil, failure.Permanent(fmt.Errorf("state %q: %w", state, err))
	}
	return func(dst, b []byte) ([]byte, error) {
		out, err := tc(dst, b)
		if err != nil { // corrupt restored bytes stay corrupt
			return out, failure.Permanent(fmt.Errorf("state %q: migrating a %s from %s to %s: %w", state, p.what, old, cur, err))
		}
		return out, nil
	}, nil
}

// evolveOne is the evolve function of a state with one codec (value, list,
// reducing, aggregating, operator list).
func evolveOne[T any](meta snapshot.StateMeta, v part[T]) snapshot.Evolve {
	return func(r snapshot.StateMeta) (snapshot.Migration, error) {
		if r.Schema == "" || v.schema == "" {
			return snapshot.Migration{}, identityCheck(r, meta)
		}
		f, err := v.migrate(r, meta, r.Schema)
		return snapshot.Migration{Value: f}, err
	}
}

// evolveTwo is the evolve function of a state with user keys (map,
// broadcast). Schemas decide only when both codecs have one on both
// sides; otherwise the codec identity does, as before schemas existed.
func evolveTwo[K, V any](meta snapshot.StateMeta, k part[K], v part[V]) snapshot.Evolve {
	return func(r snapshot.StateMeta) (snapshot.Migration, error) {
		if r.Schema == "" || r.KeySchema == "" || v.schema == "" || k.schema == "" {
			return snapshot.Migration{}, identityCheck(r, meta)
		}
		kf, err := k.migrate(r, meta, r.KeySchema)
		if err != nil {
			return snapshot.Migration{}, err
		}
		vf, err := v.migrate(r, meta, r.Schema)
		return snapshot.Migration{Value: vf, UserKey: kf}, err
	}
}

func identityCheck(restored, registered snapshot.StateMeta) error {
	if snapshot.CodecMismatch(restored.Codec, registered.Codec) {
		return snapshot.CodecChangeError(registered.Name, restored.Codec, registered.Codec)
	}
	return nil
}

package inspect

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/weirhq/weir/internal/keygroup"
)

// WriteText writes r for people: one block per operator.
func WriteText(w io.Writer, r *Report) error {
	var b strings.Builder
	kind := "checkpoint"
	if r.Savepoint {
		kind = "savepoint"
	}
	fmt.Fprintf(&b, "%s %d of job %q (%s)\n", kind, r.CheckpointID, r.JobName, r.JobID)
	fmt.Fprintf(&b, "  location: %s\n", r.StoreURL)
	if r.CompleteMillis > 0 {
		fmt.Fprintf(&b, "  completed: %s\n", time.UnixMilli(r.CompleteMillis).UTC().Format(time.RFC3339))
	}
	if r.KeyHash != 0 {
		fmt.Fprintf(&b, "  key hash: %s; a resumed job keeps it\n", keygroup.HashVersion(r.KeyHash))
	}
	fmt.Fprintf(&b, "  operators with state: %d\n", len(r.Operators))
	for _, op := range r.Operators {
		uid := "(none)"
		if op.UID != "" {
			uid = fmt.Sprintf("%q", op.UID)
		}
		fmt.Fprintf(&b, "\noperator %q uid %s id %s\n", op.Name, uid, op.OperatorID)
		fmt.Fprintf(&b, "  parallelism %d, max parallelism %d\n", op.Parallelism, op.MaxParallelism)
		if op.CoordinatorBytes > 0 {
			fmt.Fprintf(&b, "  enumerator (coordinator) state: %d bytes\n", op.CoordinatorBytes)
		}
		for _, kr := range op.KeyedRanges {
			fmt.Fprintf(&b, "  keyed state, subtask %d, key groups %d-%d: %s, %d bytes", kr.Subtask, kr.KeyGroupStart, kr.KeyGroupEnd, kr.Format, kr.Bytes)
			if kr.Format == "native" {
				fmt.Fprintf(&b, " in %d Pebble files (%d shared), timers %d bytes", kr.Files, kr.SharedFiles, kr.TimerBytes)
			}
			b.WriteString("\n")
		}
		for _, ks := range op.KeyedStates {
			ttl := ""
			if ks.TTLMs > 0 {
				ttl = fmt.Sprintf(", ttl %dms", ks.TTLMs)
			}
			if ks.Codec != "" {
				ttl += ", codec " + ks.Codec
			}
			unit := "entries"
			if ks.Native {
				unit = "Pebble records"
			}
			fmt.Fprintf(&b, "  keyed %-24q %s%s: %d keys, %d %s, %d bytes\n", ks.Name, ks.Kind, ttl, ks.Keys, ks.Entries, unit, ks.Bytes)
			writeSchemas(&b, ks.Schema, ks.KeySchema)
		}
		for _, os := range op.OperatorStates {
			fmt.Fprintf(&b, "  operator state %q (%s): %d elements, %d bytes", os.Name, os.Kind, os.Elements, os.Bytes)
			if os.Meaning != "" {
				fmt.Fprintf(&b, " (%s)", os.Meaning)
			}
			b.WriteString("\n")
			writeSchemas(&b, os.Schema, os.KeySchema)
		}
		if op.SourceSplits > 0 {
			fmt.Fprintf(&b, "  source splits: %d\n", op.SourceSplits)
		}
		for _, pc := range op.PendingCommits {
			fmt.Fprintf(&b, "  pending commit: subtask %d, prepared at checkpoint %d, %d bytes\n", pc.Subtask, pc.Checkpoint, pc.Bytes)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSchemas writes a state's recorded schemas, one line each, below
// the state's line.
func writeSchemas(b *strings.Builder, schema, keySchema string) {
	if keySchema != "" {
		fmt.Fprintf(b, "    key schema %s\n", keySchema)
	}
	if schema != "" {
		fmt.Fprintf(b, "    schema %s\n", schema)
	}
}

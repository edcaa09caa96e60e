package file

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/sink"
)

// markerPrefix begins the names of the commit markers, one per subtask
// index: ".weir-commit-<subtask>". Each is written by its subtask only.
const markerPrefix = ".weir-commit-"

// markerVersion is the version of a marker's content.
const markerVersion = 1

// marker is the content of a commit marker: the lineage that owns the
// directory and the highest checkpoint whose parts the subtask committed
// there (0: none yet). Stored as JSON with a CRC-32 of the other fields.
type marker struct {
	Version    int    `json:"version"`
	Lineage    string `json:"lineage"`
	Checkpoint int64  `json:"checkpoint"`
	CRC        uint32 `json:"crc"`

	subtask int // from the name
}

func (m marker) crc() uint32 {
	return crc32.ChecksumIEEE(fmt.Appendf(nil, "%d\x00%s\x00%d", m.Version, m.Lineage, m.Checkpoint))
}

func markerPath(dir string, subtask int) string {
	return filepath.Join(dir, markerPrefix+strconv.Itoa(subtask))
}

// readMarkers reads the commit markers of dir. A marker it cannot read or
// parse is a permanent error naming it.
func readMarkers(dir string) ([]marker, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("file sink: reading output directory %s: %w", dir, err)
	}
	var ms []marker
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), markerPrefix)
		if !ok {
			continue
		}
		sub, err := strconv.ParseUint(rest, 10, 31)
		if err != nil {
			continue // a temporary file of an interrupted write
		}
		m, err := readMarker(dir, int(sub))
		if err != nil {
			return nil, err
		}
		if m != nil {
			ms = append(ms, *m)
		}
	}
	return ms, nil
}

// readMarker reads the marker of subtask in dir (nil if there is none).
func readMarker(dir string, subtask int) (*marker, error) {
	path := markerPath(dir, subtask)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("file sink: reading commit marker %s: %w", path, err)
	}
	var m marker
	if err := json.Unmarshal(b, &m); err != nil || m.Version != markerVersion || m.CRC != m.crc() || m.Lineage == "" || m.Checkpoint < 0 {
		return nil, failure.Permanent(fmt.Errorf("file sink: commit marker %s is corrupt or of an unknown version (%q); it records which job owns the output directory: delete it only if no job's output is there", path, b))
	}
	m.subtask = subtask
	return &m, nil
}

// writeMarker writes the marker of subtask in dir atomically (a temporary
// file, synced, renamed into place, then the directory synced).
func writeMarker(dir string, subtask int, lineage string, checkpoint int64) error {
	m := marker{Version: markerVersion, Lineage: lineage, Checkpoint: checkpoint}
	m.CRC = m.crc()
	b, _ := json.Marshal(m)
	path := markerPath(dir, subtask)
	tmp := fmt.Sprintf("%s.tmp-%016x", path, rand.Uint64())
	err := writeSynced(tmp, b)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("file sink: writing commit marker %s: %w", path, err)
	}
	return nil
}

// writeSynced creates path with content b and syncs it.
func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// claim checks, when a writer starts, that dir may take the output of the
// run ctx describes, and marks it as the run's lineage's:
//   - markers of another lineage that committed a checkpoint: refused, the
//     output is another line of runs' (a lineage that committed nothing,
//     its first run killed early, is taken over, said in the log);
//   - a marker of this lineage above the restored checkpoint: refused, the
//     resumed run would write again what that checkpoint committed;
//   - committed parts without markers (the output of a Weir that kept no
//     markers, or of a run without checkpoints): refused on a fresh start,
//     which would add a second output beside them; a resume may continue
//     it (Weir cannot check how far it went), with a warning.
func claim(dir, prefix, suffix string, ctx sink.Context, log *slog.Logger) error {
	lineage, restored, sub := ctx.Lineage(), ctx.RestoredCheckpoint(), ctx.Subtask()
	ms, err := readMarkers(dir)
	if err != nil {
		return err
	}
	var mine, own *marker
	var others []marker
	for i, m := range ms {
		switch {
		case m.Lineage != lineage:
			others = append(others, m)
		case mine == nil || m.Checkpoint > mine.Checkpoint:
			mine = &ms[i]
		}
		if m.subtask == sub && m.Lineage == lineage {
			own = &ms[i]
		}
	}
	for _, o := range others {
		if o.Checkpoint > 0 {
			return failure.Permanent(fmt.Errorf("file sink: output directory %s holds the output of another run of a job (lineage %s, committed up to checkpoint %d, marker %s): resume that job with --from latest (its checkpoint directory), or write to an empty output directory",
				dir, o.Lineage, o.Checkpoint, markerPath(dir, o.subtask)))
		}
	}
	if mine != nil && mine.Checkpoint > restored {
		again := "starting from the beginning would write it again"
		if restored > 0 {
			again = fmt.Sprintf("resuming from checkpoint %d would write again what came after it", restored)
		}
		return failure.Permanent(fmt.Errorf("file sink: output directory %s already holds what checkpoint %d of this job committed; %s: resume from the newest snapshot (--from latest, or the checkpoint or savepoint %d or newer), or write to an empty output directory",
			dir, mine.Checkpoint, again, mine.Checkpoint))
	}
	if mine == nil {
		parts, err := committedParts(dir, prefix, suffix)
		if err != nil {
			return err
		}
		switch {
		case len(parts) > 0 && restored == 0:
			return failure.Permanent(fmt.Errorf("file sink: output directory %s holds %d committed part files (%s, ...) that no commit marker ties to a job: a fresh start would write its output beside them; write to an empty output directory, or delete them", dir, len(parts), parts[0]))
		case len(parts) > 0 && sub == 0:
			log.Warn("file sink: the output directory holds part files without commit markers (written by an older Weir?); resuming into it without checking how far they go", "dir", dir, "parts", len(parts), "restored", restored, "lineage", lineage)
		}
		if len(others) > 0 && sub == 0 {
			log.Warn("file sink: taking over an output directory whose earlier job committed nothing", "dir", dir, "lineage", others[0].Lineage, "new lineage", lineage)
		}
	}
	if own == nil {
		if err := writeMarker(dir, sub, lineage, 0); err != nil {
			return err
		}
	}
	if tmps, _ := filepath.Glob(markerPath(dir, sub) + ".tmp-*"); len(tmps) > 0 {
		for _, tmp := range tmps { // of writes cut short by a crash
			os.Remove(tmp)
		}
	}
	if sub == 0 {
		for _, o := range others { // committed nothing: taken over
			if o.subtask >= ctx.Parallelism() {
				os.Remove(markerPath(dir, o.subtask))
			}
		}
	}
	return nil
}

// committedParts lists the committed part files of a sink with prefix and
// suffix in dir.
func committedParts(dir, prefix, suffix string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("file sink: reading output directory %s: %w", dir, err)
	}
	var out []string
	for _, e := range entries {
		if _, _, ok := parsePart(e.Name(), prefix, suffix, false); ok {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

package scratch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// lockName is the lock file inside each directory.
const lockName = ".weir-owner.lock"

// Dir makes a new directory in the temporary directory (os.TempDir) named
// family, then name, then random characters, first sweeping the
// directories of the family that dead processes left (Sweep). release
// removes it and unlocks.
func Dir(family, name string) (dir string, release func(), err error) {
	Sweep(family)
	dir, err = os.MkdirTemp("", family+name)
	if err != nil {
		return "", nil, err
	}
	f, err := lock(filepath.Join(dir, lockName), true)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	return dir, func() {
		os.RemoveAll(dir) // while locked: no sweeper takes it meanwhile
		f.Close()
	}, nil
}

// Sweep removes the directories in os.TempDir named prefix* whose owner
// is gone (their lock file is not locked), and returns how many.
func Sweep(prefix string) int {
	tmp := os.TempDir()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		f, err := lock(filepath.Join(dir, lockName), false)
		if err != nil {
			continue // alive, or not ours
		}
		if os.RemoveAll(dir) == nil {
			n++
		}
		f.Close()
	}
	return n
}

package query_test

import (
	"os"
	"path/filepath"
	"testing"
)

// qcCountFiles counts the files under dir.
func qcCountFiles(t *testing.T, dir string) int {
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

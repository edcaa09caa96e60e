package storage

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// MetadataName is the name of the file whose presence (with a valid
// checksum) makes a checkpoint complete. It is written last.
const MetadataName = "_metadata"

// SharedDir is the directory of a job holding files that several
// checkpoints may reference (incremental Pebble SSTs).
const SharedDir = "shared"

const chkPrefix = "chk-"

// CheckpointDir returns the name of checkpoint id's directory: "chk-<id>".
func CheckpointDir(id int64) string {
	return chkPrefix + strconv.FormatInt(id, 10)
}

// CheckpointPrefix returns the key prefix of checkpoint id of jobID, ending in
// "/": "<job-id>/chk-<id>/". Every task-owned object of the checkpoint lives
// under it and is deleted with it.
func CheckpointPrefix(jobID string, id int64) string {
	return jobID + "/" + CheckpointDir(id) + "/"
}

// MetadataKey returns the key of checkpoint id's metadata:
// "<job-id>/chk-<id>/_metadata".
func MetadataKey(jobID string, id int64) string {
	return CheckpointPrefix(jobID, id) + MetadataName
}

// SharedKey returns the key of a file shared by several checkpoints of jobID:
// "<job-id>/shared/<name>".
func SharedKey(jobID, name string) string {
	return jobID + "/" + SharedDir + "/" + name
}

// ParseCheckpointDir parses a checkpoint directory name "chk-<n>" with n a
// positive decimal without sign or leading zeros (so that names and ids map
// one to one). It reports false for any other name.
func ParseCheckpointDir(name string) (int64, bool) {
	digits, ok := strings.CutPrefix(name, chkPrefix)
	if !ok || digits == "" || digits[0] < '1' || digits[0] > '9' {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	id, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, false
	}
	return id, true
}

// tempName matches the temporary files fileblob writes next to their target
// (NoTempDir) before renaming them: "<name>.<hex nanos>.tmp".
var tempName = regexp.MustCompile(`\.[0-9a-f]+\.tmp$`)

// checkKey checks that key is a relative, "/"-separated object key that maps
// to the same path on every store: no empty, "." or ".." components, no
// leading or trailing "/", no control characters or backslashes, and no
// component with a suffix reserved by the file store (".attrs" sidecars,
// "<name>.<hex>.tmp" files being written).
func checkKey(key string) error {
	if key == "" {
		return fmt.Errorf("empty key")
	}
	for _, c := range strings.Split(key, "/") {
		if err := checkComponent(c); err != nil {
			return fmt.Errorf("key %q: %w", key, err)
		}
	}
	return nil
}

// checkComponent checks one "/"-free element of a key.
func checkComponent(c string) error {
	switch {
	case c == "":
		return fmt.Errorf("empty path element (leading, trailing or double \"/\")")
	case c == "." || c == "..":
		return fmt.Errorf("path element %q", c)
	case strings.HasSuffix(c, ".attrs") || tempName.MatchString(c):
		return fmt.Errorf("element %q has a suffix reserved by the file store", c)
	}
	for _, r := range c {
		if r < 0x20 || r == 0x7f || r == '\\' || r == '/' || r == 0xfffd {
			return fmt.Errorf("element %q contains %q", c, r)
		}
	}
	return nil
}

package node

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
)

var buildID = sync.OnceValue(func() string {
	rev, modified := "unknown", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && len(s.Value) >= 12:
				rev = s.Value[:12]
			case s.Key == "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if modified {
		rev += "+modified"
	}
	return rev + "/" + executableDigest()
})

// BuildID names the binary this process runs: its VCS revision (with
// "+modified" for a dirty tree) and a digest of the executable's bytes, so
// two builds of one revision with other code or flags differ too. It is
// computed once.
func BuildID() string { return buildID() }

// executableDigest is the first 16 hex digits of the executable's SHA-256,
// or "unreadable" when it cannot be read (then processes compare the
// revision alone in practice).
func executableDigest() string {
	path, err := os.Executable()
	if err != nil {
		return "unreadable"
	}
	f, err := os.Open(path)
	if err != nil {
		return "unreadable"
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Sprintf("unreadable(%v)", err)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

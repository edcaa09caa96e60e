//go:build !unix

package scratch

import (
	"errors"
	"os"
)

// lock opens path, creating it when create. Without flock a directory's
// owner cannot be told alive, so Sweep takes nothing: opening an existing
// lock file fails.
func lock(path string, create bool) (*os.File, error) {
	if !create {
		return nil, errors.New("no file locks on this system")
	}
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
}

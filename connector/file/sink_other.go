//go:build !unix

package file

import "os"

// writable is not checked ahead of time here; creating the file tells.
func writable(string) error { return nil }

// openDirect opens a device for writing.
func openDirect(path string, _ <-chan struct{}) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY, 0)
}

// syncDir does nothing: directories cannot be synced everywhere.
func syncDir(string) error { return nil }

package statebackend

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a backend leaves goroutines behind (Pebble
// runs its own; Close must stop them).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

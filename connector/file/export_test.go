package file

import "time"

// SetClock sets the clock of s's rolling policy.
func SetClock[T any](s *Sink[T], now func() time.Time) { s.now = now }

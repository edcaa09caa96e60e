package file

import "time"

// SetClock sets the clock of s's rolling policy.
func SetClock[T any](s *Sink[T], now func() time.Time) { s.now = now }

// EnumeratorStateV1 encodes splits as the enumerator's state of version 1
// (before it recorded its input), as old checkpoints hold it.
func EnumeratorStateV1(splits []Split) []byte {
	return appendSplitList([]byte{formatVersion}, splits)
}

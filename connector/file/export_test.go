package file

import "time"

// SetClock sets the clock of s's rolling policy.
func SetClock[T any](s *Sink[T], now func() time.Time) { s.now = now }

// EnumeratorStateV1 encodes splits as the enumerator's state of version 1
// (before it recorded its input), as old checkpoints hold it.
func EnumeratorStateV1(splits []Split) []byte {
	return appendSplitList([]byte{formatVersion}, splits)
}

// SetCompactFault sets the hook called between the steps of a compaction
// (nil: none) and returns a function that restores the previous one.
func SetCompactFault(f func(step string) error) (restore func()) {
	prev := compactFault
	compactFault = f
	return func() { compactFault = prev }
}

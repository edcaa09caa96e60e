package wire

import "fmt"

// Sequence numbers the BUFFER frames of one channel, on either side: the
// sender takes the next number with Take, the receiver checks each with
// Check. Numbers start at 0 and wrap at 2^32, which a channel reaches
// (about an hour at a million small buffers a second), so comparisons are
// modular: a number up to 2^31 ahead is a gap, one behind is a repeat.
// The zero value is a channel's start. A connection keeps one per channel
// in its dense channel slice: no map, no allocation.
type Sequence struct{ next uint32 }

// Take returns the sender's next sequence number and advances.
func (s *Sequence) Take() uint32 {
	n := s.next
	s.next++
	return n
}

// Next is the number the next frame must carry.
func (s *Sequence) Next() uint32 { return s.next }

// Check accepts got if it is the next number of channel and advances;
// otherwise it returns an error naming the channel, the number expected
// and the one received (a gap: frames were lost; a repeat: sent twice),
// and stays where it was. Either is a protocol error that fails the
// connection.
func (s *Sequence) Check(channel, got uint32) error {
	want := s.next
	if got == want {
		s.next++
		return nil
	}
	if ahead := got - want; ahead < 1<<31 {
		return fmt.Errorf("wire: BUFFER on channel %d: sequence %d, expected %d: a gap of %d buffers", channel, got, want, ahead)
	}
	return fmt.Errorf("wire: BUFFER on channel %d: sequence %d, expected %d: a repeat of a buffer %d back", channel, got, want, want-got)
}

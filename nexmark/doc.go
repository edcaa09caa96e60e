// Package nexmark owns the Nexmark benchmark's events and their generator:
// the event model (Person, Auction, Bid with Nexmark's field names, in one
// Event value), a generator that reproduces Nexmark's Java generator event
// for event (java.util.Random seeded per event, the same draws in the same
// order), a Weir source that splits the events among subtasks with
// checkpointed positions, the events' own codec for exchanges (EventCodec),
// and the JSON-lines format that `weir nexmark generate` writes and Decoder
// reads back. The queries live elsewhere. docs/nexmark.md says what is
// reproduced and what is not.
package nexmark

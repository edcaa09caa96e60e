// Package tuple holds small generic product types (pairs and triples) that
// streams use when a record is "a few values" and declaring a named struct
// would be ceremony: keyed counts, joins, window results.
//
// The types are plain structs with exported fields so that codecs can be
// derived for them (see codec.For) and hand-written ones composed
// (codec.Tuple2, codec.Tuple3). They carry no methods beyond constructors, so
// they stay comparable whenever their field types are.
package tuple

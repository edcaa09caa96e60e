package kafka

import (
	"encoding/json"
	"slices"
)

// Deserializer turns a record into a value; an error is a bad record,
// handled by SourceConfig.BadRecords. The record and its slices belong to
// the source: a deserializer that keeps a slice must copy it.
type Deserializer[T any] func(r *Record) (T, error)

// BytesValue returns the record's value (a copy).
func BytesValue() Deserializer[[]byte] {
	return func(r *Record) ([]byte, error) { return slices.Clone(r.Value), nil }
}

// StringValue returns the record's value as a string.
func StringValue() Deserializer[string] {
	return func(r *Record) (string, error) { return string(r.Value), nil }
}

// JSONValue decodes the record's value as JSON into a T (encoding/json).
func JSONValue[T any]() Deserializer[T] {
	return func(r *Record) (T, error) {
		var v T
		err := json.Unmarshal(r.Value, &v)
		return v, err
	}
}

// Package jsonline reads one JSON object per input line strictly, for the
// built-in jobs' inputs: exact, case-sensitive keys, each at most once, and
// values of the stated JSON type (a number is not accepted as a string nor
// a string as a number), with messages that say what was wrong and show
// the offending value. Callers add the file and line.
package jsonline

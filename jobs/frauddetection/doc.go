// Package frauddetection is the built-in fraud-detection job, after Flink's
// tutorial: it reads transactions and alerts on every transaction above
// 500.00 whose immediately previous transaction on the same account was below
// 1.00 and at most one minute earlier by event time.
//
// Input: JSON lines {"account": "<id>", "amount": <number>, "ts": <epoch ms>}
// from a file, the files of a directory (in name order) or standard input
// ("-"), read in order by one source subtask. Output: JSON lines
// {"account": "<id>", "ts": <ms>, "amount": <number>}, one per alert, to a
// file or standard output ("-").
//
// The input is read strictly, and a bad line fails the job with a message
// naming its file and line number and what is wrong, e.g.
//
//	tx.jsonl line 3: "amount" must be a JSON number, got string "600"
//
// That is the default bad-record policy; Options.BadRecords (jobs/badrecords)
// can skip bad lines or write them to a dead-letter file instead. Blank
// (whitespace-only) lines are skipped, and a UTF-8 byte order mark at the
// start of a file is not part of its first line. Every other line must be one
// JSON object with exactly these keys (case-sensitive: "Account" is not
// "account"): "account", a JSON string; "amount", a JSON number (finite in
// float64; the string "600" is not a number); "ts", a JSON integer (no
// fraction or exponent) of milliseconds that fits int64. Other keys are
// ignored, as Flink's JSON format ignores unknown fields; any of the three
// keys appearing twice in one object is an error rather than silently taking
// one of the values.
//
// Keyed state per account holds only the timestamp of a pending small
// transaction; an event-time timer one minute after it clears it, so state
// does not grow with the number of accounts ever seen. Time arithmetic does
// not overflow: any int64 timestamps work, and a cleanup timer past the end
// of int64 time is set at math.MaxInt64.
package frauddetection

// Package windowagg is the built-in job window-agg, made so that Weir's
// windows can be checked from outside: it reads JSON lines
// {"ts": <epoch ms>, "key": "<string>", "value": <int64>} in file order in
// one source subtask, assigns event time and watermarks (punctuated: after
// every element, highest timestamp - out-of-orderness - 1, which makes the
// output independent of timing; or periodic), windows by key (tumbling,
// sliding or session) with optional allowed lateness, and writes one JSON
// line per window firing {"key", "window_start", "window_end", "count",
// "sum", "min", "max"} (late firings are further lines). Late elements go,
// unchanged, to the late output when one is named. With checkpoints, both
// outputs are directories filled exactly once by the file sink.
//
// Results are exact or the job fails: a window whose running sum leaves
// int64 fails it permanently, naming key and window; an element whose
// windows cannot be held in int64 milliseconds (one at math.MaxInt64, say)
// or whose ts is math.MinInt64 ("no timestamp") is a bad record. Bad lines
// go by Options.BadRecords (jobs/badrecords: fail, skip or dead-letter);
// blank lines are skipped.
package windowagg

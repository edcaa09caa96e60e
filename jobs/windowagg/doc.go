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
package windowagg

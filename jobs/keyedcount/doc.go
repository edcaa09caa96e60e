// Package keyedcount is the built-in job that shows and tests exactly-once
// checkpoints: it reads lines "key<TAB>value" (value an int64) and, for each
// line, emits "key<TAB>n<TAB>sum", where n and sum are that key's running
// count and sum including this line, through the exactly-once file sink.
//
// After any number of failures and restarts (in the process, or of the
// process with --from latest), the committed output holds, for every key,
// exactly the lines n = 1..N once each, with the right sums: the count and
// sum live in keyed state that is checkpointed, the source's positions are
// checkpointed, and output is committed only when the checkpoint that
// covers it completes.
//
// A line that is not key<TAB>value goes by Options.BadRecords
// (jobs/badrecords): by default the job fails at once, permanently, naming
// file and line; skip drops it; dead-letter writes it to Options.DeadLetter,
// exactly once like the output. Blank lines are skipped. A sum past int64
// fails the job permanently, naming the key.
package keyedcount

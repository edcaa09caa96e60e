// Package file reads and writes text files.
//
// TextSource splits its input (a file or a directory of files) into byte
// ranges aligned to lines, and the splits are divided among the source's
// subtasks. An input that cannot be sized or seeked (standard input, named
// "-", a pipe, a FIFO, a character device) is one split, read to its end by
// one subtask, on a goroutine of its own so that a read that waits for the
// writer never blocks the task. LineSource reads the same inputs whole file
// by whole file and numbers their lines, for messages that point at bad
// input.
//
// TextSink writes one line per record, to one file at parallelism 1 or one
// part file per subtask. Files are written under a hidden temporary name and
// renamed into place at the end of input; standard output ("-"), FIFOs and
// devices are written directly. Validate checks the output before the job
// starts.
package file

// Package file reads and writes text files.
//
// TextSource and LineSource implement source.Source with Split as their
// split. The enumerator lists the input when the job first starts:
// TextSource cuts it into byte ranges aligned to lines, LineSource takes
// whole files and numbers their lines, for messages that point at bad
// input. Readers ask for a split whenever they have none and get the next
// one, until none are left. A split carries the offset of its next unread
// line (and the number of lines read before it), so a job restored from a
// checkpoint, at any parallelism, reads every line exactly once. The
// enumerator's state records the input's absolute path and the files it
// listed: a restore into another input, or of a split whose file is gone or
// shorter than the split, is a permanent error, and files added or grown
// since the first listing are logged and not read. An input
// that cannot be sized or seeked (standard input, named "-", a pipe, a
// FIFO, a character device) is one split, read to its end by one subtask,
// on a goroutine of its own so that a read that waits for the writer never
// blocks the task. Such a stream is not replayable: a restore that finds it
// partly read fails and says so (one not started yet is read whole), and
// after a failure before the first checkpoint that covers it, reading
// starts again wherever the stream then is.
//
// Sink is the exactly-once file sink (Flink's FileSink): each subtask
// writes part files into a directory under hidden in-progress names, keeps
// a part open across checkpoints (each barrier records its synced length)
// until it rolls on size or time (Flink's rolling policy), and renames it
// into place when the checkpoint after the roll completes, so readers that
// skip hidden files see exactly the records of completed checkpoints, once
// their part rolled. Hidden commit markers tie the directory to the job's
// lineage and record the highest checkpoint committed, so that another
// lineage, or a restore from an older checkpoint, cannot write there. With
// a CompactPolicy (Flink's enableCompact), parts that roll small stay
// hidden, recorded by every checkpoint, until they are concatenated into
// one part at a barrier (on size or after some checkpoints) and that part
// is committed; a restore finishes or redoes a compaction, so readers still
// see every record once, in whole files.
//
// TextSink writes one line per record, to one file at parallelism 1 or one
// part file per subtask. Files are written under a hidden temporary name and
// renamed into place at the end of input; standard output ("-"), FIFOs and
// devices are written directly. It is not exactly-once: after a restore from
// a checkpoint, its files hold only what came after the checkpoint, and
// direct outputs get that part again. Validate checks the output of either
// sink before the job starts.
package file

// Package file reads and writes text files. The source splits its input (a
// file or a directory of files) into byte ranges aligned to lines, and the
// splits are divided among the source's subtasks; the sink writes one line per
// record, to one file at parallelism 1 or one part file per subtask.
package file

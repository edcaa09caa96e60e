// Exactlyonce writes a custom source and a custom two-phase-commit sink
// against Weir's public contracts (packages source and sink), and shows
// that the output is exactly once across a failure and a resume:
//
//   - the source reads numbered ranges (splits); each reader's position in
//     its split is checkpointed, so after a restore reading goes on exactly
//     after the last checkpoint;
//   - the sink writes each subtask's records to a hidden pending file and,
//     at every checkpoint barrier, hands the file over as a committable;
//     the committer renames it into place once the checkpoint is complete
//     (idempotently: after a restore it may get it again);
//   - the first run fails once on purpose (the restart strategy restarts it
//     from the last checkpoint) and is then canceled mid-way, as a process
//     killed would be; the second run resumes from its latest checkpoint
//     (Config.ResumeFrom "latest") and finishes.
//
// At the end it reads the committed files and checks that every number
// is there exactly once.
//
//	go run .
//	go run . -numbers 200000 -parallelism 4 -dir /tmp/exactlyonce
//
// This directory is a Go module of its own. To start a project from it,
// copy the directory and delete the replace line of go.mod, which builds it
// against the Weir of this repository.
package main

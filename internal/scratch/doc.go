// Package scratch owns the temporary directories a Weir process makes for
// its own use (a TaskManager's state, a job's on-disk state, savepoint
// staging) and the removal of those a killed process left behind.
//
// # Invariants
//
//   - A directory made by Dir holds a lock file that its process keeps
//     locked (flock) until it releases the directory or dies; the kernel
//     drops the lock with the process, whatever killed it.
//   - Sweep removes only directories of its prefix whose lock it can take:
//     never one a live process holds, and never anything without a lock
//     file (a directory of another tool, or one being made).
package scratch

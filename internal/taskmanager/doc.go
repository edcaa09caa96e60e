// Package taskmanager runs subtasks in slots. It receives deployments from the
// JobManager, wires each subtask's result partitions and input gate through
// the shuffle, runs the subtask on its own goroutine and reports its state
// changes back through the JobManager gateway.
package taskmanager

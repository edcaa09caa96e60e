// Package budget owns the bound on keyed state memory that the subtasks
// of one TaskManager share (weir.Config.HeapStateMemory): the hashmap
// backend's tables and values (internal/statebackend/typedstore) and the timer
// services of keyed operators (internal/timers) take from one Budget,
// and a growth past it fails the subtask with an *Error naming the
// setting. A Charger takes for one user on one goroutine in chunks, so
// that its user pays an add and a compare per item.
package budget

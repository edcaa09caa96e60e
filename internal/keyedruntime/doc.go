// Package keyedruntime is the runtime of keyed operators: it turns a key into its
// bytes and key group (with the same hash that routes records, so a key's
// state lives on the subtask the key is sent to), points the operator's
// keyed state backend at it, and fronts the operator's timer service.
//
// The backend and timer service belong to the task, which creates and
// restores them before the operator opens and snapshots them at barriers;
// a Core only uses them.
package keyedruntime

// Package protocol holds the messages between the JobManager and the
// TaskManagers, and the two gateway interfaces they travel through: plain,
// serializable data (no pointers to live objects, no closures, no Go
// errors), so that the same messages can later cross a network between
// processes. Both sides import this package; neither imports the other.
package protocol

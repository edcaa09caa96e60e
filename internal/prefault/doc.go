// Package prefault owns one remedy for a cost of the kernel: a page of
// fresh memory that a program reads before it writes is faulted in twice.
// The read maps the kernel's shared zero page; the first write then
// replaces it with a page of its own, and because the old mapping may be
// cached in the TLB of every CPU the process runs on, the kernel flushes
// them with inter-processor interrupts (`smp_call_function_many_cond`
// under `do_wp_page` in a profile), which in a virtual machine cost tens
// of microseconds each. Go takes large allocations from fresh memory
// without writing it (the kernel zeroed it), and open-addressing tables
// read a slot before they write it, so a table that grows meets this on
// every page. Fresh writes a zero into each page of a fresh allocation
// first, so that the first fault is a write: one fault, no flush.
package prefault

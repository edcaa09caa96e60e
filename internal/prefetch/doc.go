// Package prefetch asks the CPU to bring memory into its caches without
// waiting for it: Lines issues a prefetch instruction per address, in
// assembly on amd64 and arm64 (Go has no prefetch a program can call;
// the runtime's is internal) and does nothing elsewhere.
//
// A prefetch retires at once, where a load that misses holds its place
// in the core's reorder window until the data comes: loading the slots of
// a run of state accesses ahead of using them overlapped only as many
// misses as that window holds, and stalled the loop behind them.
package prefetch

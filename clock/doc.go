// Package clock is processing time, injected: the engine reads time and
// waits on timers only through a Clock, so tests (and users testing their
// jobs) can drive timers, TTL, timeouts and checkpoint intervals with a
// Manual clock instead of the wall clock.
package clock

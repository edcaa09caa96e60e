// Package jobs holds Weir's built-in jobs, one subpackage each. The weir CLI
// runs them (`weir run <job>`) and examples/ wraps them as plain programs.
package jobs

// Package jobs holds Weir's built-in jobs, one subpackage each. The weir CLI
// runs them (`weir run <job>`); examples/ holds programs written as a user would.
package jobs

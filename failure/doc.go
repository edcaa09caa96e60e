// Package failure lets user code and connectors say that an error is
// permanent: restarting the job cannot help (the output directory does not
// hold what the checkpoint says it committed, a configuration is wrong).
// A task that fails with such an error fails the job at once, whatever the
// restart strategy (Flink's SuppressRestartsException). Other errors are
// retried by the restart strategy.
//
// It also names the failure of a task whose code panicked: a *Panic holds
// the panic's value and where it happened (the user's frames first).
package failure

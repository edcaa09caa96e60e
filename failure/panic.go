package failure

import "fmt"

// Panic is the failure of a task whose code panicked (a user function, or
// anything it called): the task recovers the panic and fails with a
// *Panic, and the job restarts or fails as for any other error. In the
// process that ran the task, errors.As finds it in the error the job ends
// with; elsewhere its Stack travels as text (the REST API's exceptions).
type Panic struct {
	// Value is what was passed to panic; Unwrap returns it when it is an
	// error, so errors.Is and errors.As see through the panic.
	Value any
	// Stack is where the panic happened, innermost first, one frame per
	// two lines ("function" then "\tfile:line"): the panic site, then the
	// code that called it, up to the task loop that called the operator.
	// The Go runtime's frames are left out, and Weir's own (its packages,
	// connectors included, but not the built-in jobs) after the panic site
	// are counted in one line rather than listed, so the user's frames come
	// first. It is bounded (a few KiB); it never ends with a newline.
	Stack string
}

// Error is "panic: " and the value, as Go prints an unrecovered panic.
func (p *Panic) Error() string { return fmt.Sprintf("panic: %v", p.Value) }

// Unwrap returns the panic's value when it is an error, else nil.
func (p *Panic) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}

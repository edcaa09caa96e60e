package operator

import (
	"sync"
	"sync/atomic"
)

// Counter is an operator metric (Flink's Counter) owned by the task
// goroutine: Inc and Add are plain additions on the hot path, with no
// atomic or lock; the task copies the value to an atomic for readers on
// other goroutines when it publishes its IOStats (every 50 ms).
type Counter struct {
	n   int64
	pub atomic.Int64
}

// Inc adds one. Only the task goroutine may call it.
func (c *Counter) Inc() { c.n++ }

// Add adds d. Only the task goroutine may call it.
func (c *Counter) Add(d int64) { c.n += d }

// Set sets the value, for counters used as gauges (a source reader's
// consumer lag, say). Only the task goroutine may call it.
func (c *Counter) Set(v int64) { c.n = v }

// Count is the current value, for the task goroutine (tests, operators).
func (c *Counter) Count() int64 { return c.n }

// MaxOperatorNameLen is how much of an operator's name a metric id keeps,
// as Flink truncates operator names in metric scopes (80 characters).
const MaxOperatorNameLen = 80

// OperatorMetric is one published operator metric: the operator's name
// (truncated to MaxOperatorNameLen), the metric's name and its value.
type OperatorMetric struct {
	Operator, Name string
	Value          int64
}

// Metrics are the operator metrics of one subtask. Operators register
// counters when they are created or opened (Context.Counter); the task
// publishes them with its IOStats and other goroutines read the published
// values (Snapshot). The lock guards the list only: registration is rare,
// and neither counting nor publishing takes it.
type Metrics struct {
	mu   sync.Mutex
	list []registered
}

type registered struct {
	operator, name string
	c              *Counter
}

// Counter registers a counter named name for operator op and returns it.
// Registering a name twice for one operator returns the same counter, as
// Flink's metric groups return the existing metric. (A restarted subtask
// is a new task with new metrics: counts start again from zero, as in
// Flink, where metrics belong to one execution attempt.)
func (m *Metrics) Counter(op, name string) *Counter {
	if r := []rune(op); len(r) > MaxOperatorNameLen {
		op = string(r[:MaxOperatorNameLen])
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.list {
		if r.operator == op && r.name == name {
			return r.c
		}
	}
	c := &Counter{}
	m.list = append(m.list, registered{op, name, c})
	return c
}

// publish copies every counter's value for Snapshot. Only the task
// goroutine calls it; it is the only goroutine that appends to the list,
// so reading the list here needs no lock.
func (m *Metrics) publish() {
	for _, r := range m.list {
		r.c.pub.Store(r.c.n)
	}
}

// unpublished reports whether a counter changed since publish (the task
// goroutine only).
func (m *Metrics) unpublished() bool {
	for _, r := range m.list {
		if r.c.pub.Load() != r.c.n {
			return true
		}
	}
	return false
}

// Snapshot returns the published values in registration order; safe from
// any goroutine.
func (m *Metrics) Snapshot() []OperatorMetric {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]OperatorMetric, len(m.list))
	for i, r := range m.list {
		out[i] = OperatorMetric{Operator: r.operator, Name: r.name, Value: r.c.pub.Load()}
	}
	return out
}

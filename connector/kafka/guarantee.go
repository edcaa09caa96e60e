package kafka

import "fmt"

// Guarantee is what the sink promises about its records after failures.
type Guarantee int

const (
	// None produces asynchronously: records in flight at a failure may be
	// lost, and records may be duplicated after a restore.
	None Guarantee = iota
	// AtLeastOnce waits at every checkpoint barrier until Kafka acknowledged
	// every record written before it: a completed checkpoint implies its
	// records are in Kafka; records may be duplicated after a restore.
	AtLeastOnce
	// ExactlyOnce writes each checkpoint's records in a Kafka transaction
	// that is committed when the checkpoint completes: read_committed
	// consumers see every record exactly once.
	ExactlyOnce
)

// String returns the name ParseGuarantee reads.
func (g Guarantee) String() string {
	switch g {
	case None:
		return "none"
	case AtLeastOnce:
		return "at-least-once"
	case ExactlyOnce:
		return "exactly-once"
	}
	return fmt.Sprintf("Guarantee(%d)", int(g))
}

// ParseGuarantee reads "none", "at-least-once" or "exactly-once".
func ParseGuarantee(s string) (Guarantee, error) {
	switch s {
	case "none":
		return None, nil
	case "at-least-once":
		return AtLeastOnce, nil
	case "exactly-once":
		return ExactlyOnce, nil
	}
	return 0, fmt.Errorf("kafka: delivery guarantee %q: want none, at-least-once or exactly-once", s)
}

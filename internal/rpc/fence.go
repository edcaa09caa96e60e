package rpc

import "fmt"

// Fence is what every message of a session must carry: the JobManager's
// leader epoch and the session id Register gave (decision 7).
type Fence struct {
	Epoch   uint64
	Session string
}

// Check returns nil when a message stamped with epoch and session belongs
// to f's session, and otherwise an error saying which differs. A receiver
// drops, counts and logs such a message before anything decodes it. This is
// the one fencing check: a simulator's transport calls it too.
func (f Fence) Check(epoch uint64, session string) error {
	switch {
	case epoch != f.Epoch:
		return fmt.Errorf("a message of leader epoch %d on a session of epoch %d", epoch, f.Epoch)
	case session != f.Session:
		return fmt.Errorf("a message of session %.64q on session %s", session, f.Session)
	}
	return nil
}

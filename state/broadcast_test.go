package state_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/state"
)

// TestBroadcastReadOnlyGuard: while a store is read-only every write to its
// broadcast state, through any handle, panics with a permanent error that
// names where it came from; reads work, and writes work again after.
func TestBroadcastReadOnlyGuard(t *testing.T) {
	s := state.NewOperatorStore()
	b := state.GetBroadcastState(s, rulesDesc)
	b.Put("max", 5)
	s.SetBroadcastReadOnly("ProcessElement of *main.fn")
	for op, write := range map[string]func(){"Put": func() { b.Put("min", 1) }, "Remove": func() { b.Remove("max") }, "Clear": b.Clear} {
		func() {
			defer func() {
				r := recover()
				err, ok := r.(error)
				want := fmt.Sprintf(`broadcast state "rules": %s from ProcessElement of *main.fn, where broadcast state is read-only`, op)
				if !ok || !strings.Contains(err.Error(), want) || !failure.IsPermanent(err) {
					t.Fatalf("%s: panic %v, want a permanent error saying %q", op, r, want)
				}
			}()
			write()
		}()
	}
	ro := state.GetReadOnlyBroadcastState(s.ReadOnly(), rulesDesc)
	if got := maps.Collect(ro.All()); len(got) != 1 || got["max"] != 5 {
		t.Fatalf("after refused writes: %v, want map[max:5]", got)
	}
	s.SetBroadcastReadOnly("")
	b.Put("min", 1)
	if v, ok := ro.Get("min"); !ok || v != 1 {
		t.Fatalf("the read-only view does not see a later write: %d %v", v, ok)
	}
	var zero state.ReadOnlyBroadcastStore
	mustPanic(t, "zero ReadOnlyBroadcastStore", func() { state.GetReadOnlyBroadcastState(zero, rulesDesc) })
}

package weir_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/weirhq/weir"
)

// OnSubmit is given the Job that ExecuteAsync then returns, and may hand it
// to other goroutines at once: a goroutine that reads it while ExecuteAsync
// returns must see the same job (run with -race: ExecuteAsync must not write
// the Job again after OnSubmit).
func TestOnSubmitJobIsTheReturnedJob(t *testing.T) {
	var submitted *weir.Job
	read := make(chan string, 1)
	env := weir.NewEnvironment(weir.Config{Logger: slog.New(slog.DiscardHandler), OnSubmit: func(j *weir.Job) {
		submitted = j
		go func() { read <- j.ID() + " " + j.RESTAddr() }()
	}})
	weir.Discard(weir.FromSlice(env, []int{1, 2, 3}))
	j, err := env.ExecuteAsync(context.Background(), "on-submit")
	if err != nil {
		t.Fatal(err)
	}
	if j != submitted {
		t.Errorf("ExecuteAsync returned %p, OnSubmit was given %p", j, submitted)
	}
	if got, want := <-read, j.ID()+" "; got != want {
		t.Errorf("a goroutine started in OnSubmit read %q, want %q", got, want)
	}
	if _, err := j.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

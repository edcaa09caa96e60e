package query_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

func TestQ3(t *testing.T) {
	cfg := testConfig(t)
	checkQuery(t, "q3", cfg, q3Want(t, cfg))
}

// q3Want is the inner join of all filtered auctions and people, whatever
// the order they came in. Some auctions come before their seller (sellers
// are drawn up to 10 people ahead), so both sides' stored rows are used.
func q3Want(t *testing.T, cfg nexmark.Config) []query.Row {
	events := testEvents(t, cfg)
	var want []query.Row
	early := 0
	for _, a := range events {
		if a.Type != nexmark.AuctionEvent || a.Auction.Category != 10 {
			continue
		}
		for _, p := range events {
			if p.Type == nexmark.PersonEvent && p.Person.ID == a.Auction.Seller &&
				(p.Person.State == "OR" || p.Person.State == "ID" || p.Person.State == "CA") {
				want = append(want, query.Row{p.Person.Name, p.Person.City, p.Person.State, a.Auction.ID})
				if a.Auction.DateTime < p.Person.DateTime {
					early++
				}
			}
		}
	}
	if early == 0 {
		t.Fatalf("no auction of the %d joined comes before its seller: the test would not cover that order", len(want))
	}
	return want
}

// TestQ3Pebble runs q3 on the Pebble state backend, with checkpoints, and
// compares its output with the same reference.
func TestQ3Pebble(t *testing.T) {
	cfg := testConfig(t)
	want := q3Want(t, cfg)
	q, err := query.Lookup("q3")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir() + "/out.jsonl"
	s, err := query.Run(context.Background(), q, query.Options{Config: cfg, Parallelism: 2, Output: out,
		StateBackend: "pebble", StateDir: t.TempDir(), CheckpointInterval: 20 * time.Millisecond, CheckpointDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if s.Rows != int64(len(want)) {
		t.Fatalf("%d rows on Pebble, want %d", s.Rows, len(want))
	}
	if s.Checkpoints < 1 {
		t.Fatalf("%d checkpoints completed, want the final one at least", s.Checkpoints)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	gotLines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	wantLines := make([]string, len(want))
	for i, r := range want {
		wantLines[i] = query.JSON(q.Columns, r)
	}
	slices.Sort(gotLines)
	slices.Sort(wantLines)
	if !slices.Equal(gotLines, wantLines) {
		t.Fatalf("on Pebble: %d rows, want %d; %v", len(gotLines), len(wantLines), gotLines[:min(3, len(gotLines))])
	}
}

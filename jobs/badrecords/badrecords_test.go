package badrecords_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/jobs/badrecords"
)

func TestParsePolicy(t *testing.T) {
	for s, want := range map[string]badrecords.Policy{"": badrecords.Fail, "fail": badrecords.Fail, "skip": badrecords.Skip, "dead-letter": badrecords.DeadLetter} {
		if p, err := badrecords.ParsePolicy(s); err != nil || p != want {
			t.Errorf("ParsePolicy(%q) = %v, %v; want %v", s, p, err, want)
		}
	}
	for _, s := range []string{"Skip", "deadletter", "ignore"} {
		if _, err := badrecords.ParsePolicy(s); err == nil {
			t.Errorf("ParsePolicy(%q) accepted", s)
		}
	}
	if badrecords.CheckTarget(badrecords.DeadLetter, "", "X") == nil || badrecords.CheckTarget(badrecords.Skip, "d", "X") == nil ||
		badrecords.CheckTarget(badrecords.DeadLetter, "d", "X") != nil || badrecords.CheckTarget(badrecords.Fail, "", "X") != nil {
		t.Error("CheckTarget: a target must be given with dead-letter and only with it")
	}
}

// A dead-letter line is one JSON object that gives back the record exactly,
// whatever it holds, with where it came from and why it was bad.
func TestLineRoundTrips(t *testing.T) {
	for _, rec := range []string{"a<b>\t\"c\"", "\x00\\", "tab\there", "é"} {
		l := badrecords.Line("in.txt:3", errors.New("want key<TAB>value"), rec)
		if strings.Contains(l, "\n") {
			t.Fatalf("%q spans lines", l)
		}
		var d struct{ Source, Error, Record string }
		if err := json.Unmarshal([]byte(l), &d); err != nil || d.Source != "in.txt:3" || d.Error != "want key<TAB>value" || d.Record != rec {
			t.Fatalf("Line(%q) = %s: %+v, %v", rec, l, d, err)
		}
	}
	if err := badrecords.FailError("in.txt line 3", errors.New("bad")); !failure.IsPermanent(err) || !strings.Contains(err.Error(), "in.txt line 3: bad") || !strings.Contains(err.Error(), "--bad-records") {
		t.Fatalf("FailError: %v", err)
	}
}

func TestBlank(t *testing.T) {
	for s, want := range map[string]bool{"": true, " \t ": true, "\r": true, "\u00a0": true, "x": false, " x ": false} {
		if badrecords.Blank(s) != want {
			t.Errorf("Blank(%q) = %v", s, !want)
		}
	}
}

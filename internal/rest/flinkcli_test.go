package rest_test

import (
	"context"
	"fmt"
	"github.com/weirhq/weir/internal/protocol"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/flinktest"
	"github.com/weirhq/weir/internal/rest"
)

// stateCluster is a Cluster with one job in each of the given states, so
// that Flink's `flink list` can be checked for every section it prints.
// Cancel is not used.
type stateCluster struct{ jobs []rest.JobDetails }

func newStateCluster(states ...protocol.JobState) *stateCluster {
	c := &stateCluster{}
	for i, s := range states {
		d := rest.JobDetails{
			ID: fmt.Sprintf("%031x%x", 0xabc, i), Name: "job-" + strings.ToLower(string(s)), State: s,
			StartTime: 1_700_000_000_000 + int64(i)*1000, EndTime: -1, Duration: 1000, MaxParallelism: -1,
			Timestamps: map[protocol.JobState]int64{s: 1_700_000_000_000 + int64(i)*1000},
		}
		if s.Terminal() {
			d.EndTime = d.StartTime + 1000
		}
		c.jobs = append(c.jobs, d)
	}
	return c
}

func (c *stateCluster) Overview() rest.Overview { return rest.Overview{TaskManagers: 1} }

func (c *stateCluster) Jobs() []rest.JobSummary {
	var out []rest.JobSummary
	for _, d := range c.jobs {
		out = append(out, rest.JobSummary{ID: d.ID, Status: d.State})
	}
	return out
}

func (c *stateCluster) Job(id string) (rest.JobDetails, bool) {
	for _, d := range c.jobs {
		if d.ID == id {
			return d, true
		}
	}
	return rest.JobDetails{}, false
}

func (c *stateCluster) Exceptions(id string) (rest.JobExceptions, bool) {
	_, ok := c.Job(id)
	return rest.JobExceptions{}, ok
}

func (c *stateCluster) Cancel(id string) error {
	return fmt.Errorf("stateCluster does not cancel (job %s)", id)
}

// flink list puts each job under the heading Flink uses for its state:
// Weir's job states are Flink's, so Flink's client sorts them the same way.
func TestFlinkListSections(t *testing.T) {
	flink := flinktest.Find(t)
	states := []protocol.JobState{protocol.JobCreated, protocol.JobRunning, protocol.JobRestarting, protocol.JobFinished, protocol.JobCanceled, protocol.JobFailed}
	c := newStateCluster(states...)
	srv := rest.NewServer(c)
	addr, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}()
	want := map[protocol.JobState]string{
		protocol.JobCreated: "Scheduled Jobs", protocol.JobRunning: "Running/Restarting Jobs", protocol.JobRestarting: "Running/Restarting Jobs",
		protocol.JobFinished: "Terminated Jobs", protocol.JobCanceled: "Terminated Jobs", protocol.JobFailed: "Terminated Jobs",
	}
	for _, tc := range []struct {
		args     []string
		sections []string // those shown; jobs of other sections must not be listed
	}{
		{[]string{"list"}, []string{"Running/Restarting Jobs", "Scheduled Jobs"}},
		{[]string{"list", "-a"}, []string{"Running/Restarting Jobs", "Scheduled Jobs", "Terminated Jobs"}},
	} {
		code, out := flink.Run(t, append(tc.args, "-m", addr)...)
		if code != 0 {
			t.Fatalf("flink %v: exit %d; output:\n%s", tc.args, code, out)
		}
		got := listSections(out)
		for _, d := range c.jobs {
			line := fmt.Sprintf(" : %s : %s (%s)", d.ID, d.Name, d.State)
			section := want[d.State]
			shown := strings.Contains(strings.Join(tc.sections, ","), section)
			times := 0
			if shown {
				times = 1
			}
			if strings.Contains(got[section], line) != shown || strings.Count(out, line) != times {
				t.Errorf("flink %v: want the job in state %s listed %d times, under %q; output:\n%s", tc.args, d.State, times, section, out)
			}
		}
	}
}

// flinkHeading matches the headings of flink list, such as
// "----- Scheduled Jobs -----".
var flinkHeading = regexp.MustCompile(`^-+ (.+?) -+$`)

// listSections splits flink list's output into its sections, by heading.
func listSections(out string) map[string]string {
	sections := map[string]string{}
	current := ""
	for _, l := range strings.Split(out, "\n") {
		if m := flinkHeading.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			current = m[1]
			continue
		}
		if current != "" {
			sections[current] += l + "\n"
		}
	}
	return sections
}

package hosts

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/fleet"
)

// TestDrainTimeoutCountsJobsLeft drains a step's queue with no worker on
// it, on the test PostgreSQL server, so the drain cannot end: the error
// must say how many jobs were left, not only that the deadline passed.
func TestDrainTimeoutCountsJobsLeft(t *testing.T) {
	url := os.Getenv("LEASEHOLD_TEST_DATABASE_URL")
	if url == "" {
		t.Skip("LEASEHOLD_TEST_DATABASE_URL is not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const jobs = 7
	r := &run{o: Options{Jobs: jobs, StepTimeout: 300 * time.Millisecond}.withDefaults(), url: url,
		rep: &Report{}}
	s := &step{r: r, procs: 1, schema: "leasehold_hosts_test_drain", hostOf: map[string]string{}, addrOf: map[string]string{}}
	defer s.close()
	if err := s.prepare(ctx); err != nil {
		t.Fatal(err)
	}
	s.fleet = fleet.New(nil) // no worker
	err := s.drain(ctx, &Step{})
	if err == nil {
		t.Fatal("the drain ended with no worker")
	}
	if want := "7 jobs still pending or processing after 300ms"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want it to say %q", err, want)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %q: the step's timeout is not the caller's deadline", err)
	}
}

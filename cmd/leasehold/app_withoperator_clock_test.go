package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

// TestWithOperatorClockFailsAfterEnqueue: when reading the database clock
// fails after an enqueue committed (here the context is cancelled right
// after it, as a Ctrl-C does), withOperator still prints the job id by the
// local clock, warns on stderr, and succeeds: a script that took the
// failure for a failed enqueue would insert the job again.
func TestWithOperatorClockFailsAfterEnqueue(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		var stdout, stderr bytes.Buffer
		a := &app{stdout: &stdout, stderr: &stderr, lookupEnv: func(key string) (string, bool) {
			return db, key == cli.EnvDatabaseURL
		}}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		cmd := &cobra.Command{}
		cmd.SetContext(ctx)
		var id int64
		err := a.withOperator(cmd, func(ctx context.Context, c *leasehold.Client) (func(now time.Time) error, error) {
			res, err := c.Insert(ctx, leasehold.RawArgs{KindName: "k"}, nil)
			if err != nil {
				return nil, err
			}
			id = res.Job.ID
			cancel()
			return func(now time.Time) error { return a.printEnqueued(res, now) }, nil
		})
		if err != nil {
			t.Fatalf("the enqueue committed (job %d), but withOperator failed: %v", id, err)
		}
		if want := "enqueued job " + itoa(id) + " "; !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout %q, want %q", stdout.String(), want)
		}
		if !strings.Contains(stderr.String(), "warning: read database clock") || !strings.Contains(stderr.String(), "this machine's clock") {
			t.Errorf("stderr %q, want a warning that the local clock stands in for the database's", stderr.String())
		}
		if got := showJob(t, db, id); got.Status != "pending" {
			t.Errorf("job %d is %s, want pending", id, got.Status)
		}
	})
}

package leasehold_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/leasehold/leasehold"
)

// Insert middleware sees every job before it is inserted, in the inserting
// transaction, and may change it: here it stamps the job's metadata with a
// request id, as a tracing integration stamps a trace context. Work
// middleware wraps every handler call with the job and its lease: here it
// reads the stamp back.
func ExampleConfig_middleware() {
	ctx := context.Background()
	stamp := leasehold.InsertMiddlewareFunc(func(ctx context.Context, tx any, jobs []*leasehold.InsertJob,
		next func(context.Context) ([]*leasehold.InsertResult, error)) ([]*leasehold.InsertResult, error) {
		for _, j := range jobs {
			j.Opts.Metadata = json.RawMessage(`{"request_id":"req-42"}`)
		}
		return next(ctx)
	})
	seen := make(received, 1)
	logWork := leasehold.WorkMiddlewareFunc(func(ctx context.Context, job *leasehold.JobRow, next func(context.Context) error) error {
		err := next(ctx)
		seen <- fmt.Sprintf("%s job %d attempt %d, metadata %s: err=%v", job.Kind, job.ID, job.Attempt, job.Metadata, err)
		return err
	})
	workers := leasehold.NewWorkers()
	mustAdd(workers)
	client, cleanup := newExampleClient(workers, func(c *leasehold.Config) {
		c.InsertMiddleware = []leasehold.InsertMiddleware{stamp}
		c.WorkMiddleware = []leasehold.WorkMiddleware{logWork}
	})
	defer cleanup()
	mustStart(ctx, client)
	if _, err := client.Insert(ctx, EmailArgs{To: "ada@example.com"}, nil); err != nil {
		log.Fatal(err)
	}
	fmt.Println(seen.wait(1)[0])
	// Output:
	// email job 1 attempt 1, metadata {"request_id":"req-42"}: err=<nil>
}

// Subscribe streams what happens to the client's leases. Any number of
// subscribers may listen; a slow one misses events rather than slowing the
// client down.
func ExampleClient_Subscribe() {
	ctx := context.Background()
	workers := leasehold.NewWorkers()
	mustAdd(workers)
	client, cleanup := newExampleClient(workers)
	defer cleanup()
	events, stop := client.Subscribe(leasehold.EventClaimed, leasehold.EventFinished)
	defer stop()
	mustStart(ctx, client)
	if _, err := client.Insert(ctx, EmailArgs{To: "ada@example.com"}, nil); err != nil {
		log.Fatal(err)
	}
	for range 2 {
		ev := <-events
		if ev.Kind == leasehold.EventFinished {
			fmt.Printf("%s job %d: %s\n", ev.Kind, ev.Job.ID, ev.Outcome)
		} else {
			fmt.Printf("%s job %d\n", ev.Kind, ev.Job.ID)
		}
	}
	// Output:
	// claimed job 1
	// finished job 1: completed
}

func mustStart(ctx context.Context, c *leasehold.Client) {
	if err := c.Start(ctx); err != nil {
		log.Fatal(err)
	}
}

// mustAdd registers a handler that completes every email job.
func mustAdd(ws *leasehold.Workers) {
	err := leasehold.AddWorker(ws, leasehold.WorkFunc[EmailArgs](func(context.Context, *leasehold.Job[EmailArgs]) error { return nil }))
	if err != nil {
		log.Fatal(err)
	}
}

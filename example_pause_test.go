package leasehold_test

import (
	"context"
	"fmt"
	"log"
)

// PauseQueue stops every process from claiming a queue's jobs until
// ResumeQueue; running jobs finish. The pause is recorded in the database,
// and QueueStats reports it, for a queue with no jobs too.
func ExampleClient_PauseQueue() {
	ctx := context.Background()
	client, cleanup := newExampleClient(nil)
	defer cleanup()
	insertExampleJobs(ctx, client)

	for _, q := range []string{"bulk", "reports"} {
		if err := client.PauseQueue(ctx, q); err != nil {
			log.Fatal(err)
		}
	}
	if err := client.ResumeQueue(ctx, "reports"); err != nil {
		log.Fatal(err)
	}
	stats, err := client.QueueStats(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, q := range stats {
		fmt.Printf("%s: paused %v\n", q.Queue, q.Paused)
	}
	fmt.Println(client.PauseQueue(ctx, "no spaces"))
	// Output:
	// bulk: paused true
	// default: paused false
	// leasehold: invalid queue name: queue: "no spaces": ' ' at byte 2 (want 1-128 of [A-Za-z0-9_.:-/], starting with a letter or digit)
}

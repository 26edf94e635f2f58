package leasehold_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/leasehold/leasehold"
)

// DeleteJob deletes one finished job and its history at once; an
// unfinished job is refused: cancel it first.
func ExampleClient_DeleteJob() {
	ctx := context.Background()
	client, cleanup := newExampleClient(nil)
	defer cleanup()
	insertExampleJobs(ctx, client)

	_, err := client.DeleteJob(ctx, 4)
	fmt.Println("pending:", errors.Is(err, leasehold.ErrJobNotFinished), err)
	if _, err := client.CancelJob(ctx, 4); err != nil {
		log.Fatal(err)
	}
	row, err := client.DeleteJob(ctx, 4)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("deleted: job %d, %s\n", row.ID, row.State)
	_, err = client.GetJob(ctx, 4)
	fmt.Println("afterwards:", errors.Is(err, leasehold.ErrJobNotFound))
	// Output:
	// pending: true leasehold: delete job 4: job not finished
	// deleted: job 4, cancelled
	// afterwards: true
}

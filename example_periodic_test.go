package leasehold_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/sqlitedriver"
)

// ReportArgs are the arguments of a periodic report job.
type ReportArgs struct {
	Slot time.Time `json:"slot"`
}

// Kind implements leasehold.Args.
func (ReportArgs) Kind() string { return "report" }

// Example_periodic schedules jobs: a cron expression read in a time zone,
// and an interval. Every process that runs the same PeriodicJob computes
// its slots; the database lets one insert win per slot, so no leader is
// needed.
func Example_periodic() {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		log.Fatal(err)
	}
	weekdays, err := leasehold.Cron("0 9 * * MON-FRI", paris) // 09:00 in Paris, Monday to Friday
	if err != nil {
		log.Fatal(err)
	}
	friday := time.Date(2026, 3, 6, 10, 0, 0, 0, time.UTC)
	fmt.Println("after Friday 10:00 UTC:", weekdays.Next(friday).UTC().Format(time.RFC1123))

	ctx := context.Background()
	dir, err := os.MkdirTemp("", "leasehold-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	driver, err := sqlitedriver.Open(filepath.Join(dir, "jobs.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer driver.Close()
	// README:begin periodic
	client, err := leasehold.NewClient(leasehold.Config{Driver: driver, Periodic: []leasehold.PeriodicJob{{
		Name:     "report",
		Schedule: leasehold.Every(time.Second), // or leasehold.Cron("0 9 * * MON-FRI", paris)
		Args: func(slot time.Time) (leasehold.Args, *leasehold.InsertOpts) {
			return ReportArgs{Slot: slot}, &leasehold.InsertOpts{Queue: "reports"}
		},
		CatchUp: leasehold.CatchUpOne, // slots past Grace (1 min) when nobody ran: one job, the latest
	}}})
	// README:end periodic
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(context.Background())

	job := waitPeriodicJob(ctx, client, "report")
	fmt.Println("job:", job.Kind, "in queue", job.Queue)
	fmt.Println("unique key names its slot:", strings.HasPrefix(job.UniqueKey, "periodic:report:"))
	rows, err := client.ListPeriodic(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("schedule:", rows[0].Name, rows[0].Spec, "last job", rows[0].LastJobID == job.ID)
	// Output:
	// after Friday 10:00 UTC: Mon, 09 Mar 2026 08:00:00 UTC
	// job: report in queue reports
	// unique key names its slot: true
	// schedule: report @every 1s last job true
}

// waitPeriodicJob polls until the schedule name has inserted a job, and
// returns it.
func waitPeriodicJob(ctx context.Context, client *leasehold.Client, name string) *leasehold.JobInfo {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		rows, err := client.ListPeriodic(ctx)
		if err != nil {
			log.Fatal(err)
		}
		if len(rows) == 1 && rows[0].Name == name && rows[0].LastJobID != 0 {
			job, err := client.GetJob(ctx, rows[0].LastJobID)
			if err != nil {
				log.Fatal(err)
			}
			return job
		}
		select {
		case <-ctx.Done():
			log.Fatalf("no job from schedule %s: %v", name, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

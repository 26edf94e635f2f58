package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// drainTimeout bounds one drain.
const drainTimeout = 10 * time.Minute

// result is the JSON line drain prints.
type result struct {
	Peer       string         `json:"peer"`
	Version    string         `json:"version"`
	Jobs       int            `json:"jobs"`
	Seconds    float64        `json:"seconds"`
	JobsPerSec float64        `json:"jobs_per_sec"`
	Settings   map[string]any `json:"settings"`
}

// drain starts a client with the tuned settings on the prepared jobs and
// times it from Start until o.jobs completions have been written (River
// sends a completed event once its completer has written the job's
// state), then stops it.
func drain(ctx context.Context, o options) error {
	pool, err := openPool(ctx, o, o.tuning.poolConns)
	if err != nil {
		return err
	}
	defer pool.Close()
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, noopWorker{}); err != nil {
		return fmt.Errorf("add worker: %w", err)
	}
	c, err := river.NewClient(riverpgxv5.New(pool), o.tuning.config(o.schema, workers))
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	events, cancel := c.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: o.jobs, // never drop an event: they are the count
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed},
	})
	defer cancel()
	start := time.Now()
	if err := c.Start(ctx); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	werr := waitCompleted(ctx, events, o.jobs)
	elapsed := time.Since(start)
	if err := c.Stop(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	if werr != nil {
		return werr
	}
	return json.NewEncoder(os.Stdout).Encode(result{
		Peer: "river", Version: riverVersion, Jobs: o.jobs, Seconds: elapsed.Seconds(),
		JobsPerSec: float64(o.jobs) / elapsed.Seconds(), Settings: o.tuning.settings(),
	})
}

// riverVersion is the River release this module requires (go.mod).
const riverVersion = "v0.51.2"

// waitCompleted counts completed events until want, failing on a failed
// job or after drainTimeout.
func waitCompleted(ctx context.Context, events <-chan *river.Event, want int) error {
	timeout := time.After(drainTimeout)
	for done := 0; done < want; {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout:
			return fmt.Errorf("timed out after %v: %d of %d jobs completed", drainTimeout, done, want)
		case ev, ok := <-events:
			if !ok {
				return fmt.Errorf("subscription closed after %d of %d jobs", done, want)
			}
			if ev.Kind != river.EventKindJobCompleted {
				return fmt.Errorf("job %d: %s", ev.Job.ID, ev.Kind)
			}
			done++
		}
	}
	return nil
}

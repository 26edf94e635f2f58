package main

import (
	"flag"
	"time"

	"github.com/riverqueue/river"
)

// tuning is what River is given for throughput. The defaults are the
// settings of River's own benchmark (cmd/river bench), which its authors
// chose for job throughput after trying many values, in place of River's
// defaults (FetchCooldown 100 ms, FetchPollInterval 1 s, 100 workers per
// queue). The completer is River's batch completer, its default and not
// configurable (up to 5,000 jobs per statement), and the pool pgxpool's
// default, as in River's benchmark.
type tuning struct {
	maxWorkers   int
	cooldown     time.Duration
	pollInterval time.Duration
	poolConns    int
}

// Defaults of tuning.
const (
	defaultMaxWorkers   = 2_000
	defaultCooldown     = 2 * time.Millisecond
	defaultPollInterval = 20 * time.Millisecond
)

func (t *tuning) flags(fs *flag.FlagSet) {
	fs.IntVar(&t.maxWorkers, "max-workers", defaultMaxWorkers, "QueueConfig.MaxWorkers of the default queue")
	fs.DurationVar(&t.cooldown, "fetch-cooldown", defaultCooldown, "Config.FetchCooldown")
	fs.DurationVar(&t.pollInterval, "fetch-poll-interval", defaultPollInterval, "Config.FetchPollInterval")
	fs.IntVar(&t.poolConns, "pool-conns", 0, "pgxpool MaxConns (0: pgxpool's default, max(4, CPUs))")
}

// config is River's client configuration for the drain.
func (t tuning) config(schema string, workers *river.Workers) *river.Config {
	return &river.Config{
		FetchCooldown:     t.cooldown,
		FetchPollInterval: t.pollInterval,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: t.maxWorkers}},
		Schema:            schema,
		Workers:           workers,
	}
}

// settings describes t in the JSON line.
func (t tuning) settings() map[string]any {
	return map[string]any{
		"MaxWorkers":        t.maxWorkers,
		"FetchCooldown":     t.cooldown.String(),
		"FetchPollInterval": t.pollInterval.String(),
		"pool_max_conns":    t.poolConns,
		"completer":         "batch (River's default)",
	}
}

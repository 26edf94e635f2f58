package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// noopArgs is the drained job: a handler that does nothing.
type noopArgs struct{}

// Kind names the job kind.
func (noopArgs) Kind() string { return "peerbench_noop" }

// noopWorker works noopArgs.
type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

// Work does nothing.
func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

// insertChunk is the number of jobs per InsertManyFast call (COPY).
const insertChunk = 10_000

// openPool opens a pool on o.url with at most conns connections (0:
// pgxpool's default).
func openPool(ctx context.Context, o options, conns int) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(o.url)
	if err != nil {
		return nil, fmt.Errorf("parse -db: %w", err)
	}
	if conns > 0 {
		cfg.MaxConns = int32(conns)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return pool, nil
}

// prepare creates the scratch schema, migrates River's tables into it and
// inserts o.jobs no-op jobs through InsertManyFast (COPY).
func prepare(ctx context.Context, o options) error {
	pool, err := openPool(ctx, o, 0)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{o.schema}.Sanitize()); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	drv := riverpgxv5.New(pool)
	m, err := rivermigrate.New(drv, &rivermigrate.Config{Schema: o.schema})
	if err != nil {
		return fmt.Errorf("migrator: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	c, err := river.NewClient(drv, &river.Config{Schema: o.schema})
	if err != nil {
		return fmt.Errorf("insert client: %w", err)
	}
	chunk := make([]river.InsertManyParams, min(o.jobs, insertChunk))
	for i := range chunk {
		chunk[i] = river.InsertManyParams{Args: noopArgs{}}
	}
	for left := o.jobs; left > 0; left -= len(chunk) {
		chunk = chunk[:min(left, len(chunk))]
		if _, err := c.InsertManyFast(ctx, chunk); err != nil {
			return fmt.Errorf("insert: %w", err)
		}
	}
	return nil
}

// drop drops the scratch schema.
func drop(ctx context.Context, o options) error {
	conn, err := pgx.Connect(ctx, o.url)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{o.schema}.Sanitize()+" CASCADE"); err != nil {
		return fmt.Errorf("drop schema: %w", err)
	}
	return nil
}

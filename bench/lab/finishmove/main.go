// Command finishmove measures, in bare SQL on one PostgreSQL server, what
// a completed job would cost if its finish moved the job out of the hot
// table into its final attempt's history row, with the claim as today or
// made a HOT update (no index names a column it writes), against what
// leasehold writes today and against deleting the job with no history.
//
//	go run . -db 'postgres://localhost/postgres' [-jobs 100000] [-rounds 3] [-hold]
//
// It is a design experiment, not part of leasehold: docs/benchmarks.md
// ("What a finish that moved the job out of the hot table would gain",
// "A claim that writes no index entry, with the finish moved out") says
// what it found. Each round drains -jobs fresh jobs once per variant, in
// rotating order, with the bench's bare-SQL claim and leasehold's claim
// cursor, in -loops concurrent loops of -batch jobs; -hold keeps a
// repeatable-read transaction open through each drain. It works in a
// scratch schema migrated by pgdriver, dropped afterwards, and resets
// pg_stat_statements (server time per job) when the server loads it.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"net/url"
	"os"
	"slices"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/leasehold/leasehold/pgdriver"
)

// variant is one way of completing a claimed batch. Its indexes, when
// set, replace the hot table's for its drain: they are built after the
// insert and before the table is settled, and the migrated ones are
// rebuilt after the drain.
type variant struct {
	name, sql string
	indexes   []string
}

var variants = []variant{
	{"today (update + history row)", todaySQL, nil},
	{"moved (delete + final history row)", movedSQL, nil},
	{"hot claim, today's finish", todaySQL, hotTodayIndexes},
	{"hot claim, moved", movedSQL, hotIndexes},
	{"hot claim, moved, BRIN finished_at", movedSQL, hotBRINIndexes},
	{"deleted (no history)", deletedSQL, nil},
}

// options are the command's flags.
type options struct {
	url          string
	jobs, rounds int
	loops, batch int
	hold         bool
}

func main() {
	var o options
	flag.StringVar(&o.url, "db", "", "PostgreSQL URL")
	flag.IntVar(&o.jobs, "jobs", 100_000, "jobs per drain")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds of one drain per variant")
	flag.IntVar(&o.loops, "loops", 2, "concurrent claim-and-complete loops")
	flag.IntVar(&o.batch, "batch", 500, "jobs per claim")
	flag.BoolVar(&o.hold, "hold", false, "hold a transaction open through each drain")
	flag.Parse()
	if o.url == "" || o.jobs < 1 || o.rounds < 1 || o.loops < 1 || o.batch < 1 {
		fmt.Fprintln(os.Stderr, "usage: finishmove -db URL [-jobs N] [-rounds N] [-loops N] [-batch N] [-hold]")
		os.Exit(2)
	}
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "finishmove:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	admin, err := pgxpool.New(ctx, o.url)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer admin.Close()
	schema, err := scratchName()
	if err != nil {
		return err
	}
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	defer func() { _, _ = admin.Exec(context.WithoutCancel(ctx), "DROP SCHEMA "+schema+" CASCADE") }()
	pool, err := openIn(ctx, o.url, schema)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := migrate(ctx, pool); err != nil {
		return err
	}
	l := &lab{pool: pool, opts: o, stats: statementsSchema(ctx, pool)}
	results := make([][]result, len(variants))
	for r := range o.rounds {
		for k := range variants {
			i := (k + r) % len(variants) // rotating order
			res, err := l.drain(ctx, variants[i])
			if err != nil {
				return fmt.Errorf("%s: %w", variants[i].name, err)
			}
			fmt.Printf("round %d: %-38s %s\n", r+1, variants[i].name, res)
			results[i] = append(results[i], res)
		}
	}
	report(results)
	return nil
}

// report prints each variant's median rate and its ratio to today's, by
// round.
func report(results [][]result) {
	fmt.Println()
	for i, v := range variants {
		rates := make([]float64, len(results[i]))
		ratios := make([]string, len(results[i]))
		for r, res := range results[i] {
			rates[r] = res.rate
			ratios[r] = fmt.Sprintf("%.2f", res.rate/results[0][r].rate)
		}
		fmt.Printf("%-38s median %6.0f jobs/s, to today by round: %v\n", v.name, median(rates), ratios)
	}
}

func median(vs []float64) float64 {
	s := slices.Sorted(slices.Values(vs))
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

func scratchName() (string, error) {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "leasehold_finishmove_" + hex.EncodeToString(b), nil
}

// openIn connects with schema as the search path.
func openIn(ctx context.Context, raw, schema string) (*pgxpool.Pool, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("parse url: %w", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	pool, err := pgxpool.New(ctx, u.String())
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return pool, nil
}

// migrate applies leasehold's migrations, then the lab's setup.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	d, err := pgdriver.New(pool)
	if err != nil {
		return err
	}
	if _, err := d.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, q := range setupSQL {
		if _, err := pool.Exec(ctx, q); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
	}
	return nil
}

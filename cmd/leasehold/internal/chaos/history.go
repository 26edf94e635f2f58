package chaos

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

// attemptRow is one row of the attempt history; times are database Unix
// µs, 0 when NULL.
type attemptRow struct {
	job, claimed, heartbeat, ended int64
	attempt                        int
	owner, outcome                 string
	// resolution is what a reconciler decided for an attempt whose lease
	// expired in the reconciling queue.
	resolution string
}

// ledgerRow is one recorded charge: which lease wrote it.
type ledgerRow struct {
	job     int64
	attempt int
	owner   string
}

// jobRow is a job's final state.
type jobRow struct {
	status  string
	attempt int
}

// reconcileRow is a reconcile job and the payment attempt it reconciles.
type reconcileRow struct {
	id      int64
	status  string
	job     int64
	attempt int
}

// dbFacts is what the checks read from the database once the run is over.
type dbFacts struct {
	jobs       map[int64]jobRow       // the payment jobs
	attempts   map[int64][]attemptRow // by job, in attempt order (reconcile jobs' too)
	ledger     []ledgerRow
	reconciles map[int64]*reconcileRow // the reconcile jobs, by id
	queues     map[int64]string        // every job's queue
}

// Queries of the checks. The run's namespace holds only its own jobs and
// ledger, so nothing needs a filter but the queue.
const (
	jobsSQL       = `SELECT id, status, attempt FROM leasehold_jobs WHERE queue IN ('` + Queue + `', '` + ReconcileQueue + `')`
	reconcilesSQL = `SELECT id, status, args FROM leasehold_jobs WHERE queue = '` + ReconcilerQueue + `'`
	ledgerSQL     = `SELECT job_id, attempt, owner FROM payments_ledger`
	queuesSQL     = `SELECT id, queue FROM leasehold_jobs`
	pgAttempts    = `SELECT job_id, attempt, owner, ` + pgClaimed + `, ` + pgHeartbeat + `, ` + pgEnded + `, coalesce(outcome, ''), coalesce(resolution, '') FROM leasehold_attempts
		UNION ALL SELECT id, attempt, lease_owner, ` + pgClaimed + `, ` + pgHeartbeat + `, NULL, '', '' FROM leasehold_jobs j WHERE ` + openAttempt
	sqlAttempts = `SELECT job_id, attempt, owner, claimed_at, heartbeat_at, ended_at, coalesce(outcome, ''), coalesce(resolution, '') FROM leasehold_attempts
		UNION ALL SELECT id, attempt, lease_owner, claimed_at, heartbeat_at, NULL, '', '' FROM leasehold_jobs j WHERE ` + openAttempt
)

// openAttempt picks the jobs whose open attempt has no history row yet:
// the row is written when the attempt ends, and until then the job row
// holds the attempt (as the drivers' ListAttempts read it).
const openAttempt = `status = 'processing' AND claimed_at IS NOT NULL
	AND NOT EXISTS (SELECT 1 FROM leasehold_attempts a WHERE a.job_id = j.id AND a.attempt = j.attempt)`

// PostgreSQL times as Unix µs, exactly (extract returns numeric).
const (
	pgClaimed   = `(extract(epoch FROM claimed_at) * 1000000)::bigint`
	pgHeartbeat = `(extract(epoch FROM heartbeat_at) * 1000000)::bigint`
	pgEnded     = `(extract(epoch FROM ended_at) * 1000000)::bigint`
)

// loadFacts reads the jobs, their history and the ledger.
func loadFacts(ctx context.Context, db *sql.DB, dialect cli.Dialect) (*dbFacts, error) {
	f := &dbFacts{jobs: map[int64]jobRow{}, attempts: map[int64][]attemptRow{}, reconciles: map[int64]*reconcileRow{},
		queues: map[int64]string{}}
	err := scanRows(ctx, db, queuesSQL, func(r *sql.Rows) error {
		var id int64
		var q string
		err := r.Scan(&id, &q)
		f.queues[id] = q
		return err
	})
	if err != nil {
		return nil, err
	}
	err = scanRows(ctx, db, jobsSQL, func(r *sql.Rows) error {
		var id int64
		var j jobRow
		err := r.Scan(&id, &j.status, &j.attempt)
		f.jobs[id] = j
		return err
	})
	if err != nil {
		return nil, err
	}
	q := pgAttempts
	if dialect == cli.SQLite {
		q = sqlAttempts
	}
	err = scanRows(ctx, db, q, func(r *sql.Rows) error {
		var a attemptRow
		var hb, ended sql.NullInt64
		err := r.Scan(&a.job, &a.attempt, &a.owner, &a.claimed, &hb, &ended, &a.outcome, &a.resolution)
		a.heartbeat, a.ended = hb.Int64, ended.Int64
		f.attempts[a.job] = append(f.attempts[a.job], a)
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, as := range f.attempts {
		sort.Slice(as, func(i, j int) bool { return as[i].attempt < as[j].attempt })
	}
	err = scanRows(ctx, db, ledgerSQL, func(r *sql.Rows) error {
		var l ledgerRow
		err := r.Scan(&l.job, &l.attempt, &l.owner)
		f.ledger = append(f.ledger, l)
		return err
	})
	if err != nil {
		return nil, err
	}
	return f, scanRows(ctx, db, reconcilesSQL, func(r *sql.Rows) error {
		var (
			rc   reconcileRow
			args []byte
		)
		if err := r.Scan(&rc.id, &rc.status, &args); err != nil {
			return err
		}
		var a leasehold.ReconcileArgs
		if err := json.Unmarshal(args, &a); err != nil {
			return fmt.Errorf("reconcile job %d: args %s: %w", rc.id, args, err)
		}
		rc.job, rc.attempt = a.JobID, a.Attempt
		f.reconciles[rc.id] = &rc
		return nil
	})
}

func scanRows(ctx context.Context, db *sql.DB, q string, each func(*sql.Rows) error) error {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("chaos: check: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return fmt.Errorf("chaos: check: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("chaos: check: %w", err)
	}
	return nil
}

// overlapResult is what the lease-overlap check found.
type overlapResult struct {
	pairs   int // consecutive attempts compared
	expired int // of which the earlier lease ran out (taken over, or moved by the watcher)
	// evidenced: expired leases known to have been renewed (history's
	// heartbeat or a worker's renewal report), so the check rests on more
	// than the claim itself.
	evidenced int
	jobs      []int64  // jobs with two overlapping live leases
	examples  []string // the first few, described
	// inversions counts claims recorded before the previous attempt's
	// recorded end, where the previous lease was not taken by that claim:
	// a claim's now() is its statement's start, which may precede the
	// snapshot in which it found the job pending. Informational.
	inversions int
}

// overlaps finds the jobs whose lease was taken away while it still lived.
//
// An attempt's lease lives from its claim until its holder finishes it,
// or until lease_until (its last renewal + TTL). A finish by the holder is
// fenced, so a later claim cannot have overlapped it. A lease that ended
// lease_expired was taken away by another statement, the next claim
// (takeover) or the watcher, whose database time is the attempt's ended_at:
// the lease overlaps the next one if that time is not past lease_until. The
// last renewal is bounded from below by the history's heartbeat and the
// workers' renewal reports, so an overlap found is a real one. An attempt
// that never ended although a later one exists overlaps it if that later
// one was claimed before the lease could have run out.
func overlaps(f *dbFacts, renewals map[leaseKey]int64, ttlUS int64) overlapResult {
	var res overlapResult
	ids := make([]int64, 0, len(f.attempts))
	for id := range f.attempts {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		as := f.attempts[id]
		for i := 0; i+1 < len(as); i++ {
			a, b := &as[i], &as[i+1]
			res.pairs++
			renewed := renewals[leaseKey{a.job, a.attempt}]
			until := max(a.claimed, a.heartbeat, renewed) + ttlUS // a lower bound of lease_until
			var bad string
			switch {
			case a.outcome == "lease_expired":
				res.expired++
				if a.heartbeat != 0 || renewed != 0 {
					res.evidenced++
				}
				if a.ended <= until {
					by := "the watcher"
					if a.ended == b.claimed {
						by = fmt.Sprintf("attempt %d (%s)", b.attempt, b.owner)
					}
					bad = fmt.Sprintf("job %d: %s took attempt %d's lease %.3fs before it ran out", id, by, a.attempt, float64(until-a.ended)/1e6)
				}
			case a.ended == 0 && b.claimed <= until:
				bad = fmt.Sprintf("job %d: attempt %d (%s) claimed %.3fs before the lease of attempt %d, which never ended, ran out",
					id, b.attempt, b.owner, float64(until-b.claimed)/1e6, a.attempt)
			}
			if a.ended != 0 && b.claimed < a.ended {
				res.inversions++
			}
			if bad != "" {
				if len(res.jobs) == 0 || res.jobs[len(res.jobs)-1] != id {
					res.jobs = append(res.jobs, id)
				}
				if len(res.examples) < 5 {
					res.examples = append(res.examples, bad)
				}
			}
		}
	}
	return res
}

package hosts

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Check is what the database and the workers say about one step's jobs:
// each must have been completed exactly once.
type Check struct {
	Inserted int `json:"inserted"`
	// Jobs are the job rows found; Completed those completed.
	Jobs      int `json:"jobs"`
	Completed int `json:"completed"`
	// ExactlyOnce counts the jobs with exactly one attempt in the
	// history, which completed; DoneTwice those with more than one
	// completed attempt; Retaken those with more than one attempt at all
	// (a lease lost or released, with no fault injected: none expected).
	ExactlyOnce int `json:"exactly_once"`
	DoneTwice   int `json:"done_twice"`
	Retaken     int `json:"retaken"`
	// HandlerRuns is the sum of the handler completions the workers
	// counted, and Claims of their claims: both equal Inserted when no
	// handler ran twice, even unrecorded.
	HandlerRuns int64 `json:"handler_runs"`
	Claims      int64 `json:"claims"`
	// Unreported counts workers that stopped without their final
	// counters.
	Unreported int `json:"unreported"`
	// PerHost is the number of completed attempts by the workers of each
	// namespace.
	PerHost map[string]int `json:"per_host"`
}

// Lost returns the jobs not completed (or gone).
func (c Check) Lost() int { return c.Inserted - c.Completed }

// Twice returns the jobs done more than once: by the history, or by the
// workers' own count of handler runs.
func (c Check) Twice() int {
	return max(c.DoneTwice, int(c.HandlerRuns)-c.Inserted, 0)
}

// OK reports whether every job was completed exactly once.
func (c Check) OK() bool {
	return c.Jobs == c.Inserted && c.Completed == c.Inserted && c.ExactlyOnce == c.Inserted &&
		c.DoneTwice == 0 && c.Retaken == 0 && c.HandlerRuns == int64(c.Inserted) &&
		c.Claims == int64(c.Inserted) && c.Unreported == 0
}

// Problems describes what is wrong, or nothing.
func (c Check) Problems() []string {
	var out []string
	add := func(bad bool, format string, args ...any) {
		if bad {
			out = append(out, fmt.Sprintf(format, args...))
		}
	}
	add(c.Jobs != c.Inserted, "%d job rows for %d inserted", c.Jobs, c.Inserted)
	add(c.Lost() != 0, "%d jobs not completed", c.Lost())
	add(c.ExactlyOnce != c.Inserted, "%d of %d jobs have exactly one, completed, attempt", c.ExactlyOnce, c.Inserted)
	add(c.DoneTwice != 0, "%d jobs completed by more than one attempt", c.DoneTwice)
	add(c.Retaken != 0, "%d jobs claimed more than once", c.Retaken)
	add(c.HandlerRuns != int64(c.Inserted), "the workers completed %d handler runs for %d jobs", c.HandlerRuns, c.Inserted)
	add(c.Claims != int64(c.Inserted), "the workers claimed %d times for %d jobs", c.Claims, c.Inserted)
	add(c.Unreported != 0, "%d workers stopped without their final counters", c.Unreported)
	return out
}

// perJobSQL sums up the history of each job of the step's schema.
const perJobSQL = `WITH per AS (
	SELECT j.id, j.status, count(a.job_id) AS attempts,
		count(a.job_id) FILTER (WHERE a.outcome = 'completed') AS completed
	FROM leasehold_jobs j LEFT JOIN leasehold_attempts a ON a.job_id = j.id
	GROUP BY j.id, j.status
)
SELECT count(*), count(*) FILTER (WHERE status = 'completed'),
	count(*) FILTER (WHERE attempts = 1 AND completed = 1),
	count(*) FILTER (WHERE completed > 1), count(*) FILTER (WHERE attempts > 1)
FROM per`

// perOwnerSQL counts the completed attempts of each lease owner.
const perOwnerSQL = `SELECT owner, count(*) FROM leasehold_attempts WHERE outcome = 'completed' GROUP BY owner`

// check reads the history once the workers have stopped, and adds their
// final counters.
func (s *step) check(ctx context.Context, res *Step) error {
	c := Check{Inserted: s.r.o.Jobs, PerHost: map[string]int{}}
	err := s.r.query(ctx, s.url, func(conn *pgx.Conn) error {
		if err := conn.QueryRow(ctx, perJobSQL).Scan(&c.Jobs, &c.Completed, &c.ExactlyOnce, &c.DoneTwice, &c.Retaken); err != nil {
			return err
		}
		rows, err := conn.Query(ctx, perOwnerSQL)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				owner string
				n     int
			)
			if err := rows.Scan(&owner, &n); err != nil {
				return err
			}
			c.PerHost[s.hostName(owner)] += n
		}
		return rows.Err()
	})
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	for _, p := range s.fleet.All() {
		st, final := p.FinalStats()
		if !final {
			c.Unreported++
		}
		c.HandlerRuns += st.Completed
		c.Claims += st.Claimed
	}
	res.Check = c
	return nil
}

// hostName returns the namespace of a lease owner, or the owner itself
// when it is none of the step's workers.
func (s *step) hostName(owner string) string {
	if h, ok := s.hostOf[owner]; ok {
		return h
	}
	return owner
}

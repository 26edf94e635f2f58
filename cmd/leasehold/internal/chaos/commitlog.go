package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
)

// commitLogEvery is the period of the commit log's inserts.
const commitLogEvery = 5 * time.Millisecond

// commitLog is the orchestrator's own stream of small commits through
// the failover: each row's sequence number is recorded once its commit was
// acknowledged, so that the run can tell which acknowledged commits the
// promoted standby lacks.
type commitLog struct {
	db     *sql.DB
	schema string
	stop   context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	acked  []int64
}

// failoverTables are the commit log and the probe of the promoted standby.
func failoverTables(schema string) []string {
	return []string{
		"CREATE TABLE " + schema + ".failover_acks (seq bigint PRIMARY KEY)",
		"CREATE TABLE " + schema + ".failover_probe (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp())",
	}
}

// startCommitLog creates the tables and starts the commit log.
func (h *harness) startCommitLog(ctx context.Context, db *sql.DB) error {
	for _, stmt := range failoverTables(h.ns.schema) {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("chaos: %s: %w", stmt, err)
		}
	}
	ctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	c := &commitLog{db: db, schema: h.ns.schema, stop: stop, done: make(chan struct{})}
	h.commits = c
	go c.run(ctx)
	return nil
}

func (c *commitLog) run(ctx context.Context) {
	defer close(c.done)
	t := time.NewTicker(commitLogEvery)
	defer t.Stop()
	stmt := "INSERT INTO " + c.schema + ".failover_acks (seq) VALUES ($1)"
	for seq := int64(1); ; seq++ {
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := c.db.ExecContext(qctx, stmt, seq)
		cancel()
		if err == nil {
			c.mu.Lock()
			c.acked = append(c.acked, seq)
			c.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// finish stops the commit log and counts the acknowledged commits absent
// from the database now.
func (c *commitLog) finish(ctx context.Context) (acked, lost int64, err error) {
	c.stop()
	<-c.done
	present := map[int64]bool{}
	rows, err := c.db.QueryContext(ctx, "SELECT seq FROM "+c.schema+".failover_acks")
	if err != nil {
		return 0, 0, fmt.Errorf("chaos: read the commit log: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var s int64
		if err := rows.Scan(&s); err != nil {
			return 0, 0, fmt.Errorf("chaos: read the commit log: %w", err)
		}
		present[s] = true
	}
	if err := rows.Err(); err != nil {
		return 0, 0, fmt.Errorf("chaos: read the commit log: %w", err)
	}
	for _, s := range c.acked {
		if !present[s] {
			lost++
		}
	}
	return int64(len(c.acked)), lost, nil
}

// compareOldPrimary restarts the killed primary on its own (read-only, on
// a socket the workers' URL does not name) and counts what committed on
// it that the promoted standby lacks.
func (h *harness) compareOldPrimary(ctx context.Context, now *dbFacts) (LostFigures, error) {
	var l LostFigures
	old := *h.pair.primary
	old.Port += 2
	if err := old.Start(ctx, fmt.Sprintf("-p %d", old.Port), "-c default_transaction_read_only=on",
		"-c synchronous_standby_names=''"); err != nil {
		return l, fmt.Errorf("restart the old primary: %w", err)
	}
	h.pair.old = &old
	db, err := sql.Open("pgx", old.URL()+"&search_path="+h.ns.schema)
	if err != nil {
		return l, fmt.Errorf("chaos: %w", err)
	}
	defer db.Close()
	before, err := loadFacts(ctx, db, h.ns.target.Dialect)
	if err != nil {
		return l, fmt.Errorf("chaos: read the old primary: %w", err)
	}
	l = lostBetween(before, now)
	return l, nil
}

// lostBetween counts what before holds and after lacks: jobs, ended
// attempts (completions among them) and ledger rows.
func lostBetween(before, after *dbFacts) LostFigures {
	var l LostFigures
	for id := range before.jobs {
		if _, ok := after.jobs[id]; !ok {
			l.Jobs++
		}
	}
	has := map[attemptKey]bool{}
	for _, as := range after.attempts {
		for _, a := range as {
			has[attemptKey{a.job, a.attempt, a.owner, a.outcome}] = true
		}
	}
	for _, as := range before.attempts {
		for _, a := range as {
			if a.outcome == "" || has[attemptKey{a.job, a.attempt, a.owner, a.outcome}] {
				continue // still running at the kill, or kept
			}
			l.Attempts++
			if a.outcome == "completed" {
				l.Completions++
			}
		}
	}
	rows := map[ledgerRow]bool{}
	for _, r := range after.ledger {
		rows[r] = true
	}
	for _, r := range before.ledger {
		if !rows[r] {
			l.LedgerRows++
		}
	}
	return l
}

// attemptKey names one attempt and how it ended.
type attemptKey struct {
	job     int64
	attempt int
	owner   string
	outcome string
}

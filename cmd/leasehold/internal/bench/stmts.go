package bench

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Statement counts come from pg_stat_statements when the server has it
// (loaded through shared_preload_libraries; the bench creates the
// extension if missing and resets it before each measurement), and from
// the driver calls otherwise.
const (
	SourcePgStatStatements = "pg_stat_statements"
	SourceDriverCalls      = "driver calls"
)

// Statement is one normalised statement of pg_stat_statements.
type Statement struct {
	Calls int64 `json:"calls"`
	Rows  int64 `json:"rows"`
	// MeanMillis is the mean execution time in the server.
	MeanMillis float64 `json:"mean_ms"`
	Query      string  `json:"query"`
}

// pgStats reads pg_stat_statements on a connection of its own.
type pgStats struct {
	conn *pgx.Conn
}

// openPgStats returns nil, with the reason, when pg_stat_statements cannot
// be used.
func openPgStats(ctx context.Context, url string) (*pgStats, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	s := &pgStats{conn: conn}
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		s.close()
		return nil, fmt.Errorf("%w: %w", errNoStatements, err)
	}
	if err := s.reset(ctx); err != nil {
		s.close()
		return nil, fmt.Errorf("%w: %w", errNoStatements, err)
	}
	return s, nil
}

func (s *pgStats) reset(ctx context.Context) error {
	_, err := s.conn.Exec(ctx, "SELECT pg_stat_statements_reset()")
	return err
}

// probeTag marks the bench's own reads of the server's state within a
// statement count (the WAL position and the dead row count around a
// drain): statementsSQL leaves them out, as scripts/peerbench leaves out
// its own reads (its 'peerbench-probe' tag), so that leasehold's count and
// the peers' hold the drain's statements alone. pg_stat_statements keeps a
// statement's text, comment included, from its first run after the reset.
const (
	probeTag     = "leasehold-bench-probe"
	probeComment = "/* " + probeTag + " */ "
)

const statementsSQL = `SELECT calls, rows, mean_exec_time,
	left(regexp_replace(query, '\s+', ' ', 'g'), 100)
FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND query NOT LIKE '%pg_stat_statements%'
	AND query NOT LIKE '%` + probeTag + `%'
ORDER BY calls DESC`

// read returns the statements executed since the last reset, most
// frequent first, and their total number of calls.
func (s *pgStats) read(ctx context.Context) (int64, []Statement, error) {
	rows, err := s.conn.Query(ctx, statementsSQL)
	if err != nil {
		return 0, nil, fmt.Errorf("bench: read pg_stat_statements: %w", err)
	}
	var (
		total int64
		out   []Statement
	)
	for rows.Next() {
		var st Statement
		if err := rows.Scan(&st.Calls, &st.Rows, &st.MeanMillis, &st.Query); err != nil {
			rows.Close()
			return 0, nil, fmt.Errorf("bench: read pg_stat_statements: %w", err)
		}
		total += st.Calls
		out = append(out, st)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, nil, fmt.Errorf("bench: read pg_stat_statements: %w", err)
	}
	return total, out, nil
}

func (s *pgStats) close() { _ = s.conn.Close(context.Background()) }

package pgdriver

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// nowMicrosSQL is the statement's database clock in Unix microseconds.
const nowMicrosSQL = `floor(extract(epoch FROM statement_timestamp()) * 1000000)::bigint`

// windowStartSQL is driver.WindowStart on the statement's clock, for the
// window length (microseconds) in column unique_window of the insert's
// input; wantWindowStartSQL is the same at the clock p_clock of
// blockersSQL's input, for its window length p_window.
const (
	windowStartSQL = `CASE WHEN unique_window > 0 THEN ` + nowMicrosSQL +
		` - mod(` + nowMicrosSQL + `, unique_window) ELSE 0 END`
	wantWindowStartSQL = `CASE WHEN p_window > 0 THEN p_clock - mod(p_clock, p_window) ELSE 0 END`
)

// wantInput unnests the skipped jobs of blockersSQL and blockersAtSQL
// (kind, key, scope and window length, by ordinality).
const wantInput = `unnest($1::text[], $2::text[], $3::text[], $4::bigint[])
		WITH ORDINALITY AS t(p_kind, p_key, p_scope, p_window, p_ord)`

// blockersSQL reads, for each skipped job, the job that holds its key: a
// plain key's job, in any state, or a scoped key's job in the current
// window (on the statement's clock), while it is in its scope. The unique
// indexes make it at most one per job.
const blockersSQL = `WITH want AS (
	SELECT *, ` + nowMicrosSQL + ` AS p_clock FROM ` + wantInput + `
)` + blockersSelect

// blockersAtSQL is blockersSQL with the window current at clock $5 (Unix
// microseconds): the clock of the insert that skipped the jobs.
const blockersAtSQL = `WITH want AS (
	SELECT *, $5::bigint AS p_clock FROM ` + wantInput + `
)` + blockersSelect

// blockersSelect is the read of blockersSQL and blockersAtSQL.
const blockersSelect = `
SELECT p_ord, ` + jobColumns + ` FROM want JOIN leasehold_jobs
	ON kind = p_kind AND unique_key = p_key
	WHERE p_scope = ''
UNION ALL
SELECT p_ord, ` + jobColumns + ` FROM want JOIN leasehold_jobs
	ON kind = p_kind AND unique_scoped_key = p_key AND unique_scope = p_scope
	AND unique_window = p_window AND unique_window_start = ` + wantWindowStartSQL + `
	AND (unique_scope = 'forever' OR ` + driver.UnfinishedSQL + `)
	WHERE p_scope <> ''`

// fillBlockers sets res[i], for each i of skipped, to the job that holds
// params[i]'s key, as a duplicate, and returns the indexes whose key no
// job holds any more: those are inserted again. A scoped key's holder is
// looked for in the window current at clock (Unix microseconds), or, when
// it is NULL, at the read's own clock.
func (d *Driver) fillBlockers(ctx context.Context, q querier, params []*driver.InsertParams,
	skipped []int, res []*leasehold.InsertResult, clock pgtype.Int8) ([]int, error) {
	n := len(skipped)
	kinds, keys, scopes, windows := make([]string, n), make([]string, n), make([]string, n), make([]int64, n)
	for k, i := range skipped {
		p := params[i]
		kinds[k], keys[k], scopes[k] = p.Kind, p.UniqueKey, p.UniqueScope()
		if scopes[k] != "" {
			windows[k] = micros(p.UniqueWindow)
		}
	}
	query, args := blockersSQL, []any{kinds, keys, scopes, windows}
	if clock.Valid {
		query, args = blockersAtSQL, append(args, clock)
	}
	found := make([]*leasehold.JobRow, n)
	js := newJobScan(&d.names)
	_, err := collect(ctx, q, func(r scanner) (struct{}, error) {
		var ord int64
		j, err := js.scan(prefixScanner{r, &ord})
		if err == nil && ord >= 1 && ord <= int64(n) {
			found[ord-1] = j
		}
		return struct{}{}, err
	}, query, args...)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: insert: read the jobs holding unique keys: %w", err)
	}
	var again []int
	for k, i := range skipped {
		if found[k] == nil {
			again = append(again, i)
			continue
		}
		res[i] = &leasehold.InsertResult{Job: found[k], Duplicate: true}
	}
	return again, nil
}

// prefixScanner scans a row whose first column goes to first and the
// others to the caller's destinations.
type prefixScanner struct {
	r     scanner
	first any
}

// Scan implements scanner.
func (p prefixScanner) Scan(dest ...any) error {
	return p.r.Scan(append([]any{p.first}, dest...)...)
}

// scopedKeyIndex is the unique index of scoped keys (migration 005).
const scopedKeyIndex = "leasehold_jobs_scoped_unique_key_idx"

// scopedKeyTaken reports whether err is a violation of scopedKeyIndex:
// a write that would make two jobs hold one scoped key.
func scopedKeyTaken(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == scopedKeyIndex
}
